"""Text for the terminal from the daemon's JSON payloads, and JSON the way memdsl prints it.

Pure functions from data to strings; they must not talk to the daemon or print. Payloads
from a newer daemon may carry more keys: unknown keys are ignored, and a listing (status,
workspaces, files, tokens, proposals) of an unexpected shape is shown as JSON rather than
dropped; what else cannot be read raises (`commands.from_answer` tells it in one line).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

TYPE_CHECKING = False  # typing itself is not imported: every command would pay for it
if TYPE_CHECKING:
    from typing import Any

WORKSPACE_COLUMNS = (
    "name",
    "health",
    "lint_errors",
    "lint_warnings",
    "generation",
    "declarations",
    "files",
    "problems",
)
FILE_COLUMNS = ("file_id", "declarations", "status", "path")
TOKEN_COLUMNS = ("name", "scopes", "workspaces", "roles", "created", "expires")


def dump_json(data: Any) -> str:
    """JSON as memdsl's CLI prints it: two-space indent, non-ASCII kept."""
    return json.dumps(data, indent=2, ensure_ascii=False)


# Codes of the failures found on this side, in the daemon's error envelope with --json:
# the daemon gave no answer (or not in time), the command line or client.toml is wrong,
# or the command cannot go on for a local reason (a file, stdin, the workspace choice).
UNREACHABLE = "unreachable"
TIMEOUT = "timeout"
USAGE = "usage"
CONFIG = "config"
LOCAL = "local"


def error_envelope(code: str, message: str, detail: Mapping[str, Any] | None = None) -> str:
    """`{"error": {"code", "message", "detail"}}`, as the daemon's envelope is, printed."""
    return dump_json({"error": {"code": code, "message": message, "detail": dict(detail or {})}})


