"""Source writer: renders declarations back to canonical `.mem` text, and changes one
declaration's status in place.

For every declaration the parser accepts, `parse_text(write_declaration(d))`
gives back the same type, name and fields. Approvals use it to write memory, and
`set_status` to mark what an approved correction supersedes; the rest of a file's
text (comments, layout) is never rewritten.
"""

from __future__ import annotations

import re
from typing import Any

from memhubd.lang.errors import ParseError
from memhubd.lang.lexer import ATOM, PUNCT, STRING, Token, tokenize
from memhubd.lang.parser import parse_text
from memhubd.lang.tree import Document, RawDeclaration

_INDENT = "  "


def _is_bare(text: str) -> bool:
    """True when `text` lexes back as exactly one atom with the same value.

    A trailing probe atom makes sure the text does not swallow what follows it
    (an unbalanced call-form group would).
    """
    if not text or text in ("module", "use"):
        return False
    try:
        tokens = tokenize(text + " probe")
    except ParseError:
        return False
    return (
        len(tokens) == 2
        and tokens[0].kind == ATOM
        and tokens[0].value == text
        and tokens[1].value == "probe"
    )


def quote(text: str) -> str:
    """A double-quoted string literal that the lexer decodes back to `text`."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def write_value(value: Any) -> str:
    """A field value (string, list) in `.mem` syntax, on one line."""
    if isinstance(value, list):
        return "[" + ", ".join(write_value(item) for item in value) + "]"
    text = str(value)
    return text if _is_bare(text) else quote(text)


def _write_block(fields: dict[str, Any], depth: int, out: list[str]) -> None:
    pad = _INDENT * depth
    for key, value in fields.items():
        if isinstance(value, dict):
            out.append(f"{pad}{key} {{")
            _write_block(value, depth + 1, out)
            out.append(f"{pad}}}")
        else:
            out.append(f"{pad}{key}: {write_value(value)}")


def write_declaration(declaration: RawDeclaration | Any) -> str:
    """Canonical text of one declaration, ending with a newline.

    Type, name and keys are atoms and are written as they are; values are bare
    when that lexes back unchanged, quoted otherwise.
    """
    out = [f"{declaration.kind} {declaration.name} {{"]
    _write_block(declaration.fields, 1, out)
    out.append("}")
    return "\n".join(out) + "\n"


def write_document(document: Document) -> str:
    """Canonical text of a whole document: module, uses, then the declarations."""
    parts: list[str] = []
    if document.module is not None:
        parts.append(f"module {document.module}\n")
    parts.extend(f"use {symbol}\n" for symbol in document.uses)
    for declaration in document.declarations:
        if parts:
            parts.append("\n")
        parts.append(write_declaration(declaration))
    return "".join(parts)


# The raw extent of a value token (the lexer keeps only where tokens start).
_RAW_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_RAW_ATOM = re.compile(r'[^ \t\r\n#{}\[\]:,"(]+')


def line_end(text: str) -> str:
    """The line end to write into `text`: CRLF when every line of it ends in CRLF (a file
    checked out with `core.autocrlf`, say), else LF. memdsl writes LF only; a file memhub
    edits keeps its own bytes, so what it adds follows them rather than mixing the two."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") == text.count("\r") else "\n"


def set_status(text: str, kind: str, name: str, status: str) -> str | None:
    """`text` with the status of declaration `kind name` set to `status`.

    Every `status:` that decides it (top level and in `lifecycle { }`) is rewritten
    where it stands; without one, `status: <status>` is inserted after the opening
    brace (on a line of its own, ended as `line_end` says). Only those characters change. None when the declaration is not in `text`
    exactly once, its status is not a plain value, or the result would not parse to
    the same declarations with only that status changed.
    """
    try:
        tokens = tokenize(text)
    except ParseError:
        return None
    bodies = [span for span in _declaration_bodies(tokens) if span[0] == (kind, name)]
    if len(bodies) != 1:
        return None
    _head, opening, start, end = bodies[0]
    values = _status_values(tokens, start, end)
    if values is None:
        return None
    new_value = write_value(status)
    edits: list[tuple[int, int, str]] = []
    for token in values:
        raw = (_RAW_STRING if token.kind == STRING else _RAW_ATOM).match(text, token.offset)
        if raw is None:
            return None
        edits.append((token.offset, raw.end(), new_value))
    if not edits:
        edits.append(_insertion(text, tokens, opening, f"status: {new_value}", line_end(text)))
    changed = text
    for begin, finish, replacement in sorted(edits, reverse=True):
        changed = changed[:begin] + replacement + changed[finish:]
    return changed if _only_status_changed(text, changed, kind, name, status) else None


