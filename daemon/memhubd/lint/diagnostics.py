"""Diagnostic: one lint finding, in memdsl's shape plus a column.

Immutable data with its two renderings (text line, JSON object); it must not decide
what is wrong with a workspace.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memhubd.model import Declaration

ERROR = "error"
WARNING = "warning"


class Diagnostic:
    """A finding at `file:line` (the declaration's line, as memdsl reports it).

    `column` is an addition: the column of the field at fault when known, else of
    the declaration; 0 when there is no location at all. Columns may need a second,
    precise parse of the file, so the linter hands over the declaration and field
    path and the column is worked out the first time someone reads it.
    """

    __slots__ = ("code", "severity", "message", "file", "line", "decl_id", "_column", "_where")

    def __init__(
        self,
        code: str,
        severity: str,
        message: str,
        file: str,
        line: int,
        decl_id: str | None = None,
        column: int = 0,
        *,
        where: tuple[Declaration, tuple[str, ...]] | None = None,
    ) -> None:
        self.code = code
        self.severity = severity
        self.message = message
        self.file = file
        self.line = line
        self.decl_id = decl_id
        self._column = column
        self._where = where

    @property
    def column(self) -> int:
        where = self._where
        if where is not None:
            decl, path = where
            position = decl.positions.get(path) if path else None
            self._column = position.column if position is not None else decl.column
            self._where = None
        return self._column

    def relocate(self, decl: Declaration) -> None:
        """Work the column out from `decl`: the same declaration as the one checked, which
        was a stand-in nothing keeps."""
        where = self._where
        if where is not None:
            self._where = (decl, where[1])

    def render(self) -> str:
        """`<file>:<line>: <severity>[<code>] <message>`, the CLI's line."""
        return f"{self.file}:{self.line}: {self.severity}[{self.code}] {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "decl_id": self.decl_id,
        }

    def _key(self) -> tuple[Any, ...]:
        return (
            self.code,
            self.severity,
            self.message,
            self.file,
            self.line,
            self.decl_id,
            self.column,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Diagnostic):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"Diagnostic(code={self.code!r}, severity={self.severity!r}, "
            f"message={self.message!r}, file={self.file!r}, line={self.line!r}, "
            f"decl_id={self.decl_id!r}, column={self.column!r})"
        )


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(diag.severity == ERROR for diag in diags)
