"""Enforcement of memdsl's `access_policy.readers`: which declarations a caller may see,
raw source text with the hidden declarations cut out, and load problems redacted.

`readers` decides who may READ a declaration, never who is bound by it: nothing here
decides what a rule enforces. Pure functions over declarations, identities and text;
no I/O, no knowledge of HTTP.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memhubd.auth.identity import ANY, Identity

if TYPE_CHECKING:
    from memhubd.model import Declaration

    _D = TypeVar("_D", bound=Declaration)
else:
    _D = TypeVar("_D")

HIDDEN_MARKER = "# [1 declaration hidden by access policy]"
# The comment an approval writes above the declaration it appends (memdsl's marker).
_APPROVAL_LINE = re.compile(r"[ \t]*# approved from proposal \S+ at [^\n]*")

# (start line, start column, end line, end column), 1-based; the end is the closing `}`.
SourceSpan = tuple[int, int, int, int]


def readers_of(declaration: Declaration) -> frozenset[str]:
    """The roles named by the derived policy's `readers` (a list or a single value)."""
    return readers_in(declaration.access_policy)


def readers_in(policy: dict[str, Any]) -> frozenset[str]:
    """`readers_of` a declaration whose derived access policy is `policy`."""
    readers = policy.get("readers")
    if readers is None:
        return frozenset()
    items = readers if isinstance(readers, list) else [readers]
    return frozenset(text for text in (str(item).strip() for item in items) if text)


def is_visible(declaration: Declaration, identity: Identity) -> bool:
    """False when the declaration names readers and the caller holds none of those roles."""
    return is_readable(declaration, identity.roles)


def is_readable(declaration: Declaration, roles: frozenset[str]) -> bool:
    """`is_visible` for a set of roles: `*` reads everything, no readers means everyone."""
    return policy_readable(declaration.access_policy, roles)


def policy_readable(policy: dict[str, Any], roles: frozenset[str]) -> bool:
    """`is_readable` for a declaration whose derived access policy is `policy`."""
    if ANY in roles:
        return True
    readers = readers_in(policy)
    return not readers or not readers.isdisjoint(roles)


# Problem messages that are fixed text (they quote nothing from any file): a missing
# workspace directory's (`memhubd.runtime.snapshot.ROOT_MISSING`).
_FIXED_PROBLEM_MESSAGES = frozenset(
    {"workspace directory is missing; its last good version is served until it is back"}
)
# Schema files are served whole to every reader (`types`), so their errors hide nothing.
_UNREDACTED_KINDS = frozenset({"schema_error"})
_NEUTRAL_PROBLEM_MESSAGES = {
    "parse_error": (
        "the file does not parse; its last good version is served "
        "(the error text is withheld: it may quote declarations hidden from you)"
    ),
}
_NEUTRAL_PROBLEM_MESSAGE = (
    "the file could not be loaded; its last good version is served "
    "(details withheld: they may quote declarations hidden from you)"
)


def redact_problem(problem: dict[str, Any]) -> dict[str, Any]:
    """A load problem (`SourceProblem.as_dict()`) for a caller who does not see everything.

    Kind, file and position stay; a message that may quote source text is replaced by
    a neutral one. The text on disk that failed to load is not parsed, so nothing can
    prove it holds no hidden declaration: only fixed messages and schema errors stay.
    """
    kind = str(problem.get("kind", ""))
    message = problem.get("message")
    if kind in _UNREDACTED_KINDS or message in _FIXED_PROBLEM_MESSAGES:
        return dict(problem)
    neutral = _NEUTRAL_PROBLEM_MESSAGES.get(kind, _NEUTRAL_PROBLEM_MESSAGE)
    return {**problem, "message": neutral}


def split_visible(declarations: Iterable[_D], identity: Identity) -> tuple[list[_D], int]:
    """The declarations the caller may see, in order, and how many were hidden.

    Callers report only the count: the ids of hidden declarations must not leak.
    """
    visible: list[_D] = []
    hidden = 0
    for declaration in declarations:
        if is_visible(declaration, identity):
            visible.append(declaration)
        else:
            hidden += 1
    return visible, hidden


def redact_source(text: str, hidden: Sequence[SourceSpan]) -> str:
    """`text` with each hidden span replaced by a one-line `HIDDEN_MARKER` comment.

    Text after a span on its last line moves to a line of its own, since the
    comment runs to the end of its line. Raises ValueError for a span that is out
    of range, overlaps another, or does not end on a `}`: a wrong span could
    otherwise leave part of a hidden declaration in the output.
    """
    if not hidden:
        return text
    line_starts = _line_starts(text)
    spans = sorted(
        _with_approval(text, line_starts, _offsets(text, line_starts, span)) for span in hidden
    )
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        if start < position:
            raise ValueError(f"overlapping hidden spans at offset {start}")
        pieces.append(text[position:start])
        pieces.append(HIDDEN_MARKER)
        position = end
        line_end = _line_end(text, end)
        rest = text[end:line_end]
        if rest.strip():
            pieces.append("\n")
            position = end + len(rest) - len(rest.lstrip())
    pieces.append(text[position:])
    return "".join(pieces)


def _with_approval(text: str, line_starts: list[int], span: tuple[int, int]) -> tuple[int, int]:
    """`span` widened to the approval comment review wrote above the declaration it
    begins (`# approved from proposal <id> at <time>`), with the comment lines between
    them that the approved source began with: the proposal is hidden with its
    declaration, so its id, time and text must go with it."""
    start, end = span
    line = bisect.bisect_right(line_starts, start) - 1
    if line < 1 or text[line_starts[line] : start].strip():
        return span
    # Up past the comment lines the approved source began with, to the approval's.
    while line >= 1:
        above = text[line_starts[line - 1] : line_starts[line] - 1]
        if _APPROVAL_LINE.fullmatch(above):
            return line_starts[line - 1], end
        if not above.lstrip().startswith("#"):
            return span
        line -= 1
    return span


def _line_starts(text: str) -> list[int]:
    # Lines end at "\n" only, as the tokenizer counts them.
    starts = [0]
    starts.extend(index + 1 for index, char in enumerate(text) if char == "\n")
    return starts


def _line_end(text: str, position: int) -> int:
    found = text.find("\n", position)
    return len(text) if found < 0 else found


def _offsets(text: str, line_starts: list[int], span: SourceSpan) -> tuple[int, int]:
    """Character offsets [start, end) of a span; the end column is inclusive."""
    start_line, start_column, end_line, end_column = span
    start = _offset(text, line_starts, start_line, start_column)
    end = _offset(text, line_starts, end_line, end_column)
    if end < start or text[end] != "}":
        raise ValueError(f"hidden span {span} does not end on a closing brace")
    return start, end + 1


def _offset(text: str, line_starts: list[int], line: int, column: int) -> int:
    if not 1 <= line <= len(line_starts):
        raise ValueError(f"line {line} is outside the text ({len(line_starts)} lines)")
    start = line_starts[line - 1]
    if not 1 <= column <= _line_end(text, start) - start:
        raise ValueError(f"column {column} is outside line {line}")
    return start + column - 1
