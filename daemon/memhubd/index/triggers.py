"""Which `when_any` trigger phrases occur in a text, found from the text's words.

A phrase triggers when it is a plain substring of the lowered text. Every phrase is
filed under its longest `[a-z0-9_]+` run (its key): a phrase inside the text has its key
inside one of the text's words, so only the phrases filed under substrings of the
text's words are tested. Nothing here knows what a phrase guards.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_WORD = re.compile(r"[a-z0-9_]+")


class TriggerPhrases:
    """`phrase -> slots`, searchable by text; gives the same slots as testing every phrase."""

    __slots__ = ("_slots", "_by_key", "_lengths", "_unkeyed")

    def __init__(self, slots: Mapping[str, Sequence[int]]) -> None:
        self._slots = slots
        by_key: dict[str, list[str]] = {}
        unkeyed: list[str] = []  # no word character at all: tested one by one
        for phrase in slots:
            runs = _WORD.findall(phrase)
            if runs:
                by_key.setdefault(max(runs, key=len), []).append(phrase)
            else:
                unkeyed.append(phrase)
        self._by_key = by_key
        self._lengths = sorted({len(key) for key in by_key})
        self._unkeyed = unkeyed

    def slots_in(self, lowered: str) -> list[int]:
        """Slots of every phrase that occurs in `lowered` (already lowercased), phrase by
        phrase in no particular order; a slot may repeat."""
        out: list[int] = []
        for phrase in self.phrases_in(lowered):
            out.extend(self._slots[phrase])
        return out

    def phrases_in(self, lowered: str) -> list[str]:
        """Every phrase that occurs in `lowered` (already lowercased), once each."""
        words = set(_WORD.findall(lowered))
        lengths = self._lengths
        lookups = sum(len(w) - n + 1 for w in words for n in lengths if n <= len(w))
        if lookups >= len(self._slots):  # a long text: testing every phrase is cheaper
            phrases: list[str] = list(self._slots)
        else:
            pieces = {w[i : i + n] for w in words for n in lengths for i in range(len(w) - n + 1)}
            by_key = self._by_key
            phrases = [p for key in pieces & by_key.keys() for p in by_key[key]]
            phrases += self._unkeyed
        return [phrase for phrase in phrases if phrase in lowered]
