"""Tokenizer for `.mem` text: one regex-driven pass, memdsl 0.5.1's lexical rules.

The whole text is tokenized before parsing starts (so an unterminated string
anywhere wins over an earlier syntax error, as in memdsl). Line numbers follow
memdsl's counter exactly, including its quirk that a backslash-escaped newline
inside a string does not advance it; columns are real 1-based columns.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from memhubd.lang.errors import ParseError

ATOM = "atom"
STRING = "string"
PUNCT = "punct"

PUNCTUATION = frozenset("{}[]:,")

# Atom characters stop at whitespace, '#', punctuation, '"' and '(' (a call-form
# group then follows and ends the atom).
_SCANNER = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"[^"\\]*(?:\\.[^"\\]*)*")
  | (?P<punct>[{}\[\]:,])
  | (?P<atom>[^ \t\r\n\#{}\[\]:,"(]+)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
_ESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)


class Token(NamedTuple):
    """A token: its kind, its value (strings unescaped), and where it starts."""

    kind: str
    value: str
    line: int  # memdsl's line counter (see the module docstring)
    column: int
    offset: int  # index of the token's first character in the text


def _unescape(body: str) -> tuple[str, int]:
    """Decode a string body; also count escaped newlines (they do not advance the line)."""
    escaped_newlines = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal escaped_newlines
        char = match.group(1)
        if char == "\n":
            escaped_newlines += 1
        return _ESCAPES.get(char, char)

    return _ESCAPE_RE.sub(replace, body), escaped_newlines


def _paren_group_end(text: str, start: int) -> int:
    """Index just past the `)` matching the `(` at `start`, or len(text) if unbalanced."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        opening = text.find("(", i)
        closing = text.find(")", i)
        if closing < 0:
            return n
        if 0 <= opening < closing:
            depth += 1
            i = opening + 1
            continue
        depth -= 1
        i = closing + 1
        if depth == 0:
            return i
    return n


def tokenize(text: str, file: str = "<text>") -> list[Token]:
    """Split `text` into tokens; raises ParseError only for an unterminated string."""
    tokens: list[Token] = []
    append = tokens.append
    match_at = _SCANNER.match
    pos = 0
    line = 1
    line_start = 0  # offset of the first character of the current real line
    n = len(text)
    while pos < n:
        m = match_at(text, pos)
        assert m is not None  # the `other` branch matches any character
        kind = m.lastgroup
        end = m.end()
        if kind == "ws":
            newlines = text.count("\n", pos, end)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, end) + 1
        elif kind == "comment":
            pass
        elif kind == "punct":
            append(Token(PUNCT, text[pos], line, pos - line_start + 1, pos))
        elif kind == "string":
            body = text[pos + 1 : end - 1]
            column = pos - line_start + 1
            raw_newlines = body.count("\n")
            if "\\" in body:
                value, escaped = _unescape(body)
            else:
                value, escaped = body, 0
            append(Token(STRING, value, line, column, pos))
            if raw_newlines:
                line += raw_newlines - escaped
                line_start = text.rfind("\n", pos, end) + 1
        else:  # an atom, possibly continued by a call-form group
            if kind == "other":
                char = text[pos]
                if char == '"':
                    raise ParseError("unterminated string", file, line, pos - line_start + 1)
                end = pos  # char == "(": an atom that starts with its group
            if end < n and text[end] == "(":
                end = _paren_group_end(text, end)
            append(Token(ATOM, text[pos:end], line, pos - line_start + 1, pos))
            newlines = text.count("\n", pos, end)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, end) + 1
        pos = end
    return tokens