# What str.splitlines takes for a line end, besides "\n" (and "\r", dropped as a control).
_LINE_BREAKS = frozenset("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# ASCII text holding none of these is left as it is: the common case costs one scan.
_ASCII_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
# What would break a line, or act on a terminal, inside a one-line message.
_UNSAFE_IN_A_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def clean(text: str) -> str:
    """Text the daemon holds (written by agents: drawers, triples, diary entries, messages)
    made safe to place in a prompt or on a terminal: control characters (escape sequences
    among them) dropped, except newlines and tabs, and what renders as nothing
    (`prompt_text.shown`); every other line boundary (U+2028, U+2029, U+0085, vertical
    tab, form feed …) made a newline."""
    if text.isascii():
        return _ASCII_CONTROLS.sub(lambda m: "\n" if m.group() in _LINE_BREAKS else "", text)
    from memhub_protocol.prompt_text import shown  # only text beyond ASCII pays for it

    return shown("".join("\n" if ch in _LINE_BREAKS else ch for ch in text))


# What acts on a terminal: C0 controls but the tab and the newline, DEL and C1 controls.
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """memdsl's text forms (query, check, map, types, lint) as memdsl prints them, less
    what would act on a terminal (an escape sequence in a declaration's text): every
    other character is kept, invisible ones included, so that the output stays memdsl's
    byte for byte for any ordinary workspace."""
    return _TERMINAL_CONTROLS.sub("", text)


def escaped(text: str) -> str:
    """`text` kept on one line: a line break or a control character in it (an argument
    quoted by an error message, say) is shown as its escape (`\\n`, `\\x1b`)."""
    return _UNSAFE_IN_A_LINE.sub(lambda m: repr(m.group())[1:-1], text)


def text_body(text: str) -> str:
    """A text answer as memdsl's CLI would print it (`print` adds the final newline)."""
    return text if text.endswith("\n") else text + "\n"


def table(rows: Sequence[Mapping[str, Any]], columns: Iterable[str]) -> str:
    """Aligned columns (only those some row has), with an upper-case header line."""
    present = [c for c in columns if any(c in row for row in rows)]
    if not present:
        return ""
    cells = [[c.upper() for c in present]]
    cells += [[_cell(row.get(c)) for c in present] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(present))]
    return "\n".join(
        "  ".join(value.ljust(width) for value, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value) or "-"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _rows(payload: Any, key: str) -> list[dict[str, Any]] | None:
    rows = payload.get(key) if isinstance(payload, dict) else None
    if isinstance(rows, list) and all(isinstance(row, dict) for row in rows):
        return rows
    return None


def _workspace_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A workspace's problems are objects; the table shows how many there are.
    return [
        {**row, "problems": len(row["problems"])} if isinstance(row.get("problems"), list) else row
        for row in rows
    ]


def render_status(payload: Any) -> str:
    """Daemon facts (`key: value`), who the caller is, then one row per workspace."""
    if not isinstance(payload, dict):
        return dump_json(payload)
    lines = [
        f"{key}: {_cell(value)}"
        for key, value in payload.items()
        if key != "schema_version" and not isinstance(value, list | dict)
    ]
    identity = payload.get("identity")
    if isinstance(identity, dict):
        facts = "  ".join(
            f"{key}={_cell(identity.get(key))}" for key in ("scopes", "workspaces", "roles")
        )
        local = "  (local socket)" if identity.get("local") else ""
        lines.append(f"identity: {identity.get('name', '?')}  {facts}{local}")
    rows = _rows(payload, "workspaces")
    if rows:
        lines += ["", table(_workspace_rows(rows), WORKSPACE_COLUMNS)]
    elif rows == []:
        lines.append("no workspaces")
    return "\n".join(lines)


def render_workspaces(payload: Any) -> str:
    rows = _rows(payload, "workspaces")
    if rows is None:
        return dump_json(payload)
    if not rows:
        return "no workspaces"
    return table(_workspace_rows(rows), (*WORKSPACE_COLUMNS, "root"))


def render_declarations(payload: Any) -> str:
    """`list`: one line per declaration, `id  [status]  claim`, then a count."""
    rows = _rows(payload, "items")
    if rows is None:
        rows = _rows(payload, "declarations")
    if rows is None:
        return dump_json(payload)
    lines = []
    for row in rows:
        decl_id = row.get("id") or f"{row.get('type', '?')}:{row.get('name', '?')}"
        line = f"{decl_id}  [{row.get('status') or '-'}]"
        claim = row.get("claim") or row.get("claim_text")
        if claim:
            line += f"  {claim}"
        lines.append(line)
    total = payload.get("total")
    count = f"{len(rows)} declaration(s)"
    if isinstance(total, int) and total > len(rows):
        count += f" of {total}"
    return "\n".join([*lines, "", count] if lines else [count])


def render_files(payload: Any) -> str:
    rows = _rows(payload, "files")
    if rows is None:
        return dump_json(payload)
    return table(rows, FILE_COLUMNS) if rows else "no files"


def render_lint(payload: Any) -> str:
    """memdsl's lint output: one `file:line: severity[code] message` line per
    diagnostic, a blank line, then the counts. Sources that no longer parse (the
    daemon keeps their last good declarations) come first, as errors."""
    lines = [
        f"{p.get('file')}:{p.get('line')}: error[{p.get('kind')}] {p.get('message')}"
        for p in payload.get("source_problems", [])
    ]
    lines += [
        f"{d.get('file')}:{d.get('line')}: {d.get('severity')}[{d.get('code')}] {d.get('message')}"
        for d in payload["diagnostics"]
    ]
    summary = (
        f"\n{payload.get('declarations', 0)} declarations, "
        f"{payload.get('errors', 0)} error(s), {payload.get('warnings', 0)} warning(s)"
    )
    problems = len(payload.get("source_problems") or ())
    if problems:  # the counts are the declarations' lint; these files did not load
        summary += f", {problems} source problem(s) (above)"
    lines.append(summary)
    return "\n".join(lines)


def lint_exit_code(payload: Mapping[str, Any], *, strict: bool) -> int:
    """memdsl's rule: 1 on any error, or on any warning with --strict. The counts must be
    there (KeyError, TypeError otherwise): an answer without them is no clean lint."""
    errors, warnings = payload["errors"], payload["warnings"]
    if not isinstance(errors, int) or not isinstance(warnings, int):
        raise TypeError(f"lint counts that are not numbers: {errors!r}, {warnings!r}")
    return 1 if errors or payload.get("ok") is False or (strict and warnings) else 0


def verdict_of(payload: Any) -> str | None:
    """The verdict of a CompliancePack, given as JSON or as memdsl's text (`VERDICT: BLOCK`)."""
    if isinstance(payload, dict):
        verdict = payload.get("verdict")
        return verdict if isinstance(verdict, str) else None
    first = str(payload).lstrip().split("\n", 1)[0].strip()
    if first.upper().startswith("VERDICT:"):
        return first.split(":", 1)[1].strip().lower()
    return None


def render_tokens(payload: Any) -> str:
    rows = _rows(payload, "tokens")
    if rows is None:
        return dump_json(payload)
    return table(rows, TOKEN_COLUMNS) if rows else "no tokens"


def token_secret(payload: Any) -> str | None:
    if isinstance(payload, dict):
        for key in ("token", "secret"):
            if isinstance(payload.get(key), str):
                return payload[key]
    return None


def render_token_created(payload: Any) -> str:
    """A summary line, then the secret alone on its line (easy to copy or capture)."""
    secret = token_secret(payload)
    if secret is None:
        return dump_json(payload)
    return render_token_summary(payload) + f"\n{secret}"


def render_token_summary(payload: Any) -> str:
    """What a created token grants, on one line, without its secret."""
    facts = "  ".join(
        f"{key}={_cell(payload[key])}"
        for key in ("scopes", "workspaces", "roles", "expires")
        if key in payload
    )
    return f"created token {payload.get('name', '?')}  {facts}".rstrip()


def render_event(event: str, data: Any) -> str:
    """One line per event: its name, then its data as compact JSON."""
    if isinstance(data, str):
        return f"{event} {data}"
    return f"{event} {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}"


# -- review --------------------------------------------------------------------------------

PROPOSAL_COLUMNS = ("id", "status", "declaration", "proposer", "created_at", "decided_by")


def render_issue(issue: Any) -> str:
    """`severity[code] line N: message`, as memdsl's review prints a validation issue."""
    if not isinstance(issue, dict):
        return str(issue)
    where = f" line {issue['line']}" if issue.get("line") else ""
    return (
        f"{issue.get('severity', 'error')}[{issue.get('code', '?')}]{where}: {issue.get('message')}"
    )


def _issue_lines(payload: Mapping[str, Any], key: str) -> list[str]:
    issues = payload.get(key)
    return [f"  {render_issue(i)}" for i in issues] if isinstance(issues, list) else []


def render_proposed(payload: Any) -> str:
    """The new proposal's id and declaration, its warnings, and how to decide it."""
    if not isinstance(payload, dict) or "proposal_id" not in payload:
        return dump_json(payload)
    pid = payload["proposal_id"]
    lines = [f"proposal {pid} pending review: {payload.get('declaration_id', '')}"]
    if payload.get("replayed"):
        lines[0] = f"proposal {pid} was already made with this idempotency key (not made again)"
    lines += _issue_lines(payload, "warnings")
    into = payload.get("suggested_into") or "FILE.mem"
    # -w as well: a reviewer's memctl may reach several workspaces.
    workspace = f"-w {payload['workspace']} " if payload.get("workspace") else ""
    lines.append(f"a reviewer decides with: memctl {workspace}review approve {pid} --into {into}")
    return "\n".join(lines)


def render_proposals(payload: Any) -> str:
    rows = _rows(payload, "proposals")
    if rows is None:
        return dump_json(payload)
    status = payload.get("filter")
    kind = "proposal(s)" if status in (None, "all") else f"{status} proposal(s)"
    start, total = payload.get("offset") or 0, payload.get("total")
    if not rows:
        return f"no {kind}" if not start else f"no {kind} after the first {start} ({total} in all)"
    count = f"{len(rows)} {kind}"
    if isinstance(total, int) and (start or total > len(rows)):
        # A page of a longer list: where it is, and the option that reads on.
        following = start + len(rows)
        count += f" ({start + 1}-{following} of {total})"
        if following < total:
            count += f"; the next with --offset {following}"
    return f"{table(rows, PROPOSAL_COLUMNS)}\n\n{count}"


def render_proposal(payload: Any) -> str:
    """Header facts, the source, the validation against the workspace now, then the diff."""
    proposal = payload.get("proposal") if isinstance(payload, dict) else None
    if not isinstance(proposal, dict):
        return dump_json(payload)
    keys = ("id", "status", "declaration", "proposer", "client", "created_at", "generation")
    keys += ("reason", "supersedes", "decided_by", "decided_at", "merged_into", "reject_reason")
    header = [
        f"{key}: {_cell(proposal[key])}" for key in keys if proposal.get(key) not in ("", None)
    ]
    sections = ["\n".join(header), str(proposal.get("source", "")).rstrip("\n")]
    validation = payload.get("validation")
    if isinstance(validation, dict):
        verdict = "ok" if validation.get("ok") else "refused"
        lines = [f"validation against the workspace now: {verdict}"]
        lines += _issue_lines(validation, "errors") + _issue_lines(validation, "warnings")
        if payload.get("suggested_into"):
            lines.append(f"suggested target: --into {payload['suggested_into']}")
        sections.append("\n".join(lines))
    if payload.get("diff_withheld"):
        sections.append(f"diff into {payload.get('target')}: withheld (hidden declarations)")
    elif payload.get("diff"):
        sections.append(str(payload["diff"]).rstrip("\n"))
    return "\n\n".join(sections)


def render_decision(payload: Any) -> str:
    if not isinstance(payload, dict) or "status" not in payload:
        return dump_json(payload)
    pid, by = payload.get("proposal_id"), payload.get("decided_by")
    if payload["status"] == "approved":
        line = f"approved {pid}: {payload.get('declaration_id')} into {payload.get('file_id')}"
        line += f" by {by}; served at generation {_cell(payload.get('served_generation'))}"
        if payload.get("recovered"):
            line += " (finished an interrupted approval)"
        marked = payload.get("marked_superseded")
        if isinstance(marked, list) and marked:
            line += f"; marked superseded: {', '.join(str(item) for item in marked)}"
        return "\n".join([line, *_issue_lines(payload, "warnings")])
    return f"{payload['status']} {pid} by {by}"


def available_workspaces(detail: Any, *, choose: bool = True) -> str:
    """The workspaces a refused caller may use, from an error's `detail.available`, as the
    end of its one-line message ("" when the detail names none); `choose`: with how to
    choose one (-w), for a command that takes it."""
    available = detail.get("available") if isinstance(detail, dict) else None
    if not isinstance(available, list):
        return ""
    names = [str(name) for name in available if isinstance(name, str)]
    if not names:
        return "; this caller may use no workspace"
    hint = " (choose one with -w NAME)" if choose else ""
    return escaped(f"; workspaces you may use: {', '.join(names)}{hint}")
