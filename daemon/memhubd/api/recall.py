"""JSON API handlers of recall: ingest, search, status, wake-up, drawers, a source's
deletion, purge, taxonomy and reindex.

Each handler parses its input, calls one `service.recall` function and returns its
data; scopes and query parameters are checked by `endpoint` from the route table,
grants by the service. A route of one workspace checks the grant before it reads its
input, so an unknown or ungranted workspace is the same 404 whatever the input.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.recall import (
    IngestRequest,
    ReindexRequest,
    SearchRequest,
    SourceDeleteRequest,
    TaxonomyEditRequest,
    parse_time,
)
from memhub_protocol.routes import route_by_name
from memhubd.api.app import ApiContext, Handler, _json_body, _result, query_params
from memhubd.auth.identity import Identity
from memhubd.runtime.hub import Hub
from memhubd.service import recall
from memhubd.service.access import host_for

DOOR = "api"


def _ws(request: Request) -> str:
    return str(request.path_params["workspace"])


def _granted(hub: Hub, identity: Identity, request: Request) -> str:
    """The path's workspace, once the caller may use it (the service checks it again)."""
    name = _ws(request)
    host_for(hub, identity, name)
    return name


# The GET search's parameters, as the route table declares them: the POST body's fields,
# with mempal's `q` and `top_k`.
_GET_SEARCH_PARAMS = frozenset(param.name for param in route_by_name("recall_search_get").params)


def _search_from_params(request: Request) -> SearchRequest:
    """`?q=&room=&source_kind=&since=&until=&identity=&limit=&max_chars=` as a SearchRequest
    (`top_k` is mempal's `limit`, and wins over it). An unknown parameter is refused, as
    the POST body's unknown fields are: a misspelt filter must not widen the search
    unnoticed. `limit` and `top_k` were checked by `endpoint`, each under its own name."""
    params = request.query_params
    unknown = sorted(set(params) - _GET_SEARCH_PARAMS)
    if unknown:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"unknown parameter(s): {', '.join(unknown)}",
            {"field": unknown[0], "allowed": sorted(_GET_SEARCH_PARAMS)},
        )
    asked = [*params.getlist("q"), *params.getlist("query")]
    if len(asked) > 1:
        # One would win unseen, as for a time below (`q` and `query` name the same).
        field = "q" if "q" in params else "query"
        raise ProtocolError(
            ErrorCode.INVALID, "the query ('q' or 'query') is given more than once", {"field": field}
        )
    data: dict[str, Any] = {"query": asked[0] if asked else ""}
    checked = query_params(request)
    for name in ("limit", "top_k"):
        if checked[name] is not None:
            data["limit"] = checked[name]
    if checked["max_chars"] is not None:
        data["max_chars"] = checked["max_chars"]
    for name in ("room", "source_kind", "identity"):
        values = params.getlist(name)
        if values:
            data[name] = values
    for name in ("since", "until"):
        given = params.getlist(name)
        if len(given) > 1:
            # The last would win unseen: `since=2099-01-01&since=2000-01-01`.
            raise ProtocolError(
                ErrorCode.INVALID, f"'{name}' is given more than once", {"field": name}
            )
        if given:  # given empty, it is refused as any malformed time is
            data[name] = given[0]
    return SearchRequest.from_json(data)


def _fmt(request: Request, default: str) -> str:
    return str(query_params(request)["format"] or default)


