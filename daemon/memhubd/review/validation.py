"""Proposal validation: memdsl's fail-closed checks (spec §7.4) plus memhub's size and id rules.

Pure functions over a workspace and text: no file contents are read or written here.
The first failing check decides, and its errors are values with codes. Given what one
proposer may read (a restricted workspace), no answer may depend on what it may not:
hidden ids are still taken, but nothing says what holds them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from memhubd.lang import Document, ParseError, as_read, parse_text
from memhubd.lint import lint
from memhubd.model import Declaration, Workspace
from memhubd.review.proposal import PROPOSAL_LABEL, is_proposal_id, one_line

DEFAULT_MAX_BYTES = 65536
MAX_FIELD_CHARS = 1000  # proposer, reviewer, client, reason: one header line each


@dataclass(frozen=True, slots=True)
class Issue:
    """One error or warning about a proposal; `line` is 0 when it is about the whole text."""

    code: str
    message: str
    severity: str = "error"
    line: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "line": self.line,
        }


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """memdsl's ValidationResult: ok, errors, warnings and the proposed declaration's id."""

    ok: bool
    errors: tuple[Issue, ...] = ()
    warnings: tuple[Issue, ...] = ()
    declaration_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": [issue.as_dict() for issue in self.errors],
            "warnings": [issue.as_dict() for issue in self.warnings],
            "declaration_id": self.declaration_id,
        }


def refusal(code: str, message: str, line: int = 0) -> ValidationResult:
    return ValidationResult(False, errors=(Issue(code, message, line=line),))


def utf8_size(text: str) -> int | None:
    """Encoded size, or None for text that cannot be stored (lone surrogates)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def validate_source(
    workspace: Workspace,
    source: str,
    *,
    supersedes: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ValidationResult:
    """Check one proposed declaration against `workspace`, in order, stopping at the first failure.

    size → empty → parse → exactly one declaration → new id → `supersedes` argument →
    merged lint (only diagnostics located in `<proposal>` count).

    `workspace` may be what the proposer may read (`Workspace.restricted`): ids are then
    checked against the whole workspace, since a hidden declaration's id is still taken,
    while the `supersedes` target and the lint see only what the proposer may read, so
    that no warning or error tells a hidden symbol from one that does not exist.
    """
    size = utf8_size(source)
    if size is None:
        return refusal("invalid_text", "proposal source is not valid Unicode text")
    if size > max_bytes:
        return refusal("too_large", f"proposal is {size} bytes; the limit is {max_bytes} bytes")
    source = source.replace("\r\n", "\n")  # as stored, and as memdsl reads a source file
    breaking = _read_back_break(source)
    if breaking is not None:
        return refusal("invalid_text", breaking)
    text = source.strip()
    if not text:
        return refusal("empty_proposal", "proposal source is empty")
    try:
        doc = parse_text(text, file=PROPOSAL_LABEL)
    except ParseError as exc:
        return refusal("parse_error", str(exc))
    count = len(doc.declarations)
    if count != 1:
        return refusal(
            "single_declaration_required",
            f"a proposal must contain exactly one declaration, got {count}",
        )
    merged = merged_workspace(workspace, doc)
    proposed = merged.declarations[-1]
    problem = _id_problem(workspace, proposed) or _supersedes_problem(
        workspace, proposed, supersedes
    )
    if problem is not None and problem.code == "declaration_exists":
        # memdsl answers an existing id with its merged lint (duplicate_declaration_id and
        # every other finding); memhub's refusal comes first, with how to correct it.
        linted = _merged_lint(merged, proposed.id)
        return ValidationResult(False, (problem, *linted.errors), linted.warnings, proposed.id)
    if problem is not None:
        return ValidationResult(False, errors=(problem,), declaration_id=proposed.id)
    return _merged_lint(merged, proposed.id)


def merged_workspace(workspace: Workspace, doc: Document) -> Workspace:
    """A copy of `workspace` with `doc` appended; `workspace` itself is left untouched."""
    merged = Workspace(
        declarations=list(workspace.declarations),
        files=list(workspace.files),
        registry=workspace.registry,
    )
    merged.add_document(doc)
    return merged


# What a stored proposal, read back line by line, takes for a line end besides "\n"
# (`str.splitlines`): kept in a source, the text approved would not be the text
# validated (a comment or a string would end early, and what follows become live).
_READ_BACK_BREAKS = {
    "\r": "a carriage return (CR) not followed by LF",
    "\x0b": "a vertical tab (U+000B)",
    "\x0c": "a form feed (U+000C)",
    "\x1c": "a file separator (U+001C)",
    "\x1d": "a group separator (U+001D)",
    "\x1e": "a record separator (U+001E)",
    "\x85": "a next-line character (U+0085)",
    "\u2028": "a line separator (U+2028)",
    "\u2029": "a paragraph separator (U+2029)",
}


_READ_BACK_BREAK = re.compile("[" + "".join(_READ_BACK_BREAKS) + "]")


def _read_back_break(source: str) -> str | None:
    """Why `source` cannot be stored as it is validated, or None."""
    found = _READ_BACK_BREAK.search(source)
    if found is None:
        return None
    line = source.count("\n", 0, found.start()) + 1
    return (
        f"proposal source holds {_READ_BACK_BREAKS[found.group()]} at line {line}: a stored "
        "proposal reads it as a line end, so it would not be the text validated; "
        "end lines with LF"
    )


def with_file_content(workspace: Workspace, path: str, text: str) -> Workspace:
    """`workspace` with the file at `path` (compared by real path) replaced by `text`.

    Approval validates against the target as it is on disk now, which may be newer
    than the loaded workspace. Raises ParseError when `text` does not parse.
    """
    real = os.path.realpath(path)
    resolved: dict[str, bool] = {}

    def is_target(label: str) -> bool:
        if label not in resolved:
            resolved[label] = os.path.realpath(label) == real
        return resolved[label]

    labels = [label for label in workspace.files if is_target(label)]
    label = labels[0] if labels else path
    # Read as a served source is (CRLF and a lone CR end a line), or the file checked
    # would not be the file served.
    doc = parse_text(as_read(text), file=label)
    rebuilt = Workspace(
        declarations=[d for d in workspace.declarations if not is_target(d.file)],
        files=[f for f in workspace.files if not is_target(f)],
        registry=workspace.registry,
    )
    rebuilt.add_document(doc)
    return rebuilt


def _id_problem(workspace: Workspace, proposed: Declaration) -> Issue | None:
    existing = _declared(workspace, proposed.id)
    if existing is None:
        if _declared(workspace.whole, proposed.id) is None:
            return None
        # Taken by a declaration the proposer may not read: refuse without saying where,
        # what it is, or whether it is the very declaration the proposer has in mind.
        return Issue(
            "declaration_exists",
            f"'{proposed.id}' is not available in this workspace; propose it under another name",
            line=proposed.line,
        )
    return Issue(
        "declaration_exists",
        f"'{proposed.id}' already exists at {existing.file}:{existing.line}; to correct it, "
        f'propose it under a new name that declares supersedes: "{proposed.id}"',
        line=proposed.line,
    )


def _supersedes_problem(
    workspace: Workspace, proposed: Declaration, supersedes: str | None
) -> Issue | None:
    target = (supersedes or "").strip()
    if not target:
        return None
    if target not in proposed.relation_targets("supersedes"):
        return Issue(
            "supersedes_not_declared",
            f'the proposal must declare supersedes: "{target}" in its source',
            line=proposed.line,
        )
    if _declared(workspace, target) is None:
        return Issue(
            "supersedes_unknown",
            f"'{target}' is not a declaration in this workspace (give its full type:name id)",
            line=proposed.line,
        )
    return None


def _declared(workspace: Workspace, decl_id: str) -> Declaration | None:
    return next((d for d in workspace.declarations if d.id == decl_id), None)


def _merged_lint(merged: Workspace, declaration_id: str) -> ValidationResult:
    errors: list[Issue] = []
    warnings: list[Issue] = []
    for diag in lint(merged):
        if diag.file != PROPOSAL_LABEL:
            continue  # the workspace's own problems are not the proposal's fault
        issue = Issue(diag.code, diag.message, diag.severity, diag.line)
        (errors if diag.severity == "error" else warnings).append(issue)
    return ValidationResult(not errors, tuple(errors), tuple(warnings), declaration_id)


# ---- arguments ------------------------------------------------------------


def proposal_id_problem(proposal_id: object) -> Issue | None:
    """Refuses anything but an id memhub could have minted: ids become file names."""
    if is_proposal_id(proposal_id):
        return None
    return Issue(
        "invalid_proposal_id", f"{proposal_id!r} is not a proposal id (p-YYYYMMDD-HHMMSS-xxxxxx)"
    )


def field_problem(name: str, value: object, *, required: bool = False) -> Issue | None:
    """Checks a caller-supplied one-line field (identity, client, reason)."""
    if not isinstance(value, str):
        return Issue(f"invalid_{name}", f"{name} must be text")
    if utf8_size(value) is None:
        return Issue(f"invalid_{name}", f"{name} is not valid Unicode text")
    if required and not one_line(value):
        return Issue(f"{name}_required", f"a {name} identity is required")
    if len(value) > MAX_FIELD_CHARS:
        return Issue(f"{name}_too_long", f"{name} is longer than {MAX_FIELD_CHARS} characters")
    return None


def generation_problem(generation: object) -> Issue | None:
    if generation is None or (
        isinstance(generation, int) and not isinstance(generation, bool) and generation >= 0
    ):
        return None
    return Issue("invalid_generation", "generation must be a non-negative integer or None")
