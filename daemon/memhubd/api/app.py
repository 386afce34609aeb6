"""The Starlette application of the JSON API (and the mount point of MCP later).

Each route: check who is calling, parse the input, call one service function,
shape the response (JSON, or memdsl's text rendering on `Accept: text/plain`).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import anyio
import structlog
from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Match, Route

from memhub_protocol import (
    ROUTES,
    CheckRequest,
    ErrorCode,
    ProtocolError,
    QueryRequest,
    TokenCreateRequest,
    WorkspaceAddRequest,
    error_envelope,
)
from memhub_protocol.models import ApproveRequest, ProposeRequest, RejectRequest, decode_json_body
from memhub_protocol.routes import BOOLEAN_WORDS, MAX_PARAM_CHARS, Param
from memhub_protocol.routes import Route as RouteSpec
from memhub_protocol.scopes import REVIEW, WRITE_CANDIDATE
from memhubd import service
from memhubd.api import cache as http_cache
from memhubd.api.direct import DirectRoutes
from memhubd.api.events import events_endpoint
from memhubd.api.middleware import ApiMiddleware, BodyTooLarge
from memhubd.auth.identity import Identity
from memhubd.runtime.hub import Hub
from memhubd.service.access import host_for

log = structlog.get_logger("memhubd.api")

Handler = Callable[[Request, Identity], Awaitable[Response]]

# Served by `api.direct` without the router (same endpoints, same answers).
DIRECT_ROUTES = ("query", "check")

# The route modules imported when one of their routes is first called (or by
# `import_route_modules`, which the daemon runs in the background after its start): they
# import recall, the knowledge graph and cowork, which no governed-memory answer needs,
# and a start that imported them answered its first query about 0.1 s of CPU later.
# Module -> (its handlers' factory, the routes it serves).
DEFERRED_ROUTES: dict[str, tuple[str, tuple[str, ...]]] = {
    "memhubd.api.recall": (
        "recall_handlers",
        (
            "recall_ingest",
            "recall_search",
            "recall_search_get",
            "recall_search_all",
            "recall_compress",
            "recall_status",
            "recall_wake_up",
            "recall_drawer",
            "recall_delete",
            "recall_delete_source",
            "recall_purge",
            "recall_taxonomy",
            "recall_taxonomy_edit",
            "recall_reindex",
        ),
    ),
    "memhubd.api.cowork": (
        "cowork_handlers",
        ("cowork_push", "cowork_drain", "cowork_status", "cowork_peek"),
    ),
    "memhubd.api.graph": (
        "graph_handlers",
        ("kg_add", "kg_query", "kg_invalidate", "kg_timeline", "kg_stats", "tunnels", "fact_check"),
    ),
    "memhubd.api.diary": ("diary_handlers", ("diary_write", "diary_read")),
    "memhubd.api.recall_review": ("recall_review_handlers", ("recall_propose",)),
}


@dataclass
class ApiContext:
    """What the routes need from the running daemon."""

    hub: Hub
    tokens: Any  # memhubd.auth.tokens.TokenStore
    max_body_bytes: int = 1024 * 1024
    max_result_bytes: int = 8 * 1024 * 1024
    extra_routes: list[Any] = field(default_factory=list)
    # Paths whose refusals are JSON-RPC errors carrying the envelope (MCP's `/mcp`).
    jsonrpc_paths: set[str] = field(default_factory=set)
    lifespan: Any = None


class _ErrorJSON(JSONResponse):
    # ASCII on purpose: a message may quote caller text, and an escape can always be encoded.
    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _error(error: ProtocolError) -> JSONResponse:
    return _ErrorJSON(error.envelope(), status_code=error.code.http_status)


def wants_text(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/plain" in accept and "application/json" not in accept


class _JSON(JSONResponse):
    # Compact on purpose: an indent makes json use its pure-Python encoder (~6x slower
    # on a typical EvidencePack); the data is the same as the offline --json output.
    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _result(context: ApiContext, data: Any, view: Any = None) -> Response:
    # The size bound is applied to every answer, JSON or text, in `endpoint`.
    response = _JSON(data)
    if view is not None:
        _snapshot_headers(response, view.snapshot)
    return response


def _snapshot_headers(response: Response, snapshot: Any) -> None:
    response.headers["x-memhub-generation"] = str(snapshot.generation)
    response.headers["x-memhub-health"] = snapshot.health


async def _json_body(request: Request) -> Any:
    body = await request.body()
    if not body:
        return {}
    return decode_json_body(body)


_INTEGER = re.compile(r"-?[0-9]{1,18}")


def query_params(request: Request) -> dict[str, Any]:
    """The route's declared query parameters, checked by `endpoint`; absent ones are None."""
    return request.scope["state"]["params"]  # type: ignore[no-any-return]


