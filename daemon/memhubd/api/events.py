"""`/v1/events`: server-sent events of reloads and health changes.

A caller only receives events of workspaces its token is granted; a comment
line every few seconds keeps proxies from closing an idle stream. The token is
checked again before every event and keepalive, so a revoked or expired token's
stream ends; so do all streams when the daemon stops. Nothing here decides what
an event may reveal: that is `service.access.event_for`, whose views are made
off the event loop (`awaited_event_for`).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse

from memhub_protocol import ErrorCode, ProtocolError
from memhubd.api.middleware import bearer_token
from memhubd.auth.identity import Identity
from memhubd.auth.tokens import TokenStore
from memhubd.runtime.events import Event, EventStream, rfc3339
from memhubd.runtime.hub import Hub
from memhubd.service.access import awaited_event_for

KEEPALIVE_SECONDS = 15.0

REVOKED = "the token was revoked or has expired"
STOPPING = "the daemon is stopping"


def format_event(event: Event, data: dict[str, Any], number: int) -> str:
    """One SSE frame of `event`, carrying `data` (what this subscriber may see of it),
    as the stream's `number`th event.

    Frames are numbered per stream, not by the bus: the bus counts every workspace's
    events, so its numbers would show a subscriber how many it was not sent.
    """
    fields = {"event": event.name, "at": event.at, "time": event.time, **data}
    text = json.dumps(fields, ensure_ascii=False)
    return f"id: {number}\nevent: {event.name}\ndata: {text}\n\n"


def closing_frame(reason: str, at: float) -> str:
    """The last frame of a stream the daemon ends: event `closed`, with the reason."""
    text = json.dumps({"event": "closed", "at": at, "time": rfc3339(at), "reason": reason})
    return f"event: closed\ndata: {text}\n\n"


def token_check(request: Request, identity: Identity, tokens: TokenStore) -> Callable[[], bool]:
    """A callable telling whether the caller's credentials still hold. The local
    operator without a token has none to lose; everyone else is verified again."""
    secret = bearer_token(request.scope)
    if secret is None and identity.local:
        return lambda: True
    return lambda: bool(secret) and tokens.verify(secret) is not None


class _HeldStream(StreamingResponse):
    """A stream that gives its slot back when it ends, however it ends (the client
    gone before the first byte included: Starlette always calls the response)."""

    def __init__(self, content: Any, release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


async def events_endpoint(
    request: Request, identity: Identity, hub: Hub, tokens: TokenStore
) -> StreamingResponse:
    still_valid = token_check(request, identity, tokens)
    limits = hub.limits
    per_token, total = limits.max_event_streams_per_token, limits.max_event_streams
    if not hub.events.claim(identity.name, per_token, total):
        raise ProtocolError(
            ErrorCode.TOO_MANY,
            f"too many open event streams: at most {per_token} per token and {total} in all; "
            "close one first",
            {"max_event_streams_per_token": per_token, "max_event_streams": total},
        )

    async def stream() -> AsyncIterator[str]:
        yield ": connected\n\n"
        sent = 0
        async with hub.events.subscribe() as receive:
            while True:
                event = await _next_event(receive)
                if event is _STOPPED:
                    yield closing_frame(STOPPING, time.time())
                    return
                if not still_valid():
                    yield closing_frame(REVOKED, time.time())
                    return
                if event is None:
                    yield ": keepalive\n\n"
                    continue
                data = await awaited_event_for(hub, identity, event.name, event.data)
                if data is None:
                    continue
                sent += 1
                yield format_event(event, data, sent)

    return _HeldStream(
        stream(),
        lambda: hub.events.release(identity.name),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


_STOPPED = Event(0, "stopped")  # stands for the end of the bus (the daemon is stopping)


async def _next_event(receive: EventStream) -> Event | None:
    """The next event; None when a keepalive is due; `_STOPPED` when the bus closed.

    The wait is its own function so that no `yield` of the stream happens inside
    the timeout's cancel scope.
    """
    with anyio.move_on_after(KEEPALIVE_SECONDS):
        try:
            return await receive.receive()
        except anyio.EndOfStream:
            return _STOPPED
    return None
