"""Guard regexes with bounded running time and Python `re` meaning.

Patterns come from workspace files and run against untrusted candidate text, so no
search may run unbounded. `re` stays the authority: validity is `re.compile`'s
verdict, and the in-process `regex` engine (which has a timeout) is used only where it
provably agrees with `re` (see `_bounded`); every other pattern runs on `re` itself in
a helper process that is killed at the deadline (`re_sandbox`).
"""

from __future__ import annotations

import re
from typing import Any

import regex

from memhubd.check import re_sandbox
from memhubd.compiled import CACHED_PATTERN_CHARS, cached_when_short, re_compile

FLAGS = re.IGNORECASE | re.MULTILINE
DEFAULT_TIMEOUT = 0.1  # seconds for all the guard searches of one check

# Syntax `regex` reads differently from `re` even in its compatible mode: fuzzy-match
# braces (`{e<=1}`, a literal in `re`), POSIX classes (`[[:alpha:]]`), inline flags
# that disable IGNORECASE or switch to ASCII/locale, escapes naming code points or
# groups (backreferences compare raw characters, which `_as_regex_text` may merge), and
# any non-ASCII or control character (their case and class tables differ by version).
_DIVERGENT_SYNTAX = re.compile(
    r"\{(?!\d*(?:,\d*)?\})"
    r"|\[:"
    r"|\(\?[aiLmsux]*[aLu-]"
    r"|\\[xuUN0-9]|\(\?P="
    r"|[^\x20-\x7e\t\n\r]"
)


class GuardRegexTimeout(Exception):
    """A guard pattern did not finish searching within its time budget."""


@cached_when_short(maxsize=4096)
def regex_error(pattern: str) -> str | None:
    """`re`'s complaint about the pattern, or None when `re` compiles it."""
    try:
        re_compile(pattern)
    except re.error as exc:
        return str(exc)
    return None


def search(pattern: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Whether `pattern` matches anywhere in `text` (IGNORECASE|MULTILINE), like `re.search`.

    Raises `GuardRegexTimeout` when the search does not finish within `timeout`
    seconds (at once when `timeout` is not positive). The pattern must be valid for
    `re` (check `regex_error` first); `re_sandbox.SandboxError` means the helper
    process failed.
    """
    if timeout <= 0:
        raise GuardRegexTimeout(pattern)
    # On empty text the engines disagree about \B; with nothing to backtrack over,
    # `re` finishes in time proportional to the pattern.
    if not text:
        return re_compile(pattern, FLAGS).search(text) is not None
    compiled = _bounded(pattern)
    if compiled is None:
        try:
            return re_sandbox.search(pattern, text, FLAGS, timeout)
        except re_sandbox.SandboxTimeout as exc:
            raise GuardRegexTimeout(pattern) from exc
    try:
        return compiled.search(_as_regex_text(text), timeout=timeout) is not None
    except TimeoutError as exc:
        raise GuardRegexTimeout(pattern) from exc


@cached_when_short(maxsize=4096)
def _bounded(pattern: str) -> Any:
    """The pattern compiled by `regex`, or None when only `re` can be trusted with it.

    For the ASCII-only, non-divergent syntax accepted here, the two engines agree on
    ASCII text; `_as_regex_text` maps every other character onto one they agree on.
    """
    # A long pattern runs on `re` in the helpers too: `regex` keeps every pattern it
    # compiles (its string at least, even uncached), and the helpers keep none.
    if len(pattern) > CACHED_PATTERN_CHARS or _DIVERGENT_SYNTAX.search(pattern):
        return None
    try:
        return regex.compile(pattern, regex.IGNORECASE | regex.MULTILINE | regex.VERSION0)
    except regex.error:
        return None


def _as_regex_text(text: str) -> str:
    if text.isascii() and not _ASCII_SPACE_GAP.search(text):
        return text
    return text.translate(_TABLE)


# \x1c-\x1f are whitespace to `re` (str.isspace) but not to `regex`.
_ASCII_SPACE_GAP = re.compile(r"[\x1c-\x1f]")

# Characters both engines classify alike, one per class an ASCII-only pattern can
# tell apart: decimal digit, other word character, whitespace, anything else.
_DIGIT, _WORD, _SPACE, _OTHER = "\u0663", "\u4e02", "\u2003", "\u20ac"


class _Representatives(dict[int, str]):
    """str.translate table: each non-ASCII character -> the representative of its `re` class.

    One character becomes one character, so positions, anchors and lengths are kept.
    A character `re` equates with an ASCII letter under IGNORECASE (dotted/dotless i,
    long s, Kelvin sign) becomes that letter.
    """

    def __missing__(self, code: int) -> str:
        value = _representative(code)
        if len(self) < _TABLE_LIMIT:  # bounded: texts may hold any code point
            self[code] = value
        return value


_TABLE_LIMIT = 1 << 16
_TABLE = _Representatives()


def _representative(code: int) -> str:
    char = chr(code)
    if code < 0x80 and not 0x1C <= code <= 0x1F:
        return char
    for letter in "iksabcdefghjlmnopqrtuvwxyz":
        if re.fullmatch(letter, char, re.IGNORECASE):
            return letter
    if re.fullmatch(r"\d", char):
        return _DIGIT
    if re.fullmatch(r"\w", char):
        return _WORD
    if re.fullmatch(r"\s", char):
        return _SPACE
    return _OTHER
