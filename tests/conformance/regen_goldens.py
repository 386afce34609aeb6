"""Record the reference answers (goldens) that the conformance tests compare against.

Run it with a Python that has memdsl 0.5.1 installed, from anywhere:
``/tmp/oracle/bin/python tests/conformance/regen_goldens.py``. It never runs
under the test suite and nothing in memhub imports it.

Outputs are machine-independent: each workspace is loaded with the process
cwd set to its parent folder and a relative path, so file labels read like
``team-coding/rules.mem``; absolute paths that memdsl still prints (schema
sources, schema errors) are made relative to that folder. Lint uses a fixed
``today``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import sys
from pathlib import Path
from typing import Any

import memdsl

# Run as a script, this folder is on sys.path; the shared module imports no memhub code.
from conformance_goldens import (
    CASES,
    EXPLAIN_BOUNDARY,
    GOLDEN,
    HERE,
    TODAY,
    WORKSPACE_GROUPS,
    inside,
    relativize,
    split_key,
)
from memdsl import benchmark, cli, linter, query
from memdsl.compliance import check_compliance
from memdsl.mcp_service import MemdslMCPService

# Far enough ahead that every dated memory in the fixtures has gone stale.
LATER = dt.date(2031, 11, 30)
# Explaining every one of the generated declarations adds nothing.
EXPLAIN_LIMIT = {"workspaces/module_budget": 6}
EXTRA_EXPLAIN_REFS = ["no.such.declaration", "fact:no.such.declaration"]


def workspace_keys() -> list[str]:
    """Every example and fixture workspace, as ``<group>/<name>``."""
    keys = []
    for group, base in WORKSPACE_GROUPS.items():
        for child in sorted(base.iterdir()):
            if child.is_dir() and not child.name.startswith("."):
                keys.append(f"{group}/{child.name}")
    return keys


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def layout(value: Any, depth: int, level: int = 0) -> str:
    """JSON with one line per entry for the outer ``depth`` levels: small and diffable."""
    if depth == 0 or not isinstance(value, dict) or not value:
        return compact(value)
    pad = "  " * level
    entries = [
        f"{pad}  {compact(key)}: {layout(item, depth - 1, level + 1)}"
        for key, item in value.items()
    ]
    return "{\n" + ",\n".join(entries) + "\n" + pad + "}"


def write_json(path: Path, payload: Any, depth: int = 2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(layout(payload, depth) + "\n", encoding="utf-8")


def run_cli(argv: list[str]) -> dict:
    """Run the reference CLI in-process; exit codes from sys.exit are kept."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return {"exit_code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


# ---- per-workspace goldens -------------------------------------------------


def diagnostic_dicts(diags: list) -> list[dict]:
    keys = ("code", "severity", "message", "file", "line", "decl_id")
    return [{key: getattr(d, key) for key in keys} for d in diags]


def lint_golden(ws: memdsl.Workspace) -> dict:
    diags = linter.lint(ws, today=TODAY)
    errors = sum(1 for d in diags if d.severity == "error")
    warnings = len(diags) - errors
    later = linter.lint(ws, today=LATER)
    return {
        "today": TODAY.isoformat(),
        "declarations": len(ws.declarations),
        "errors": errors,
        "warnings": warnings,
        "exit_code": 1 if errors else 0,
        "strict_exit_code": 1 if errors or warnings else 0,
        "date_sensitive": diagnostic_dicts(later) != diagnostic_dicts(diags),
        "diagnostics": diagnostic_dicts(diags),
    }


STANDARD_SOURCE = "<builtin:memdsl.standard@1>"


def types_golden(ws: memdsl.Workspace, name: str) -> dict:
    """`types --json` with the standard descriptors left out (they live in standard_types.json)."""
    run = run_cli(["types", name])
    descriptors = ws.registry.descriptors()
    return {
        "schema_files": list(ws.registry.schema_files),
        "names": [d.name for d in descriptors],
        "domain_types": [d.as_dict() for d in descriptors if d.source != STANDARD_SOURCE],
        "text": run["stdout"],
        "exit_code": run["exit_code"],
    }


def record_standard_types() -> int:
    descriptors = memdsl.TypeRegistry.standard().descriptors()
    write_json(GOLDEN / "standard_types.json", {d.name: d.as_dict() for d in descriptors}, depth=1)
    return len(descriptors)


def map_golden(ws: memdsl.Workspace) -> dict:
    data = query.build_memory_map(ws)
    return {
        "json": {"schema_version": "memdsl.map.v1", **data},
        "text": query.render_memory_map_text(data),
    }


def explain_refs(key: str, ws: memdsl.Workspace) -> list[str]:
    ids = list(dict.fromkeys(d.id for d in ws.declarations))
    limit = EXPLAIN_LIMIT.get(key)
    if limit is not None:
        ids = ids[:limit]
    bare = [ws.declarations[0].name] if ws.declarations else []
    return ids + bare + EXTRA_EXPLAIN_REFS


