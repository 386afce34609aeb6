"""Parser for `.mem` documents: tokens in, a Document of RawDeclarations out.

Grammar and error messages are memdsl 0.5.1's (spec §1.2). Nesting is bounded
(MAX_DEPTH) so that hostile input yields a ParseError, never a RecursionError.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from array import array
from typing import Any

from memhubd.lang.errors import ParseError
from memhubd.lang.fastpath import Unusual, fast_parse
from memhubd.lang.lexer import ATOM, PUNCT, Token, tokenize
from memhubd.lang.tree import Document, RawDeclaration, SharedRawDeclaration, SourceText

# Deeper than any real memory needs, and as deep as memdsl parses lists (Python's
# default recursion limit stops it near 500; blocks near 990).
MAX_DEPTH = 500
# The recursion limit parsing sets at least: the precise parser takes two frames a
# level, and later stages walk nested values recursively too, on top of whatever
# stack their caller has. Python frames take no C stack (3.11+), and the C-level
# walks (encoding, pickling) stay within MAX_DEPTH levels.
RECURSION_LIMIT = 4 * MAX_DEPTH + 2000

# Per block, while parsing: key -> (line, column, positions of a nested block or None).
_KeyPositions = dict[str, tuple[int, int, Any]]


class _Parser:
    __slots__ = ("tokens", "file", "pos", "count")

    def __init__(self, tokens: list[Token], file: str) -> None:
        self.tokens = tokens
        self.file = file
        self.pos = 0
        self.count = len(tokens)

    def _error(self, message: str, token: Token | None) -> ParseError:
        if token is None:
            last = self.tokens[-1] if self.tokens else None
            return ParseError(message, self.file, last.line if last else 0, 0)
        return ParseError(message, self.file, token.line, token.column)

    def _next(self) -> Token:
        if self.pos >= self.count:
            raise self._error("unexpected end of file", None)
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def _peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < self.count else None

    def document(self) -> Document:
        module: str | None = None
        uses: list[str] = []
        declarations: list[RawDeclaration] = []
        while self.pos < self.count:
            token = self._next()
            if token.kind != ATOM:
                raise self._error(f"expected keyword or kind, got '{token.value}'", token)
            if token.value == "module":
                name = self._next()
                if name.kind != ATOM:
                    raise self._error("expected module name", name)
                module = name.value
            elif token.value == "use":
                name = self._next()
                if name.kind != ATOM:
                    raise self._error("expected symbol after 'use'", name)
                uses.append(name.value)
            else:
                declarations.append(self._declaration(token))
        for declaration in declarations:
            declaration.module = module
        return Document(module=module, uses=uses, declarations=declarations, file=self.file)

    def _declaration(self, type_token: Token) -> RawDeclaration:
        name = self._next()
        if name.kind != ATOM:
            raise self._error(f"expected declaration name after '{type_token.value}'", name)
        fields, key_positions = self._block(1)
        closing = self.tokens[self.pos - 1]
        packed = array("l", (closing.line, closing.column, type_token.offset, closing.offset + 1))
        _flatten_positions(fields, key_positions, packed)
        return RawDeclaration(
            kind=type_token.value,
            name=name.value,
            fields=fields,
            file=self.file,
            line=type_token.line,
            column=type_token.column,
            packed_positions=packed,
        )

    def _block(self, depth: int) -> tuple[dict[str, Any], _KeyPositions]:
        opening = self._next()
        if opening.kind != PUNCT or opening.value != "{":
            raise self._error(f"expected '{{', got '{opening.value}'", opening)
        if depth > MAX_DEPTH:
            raise self._error(f"nesting deeper than {MAX_DEPTH} levels", opening)
        fields: dict[str, Any] = {}
        positions: _KeyPositions = {}
        while True:
            token = self._peek()
            if token is None:
                raise self._error("unterminated block", None)
            if token.kind == PUNCT and token.value == "}":
                self.pos += 1
                return fields, positions
            key = self._next()
            if key.kind != ATOM:
                raise self._error(f"expected field name, got '{key.value}'", key)
            separator = self._peek()
            if separator is not None and separator.kind == PUNCT and separator.value == ":":
                self.pos += 1
                fields[key.value] = self._value(depth)
                positions[key.value] = (key.line, key.column, None)
            elif separator is not None and separator.kind == PUNCT and separator.value == "{":
                fields[key.value], nested = self._block(depth + 1)
                positions[key.value] = (key.line, key.column, nested)
            else:
                got = separator.value if separator is not None else "end of file"
                raise self._error(f"expected ':' or '{{' after '{key.value}', got '{got}'", key)

    def _value(self, depth: int) -> Any:
        token = self._peek()
        if token is None:
            raise self._error("expected value", None)
        if token.kind == PUNCT and token.value == "[":
            return self._list(depth + 1)
        self.pos += 1
        if token.kind != PUNCT:
            return token.value
        raise self._error(f"unexpected value '{token.value}'", token)

    def _list(self, depth: int) -> list[Any]:
        opening = self._next()  # the "[" already seen by _value
        if depth > MAX_DEPTH:
            raise self._error(f"nesting deeper than {MAX_DEPTH} levels", opening)
        items: list[Any] = []
        while True:
            token = self._peek()
            if token is None:
                raise self._error("unterminated list", None)
            if token.kind == PUNCT and token.value == "]":
                self.pos += 1
                return items
            items.append(self._value(depth))
            token = self._peek()
            if token is not None and token.kind == PUNCT and token.value == ",":
                self.pos += 1


def _flatten_positions(fields: dict[str, Any], positions: _KeyPositions, out: array) -> None:
    """Store key positions as (line, column) pairs in the pre-order of the final fields."""
    for key, value in fields.items():
        line, column, nested = positions[key]
        out.append(line)
        out.append(column)
        if isinstance(value, dict):
            _flatten_positions(value, nested, out)


def _room_to_recurse() -> None:
    """Raise the process's recursion limit to RECURSION_LIMIT if it is lower (never
    lowered): nesting up to MAX_DEPTH must reach its ParseError, or its answer."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


