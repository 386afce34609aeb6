"""JSON API handlers of cowork: push, drain, status and partner peek.

Each handler parses its input, calls one `service.cowork` function and returns its
data; scopes are checked by `endpoint` from the route table, grants by the service.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memhub_protocol import ErrorCode, ProtocolError
from memhubd.api.app import ApiContext, Handler, _json_body, _result, query_params
from memhubd.auth.identity import Identity
from memhubd.service import cowork

DOOR = "api"


def _ws(request: Request) -> str:
    return str(request.path_params["workspace"])


def _once(request: Request, *names: str) -> dict[str, Any]:
    """The route's checked query parameters, refusing one of `names` given twice: the
    last would win unseen (`max_bytes=15&max_bytes=100`), as recall's times refuse."""
    for name in names:
        if len(request.query_params.getlist(name)) > 1:
            raise ProtocolError(
                ErrorCode.INVALID, f"'{name}' is given more than once", {"field": name}
            )
    return query_params(request)


def _push_body(body: Any) -> tuple[str, str]:
    if not isinstance(body, dict):
        raise ProtocolError(ErrorCode.INVALID, "the body must be a JSON object")
    unknown = sorted(set(body) - {"to", "content"})
    if unknown:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"unknown field(s) {', '.join(unknown)}; the body takes 'to' and 'content'",
            {"field": unknown[0]},
        )
    to, content = body.get("to"), body.get("content")
    for field, value in (("to", to), ("content", content)):
        if not isinstance(value, str):
            raise ProtocolError(ErrorCode.INVALID, f"'{field}' must be a string", {"field": field})
    return str(to), str(content)


def cowork_handlers(context: ApiContext) -> dict[str, Handler]:
    hub = context.hub

    async def push(request: Request, identity: Identity) -> Response:
        name = _ws(request)
        cowork.push_allowed(hub, identity, name)  # before the body, as every workspace route
        to, content = _push_body(await _json_body(request))
        data = await cowork.push(hub, identity, name, to, content, DOOR)
        return JSONResponse(data, status_code=201)

    async def drain(request: Request, identity: Identity) -> Response:
        # No body is read: the budget comes as query parameters, checked by `endpoint`.
        params = _once(request, "max_bytes", "at_least_one", "weigh")
        at_least_one = params["at_least_one"] is not False  # absent: true
        data = await cowork.drain(
            hub,
            identity,
            _ws(request),
            params["max_bytes"],
            at_least_one,
            weigh=params["weigh"] or "content",
        )
        return _result(context, data)

    async def status(request: Request, identity: Identity) -> Response:
        return _result(context, await cowork.status(hub, identity, _ws(request)))

    async def peek(request: Request, identity: Identity) -> Response:
        params = _once(request, "limit", "since")
        limit = params["limit"] if params["limit"] is not None else cowork.PEEK_LIMIT
        partner = str(request.path_params["identity"])
        data = await cowork.peek(hub, identity, _ws(request), partner, limit, params["since"])
        return _result(context, data)

    return {
        "cowork_push": push,
        "cowork_drain": drain,
        "cowork_status": status,
        "cowork_peek": peek,
    }