def slim_payload(payload: dict, text: str, ws: memdsl.Workspace) -> dict:
    """Drop what the tests can rebuild: the rendered text, the boundary sentence, raw fields."""
    slim = dict(payload)
    if slim.get("rendered_text") == text:
        del slim["rendered_text"]
    if slim.get("boundary") == EXPLAIN_BOUNDARY:
        del slim["boundary"]
    declaration = slim.get("declaration")
    if declaration is not None:
        decl = ws.by_id(declaration["id"])
        raw = {k: v for k, v in decl.fields.items() if k != "evidence"}
        if declaration["fields"] == raw:
            slim["declaration"] = {k: v for k, v in declaration.items() if k != "fields"}
    return slim


def explain_golden(key: str, ws: memdsl.Workspace, folder: Path) -> dict:
    service = MemdslMCPService([str(folder)])
    service.workspace = lambda: ws  # the relatively loaded workspace: stable labels
    result = {}
    for ref in explain_refs(key, ws):
        text = query.explain(ws, ref)
        result[ref] = {"text": text, "payload": slim_payload(service.explain(ref), text, ws)}
    return result


def model_golden(ws: memdsl.Workspace) -> dict:
    """Derived properties that every engine reads, per declaration."""
    decls = [
        {
            "id": d.id,
            "runtime_role": d.runtime_role,
            "status": d.status,
            "force": d.force,
            "subject": d.subject,
            "scope": d.scope,
            "claim": d.claim_text,
            "searchable_text": d.searchable_text(),
        }
        for d in ws.declarations
    ]
    return {
        "files": list(ws.files),
        "declarations": decls,
        "active": [d.id for d in ws.active()],
        "entities": [d.id for d in ws.entities()],
        "known_symbols": sorted(ws.known_symbols()),
        "alias_map": ws.alias_map(),
        "superseded_ids": sorted(ws.superseded_ids()),
    }


def document_golden(ws: memdsl.Workspace) -> list[dict]:
    documents = []
    for label in ws.files:
        doc = memdsl.parse_file(label)
        documents.append(
            {
                "file": doc.file,
                "module": doc.module,
                "uses": list(doc.uses),
                "declarations": [
                    {
                        "kind": r.kind,
                        "name": r.name,
                        "line": r.line,
                        "module": r.module,
                        "fields": r.fields,
                    }
                    for r in doc.declarations
                ],
            }
        )
    return documents


def record_workspace(key: str) -> None:
    base, name = split_key(key)
    with inside(base):
        ws = memdsl.Workspace.load([name])
        golden = {
            "workspace": key,
            "path": name,
            "documents": document_golden(ws),
            "model": model_golden(ws),
            "lint": lint_golden(ws),
            "types": types_golden(ws, name),
            "map": map_golden(ws),
            "explain": explain_golden(key, ws, base / name),
        }
    write_json(GOLDEN / "workspace" / f"{key}.json", relativize(golden, base))


# ---- query, check and eval cases -------------------------------------------


def load_case_file(name: str) -> list[dict]:
    cases = json.loads((CASES / name).read_text(encoding="utf-8"))
    ids = [case["id"] for case in cases]
    if len(ids) != len(set(ids)):
        raise SystemExit(f"{name}: duplicate case ids")
    return cases