# At import too: a start that restores parsed declarations from the saved state parses
# nothing, yet walks them.
_room_to_recurse()


def parse_precise(text: str, file: str = "<text>") -> Document:
    """Parse with the position-tracking parser (every column and field position kept)."""
    _room_to_recurse()
    return _Parser(tokenize(text, file), file).document()


def locate_declarations(text: str, file: str) -> list[tuple[int, array]]:
    """(column, packed field positions) of every declaration in `text`, in order."""
    document = parse_precise(text, file)
    return [(d._column, d._packed) for d in document.declarations]  # noqa: SLF001


def parse_text(text: str, file: str = "<text>", *, keep_text: bool = True) -> Document:
    """Parse `.mem` source text. Raises ParseError (and nothing else) on bad input.

    With `keep_text=False` (files), positions asked for later re-read the file.
    """
    _room_to_recurse()
    try:
        module, uses, found = fast_parse(text, MAX_DEPTH)
    except Unusual:
        return parse_precise(text, file)
    source = SourceText(text, file) if keep_text else SourceText.on_disk(text, file)
    declarations: list[RawDeclaration] = [
        SharedRawDeclaration(kind, name, fields, file, line, module, source=source, index=index)
        for index, (kind, name, fields, line) in enumerate(found)
    ]
    return Document(module=module, uses=uses, declarations=declarations, file=file)


def parse_file(path: str) -> Document:
    """Parse a `.mem` file read as UTF-8; its label in errors is `path` as given. A file
    that is not UTF-8 raises UnicodeDecodeError naming `path`; one that is no regular
    file (a FIFO, a device, or a link to one, which may never end) raises OSError."""
    # Opened without waiting: opening a FIFO for reading waits for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with open(fd, encoding="utf-8") as handle:
        try:
            text = handle.read()
        except UnicodeDecodeError as error:
            reason = f"{error.reason} (in {path})"
            raise UnicodeDecodeError(
                error.encoding, error.object, error.start, error.end, reason
            ) from None
    return parse_text(text, file=path, keep_text=False)


def as_read(text: str) -> str:
    """`text` as memdsl reads a source file (text mode): CRLF and a lone CR end a line
    as LF."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")
