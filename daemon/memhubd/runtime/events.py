"""Change events fanned out to server-sent-event subscribers.

Publishing never blocks: a subscriber that cannot keep up loses events and is
told so by a gap in event ids, instead of slowing down reloads. Closing the bus
(at shutdown) ends every subscription, so no stream holds the daemon open. It
must not decide who sees an event: subscribers filter what they receive.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream


def rfc3339(seconds: float) -> str:
    """A Unix time as RFC 3339 in UTC with milliseconds: `2026-12-01T18:40:00.123Z`."""
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    name: str  # reloaded | degraded | recovered | workspace_added | workspace_removed | ...
    data: dict[str, Any] = field(default_factory=dict)
    at: float = 0.0  # Unix time

    @property
    def time(self) -> str:
        """`at` in RFC 3339."""
        return rfc3339(self.at)


EventStream = MemoryObjectReceiveStream[Event]  # what a subscriber reads


class EventBus:
    def __init__(self, buffer: int = 256) -> None:
        self._buffer = buffer
        self._ids = itertools.count(1)
        self._subscribers: set[MemoryObjectSendStream[Event]] = set()
        self._closed = False
        self._holders: Counter[str] = Counter()  # open streams per holder (a token's name)

    def publish(self, name: str, **data: Any) -> Event:
        event = Event(next(self._ids), name, data, time.time())
        for stream in list(self._subscribers):
            try:
                stream.send_nowait(event)
            except anyio.WouldBlock:
                pass  # the subscriber is behind; it sees a gap in event ids
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._subscribers.discard(stream)
        return event

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[EventStream]:
        """A stream of events; it ends (EndOfStream) once the bus is closed."""
        send, receive = anyio.create_memory_object_stream[Event](self._buffer)
        if self._closed:
            send.close()
        else:
            self._subscribers.add(send)
        try:
            yield receive
        finally:
            self._subscribers.discard(send)
            send.close()
            receive.close()

    def claim(self, holder: str, per_holder: int, total: int) -> bool:
        """Reserve one stream for `holder` unless it holds `per_holder` already or all
        holders `total`; `release` gives it back."""
        if self._holders[holder] >= per_holder or self._holders.total() >= total:
            return False
        self._holders[holder] += 1
        return True

    def release(self, holder: str) -> None:
        self._holders[holder] -= 1
        if self._holders[holder] <= 0:
            del self._holders[holder]

    def close(self) -> None:
        """End every subscription, now and later: the daemon is stopping."""
        self._closed = True
        for stream in list(self._subscribers):
            stream.close()
        self._subscribers.clear()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)