def _check_params(request: Request, spec: RouteSpec) -> dict[str, Any]:
    if not spec.params:  # most routes take none: the query string is not even parsed
        return {}
    raw = request.query_params
    for param in spec.params:
        if not param.several and len(raw.getlist(param.name)) > 1:
            # One value would win unseen (the last), however wrong the others.
            raise ProtocolError(
                ErrorCode.INVALID,
                f"'{param.name}' is given more than once",
                {"field": param.name},
            )
    return {param.name: _param(param, raw.get(param.name)) for param in spec.params}


def _param(param: Param, value: str | None) -> Any:
    if value is None:
        return None
    name = param.name
    if len(value) > MAX_PARAM_CHARS:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"'{name}' is longer than {MAX_PARAM_CHARS} characters",
            {"field": name},
        )
    if param.kind == "boolean":
        if value.lower() not in BOOLEAN_WORDS:
            raise ProtocolError(
                ErrorCode.INVALID, f"'{name}' must be true or false", {"field": name}
            )
        return BOOLEAN_WORDS[value.lower()]
    if param.choices and value not in param.choices:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"'{name}' must be one of {', '.join(param.choices)}",
            {"field": name, "allowed": list(param.choices)},
        )
    if param.kind != "integer":
        return value
    low, high = param.minimum, param.maximum
    bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
    # Matched before int(): int() also takes '_', '+' and non-ASCII digits, and is slow
    # on thousands of digits only to be refused.
    number = int(value) if _INTEGER.fullmatch(value) else None
    if number is None or (low is not None and number < low) or (high is not None and number > high):
        raise ProtocolError(
            ErrorCode.INVALID, f"'{name}' must be an integer {bounds}", {"field": name}
        )
    return number


def endpoint(context: ApiContext, spec: RouteSpec, handler: Handler) -> Callable[..., Any]:
    """Wrap a handler with authentication, scope check and error mapping."""

    async def run(request: Request) -> Response:
        state = request.scope.setdefault("state", {})
        state["route_name"] = spec.name
        identity: Identity | None = state.get("identity")
        try:
            if spec.scope is not None:
                if identity is None:
                    reason = (
                        "invalid or expired token" if state.get("bad_token") else "missing token"
                    )
                    raise ProtocolError(
                        ErrorCode.UNAUTHORIZED, f"{reason}; send Authorization: Bearer <token>"
                    )
                service.require_scope(identity, spec.scope)
            state["params"] = _check_params(request, spec)
            response = await handler(request, identity)  # type: ignore[arg-type]
            body = getattr(response, "body", None)  # streams (events) have none
            if isinstance(body, bytes | memoryview) and len(body) > context.max_result_bytes:
                raise ProtocolError(
                    ErrorCode.TOO_LARGE,
                    f"result is larger than {context.max_result_bytes} bytes "
                    "(limits.max_result_bytes); narrow the request",
                    {"limit": context.max_result_bytes},
                )
            return response
        except ProtocolError as error:
            return _error(error)
        except BodyTooLarge as error:
            return _error(ProtocolError(ErrorCode.TOO_LARGE, str(error)))
        except ClientDisconnect:
            # The client left (or was cut off by the read deadline) mid-body: nobody to answer.
            log.info("client disconnected before sending its body", route=spec.name)
            return Response(status_code=400)
        except Exception as error:
            unusable = service.state_database_failure(error)
            if unusable is not None:
                return _error(unusable)
            log.exception("unhandled error", route=spec.name)
            return _error(ProtocolError(ErrorCode.INTERNAL, "internal error; see the daemon log"))

    return run


def _handlers(context: ApiContext) -> dict[str, Handler]:
    hub = context.hub

    def ws(request: Request) -> str:
        return str(request.path_params["workspace"])

    async def healthz(request: Request, identity: Identity) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request, identity: Identity) -> Response:
        body, ready = service.admin.readiness(hub, identity)
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics(request: Request, identity: Identity) -> Response:
        text = service.admin.metrics_text(hub, identity)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    async def openapi(request: Request, identity: Identity) -> Response:
        from memhubd.api.openapi import openapi_document  # only the rare caller pays for it

        return JSONResponse(openapi_document())

    async def status(request: Request, identity: Identity) -> Response:
        return _result(context, await service.status(hub, identity))

    async def workspaces(request: Request, identity: Identity) -> Response:
        return _result(context, await service.workspaces(hub, identity))

    async def workspace(request: Request, identity: Identity) -> Response:
        return _result(context, await service.workspace(hub, identity, ws(request)))

    async def workspace_add(request: Request, identity: Identity) -> Response:
        body = WorkspaceAddRequest.from_json(await _json_body(request))
        data = await service.add_workspace(hub, identity, body, context.tokens.audit)
        return JSONResponse(data, status_code=201)

    async def workspace_remove(request: Request, identity: Identity) -> Response:
        data = await service.remove_workspace(hub, identity, ws(request), context.tokens.audit)
        return _result(context, data)

    async def workspace_reload(request: Request, identity: Identity) -> Response:
        data = await service.reload_workspace(hub, identity, ws(request), context.tokens.audit)
        return _result(context, data)

    async def map_(request: Request, identity: Identity) -> Response:
        data, text = await service.memory_map(hub, identity, ws(request))
        return PlainTextResponse(text) if wants_text(request) else _result(context, data)

    async def types(request: Request, identity: Identity) -> Response:
        data, text = await service.types(hub, identity, ws(request))
        return PlainTextResponse(text) if wants_text(request) else _result(context, data)

    async def list_(request: Request, identity: Identity) -> Response:
        params = query_params(request)
        data = await service.list_declarations(
            hub,
            identity,
            ws(request),
            memory_type=params["type"] or params["kind"] or "",
            subject=params["subject"] or "",
            include_inactive=bool(params["include_inactive"]),
            limit=params["limit"] or 100,
        )
        return _result(context, data)

    async def explain(request: Request, identity: Identity) -> Response:
        data = await service.explain(hub, identity, ws(request), request.path_params["decl_id"])
        return (
            PlainTextResponse(data["rendered_text"])
            if wants_text(request)
            else _result(context, data)
        )

    def granted(identity: Identity, name: str) -> None:
        """An unknown workspace, or one the token has no grant for, is refused before
        the body is read, whatever the body holds (as every workspace route does)."""
        if hub.get(name) is None or not identity.can_use(name):
            host_for(hub, identity, name)  # raises the 404

    async def query(request: Request, identity: Identity) -> Response:
        name = ws(request)
        granted(identity, name)
        body = QueryRequest.from_json(await _json_body(request))
        as_text = wants_text(request)
        lookup = await service.reads.awaited_query_lookup(
            hub, identity, name, body, as_text=as_text
        )
        unchanged = http_cache.not_modified(request, lookup.tag)
        if unchanged is not None:
            return unchanged
        answer, _view = await service.query(
            hub,
            identity,
            name,
            body,
            as_text=as_text,
            max_result_bytes=context.max_result_bytes,
            lookup=lookup,
        )
        return http_cache.answer_response(request, answer, as_text=as_text, hub=hub)

    async def check(request: Request, identity: Identity) -> Response:
        name = ws(request)
        granted(identity, name)
        body = CheckRequest.from_json(await _json_body(request))
        limit = None if wants_text(request) else context.max_result_bytes
        raw, _findings, text = await service.reads.check_encoded(
            hub, identity, name, body, max_result_bytes=limit
        )
        if wants_text(request):
            return PlainTextResponse(text)
        return Response(raw, media_type="application/json")

    async def lint(request: Request, identity: Identity) -> Response:
        data, text = await service.lint(hub, identity, ws(request))
        return PlainTextResponse(text) if wants_text(request) else _result(context, data)

    async def files(request: Request, identity: Identity) -> Response:
        return _result(context, await service.files(hub, identity, ws(request)))

    async def file(request: Request, identity: Identity) -> Response:
        data = await service.file_content(
            hub, identity, ws(request), request.path_params["file_id"]
        )
        if wants_text(request) or "application/json" not in request.headers.get("accept", ""):
            response = PlainTextResponse(data["content"])
            # Percent-encoded as in the file's URL: a header carries Latin-1 only, and a
            # file may be named in any script.
            response.headers["x-memhub-file-id"] = quote(data["file_id"], safe="/")
            response.headers["x-memhub-stale"] = "true" if data["stale"] else "false"
            return response
        return _result(context, data)

    async def events(request: Request, identity: Identity) -> Response:
        return await events_endpoint(request, identity, hub, context.tokens)

    async def tokens(request: Request, identity: Identity) -> Response:
        return _result(
            context,
            await service.list_tokens(context.tokens, identity),
        )

    async def token_create(request: Request, identity: Identity) -> Response:
        body = TokenCreateRequest.from_json(await _json_body(request))
        data = await service.create_token(context.tokens, identity, body)
        return JSONResponse(data, status_code=201)

    async def token_revoke(request: Request, identity: Identity) -> Response:
        name = request.path_params["token_name"]
        return _result(context, await service.revoke_token(context.tokens, identity, name))

    # -- review: the grant is checked before the body is read, as for every workspace route.

    def proposal_id(request: Request) -> str:
        return str(request.path_params["proposal_id"])

    async def proposal_create(request: Request, identity: Identity) -> Response:
        name = ws(request)
        service.review_host(hub, identity, name, WRITE_CANDIDATE)
        body = ProposeRequest.from_json(await _json_body(request))
        return _JSON(await service.propose(hub, identity, name, body), status_code=201)

    async def proposals(request: Request, identity: Identity) -> Response:
        params = query_params(request)
        status = params["status"] or "pending"
        data = await service.list_proposals(
            hub, identity, ws(request), status, params["limit"], params["offset"]
        )
        return _result(context, data)

    async def proposal(request: Request, identity: Identity) -> Response:
        into = query_params(request)["into"] or None
        data = await service.show_proposal(hub, identity, ws(request), proposal_id(request), into)
        return _result(context, data)

    async def proposal_approve(request: Request, identity: Identity) -> Response:
        name = ws(request)
        service.review_host(hub, identity, name, REVIEW)
        body = ApproveRequest.from_json(await _json_body(request))
        data = await service.approve_proposal(hub, identity, name, proposal_id(request), body.into)
        return _result(context, data)

    async def proposal_reject(request: Request, identity: Identity) -> Response:
        name = ws(request)
        service.review_host(hub, identity, name, REVIEW)
        body = RejectRequest.from_json(await _json_body(request))
        data = await service.reject_proposal(hub, identity, name, proposal_id(request), body.reason)
        return _result(context, data)

    return {
        "healthz": healthz,
        "readyz": readyz,
        "metrics": metrics,
        "openapi": openapi,
        "status": status,
        "events": events,
        "workspaces": workspaces,
        "workspace_add": workspace_add,
        "workspace": workspace,
        "workspace_remove": workspace_remove,
        "workspace_reload": workspace_reload,
        "map": map_,
        "types": types,
        "list": list_,
        "explain": explain,
        "query": query,
        "check": check,
        "lint": lint,
        "files": files,
        "file": file,
        "tokens": tokens,
        "token_create": token_create,
        "token_revoke": token_revoke,
        "proposal_create": proposal_create,
        "proposals": proposals,
        "proposal": proposal,
        "proposal_approve": proposal_approve,
        "proposal_reject": proposal_reject,
    }


async def _not_found(request: Request, exc: HTTPException) -> Response:
    """The router's own refusals: no route for the path (404), or none for the method
    (405, with the `Allow` header the router names the served methods in)."""
    path = request.scope["path"]
    detail: dict[str, Any] = {"path": path}
    if exc.status_code == 404:
        code, message = ErrorCode.NOT_FOUND, "no such route"
        other = _other_slash(request)
        if other is not None:
            message = f"no such route; did you mean {other}?"
            detail["did_you_mean"] = other
    elif exc.status_code == 405:
        code = ErrorCode.METHOD_NOT_ALLOWED
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not served here; use {allowed}"
        detail["allow"] = [method.strip() for method in allowed.split(",") if method.strip()]
    else:
        code, message = ErrorCode.INVALID, str(exc.detail)
    return _ErrorJSON(error_envelope(code, message, detail), exc.status_code, headers=exc.headers)


def _other_slash(request: Request) -> str | None:
    """The same path with its trailing slash added or removed, when a route serves that.

    Said in the 404 instead of redirecting: a redirect would have to name a host, and
    the only one at hand is the caller's own Host header.
    """
    path = request.scope["path"]
    if path == "/":
        return None
    other = path.rstrip("/") if path.endswith("/") else path + "/"
    if not other:
        return None
    scope = {**request.scope, "path": other}
    for route in request.app.router.routes:
        match, _child = route.matches(scope)
        if match is not Match.NONE:
            return other
    return None


