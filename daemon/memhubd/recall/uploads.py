"""Files uploaded in parts: the parts of each upload kept until the last arrives.

A client whose file is larger than one request body may send it as numbered parts
of one upload (`upload`, `part`, `parts` on the file); the daemon ingests the joined
text when the last part arrives, exactly as if it had come whole. Bounded: each
upload at most `max_file_bytes`, at most `max_uploads` pending and `max_bytes` in
all (the oldest is dropped first), and a pending upload expires after `ttl_s`, whether
or not another part arrives (a timer, armed while anything is pending, drops it).
It must not parse, store or embed anything: that is the ingest pipeline's work.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field


class PartError(ValueError):
    """A part that does not continue an upload (out of order, expired, too large)."""


class TooLarge(PartError):
    """An upload grew past `max_file_bytes`: the file is left out (skipped), as a whole
    file of that size sent at once is."""


@dataclass(slots=True)
class _Pending:
    parts: int
    pieces: list[str] = field(default_factory=list)
    size: int = 0
    touched: float = 0.0


class PartAssembler:
    """Pending uploads, keyed by whatever identifies the caller, file and upload."""

    def __init__(
        self, max_file_bytes: int, max_bytes: int, max_uploads: int = 16, ttl_s: float = 600
    ) -> None:
        self.max_file_bytes = max_file_bytes
        self.max_bytes = max_bytes
        self.max_uploads = max_uploads
        self.ttl_s = ttl_s
        self._pending: OrderedDict[tuple[str, ...], _Pending] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def add(self, key: tuple[str, ...], part: int, parts: int, text: str) -> str | None:
        """Keep part `part` (0-based) of `parts`; the whole text once the last arrived.

        Parts must arrive in order; part 0 starts the upload over."""
        size = len(text.encode("utf-8"))
        with self._lock:
            now = time.monotonic()
            self._expire(now)
            if part == 0:
                self._drop(key)
                pending = _Pending(parts)
            else:
                pending = self._pending.get(key)  # type: ignore[assignment]
                if pending is None or pending.parts != parts or len(pending.pieces) != part:
                    self._drop(key)
                    raise PartError(
                        f"part {part + 1} of {parts} does not continue a pending upload "
                        "(parts must come in order, within "
                        f"{self.ttl_s:g} s); send the file again from part 1"
                    )
                self._drop(key)
            if pending.size + size > self.max_file_bytes:
                raise TooLarge(f"larger than {self.max_file_bytes} bytes")
            pending.pieces.append(text)
            pending.size += size
            pending.touched = now
            if part == parts - 1:
                return "".join(pending.pieces)
            self._pending[key] = pending
            self._size += pending.size
            while self._pending and (
                self._size > self.max_bytes or len(self._pending) > self.max_uploads
            ):
                self._drop(next(iter(self._pending)))
            self._arm(now)
            return None

    def drop_all(self, first: str) -> int:
        """Drop every pending upload whose key starts with `first` (a workspace removed);
        how many were dropped."""
        with self._lock:
            keys = [key for key in self._pending if key and key[0] == first]
            for key in keys:
                self._drop(key)
            return len(keys)

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def _arm(self, now: float) -> None:
        # One timer at a time (a daemon thread), for the upload that expires first: an
        # abandoned upload (up to `max_file_bytes` held) goes when its time is up, not
        # when the next part of any upload arrives.
        if self._timer is not None or not self._pending:
            return
        due = min(p.touched for p in self._pending.values()) + self.ttl_s
        timer = threading.Timer(max(due - now, 0.0) + 0.01, self._on_timer)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
            now = time.monotonic()
            self._expire(now)
            self._arm(now)

    def _expire(self, now: float) -> None:
        for key in [k for k, p in self._pending.items() if now - p.touched > self.ttl_s]:
            self._drop(key)

    def _drop(self, key: tuple[str, ...]) -> None:
        pending = self._pending.pop(key, None)
        if pending is not None:
            self._size -= pending.size
