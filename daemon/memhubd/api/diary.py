"""JSON API handlers of the agent diary: write an entry, read a diary.

Each handler parses its input, calls one `service.diary` function and returns its data;
scopes are checked by `endpoint` from the route table, grants and the diary's
visibility rule by the service.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memhub_protocol import ErrorCode, ProtocolError
from memhubd.api.app import ApiContext, Handler, _json_body, _result, query_params
from memhubd.auth.identity import Identity
from memhubd.service import diary

DOOR = "api"
_WRITE_KEYS = ("type", "content", "shared", "importance")


def _ws(request: Request) -> str:
    return str(request.path_params["workspace"])


def _write_body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ProtocolError(ErrorCode.INVALID, "the body must be a JSON object")
    unknown = sorted(set(body) - set(_WRITE_KEYS))
    if unknown:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"unknown field(s) {', '.join(unknown)}; the body takes {', '.join(_WRITE_KEYS)}",
            {"field": unknown[0]},
        )
    for field in ("type", "content"):
        if not isinstance(body.get(field), str):
            raise ProtocolError(ErrorCode.INVALID, f"'{field}' must be a string", {"field": field})
    if not isinstance(body.get("shared", False), bool):
        raise ProtocolError(
            ErrorCode.INVALID, "'shared' must be true or false", {"field": "shared"}
        )
    importance = body.get("importance")
    if importance is not None and (isinstance(importance, bool) or not isinstance(importance, int)):
        raise ProtocolError(
            ErrorCode.INVALID, "'importance' must be an integer 0-5", {"field": "importance"}
        )
    return body


def diary_handlers(context: ApiContext) -> dict[str, Handler]:
    hub = context.hub

    async def write(request: Request, identity: Identity) -> Response:
        name = _ws(request)
        diary.write_allowed(hub, identity, name)  # before the body, as every workspace route
        body = _write_body(await _json_body(request))
        data = await diary.write(
            hub,
            identity,
            name,
            body["type"],
            body["content"],
            shared=bool(body.get("shared", False)),
            importance=body.get("importance"),
            door=DOOR,
        )
        return JSONResponse(data, status_code=201 if data["status"] == "ingested" else 200)

    async def read(request: Request, identity: Identity) -> Response:
        params = query_params(request)
        data = await diary.read(
            hub,
            identity,
            _ws(request),
            owner=params["identity"],
            kind=params["type"],
            query=params["q"],
            limit=params["limit"] or diary.READ_LIMIT,
        )
        return _result(context, data)

    return {"diary_write": write, "diary_read": read}
