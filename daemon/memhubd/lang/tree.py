"""The syntax tree of a `.mem` document: plain data, positions on everything.

Field values are plain Python (`str`, `list`, `dict`) so that they compare equal
to what any memdsl-compatible reader produces; positions live beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

Value = Union[str, list["Value"], dict[str, "Value"]]
FieldPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Position:
    """Where something starts: a file label, a 1-based line and a 1-based column."""

    file: str
    line: int
    column: int


@dataclass(slots=True)
class RawDeclaration:
    """One `TYPE NAME { ... }` as written, before any type is resolved.

    `line` is the line of the type token (memdsl's rule). `positions` maps the
    path of every key (top level and nested blocks, e.g. `("guard", "deny_any")`)
    to where that key was written; for a duplicated key the last occurrence wins,
    like its value.
    """

    kind: str
    name: str
    fields: dict[str, Value]
    file: str
    line: int
    module: str | None = None
    column: int = 1
    positions: dict[FieldPath, Position] = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(slots=True)
class Document:
    """A parsed file: the last `module` statement, the `use` symbols, the declarations."""

    module: str | None
    uses: list[str]
    declarations: list[RawDeclaration]
    file: str
