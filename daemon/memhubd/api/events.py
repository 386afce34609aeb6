"""`/v1/events`: server-sent events of reloads and health changes.

A caller only receives events of workspaces its token is granted; a comment
line every few seconds keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse

from memhubd.auth.identity import Identity
from memhubd.runtime.events import Event
from memhubd.runtime.hub import Hub
from memhubd.service.access import event_for

KEEPALIVE_SECONDS = 15.0


def format_event(event: Event, data: dict[str, Any]) -> str:
    """One SSE frame of `event`, carrying `data` (what this subscriber may see of it)."""
    text = json.dumps({"event": event.name, "at": event.at, **data}, ensure_ascii=False)
    return f"id: {event.id}\nevent: {event.name}\ndata: {text}\n\n"


async def events_endpoint(request: Request, identity: Identity, hub: Hub) -> StreamingResponse:
    async def stream() -> AsyncIterator[str]:
        yield ": connected\n\n"
        async with hub.events.subscribe() as receive:
            while True:
                with anyio.move_on_after(KEEPALIVE_SECONDS) as timer:
                    event = await receive.receive()
                if timer.cancelled_caught:
                    yield ": keepalive\n\n"
                    continue
                data = event_for(hub, identity, event.name, event.data)
                if data is None:
                    continue
                yield format_event(event, data)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )
