"""The fast path of the parser: whole-text regex tokenizing, no positions kept.

Most files are ordinary and only need values and declaration lines, so this
path skips per-token bookkeeping. On anything unusual (a syntax error, an
unterminated string, escaped newlines, call-form atoms nested deeper than three,
keys or values that start a call-form group, nesting past MAX_DEPTH) it gives
up with `Unusual`, and the precise parser takes over and decides. Both paths
must always agree; a property test holds them to that.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from memhubd.lang.tree import SHARED_LENGTH

# One token per match (the group): blanks and comments before it are skipped by the
# same match rather than tried against every alternative one character at a time. A
# comment ends at its newline, which is a token of its own. An atom is one run, with a
# call-form group after it when one follows (else the run alone, as a plain atom). At
# the end of the text (after trailing blanks or a comment) the match is empty: ""
# reads as the end, as the sentinel does.
_TOKENS = re.compile(
    r"""
    (?:[ \t\r]++|\#[^\n]*+)*+
    (
      \n
    | "[^"\\]*+(?:\\.[^"\\]*+)*+"
    | [{}\[\]:,]
    | [^ \t\r\n\#{}\[\]:,"(]++ (?: \( (?:[^()]++ | \( (?:[^()]++ | \([^()]*+\) )*+ \) )*+ \) )?
    | \( (?:[^()]++ | \( (?:[^()]++ | \([^()]*+\) )*+ \) )*+ \)
    | [^ \t\r]
    | \Z
    )
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t"}
# First characters that cannot start an atom here (a lone "(" or '"' is a lexing anomaly).
_NOT_ATOM = frozenset('{}[]:,"(')


class Unusual(Exception):
    """The text needs the precise parser (it may still be valid)."""


def _unescape_one(match: re.Match[str]) -> str:
    char = match.group(1)
    return _ESCAPES.get(char, char)


class _FastParser:
    __slots__ = ("toks", "extra_newlines", "max_depth")

    def __init__(self, toks: list[str], max_depth: int) -> None:
        self.toks = toks
        self.extra_newlines = 0  # newlines inside multi-line strings and call-form atoms
        self.max_depth = max_depth

    # Values up to SHARED_LENGTH characters and keys are interned as they are read, as
    # typing shares them (`SharedRawDeclaration`): typing copies none of the fields.

    def scalar(self, token: str) -> str:
        if token[0] == '"':
            if len(token) == 1:
                raise Unusual
            value = token[1:-1]
            if "\\" in value:
                if "\n" in value:
                    raise Unusual  # escaped newlines follow memdsl's line quirk: precise path
                value = _ESCAPE.sub(_unescape_one, value)
            elif "\n" in value:
                self.extra_newlines += value.count("\n")
            return sys.intern(value) if len(value) <= SHARED_LENGTH else value
        if token[0] in _NOT_ATOM:
            raise Unusual
        if "\n" in token:
            self.extra_newlines += token.count("\n")
        return sys.intern(token) if len(token) <= SHARED_LENGTH else token

    def values(self, i: int, depth: int) -> tuple[list[Any], int]:
        if depth > self.max_depth:
            raise Unusual
        toks = self.toks
        items: list[Any] = []
        while True:
            token = toks[i]
            while token == "\n":
                i += 1
                token = toks[i]
            if token == "]":
                return items, i + 1
            if token == "[":
                value, i = self.values(i + 1, depth + 1)
                items.append(value)
            else:
                items.append(self.scalar(token))
                i += 1
            token = toks[i]
            while token == "\n":
                i += 1
                token = toks[i]
            if token == ",":
                i += 1

    def block(self, i: int, depth: int) -> tuple[dict[str, Any], int]:
        if depth > self.max_depth:
            raise Unusual
        toks = self.toks
        fields: dict[str, Any] = {}
        while True:
            key = toks[i]
            while key == "\n":
                i += 1
                key = toks[i]
            if key == "}":
                return fields, i + 1
            if key[0] in _NOT_ATOM:
                raise Unusual
            if "\n" in key:
                self.extra_newlines += key.count("\n")
            key = sys.intern(key)
            i += 1
            separator = toks[i]
            while separator == "\n":
                i += 1
                separator = toks[i]
            if separator == ":":
                i += 1
                token = toks[i]
                while token == "\n":
                    i += 1
                    token = toks[i]
                if token == "[":
                    fields[key], i = self.values(i + 1, depth + 1)
                else:
                    fields[key] = self.scalar(token)
                    i += 1
            elif separator == "{":
                fields[key], i = self.block(i + 1, depth + 1)
            else:
                raise Unusual


def fast_parse(
    text: str, max_depth: int
) -> tuple[str | None, list[str], list[tuple[str, str, dict[str, Any], int]]]:
    """(module, uses, [(type, name, fields, line)]) or raises Unusual."""
    toks = _TOKENS.findall(text)
    toks.append("")  # sentinel: never a real token, and ""[0] raises IndexError
    parser = _FastParser(toks, max_depth)
    module: str | None = None
    uses: list[str] = []
    found: list[tuple[str, str, dict[str, Any], int]] = []
    i = 0
    line = 1
    counted = 0  # tokens before this index have been counted into `line`
    try:
        while True:
            head = toks[i]
            while head == "\n":
                i += 1
                head = toks[i]
            if head == "":
                break
            if head[0] in _NOT_ATOM:
                raise Unusual
            line += toks[counted:i].count("\n") + parser.extra_newlines
            parser.extra_newlines = 0
            counted = i
            j = i + 1
            name = toks[j]
            while name == "\n":
                j += 1
                name = toks[j]
            if name[0] in _NOT_ATOM:
                raise Unusual
            if "\n" in head or "\n" in name:
                parser.extra_newlines += head.count("\n") + name.count("\n")
            if head == "module" or head == "use":
                if head == "module":
                    module = name
                else:
                    uses.append(name)
                i = j + 1
                continue  # `counted` stays at `head`: its newlines are counted next time
            j += 1
            opening = toks[j]
            while opening == "\n":
                j += 1
                opening = toks[j]
            if opening != "{":
                raise Unusual
            fields, i = parser.block(j + 1, 1)
            found.append((head, name, fields, line))
    except (IndexError, RecursionError):
        raise Unusual from None
    return module, uses, found
