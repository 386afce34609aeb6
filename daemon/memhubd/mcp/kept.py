"""Tool texts written again without being built or escaped: the JSON-escaped text of an
answer kept per answer key, and the place the fast path offers a tool to hand it over.

A tool keeps a text only when its answer is fully named by a key (the answer cache's
key and the workspace); the fast path splices the kept bytes where the SDK would have
written the escaped text. Nothing here knows what a tool answers or how a call is
routed; the SDK's own path never sees a kept text (no `Splice` is offered there).
"""

from __future__ import annotations

import secrets
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from contextvars import ContextVar
from typing import Any

import orjson
from pydantic_core import to_json

from memhubd.service import stale

# Shorter texts are escaped again: cheap, and not worth an entry.
KEEP_MIN_CHARS = 2048


class KeptText:
    """A text's JSON string as the fast path writes it (quoted, escaped), and the text's
    size in bytes (what `limits.max_result_bytes` is checked against)."""

    __slots__ = ("escaped", "size")

    def __init__(self, escaped: bytes, size: int) -> None:
        self.escaped = escaped
        self.size = size


# From this many characters orjson escapes an answer's text faster than pydantic does
# (the results kept: 32 KB 51 us against 73 us; 4 KB 9.7 us against 7.7 us).
ORJSON_FROM_CHARS = 16384


def escaped_ascii(text: str) -> bytes:
    """`json.dumps(text)` as bytes, for an ASCII text without DEL: pydantic's encoder
    and orjson both write exactly those bytes, each faster for some lengths."""
    if len(text) < ORJSON_FROM_CHARS:
        return to_json(text)
    # Copied to its own size (3 us for 100 KB): orjson's bytes keep the whole buffer it
    # reserved, about seven times an answer's text, and kept texts are counted by length.
    return memoryview(orjson.dumps(text)).tobytes()


def keepable(text: str) -> KeptText | None:
    """`text` escaped for keeping, or None when it is too short or not plain ASCII.

    For an ASCII text without DEL, `json.dumps` (the 2026 wire) and pydantic's
    `model_dump_json` (the handshake-era wire) write the same bytes, so one kept form
    serves both.
    """
    if len(text) < KEEP_MIN_CHARS or not text.isascii() or "\x7f" in text:
        return None
    return KeptText(escaped_ascii(text), len(text))


class KeptTexts:
    """Kept texts by key, least recently used first out past `max_bytes` of escaped text."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._items: OrderedDict[Hashable, KeptText] = OrderedDict()
        self._by_snapshot = stale.KeysBySnapshot()  # a replaced snapshot's go at once
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> KeptText | None:
        with self._lock:
            kept = self._items.get(key)
            if kept is not None:
                self._items.move_to_end(key)
            return kept

    def put(self, key: Hashable, kept: KeptText) -> None:
        cost = len(kept.escaped) + 256
        if cost > self.max_bytes // 4:
            return  # one text must not flush most of the others
        with self._lock:
            for freed in (*self._by_snapshot.take_freed(), key):
                old = self._items.pop(freed, None)
                if old is not None:
                    self.used -= len(old.escaped) + 256
                    self._by_snapshot.discard(freed)
            self._items[key] = kept
            self._by_snapshot.add(key)
            self.used += cost
            while self.used > self.max_bytes and self._items:
                dropped_key, dropped = self._items.popitem(last=False)
                self.used -= len(dropped.escaped) + 256
                self._by_snapshot.discard(dropped_key)

    def __len__(self) -> int:
        return len(self._items)


_KEPT: weakref.WeakKeyDictionary[Any, KeptTexts] = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()


def kept_texts(hub: Any) -> KeptTexts:
    """The hub's kept texts, bounded by `limits.response_cache_bytes` (as its answers)."""
    with _KEPT_LOCK:
        texts = _KEPT.get(hub)
        if texts is None:
            texts = KeptTexts(int(hub.limits.response_cache_bytes))
            _KEPT[hub] = texts
        return texts


# Unguessable, so no text a tool builds can be taken for it; and a marker stands for
# something only in the call whose tool handed a text over.
_MARKER = f"memhub:kept-text:{secrets.token_hex(8)}"


class Splice:
    """One call's offer from the fast path: a tool may answer with `marker` as its text
    and leave the real text's kept form here, to be spliced into the answer's bytes."""

    __slots__ = ("marker", "kept")

    def __init__(self) -> None:
        self.marker = _MARKER
        self.kept: KeptText | None = None

    def hand_over(self, kept: KeptText) -> str:
        """Leave `kept` here; returns the text the tool answers with instead of it."""
        self.kept = kept
        return self.marker

    def taken(self, text: Any) -> KeptText | None:
        """The kept text `text` stands for, if it is this call's marker."""
        return self.kept if self.kept is not None and text == self.marker else None


_SPLICE: ContextVar[Splice | None] = ContextVar("memhub_mcp_splice", default=None)


def offer_splice() -> tuple[Splice, object]:
    """Offer a splice for the current call; returns it and the token to withdraw it with."""
    splice = Splice()
    return splice, _SPLICE.set(splice)


def withdraw_splice(token: object) -> None:
    _SPLICE.reset(token)  # type: ignore[arg-type]


def current_splice() -> Splice | None:
    """The fast path's offer for this call, or None on the SDK's own path."""
    return _SPLICE.get()
