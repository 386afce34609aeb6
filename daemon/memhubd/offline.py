"""Offline one-shot commands on a directory: lint, types, query, map, explain,
check, eval. Same arguments, output and exit codes as memdsl 0.5.1's CLI.

Each handler loads the workspace, calls the engine and renders; nothing else.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import stat
import sys
from collections.abc import Sequence
from typing import Any

from memhub_protocol import LINT_SCHEMA, MAP_SCHEMA, TYPES_SCHEMA

# The most of a candidate file read: far beyond any text worth checking, and a bound on
# what /dev/zero or an endless FIFO can cost.
MAX_CANDIDATE_BYTES = 16 * 1024 * 1024


class CommandFailure(Exception):
    """A command cannot go on: one line for stderr, an error payload for --json, an exit code."""

    def __init__(self, line: str, payload: dict[str, Any], exit_code: int = 2) -> None:
        super().__init__(line)
        self.line = line
        self.payload = payload
        self.exit_code = exit_code


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def load_workspace(paths: Sequence[str]) -> Any:
    """Load a workspace as memdsl's CLI does, turning failures into CommandFailure."""
    from memhubd.lang import ParseError
    from memhubd.model import Workspace
    from memhubd.schema import SchemaError

    for path in paths:
        _check_load_path(path)
    try:
        return Workspace.load(list(paths))
    except ParseError as error:
        detail = {"file": error.file, "line": error.line, "column": error.column}
        raise CommandFailure(
            f"parse error: {error}",
            {"code": "parse_error", "message": error.message, "detail": detail},
        ) from error
    except SchemaError as error:
        raise CommandFailure(
            f"schema error: {error}", {"code": "schema_error", "message": str(error), "detail": {}}
        ) from error
    except (OSError, UnicodeDecodeError) as error:
        # memdsl's CLI ends in a traceback on a file that is not UTF-8: here it is a
        # load error like an unreadable file (stderr, exit 2).
        raise CommandFailure(
            f"cannot read input: {error}",
            {"code": "cannot_read", "message": str(error), "detail": {}},
        ) from error


def cmd_lint(args: argparse.Namespace) -> int:
    from memhubd.lint import has_errors, lint

    ws = load_workspace(args.paths)
    diagnostics = lint(ws, today=args.today)
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = sum(1 for d in diagnostics if d.severity == "warning")
    if args.json:
        print_json(
            {
                "schema_version": LINT_SCHEMA,
                "ok": errors == 0,
                "declarations": len(ws.declarations),
                "errors": errors,
                "warnings": warnings,
                "diagnostics": [d.as_dict() for d in diagnostics],
            }
        )
    else:
        for diagnostic in diagnostics:
            print(diagnostic.render())
        print(f"\n{len(ws.declarations)} declarations, {errors} error(s), {warnings} warning(s)")
    return 1 if has_errors(diagnostics) or (args.strict and warnings) else 0


def cmd_types(args: argparse.Namespace) -> int:
    ws = load_workspace(args.paths)
    items = [descriptor.as_dict() for descriptor in ws.registry.descriptors()]
    if args.json:
        print_json(
            {
                "schema_version": TYPES_SCHEMA,
                "schema_files": list(ws.registry.schema_files),
                "types": items,
            }
        )
        return 0
    for item in items:
        required = ",".join(item["required_fields"]) or "-"
        capabilities = ",".join(item["capabilities"]) or "-"
        print(
            f"{item['name']}  role={item['runtime_role']}  "
            f"required={required}  capabilities={capabilities}"
        )
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from memhubd.query import build_evidence_pack

    ws = load_workspace(args.paths)
    pack = build_evidence_pack(
        ws, args.query, kinds=args.kinds, subject=args.subject, limit=args.limit
    )
    print(pack.render_json() if args.json else pack.render_text())
    return 0


def cmd_map(args: argparse.Namespace) -> int:
    from memhubd.query import build_memory_map, render_memory_map_text

    ws = load_workspace(args.paths)
    map_data = build_memory_map(ws)
    if args.json:
        print_json({"schema_version": MAP_SCHEMA, **map_data})
    else:
        print(render_memory_map_text(map_data))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from memhubd.query import explain, explain_payload

    ws = load_workspace(args.paths)
    if ws.by_id(args.id) is None and args.json:
        # memdsl has no `explain --json`: its JSON answer to an unknown id is an error.
        raise CommandFailure(
            f"declaration '{args.id}' not found",
            {"code": "not_found", "message": f"declaration '{args.id}' not found", "detail": {}},
            exit_code=1,
        )
    if args.json:
        print_json(explain_payload(ws, args.id))
    else:
        print(explain(ws, args.id))
    return 0


def _check_load_path(path: str) -> None:
    """A load path must be a file or a directory: a device or a FIFO is read whole and
    may never end (/dev/zero), which would take all memory before failing. A missing
    path is left to the load, which names it as memdsl does."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        message = f"{path} is not a regular file or directory"
        raise CommandFailure(
            f"cannot read input: {message}",
            {"code": "cannot_read", "message": message, "detail": {}},
        )


def _candidate_text(args: argparse.Namespace) -> str:
    if not args.candidate_file:
        return str(args.candidate)
    try:
        with open(args.candidate_file, "rb") as handle:
            data = handle.read(MAX_CANDIDATE_BYTES + 1)  # one byte more tells it is too long
        if len(data) > MAX_CANDIDATE_BYTES:
            message = f"{args.candidate_file} is larger than 16 MiB"
            raise CommandFailure(
                f"cannot read candidate: {message}",
                {"code": "cannot_read", "message": message, "detail": {}},
            )
        # Decoded as a text-mode open() would: the same errors, newlines made \n.
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as error:
        raise CommandFailure(
            f"cannot read candidate: {error}",
            {"code": "cannot_read", "message": str(error), "detail": {}},
        ) from error


def cmd_check(args: argparse.Namespace) -> int:
    from memhubd.check import check_compliance

    ws = load_workspace(args.paths)
    candidate = _candidate_text(args)
    if not str(args.task or "").strip() or not candidate.strip():
        message = "task and candidate must both be non-empty"
        raise CommandFailure(message, {"code": "invalid", "message": message, "detail": {}})
    pack = check_compliance(
        ws,
        args.task,
        candidate,
        subject=args.subject,
        scope=args.scope,
        exceptions=args.exceptions,
    )
    print(pack.render_json() if args.json else pack.render_text())
    return {"allow": 0, "block": 1, "needs_review": 2}[pack.verdict]


def cmd_eval_compliance(args: argparse.Namespace) -> int:
    from memhubd.check import load_cases, render_benchmark_text, run_compliance_benchmark

    ws = load_workspace(args.paths)
    try:
        cases = load_cases(args.cases)
    except (OSError, ValueError) as error:
        raise CommandFailure(
            f"cannot load compliance cases: {error}",
            {"code": "invalid_cases", "message": str(error), "detail": {}},
        ) from error
    report = run_compliance_benchmark(ws, cases)
    if args.json:
        print_json(report)
    else:
        print(render_benchmark_text(report))
    return 0 if report["status"] == "passed" else 1


# The commands whose --json memdsl has: a failure of theirs prints nothing on stdout, as
# memdsl's does. The others' --json is memhub's, and answers a failure in JSON too.
MEMDSL_JSON_COMMANDS = frozenset(("map", "query", "types", "check"))


def report_failure(failure: CommandFailure, as_json: bool, command: str = "") -> int:
    if as_json and command not in MEMDSL_JSON_COMMANDS:
        print_json({"error": failure.payload})
    print(failure.line, file=sys.stderr)
    return failure.exit_code
