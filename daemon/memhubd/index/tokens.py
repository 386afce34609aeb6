"""The one word tokenizer every lexical component shares: lowercase, then `[a-z0-9_]+`.

Stopword lists differ per consumer (query, compliance, benchmark) and live with them;
this module must not filter anything, so one posting list serves every consumer.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9_]+")


def word_tokens(text: str) -> list[str]:
    """All `[a-z0-9_]+` runs of the lowercased text, in order, duplicates kept.

    Lowercasing comes first on purpose: a few non-ASCII letters lowercase to ASCII
    (the Kelvin sign becomes `k`), and memdsl tokenizes the lowercased text.
    """
    return _WORD.findall(text.lower())


# Every ASCII character that is not a word character, to a blank.
_ASCII_BREAKS = str.maketrans(
    {c: " " for c in range(128) if not (chr(c).islower() or chr(c).isdigit() or c == 95)}
)


def lowered_word_tokens(text: str) -> list[str]:
    """`word_tokens` of text that is lowercase already (a declaration's searchable
    text): lowercasing again changes nothing, and costs a copy of the text. ASCII text
    (the usual) is split on its non-word characters made blanks, faster than the regex."""
    if text.isascii():
        return text.translate(_ASCII_BREAKS).split()
    return _WORD.findall(text)


def field_values(value: object) -> list[str]:
    """A guard/exceptions field as memdsl reads it: a list of stripped, non-empty strings.

    `None` gives `[]`, a scalar gives a one-item list, a list gives its items; every
    item is stringified before stripping, so nested lists count by their repr.
    """
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    stripped = (str(item).strip() for item in items)
    return [item for item in stripped if item]
