"""Rooms from a workspace's taxonomy: which room a text belongs to, which rooms a
query points at.

Keywords match whole terms (or whole-term phrases), never substrings: mempal's
substring rule let `api` match "rapid". A match only chooses a room at ingest and
boosts at search time; it never hides anything. Pure functions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from memhubd.recall.store import TaxonomyEntry

_TERM = re.compile(r"[^\W_]+", re.UNICODE)


def terms(text: str) -> list[str]:
    """Lower-cased word terms, in order (letters and digits; punctuation splits).

    Composed first (NFC): text pasted from macOS often spells an accented letter as the
    letter and a combining mark, which is no word character and would split the word
    where FTS5's tokenizer keeps it whole. Lower-casing a dotted capital I (Turkish
    `İ`) gives `i` and a combining dot, which would split the word the same way: FTS5
    reads it as `i`, and so does this."""
    if text.isascii():
        return _TERM.findall(text.lower())
    lowered = unicodedata.normalize("NFC", text).lower().replace("i\u0307", "i")
    return _TERM.findall(lowered)


def _matches(entry: TaxonomyEntry, words: set[str], joined: str) -> list[str]:
    found = []
    for keyword in entry.keywords:
        parts = terms(keyword)
        if not parts:
            continue
        if len(parts) == 1:
            if parts[0] in words:
                found.append(keyword)
        elif f" {' '.join(parts)} " in joined:
            found.append(keyword)
    return found


def route(text: str, taxonomy: Sequence[TaxonomyEntry]) -> tuple[str, list[str]] | None:
    """The room whose keywords `text` matches most, and the keywords that matched.

    Ties go to the larger total length of the matched keywords, then to more
    keywords, then to the first room in name order (deterministic, unlike mempal).
    """
    words_list = terms(text)
    words = set(words_list)
    joined = f" {' '.join(words_list)} "
    best: tuple[tuple[int, int, int], str, list[str]] | None = None
    for index, entry in enumerate(sorted(taxonomy, key=lambda e: e.room)):
        found = _matches(entry, words, joined)
        if not found:
            continue
        rank = (len(found), sum(len(k) for k in found), -index)
        if best is None or rank > best[0]:
            best = (rank, entry.room, found)
    return (best[1], best[2]) if best else None


def rooms_for_query(query: str, taxonomy: Sequence[TaxonomyEntry]) -> dict[str, list[str]]:
    """Every room whose keywords the query mentions, with the keywords (for boosting)."""
    words_list = terms(query)
    words = set(words_list)
    joined = f" {' '.join(words_list)} "
    out = {}
    for entry in taxonomy:
        found = _matches(entry, words, joined)
        if found:
            out[entry.room] = found
    return out
