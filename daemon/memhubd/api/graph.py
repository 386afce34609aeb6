"""JSON API handlers of the knowledge graph, tunnels and fact-check.

Each handler parses its input, calls one `service.graph` function and returns its
data; scopes are checked by `endpoint` from the route table, grants by the service,
and by a handler reading a body before the body is read, so an unknown or ungranted
workspace is the same 404 whatever the body holds.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memhub_protocol import ErrorCode, ProtocolError
from memhubd.api.app import ApiContext, Handler, _json_body, _result, query_params
from memhubd.auth.identity import Identity
from memhubd.service import graph
from memhubd.service.access import host_for

DOOR = "api"
ADD_FIELDS = ("subject", "predicate", "object", "source_drawer", "valid_from", "confidence")


def _ws(request: Request) -> str:
    return str(request.path_params["workspace"])


def _granted(hub: Any, identity: Identity, request: Request) -> str:
    name = _ws(request)
    host_for(hub, identity, name)  # raises the 404 for a workspace the caller may not use
    return name


def _body(data: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.INVALID, "the body must be a JSON object")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"unknown field(s) {', '.join(unknown)}; the body takes {', '.join(allowed)}",
            {"field": unknown[0]},
        )
    return data


def graph_handlers(context: ApiContext) -> dict[str, Handler]:
    hub = context.hub

    async def add(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = _body(await _json_body(request), ADD_FIELDS)
        data = await graph.kg_add(
            hub,
            identity,
            name,
            body.get("subject"),
            body.get("predicate"),
            body.get("object"),
            DOOR,
            source_drawer=body.get("source_drawer"),
            valid_from=body.get("valid_from"),
            confidence=body.get("confidence"),
        )
        return JSONResponse(data, status_code=201 if data["created"] else 200)

    async def query(request: Request, identity: Identity) -> Response:
        params = query_params(request)
        data = await graph.kg_query(
            hub,
            identity,
            _ws(request),
            subject=params["subject"],
            predicate=params["predicate"],
            obj=params["object"],
            as_of=params["as_of"],
            active_only=not params["all"],
            limit=params["limit"],
            offset=params["offset"],
        )
        return _result(context, data)

    async def invalidate(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = _body(await _json_body(request), ("at",))
        triple = str(request.path_params["triple_id"])
        data = await graph.kg_invalidate(hub, identity, name, triple, DOOR, at=body.get("at"))
        return _result(context, data)

    async def timeline(request: Request, identity: Identity) -> Response:
        entity = query_params(request)["entity"]
        return _result(context, await graph.kg_timeline(hub, identity, _ws(request), entity))

    async def stats(request: Request, identity: Identity) -> Response:
        return _result(context, await graph.kg_stats(hub, identity, _ws(request)))

    async def tunnels(request: Request, identity: Identity) -> Response:
        return _result(context, await graph.tunnels(hub, identity))

    async def fact_check(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = _body(await _json_body(request), ("text", "room", "now"))
        data = await graph.fact_check(
            hub,
            identity,
            name,
            body.get("text"),
            room=body.get("room"),
            now=body.get("now"),
        )
        return _result(context, data)

    return {
        "kg_add": add,
        "kg_query": query,
        "kg_invalidate": invalidate,
        "kg_timeline": timeline,
        "kg_stats": stats,
        "tunnels": tunnels,
        "fact_check": fact_check,
    }
