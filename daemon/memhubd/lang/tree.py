"""The syntax tree of a `.mem` document: plain data, positions on everything.

Field values are plain Python (`str`, `list`, `dict`) so that they compare equal
to what any memdsl-compatible reader produces; positions live beside them,
packed into one small array per declaration because workspaces hold 100k of them.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

Value = str | list["Value"] | dict[str, "Value"]  # noqa: UP007
FieldPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Position:
    """Where something starts: a file label, a 1-based line and a 1-based column."""

    file: str
    line: int
    column: int


class SourceText:
    """The text a document was parsed from, for positions computed on demand.

    The fast parser keeps no positions; the first time one is asked for, the
    precise parser runs once over the text and every declaration of the
    document gets its column and field positions from that run. A source may
    leave its text on disk (`text=None`) to save memory: it is re-read then, and
    if the file changed meanwhile, positions are simply unknown.
    """

    __slots__ = ("text", "file", "_fingerprint", "_located")

    def __init__(self, text: str | None, file: str, fingerprint: tuple[int, int] = (0, 0)) -> None:
        self.text = text
        self.file = file
        self._fingerprint = fingerprint
        self._located: list[tuple[int, array]] | None = None

    @classmethod
    def on_disk(cls, text: str, file: str) -> SourceText:
        return cls(None, file, (len(text), hash(text)))

    def _text(self) -> str | None:
        if self.text is not None:
            return self.text
        try:
            with open(self.file, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            return None
        return text if (len(text), hash(text)) == self._fingerprint else None

    def located(self, index: int) -> tuple[int, array | None]:
        if self._located is None:
            from memhubd.lang.errors import ParseError
            from memhubd.lang.parser import locate_declarations

            text = self._text()
            try:
                self._located = locate_declarations(text, self.file) if text is not None else []
            except ParseError:
                self._located = []
        if index >= len(self._located):
            return 0, None  # the source is gone or changed: positions unknown
        return self._located[index]


class RawDeclaration:
    """One `TYPE NAME { ... }` as written, before any type is resolved.

    `line` is the line of the type token (memdsl's rule) and `column` its
    column. `positions` maps the path of every key (top level and nested
    blocks, e.g. `("guard", "deny_any")`) to where that key was written; for a
    duplicated key the last occurrence wins, like its value. Equality ignores
    positions and columns.
    """

    __slots__ = (
        "kind",
        "name",
        "fields",
        "file",
        "line",
        "module",
        "_column",
        "_packed",
        "_given",
        "_source",
        "_index",
    )

    def __init__(
        self,
        kind: str,
        name: str,
        fields: dict[str, Any],
        file: str,
        line: int,
        module: str | None = None,
        column: int = 0,
        positions: dict[FieldPath, Position] | None = None,
        packed_positions: array | None = None,
        source: SourceText | None = None,
        index: int = 0,
    ) -> None:
        self.kind = kind
        self.name = name
        self.fields = fields
        self.file = file
        self.line = line
        self.module = module
        self._column = column
        self._packed = packed_positions
        self._given = positions
        self._source = source
        self._index = index

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"

    def _locate(self) -> None:
        if self._source is not None:
            self._column, self._packed = self._source.located(self._index)
            self._source = None  # located once, for better or worse

    @property
    def column(self) -> int:
        if not self._column:
            self._locate()
        return self._column or 1

    @property
    def position(self) -> Position:
        return Position(self.file, self.line, self.column)

    @property
    def positions(self) -> dict[FieldPath, Position]:
        if self._given is not None:
            return self._given
        if self._packed is None:
            self._locate()
        result: dict[FieldPath, Position] = {}
        if self._packed is not None:
            numbers = iter(self._packed)
            for _ in range(_SPAN_NUMBERS):
                next(numbers)
            _unpack(self.fields, (), numbers, self.file, result)
        return result

    @property
    def span(self) -> tuple[int, int]:
        """(start, end) character offsets of the whole declaration in its source text.

        Unlike `line` (memdsl's counter, which escaped newlines do not advance),
        offsets are exact, so cutting a declaration out of its file is safe.
        """
        if self._packed is None:
            self._locate()
        if self._packed is None or len(self._packed) < _SPAN_NUMBERS:
            raise ValueError(f"no source span known for {self.id}")
        return self._packed[2], self._packed[3]

    @property
    def end(self) -> Position:
        """Where the closing `}` of this declaration is (the declaration's last character)."""
        if self._packed is None:
            self._locate()
        if self._packed is not None and len(self._packed) >= 2:
            return Position(self.file, self._packed[0], self._packed[1])
        return self.position

    def position_of(self, *path: str) -> Position:
        """Where the key at `path` was written, or the declaration's own position."""
        return self.positions.get(path, self.position)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RawDeclaration):
            return NotImplemented
        return (
            self.kind == other.kind
            and self.name == other.name
            and self.fields == other.fields
            and self.file == other.file
            and self.line == other.line
            and self.module == other.module
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"RawDeclaration(kind={self.kind!r}, name={self.name!r}, fields={self.fields!r}, "
            f"file={self.file!r}, line={self.line!r}, module={self.module!r})"
        )


class SharedRawDeclaration(RawDeclaration):
    """A parsed declaration whose fields' keys and strings up to `SHARED_LENGTH`
    characters are interned already, as typing shares them (the fast parser makes them
    so while it reads them): typing keeps its fields as they are instead of copying."""

    __slots__ = ()


# Field values up to this long are interned where declarations are typed: keys,
# statuses, scopes, subjects, tags and sources repeat across a workspace, and one object
# each (instead of one per declaration) is a third of a parsed declaration's memory.
# Longer values (claims) rarely repeat.
SHARED_LENGTH = 24

# Packed arrays from the parser start with the closing brace's (line, column)
# and the declaration's (start, end) offsets; key positions follow.
_SPAN_NUMBERS = 4


def _unpack(fields: dict[str, Any], prefix: FieldPath, numbers: Any, file: str, out: dict) -> None:
    for key, value in fields.items():
        path = (*prefix, key)
        out[path] = Position(file, next(numbers), next(numbers))
        if isinstance(value, dict):
            _unpack(value, path, numbers, file, out)


@dataclass(slots=True)
class Document:
    """A parsed file: the last `module` statement, the `use` symbols, the declarations."""

    module: str | None
    uses: list[str]
    declarations: list[RawDeclaration]
    file: str
