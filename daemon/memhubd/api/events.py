"""`/v1/events`: server-sent events of reloads and health changes.

A caller only receives events of workspaces its token is granted; a comment
line every few seconds keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse

from memhubd.auth.identity import Identity
from memhubd.runtime.events import Event
from memhubd.runtime.hub import Hub

KEEPALIVE_SECONDS = 15.0


def format_event(event: Event) -> str:
    data = json.dumps({"event": event.name, "at": event.at, **event.data}, ensure_ascii=False)
    return f"id: {event.id}\nevent: {event.name}\ndata: {data}\n\n"


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
                workspace = event.data.get("workspace")
                if workspace is not None and not identity.can_use(str(workspace)):
                    continue
                yield format_event(event)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )
