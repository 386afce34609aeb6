"""The one exception the language layer raises for bad source text."""

from __future__ import annotations


class ParseError(Exception):
    """A syntax error at a position.

    `str(error)` is memdsl's form, `<file>:<line>: <message>`; `column` is an
    addition (1-based, 0 when unknown, e.g. for an empty file).
    """

    def __init__(self, message: str, file: str = "<text>", line: int = 0, column: int = 0):
        super().__init__(f"{file}:{line}: {message}")
        self.message = message
        self.file = file
        self.line = line
        self.column = column