def recall_handlers(context: ApiContext) -> dict[str, Handler]:
    hub = context.hub

    async def ingest(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = IngestRequest.from_json(await _json_body(request))
        data = await recall.ingest(hub, identity, name, body, DOOR)
        status = 200 if body.dry_run or not data["chunks"] else 201
        return JSONResponse(data, status_code=status)

    async def search(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = SearchRequest.from_json(await _json_body(request))
        if body.workspaces:
            raise ProtocolError(
                ErrorCode.INVALID,
                "'workspaces' belongs to POST /v1/recall/search",
                {"field": "workspaces"},
            )
        fmt = _fmt(request, "json")
        data = await recall.search_recall(hub, identity, name, body, fmt)
        return _result(context, data)

    async def search_get(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = _search_from_params(request)
        fmt = _fmt(request, "json")
        return _result(context, await recall.search_recall(hub, identity, name, body, fmt))

    async def search_all(request: Request, identity: Identity) -> Response:
        body = SearchRequest.from_json(await _json_body(request))
        fmt = _fmt(request, "json")
        return _result(context, await recall.search_recall(hub, identity, None, body, fmt))

    async def compress(request: Request, identity: Identity) -> Response:
        body = await _json_body(request)
        if not isinstance(body, dict) or set(body) != {"text"} or not isinstance(body["text"], str):
            raise ProtocolError(
                ErrorCode.INVALID, "the body takes one string 'text'", {"field": "text"}
            )
        return _result(context, await recall.compress(hub, identity, body["text"]))

    async def status(request: Request, identity: Identity) -> Response:
        return _result(context, await recall.status(hub, identity, _ws(request)))

    async def wake_up(request: Request, identity: Identity) -> Response:
        params = query_params(request)
        limit = params["limit"] if params["limit"] is not None else 5
        budget = params["budget"] if params["budget"] is not None else recall.WAKE_UP_BUDGET
        data = await recall.wake_up(
            hub, identity, _ws(request), limit, budget, _fmt(request, "text")
        )
        return _result(context, data)

    async def drawer(request: Request, identity: Identity) -> Response:
        drawer_id = str(request.path_params["drawer_id"])
        return _result(context, await recall.get_drawer(hub, identity, _ws(request), drawer_id))

    async def delete(request: Request, identity: Identity) -> Response:
        drawer_id = str(request.path_params["drawer_id"])
        data = await recall.delete(hub, identity, _ws(request), drawer_id, DOOR)
        return _result(context, data)

    async def delete_source(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = SourceDeleteRequest.from_json(await _json_body(request))
        return _result(context, await recall.delete_source(hub, identity, name, body, DOOR))

    async def purge(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = await _json_body(request)
        unknown = sorted(set(body) - {"before", "audit_before"}) if isinstance(body, dict) else []
        if not isinstance(body, dict) or unknown:
            raise ProtocolError(
                ErrorCode.INVALID,
                "the body takes only 'before' and 'audit_before'",
                {"field": unknown[0] if unknown else "before"},
            )
        before = parse_time(body.get("before"), "before")
        audit_before = parse_time(body.get("audit_before"), "audit_before")
        if audit_before is not None and "before" not in body:
            # The audit alone, as memctl asks for it: pruning old audit entries must not
            # also remove every soft-deleted drawer (which a later ingest of the same
            # text would then bring back).
            before = 0
        data = await recall.purge(hub, identity, name, before, DOOR, audit_before=audit_before)
        return _result(context, data)

    async def taxonomy(request: Request, identity: Identity) -> Response:
        return _result(context, await recall.taxonomy(hub, identity, _ws(request)))

    async def taxonomy_edit(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = TaxonomyEditRequest.from_json(await _json_body(request))
        data = await recall.taxonomy_edit(hub, identity, name, body, DOOR)
        return _result(context, data)

    async def reindex(request: Request, identity: Identity) -> Response:
        name = _granted(hub, identity, request)
        body = ReindexRequest.from_json(await _json_body(request))
        return _result(context, await recall.reindex(hub, identity, name, DOOR, body))

    return {
        "recall_ingest": ingest,
        "recall_search": search,
        "recall_search_get": search_get,
        "recall_search_all": search_all,
        "recall_compress": compress,
        "recall_status": status,
        "recall_wake_up": wake_up,
        "recall_drawer": drawer,
        "recall_delete": delete,
        "recall_delete_source": delete_source,
        "recall_purge": purge,
        "recall_taxonomy": taxonomy,
        "recall_taxonomy_edit": taxonomy_edit,
        "recall_reindex": reindex,
    }