def _declaration_bodies(
    tokens: list[Token],
) -> list[tuple[tuple[str, str], Token, int, int]]:
    """(kind, name), the opening brace, and the token range inside each top-level body."""
    found = []
    depth = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.kind == PUNCT and token.value in "{}":
            depth += 1 if token.value == "{" else -1
        elif (
            depth == 0
            and token.kind == ATOM
            and index + 2 < len(tokens)
            and tokens[index + 1].kind == ATOM
            and tokens[index + 2].kind == PUNCT
            and tokens[index + 2].value == "{"
        ):
            close = _closing(tokens, index + 2)
            if close is None:
                return found
            found.append(
                ((token.value, tokens[index + 1].value), tokens[index + 2], index + 3, close)
            )
            index = close + 1
            continue
        index += 1
    return found


def _closing(tokens: list[Token], opening: int) -> int | None:
    depth = 0
    for index in range(opening, len(tokens)):
        token = tokens[index]
        if token.kind == PUNCT and token.value in "{}":
            depth += 1 if token.value == "{" else -1
            if depth == 0:
                return index
    return None


def _status_values(tokens: list[Token], start: int, end: int) -> list[Token] | None:
    """The value tokens of `status:` at the top of a body and in its `lifecycle` block;
    None when one of them is not a single atom or string."""
    values: list[Token] = []
    depth = 0
    block: list[str] = []
    for index in range(start, end):
        token = tokens[index]
        if token.kind == PUNCT and token.value == "{":
            key = tokens[index - 1].value if index > start else ""
            block.append(key)
            depth += 1
        elif token.kind == PUNCT and token.value == "}":
            block.pop()
            depth -= 1
        elif (
            token.kind == ATOM
            and token.value == "status"
            and index + 2 < end
            and tokens[index + 1].value == ":"
            and tokens[index + 1].kind == PUNCT
            and (depth == 0 or (depth == 1 and block == ["lifecycle"]))
        ):
            value = tokens[index + 2]
            if value.kind not in (ATOM, STRING):
                return None
            values.append(value)
    return values


def _insertion(
    text: str, tokens: list[Token], opening: Token, field: str, end: str
) -> tuple[int, int, str]:
    """Where and how to insert `field` as the first entry of the body opened by `opening`
    (`end`: the line end of a line of its own)."""
    after = opening.offset + 1
    following = next((t for t in tokens if t.offset > opening.offset), None)
    if following is not None and following.line > opening.line:
        line_start = text.rfind("\n", 0, following.offset) + 1
        indent = text[line_start : following.offset]
        if not indent.strip():
            return (line_start, line_start, f"{indent}{field}{end}")
    return (after, after, f" {field}")


def _only_status_changed(before: str, after: str, kind: str, name: str, status: str) -> bool:
    try:
        old, new = parse_text(before), parse_text(after)
    except ParseError:
        return False
    if len(old.declarations) != len(new.declarations):
        return False
    for was, now in zip(old.declarations, new.declarations, strict=True):
        if (was.kind, was.name, was.module) != (now.kind, now.name, now.module):
            return False
        if (was.kind, was.name) != (kind, name):
            if was.fields != now.fields:  # lines may shift by the inserted one
                return False
            continue
        lifecycle = now.fields.get("lifecycle")
        decided = (
            lifecycle["status"]
            if isinstance(lifecycle, dict) and "status" in lifecycle
            else now.fields.get("status")
        )
        if decided != status or _without_status(was.fields) != _without_status(now.fields):
            return False
    return True


def _without_status(fields: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in fields.items() if key != "status"}
    lifecycle = out.get("lifecycle")
    if isinstance(lifecycle, dict):
        out["lifecycle"] = {key: value for key, value in lifecycle.items() if key != "status"}
    return out