class _DeferredHandlers:
    """The handlers of one route module, imported when one of its routes is first called
    (in a worker thread: the event loop keeps answering meanwhile)."""

    def __init__(self, context: ApiContext, module: str, factory: str) -> None:
        self._context = context
        self._module = module
        self._factory = factory
        self._handlers: dict[str, Handler] | None = None

    def handler(self, name: str) -> Handler:
        async def run(request: Request, identity: Identity) -> Response:
            handlers = self._handlers
            if handlers is None:
                module = await anyio.to_thread.run_sync(importlib.import_module, self._module)
                if self._handlers is None:  # no await since the test: the first one wins
                    self._handlers = getattr(module, self._factory)(self._context)
                handlers = self._handlers
            return await handlers[name](request, identity)

        return run


def import_route_modules() -> None:
    """Import the deferred route modules now (their routes then answer without the wait)."""
    for module in DEFERRED_ROUTES:
        importlib.import_module(module)


class _ServedId(PathConvertor):
    """A file or declaration id in a path: slashes inside (a file in a folder), but
    never empty and never ending in one, so `.../declarations/` and `.../files/a.mem/`
    are unknown paths that name the served one, as a trailing slash does elsewhere."""

    regex = "(?s:.*[^/])"  # a file name may hold a line break


register_url_convertor("served_id", _ServedId())


def build_app(context: ApiContext) -> Starlette:
    handlers = _handlers(context)
    for module, (factory, names) in DEFERRED_ROUTES.items():
        deferred = _DeferredHandlers(context, module, factory)
        handlers.update((name, deferred.handler(name)) for name in names)
    routes: list[Any] = []
    for spec in ROUTES:
        path = spec.path.replace("{file_id}", "{file_id:served_id}").replace(
            "{decl_id}", "{decl_id:served_id}"
        )
        routes.append(
            Route(
                path,
                endpoint(context, spec, handlers[spec.name]),
                methods=[spec.method],
                name=spec.name,
            )
        )
    # Extra routes (MCP's exact /mcp) first: the router tries routes in order, and an
    # MCP call behind every API route paid ~56 path matches, a tenth of its cost.
    routes[:0] = context.extra_routes
    direct = DirectRoutes()
    app = Starlette(
        routes=routes,
        middleware=[Middleware(ApiMiddleware, context=context, direct=direct)],
        exception_handlers={HTTPException: _not_found},
        lifespan=context.lifespan,
    )
    # No trailing-slash redirects: Starlette builds their Location from the Host header,
    # which any caller controls. `_not_found` names the right path instead.
    app.router.redirect_slashes = False
    # What agents ask most skips the router's path matches and wrappers (about a third
    # of a cached answer's time in the application).
    direct.take(app.router, DIRECT_ROUTES)
    return app
