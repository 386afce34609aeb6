"""Change events fanned out to server-sent-event subscribers.

Publishing never blocks: a subscriber that cannot keep up loses events and is
told so by a `lagged` event, instead of slowing down reloads.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    name: str  # reloaded | degraded | recovered | workspace_added | workspace_removed | ...
    data: dict[str, Any] = field(default_factory=dict)
    at: float = 0.0


class EventBus:
    def __init__(self, buffer: int = 256) -> None:
        self._buffer = buffer
        self._ids = itertools.count(1)
        self._subscribers: set[MemoryObjectSendStream[Event]] = set()

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
    async def subscribe(self) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
        send, receive = anyio.create_memory_object_stream[Event](self._buffer)
        self._subscribers.add(send)
        try:
            yield receive
        finally:
            self._subscribers.discard(send)
            send.close()
            receive.close()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)
