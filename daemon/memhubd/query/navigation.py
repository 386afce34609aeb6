"""Workspace navigation: the vocabulary, the per-module memory map and its text form.

The map is an index for finding things, not something to cite: claims are clipped
and carry no evidence. This module must not score or filter beyond memdsl's rules.
"""

from __future__ import annotations

from typing import Any

MAP_SCHEMA = "memdsl.map.v1"


def workspace_vocabulary(ws: Any, limit: int = 50) -> dict[str, Any]:
    """Subjects (symbols with names/aliases), scopes, modules and type counts of `active()`.

    Supersession is not applied here (memdsl's rule); the type counts are not capped.
    """
    active = ws.active()
    subjects = [_subject_entry(d) for d in active if d.runtime_role == "symbol"]
    types: dict[str, int] = {}
    for d in active:
        types[d.kind] = types.get(d.kind, 0) + 1
    return {
        "subjects": subjects[:limit],
        "scopes": sorted({d.scope for d in active if d.scope})[:limit],
        "modules": sorted({d.module for d in active if d.module})[:limit],
        "types": dict(sorted(types.items())),
    }


def _subject_entry(d: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"symbol": d.name}
    canonical = d.fields.get("canonical_name")
    if isinstance(canonical, str) and canonical:
        entry["canonical_name"] = canonical
    aliases = d.fields.get("aliases")
    if isinstance(aliases, list) and aliases:
        entry["aliases"] = [str(a) for a in aliases]
    return entry


def build_memory_map(ws: Any, claim_chars: int = 120) -> dict[str, Any]:
    """Every active, non-superseded declaration grouped by module (`(none)` sorts first)."""
    superseded = ws.superseded_ids()
    modules: dict[str, list[dict[str, Any]]] = {}
    for d in ws.active():
        if d.id in superseded or d.name in superseded:
            continue
        modules.setdefault(d.module or "", []).append(_map_item(d, claim_chars))
    return {
        "declarations": sum(len(items) for items in modules.values()),
        "modules": [
            {"module": name or "(none)", "declarations": len(items), "items": items}
            for name, items in sorted(modules.items())
        ],
        "vocabulary": workspace_vocabulary(ws),
    }


def _map_item(d: Any, claim_chars: int) -> dict[str, Any]:
    item: dict[str, Any] = {"id": d.id, "type": d.kind, "runtime_role": d.runtime_role}
    if d.subject:
        item["subject"] = d.subject
    if d.scope:
        item["scope"] = d.scope
    if d.runtime_role == "symbol":
        parts = []
        canonical = d.fields.get("canonical_name")
        if isinstance(canonical, str) and canonical:
            parts.append(f'"{canonical}"')
        aliases = d.fields.get("aliases")
        if isinstance(aliases, list) and aliases:
            parts.append("aliases: " + ", ".join(str(a) for a in aliases))
        item["summary"] = "; ".join(parts)
    else:
        item["summary"] = _clip(d.claim_text, claim_chars)
    return item


def _clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def render_memory_map_text(map_data: dict[str, Any]) -> str:
    """The map as a compact text index (modules are listed, the module vocabulary is not)."""
    lines = [
        f"# memory map: {map_data['declarations']} declaration(s) "
        f"in {len(map_data['modules'])} module(s)"
    ]
    for module in map_data["modules"]:
        lines += ["", f"## module {module['module']}"]
        lines.extend(_map_line(item) for item in module["items"])
    vocabulary = map_data.get("vocabulary", {})
    if vocabulary:
        lines += ["", "## vocabulary"]
        lines.extend(_vocabulary_lines(vocabulary))
    return "\n".join(lines)


def _map_line(item: dict[str, Any]) -> str:
    line = f"- [{item['id']}] {item['runtime_role']}"
    details = [f"{key} {item[key]}" for key in ("subject", "scope") if item.get(key)]
    if details:
        line += " (" + ", ".join(details) + ")"
    if item.get("summary"):
        line += f": {item['summary']}"
    return line


def _vocabulary_lines(vocabulary: dict[str, Any]) -> list[str]:
    lines = []
    subjects = []
    for entry in vocabulary.get("subjects", []):
        names = [entry.get("canonical_name", ""), *entry.get("aliases", [])]
        names = [name for name in dict.fromkeys(names) if name]
        subjects.append(entry["symbol"] + (f" (aka {', '.join(names)})" if names else ""))
    if subjects:
        lines.append("subjects: " + "; ".join(subjects))
    if vocabulary.get("scopes"):
        lines.append("scopes: " + ", ".join(vocabulary["scopes"]))
    if vocabulary.get("types"):
        counts = ", ".join(f"{name}({n})" for name, n in vocabulary["types"].items())
        lines.append("types: " + counts)
    return lines