def group_by_workspace(cases: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for case in cases:
        grouped.setdefault(case["workspace"], []).append(case)
    return grouped


def item_key(item: dict) -> str:
    return f"{item['file']}:{item['line']}"


def pack_dict(pack: query.EvidencePack, items: dict) -> dict:
    """EvidencePack JSON with declaration items moved to the shared ``items`` table.

    CONTEXT matched terms are sorted: memdsl lists them in set order.
    """
    data = json.loads(pack.render_json())
    for layer in ("must", "should"):
        keys = []
        for item in data[layer]:
            items.setdefault(item_key(item), item)
            keys.append(item_key(item))
        data[layer] = keys
    context = []
    for entry in data["context"]:
        item = {k: v for k, v in entry.items() if k not in ("score", "matched_terms")}
        items.setdefault(item_key(item), item)
        terms = sorted(entry["matched_terms"])
        context.append({"item": item_key(item), "score": entry["score"], "matched_terms": terms})
    data["context"] = context
    return data


def query_golden(ws: memdsl.Workspace, case: dict, items: dict) -> dict:
    pack = query.build_evidence_pack(
        ws,
        case["query"],
        kinds=case.get("kinds"),
        subject=case.get("subject"),
        limit=case.get("limit", 8),
        types=case.get("types"),
    )
    return {"pack": pack_dict(pack, items), "text": pack.render_text()}


def check_argv(name: str, case: dict) -> list[str]:
    argv = ["check", name, "-t", case["task"], "-c", case["candidate"]]
    for flag in ("subject", "scope"):
        if case.get(flag) is not None:
            argv += [f"--{flag}", case[flag]]
    for exception in case.get("exceptions") or []:
        argv += ["--exception", exception]
    return argv + ["--json"]


def compliance_dict(pack: Any, items: dict) -> dict:
    """CompliancePack JSON with constraint items moved to ``items``.

    ``applicable_constraints`` is left out: memdsl emits it as a copy of ``applicable_must``.
    """
    data = json.loads(pack.render_json())
    if data["applicable_constraints"] != data["applicable_must"]:
        raise SystemExit("applicable_constraints differs from applicable_must")
    del data["applicable_constraints"]
    for item in data["applicable_must"]:
        items.setdefault(item_key(item), item)
    data["applicable_must"] = [item_key(item) for item in data["applicable_must"]]
    return data


def check_golden(ws: memdsl.Workspace, name: str, case: dict, items: dict) -> dict:
    pack = check_compliance(
        ws,
        case["task"],
        case["candidate"],
        subject=case.get("subject"),
        scope=case.get("scope"),
        exceptions=case.get("exceptions"),
    )
    run = run_cli(check_argv(name, case))
    return {
        "pack": compliance_dict(pack, items),
        "text": pack.render_text(),
        "verdict": pack.verdict,
        "cli_exit_code": run["exit_code"],
        "cli_stderr": run["stderr"],
    }


def record_cases(kind: str, cases: list[dict]) -> int:
    count = 0
    for key, group in group_by_workspace(cases).items():
        base, name = split_key(key)
        items: dict = {}
        with inside(base):
            ws = memdsl.Workspace.load([name])
            if kind == "query":
                results = {case["id"]: query_golden(ws, case, items) for case in group}
            else:
                results = {case["id"]: check_golden(ws, name, case, items) for case in group}
        payload = {"items": items, "cases": results}
        write_json(GOLDEN / kind / f"{key}.json", relativize(payload, base))
        count += len(group)
    return count


def eval_case_files() -> list[tuple[str, str]]:
    found = []
    for key in workspace_keys():
        base, name = split_key(key)
        if (base / name / "cases.jsonl").is_file():
            found.append((key, f"{name}/cases.jsonl"))
    return found


def record_eval() -> int:
    results = {}
    for key, cases_path in eval_case_files():
        base, name = split_key(key)
        with inside(base):
            ws = memdsl.Workspace.load([name])
            report = benchmark.run_compliance_benchmark(ws, benchmark.load_cases(cases_path))
            run = run_cli(["eval", "compliance", name, "--cases", cases_path])
        results[key] = {
            "cases": cases_path,
            "report": report,
            "text": benchmark.render_benchmark_text(report),
            "exit_code": run["exit_code"],
        }
    write_json(GOLDEN / "eval.json", results)
    return len(results)


def record_eval_errors() -> int:
    results = {}
    with inside(HERE):
        for path in sorted(Path("eval_errors").glob("*.jsonl")):
            try:
                benchmark.load_cases(str(path))
            except ValueError as exc:
                results[path.name] = {"error": str(exc)}
            else:
                cases = benchmark.load_cases(str(path))
                results[path.name] = {"error": None, "cases": [vars(case) for case in cases]}
    write_json(GOLDEN / "eval_errors.json", results)
    return len(results)


# ---- parse and schema errors -----------------------------------------------


def record_parse_errors() -> int:
    results = {}
    with inside(HERE):
        for path in sorted(Path("parse_errors").glob("*.mem")):
            label = str(path)
            try:
                doc = memdsl.parse_file(label)
            except memdsl.ParseError as exc:
                prefix = f"{exc.file}:{exc.line}: "
                message = str(exc)[len(prefix) :]
                results[path.name] = {"message": message, "line": exc.line, "str": str(exc)}
            else:
                results[path.name] = {
                    "message": None,
                    "declarations": len(doc.declarations),
                    "module": doc.module,
                    "uses": doc.uses,
                }
    write_json(GOLDEN / "parse_errors.json", results)
    return len(results)


def record_schema_errors() -> int:
    results = {}
    with inside(HERE):
        for case in sorted(p for p in Path("schema_errors").iterdir() if p.is_dir()):
            try:
                ws = memdsl.Workspace.load([str(case)])
            except memdsl.SchemaError as exc:
                results[case.name] = {"message": str(exc)}
            else:
                results[case.name] = {"message": None, "types": ws.registry.names()}
            results[case.name]["cli"] = run_cli(["lint", str(case)])
    write_json(GOLDEN / "schema_errors.json", relativize(results, HERE))
    return len(results)


def main() -> int:
    if memdsl.__version__ != "0.5.1":
        print(f"memdsl 0.5.1 is required, found {memdsl.__version__}", file=sys.stderr)
        return 2
    keys = workspace_keys()
    for key in keys:
        record_workspace(key)
    counts = {
        "workspaces": len(keys),
        "standard types": record_standard_types(),
        "query cases": record_cases("query", load_case_file("query_cases.json")),
        "check cases": record_cases("check", load_case_file("check_cases.json")),
        "eval reports": record_eval(),
        "eval errors": record_eval_errors(),
        "parse errors": record_parse_errors(),
        "schema errors": record_schema_errors(),
    }
    print(", ".join(f"{n} {what}" for what, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
