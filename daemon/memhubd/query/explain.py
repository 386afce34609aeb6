"""One declaration in full: its fields, relations both ways, evidence and access policy.

`explain` is the text form (`memdsl explain`), `explain_payload` the JSON declaration
object of `memdsl.mcp.explain.v1`. Lookup is by full id or bare name, first match.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any


def explain(ws: Any, decl_id: str) -> str:
    """The explain text, or `declaration '<x>' not found`."""
    d = ws.by_id(decl_id)
    if d is None:
        return f"declaration '{decl_id}' not found"
    lines = [
        d.id,
        f"  file:    {d.file}:{d.line}",
        f"  module:  {d.module or '(none)'}",
        f"  type:    {d.kind}",
        f"  role:    {d.runtime_role}",
        f"  status:  {d.status}",
    ]
    for label, value in (("subject: ", d.subject), ("force:   ", d.force), ("scope:   ", d.scope)):
        if value:
            lines.append(f"  {label}{value}")
    if d.confidence is not None:
        lines.append(f"  confidence: {d.confidence}")
    if d.claim_text:
        lines.append(f"  claim:   {d.claim_text}")
    relations = d.relations()
    if relations:
        lines.append("  relations:")
        lines.extend(f"    {rel} -> {t}" for rel, targets in relations.items() for t in targets)
    incoming = referenced_by(ws, d)
    if incoming:
        lines.append("  referenced by:")
        lines.extend(f"    {ref['id']} --{ref['relation']}--> this" for ref in incoming)
    # Values print with str(): lists show as Python reprs, e.g. ['developer'].
    for title, block in (("evidence", d.evidence), ("access policy", d.access_policy)):
        if block:
            lines.append(f"  {title}:")
            lines.extend(f"    {key}: {value}" for key, value in block.items())
    return "\n".join(lines)


def referenced_by(ws: Any, d: Any) -> list[dict[str, str]]:
    """Relations of other declarations whose target is exactly this id or name."""
    incoming = _incoming(ws)
    entries = incoming.get(d.id, [])
    if d.name != d.id:
        entries = sorted(entries + incoming.get(d.name, []), key=_position)
    return [{"id": other.id, "relation": rel} for _, other, rel in entries if other.id != d.id]


# Relation target -> (position in the scan, declaration, relation), in the order a scan
# of every declaration's relations meets them; built once per workspace (and again if
# declarations were appended), so an explain costs its own references, not a scan.
_Incoming = dict[str, list[tuple[int, Any, str]]]
_INCOMING: weakref.WeakKeyDictionary[Any, tuple[int, _Incoming]] = weakref.WeakKeyDictionary()
_INCOMING_LOCK = threading.Lock()


def _position(entry: tuple[int, Any, str]) -> int:
    return entry[0]


def _incoming(ws: Any) -> _Incoming:
    size = len(ws.declarations)
    with _INCOMING_LOCK:
        known = _INCOMING.get(ws)
    if known is not None and known[0] == size:
        return known[1]
    incoming: _Incoming = {}
    position = 0
    for other in ws.declarations:
        for rel, targets in other.relations().items():
            for target in targets:
                incoming.setdefault(target, []).append((position, other, rel))
                position += 1
    with _INCOMING_LOCK:
        _INCOMING[ws] = (size, incoming)
    return incoming


EXPLAIN_SCHEMA = "memdsl.mcp.explain.v1"
EXPLAIN_BOUNDARY = (
    "evidence.quote and source anchor this declaration to its origin; "
    "cite the declaration id, do not paraphrase it as your own inference."
)


def explain_payload(ws: Any, decl_id: str) -> dict[str, Any]:
    """The `memdsl.mcp.explain.v1` payload: the declaration, or an `invalid`/`not_found` error."""
    ref = str(decl_id or "").strip()
    if not ref:
        return {
            "ok": False,
            "schema_version": EXPLAIN_SCHEMA,
            "status": "invalid",
            "error": "id_required",
            "next_actions": ["Pass a declaration id (type:name or name)."],
        }
    d = ws.by_id(ref)
    if d is None:
        return {
            "ok": False,
            "schema_version": EXPLAIN_SCHEMA,
            "status": "not_found",
            "id": ref,
            "next_actions": ["Call memory_list to browse available declaration ids."],
        }
    return {
        "ok": True,
        "schema_version": EXPLAIN_SCHEMA,
        "status": "ok",
        "declaration": explain_declaration(ws, d),
        "rendered_text": explain(ws, ref),
        "boundary": EXPLAIN_BOUNDARY,
    }


def explain_declaration(ws: Any, d: Any) -> dict[str, Any]:
    """The payload's `declaration` object: derived values, relations both ways, raw fields."""
    return {
        "id": d.id,
        "type": d.kind,
        "kind": d.kind,
        "runtime_role": d.runtime_role,
        "capabilities": sorted(d.capabilities),
        "name": d.name,
        "module": d.module,
        "status": d.status,
        "subject": d.subject,
        "force": d.force,
        "scope": d.scope,
        "confidence": d.confidence,
        "lifecycle": dict(d.lifecycle),
        "access_policy": dict(d.access_policy),
        "claim": d.claim_text,
        "file": d.file,
        "line": d.line,
        "relations": {rel: list(targets) for rel, targets in d.relations().items()},
        "referenced_by": referenced_by(ws, d),
        "evidence": d.evidence or {},
        "fields": {k: v for k, v in d.fields.items() if k != "evidence"},
    }
