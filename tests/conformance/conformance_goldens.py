"""Reading the recorded reference answers and running memhub the same way they were made.

Goldens come from `regen_goldens.py` (run with memdsl 0.5.1). This module only
reads them back, rebuilds the parts stored once to keep them small, and loads
workspaces with the same cwd and relative path; it never imports memdsl.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GOLDEN = HERE / "golden"
CASES = HERE / "cases"
WORKSPACE_GROUPS = {"examples": REPO / "examples", "workspaces": HERE / "workspaces"}
TODAY = dt.date(2026, 11, 30)
EXPLAIN_BOUNDARY = (
    "evidence.quote and source anchor this declaration to its origin; "
    "cite the declaration id, do not paraphrase it as your own inference."
)


# ---- files and folders ------------------------------------------------------


@functools.cache
def golden(relative: str) -> Any:
    return json.loads((GOLDEN / relative).read_text(encoding="utf-8"))


@functools.cache
def case_list(name: str) -> list[dict]:
    return json.loads((CASES / name).read_text(encoding="utf-8"))


def workspace_keys() -> list[str]:
    """Every workspace that has a golden, as ``<group>/<name>``."""
    root = GOLDEN / "workspace"
    return sorted(f"{p.parent.name}/{p.stem}" for p in root.glob("*/*.json"))


def split_key(key: str) -> tuple[Path, str]:
    group, name = key.split("/", 1)
    return WORKSPACE_GROUPS[group], name


def workspace_golden(key: str) -> dict:
    return golden(f"workspace/{key}.json")


@contextlib.contextmanager
def inside(folder: Path) -> Iterator[None]:
    """Run with ``folder`` as cwd, so relative file labels match the goldens."""
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def relativize(value: Any, root: Path) -> Any:
    """Replace ``<root>/`` inside every string, as the goldens were recorded."""
    prefix = str(root) + os.sep
    if isinstance(value, str):
        return value.replace(prefix, "")
    if isinstance(value, list):
        return [relativize(item, root) for item in value]
    if isinstance(value, dict):
        return {key: relativize(item, root) for key, item in value.items()}
    return value


# ---- running memhub ---------------------------------------------------------


@functools.cache
def load_workspace(key: str) -> Any:
    """Our Workspace for ``key``, loaded from its parent folder with a relative path."""
    from memhubd.model import Workspace

    base, name = split_key(key)
    with inside(base):
        return Workspace.load([name])


def run_cli(argv: list[str], cwd: Path) -> dict:
    """Run ``memhubd`` in-process; returns exit code, stdout and stderr."""
    from memhubd import cli

    out, err = io.StringIO(), io.StringIO()
    with inside(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return {"exit_code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def as_json_text(value: Any) -> str:
    """The CLI's JSON form; comparing texts also catches ``4`` versus ``4.0``."""
    return json.dumps(value, indent=2, ensure_ascii=False)


# ---- rebuilding what the goldens store once ---------------------------------


def expected_types_json(key: str) -> dict:
    """`types --json` for a workspace: standard descriptors are stored once."""
    recorded = workspace_golden(key)["types"]
    standard = golden("standard_types.json")
    domain = {item["name"]: item for item in recorded["domain_types"]}
    types = [domain.get(name) or standard[name] for name in recorded["names"]]
    return {
        "schema_version": "memdsl.types.v1",
        "schema_files": recorded["schema_files"],
        "types": types,
    }


def expected_explain_payload(key: str, ref: str) -> dict:
    """The MCP explain payload, with rendered text, boundary and raw fields put back."""
    entry = workspace_golden(key)["explain"][ref]
    payload = dict(entry["payload"])
    declaration = payload.get("declaration")
    if declaration is None:
        return payload
    if "fields" not in declaration:
        raw = parsed_fields(key, declaration["file"], declaration["line"], declaration["name"])
        declaration = {**declaration, "fields": {k: v for k, v in raw.items() if k != "evidence"}}
    payload["declaration"] = declaration
    payload.setdefault("rendered_text", entry["text"])
    payload.setdefault("boundary", EXPLAIN_BOUNDARY)
    return payload


def parsed_fields(key: str, file: str, line: int, name: str) -> dict:
    for document in workspace_golden(key)["documents"]:
        if document["file"] != file:
            continue
        for declaration in document["declarations"]:
            if declaration["line"] == line and declaration["name"] == name:
                return declaration["fields"]
    raise LookupError(f"{key}: no recorded declaration {name} at {file}:{line}")


def expected_evidence_pack(key: str, case_id: str) -> dict:
    """The EvidencePack JSON of a query case, declaration items expanded."""
    recorded = golden(f"query/{key}.json")
    items = recorded["items"]
    pack = dict(recorded["cases"][case_id]["pack"])
    pack["must"] = [items[k] for k in pack["must"]]
    pack["should"] = [items[k] for k in pack["should"]]
    pack["context"] = [
        {**items[c["item"]], "score": c["score"], "matched_terms": c["matched_terms"]}
        for c in pack["context"]
    ]
    return pack


def expected_compliance_pack(key: str, case_id: str) -> dict:
    """The CompliancePack JSON of a check case, constraint items expanded."""
    recorded = golden(f"check/{key}.json")
    items = recorded["items"]
    pack: dict = {}
    for field, value in recorded["cases"][case_id]["pack"].items():
        if field == "applicable_must":
            constraints = [items[k] for k in value]
            pack["applicable_must"] = constraints
            pack["applicable_constraints"] = constraints
        else:
            pack[field] = value
    return pack


def sorted_context_terms(pack: dict) -> dict:
    """memdsl lists CONTEXT matched terms in set order; the goldens store them sorted."""
    pack = dict(pack)
    pack["context"] = [
        {**item, "matched_terms": sorted(item["matched_terms"])} for item in pack["context"]
    ]
    return pack


def cases_by_workspace(name: str) -> list[tuple[str, str]]:
    """(workspace key, case id) pairs of a case file, in file order."""
    return [(case["workspace"], case["id"]) for case in case_list(name)]


@functools.cache
def case_by_id(name: str) -> dict[str, dict]:
    return {case["id"]: case for case in case_list(name)}
