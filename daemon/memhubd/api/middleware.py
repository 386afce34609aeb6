"""ASGI middleware around the JSON API: request ids, identity, body limits, access log
(`runtime.logging.access_log`, cheap per request) and per-route metrics, and the last
line of defence that turns any exception into the error envelope. Pure ASGI so that
streaming responses (server-sent events) pass through untouched.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import structlog

from memhub_protocol import ErrorCode, error_envelope, jsonrpc_refusal
from memhubd.auth.identity import Identity, local_operator
from memhubd.runtime.logging import access_log

log = structlog.get_logger("memhubd.access")

Scope = dict[str, Any]


def over_unix_socket(scope: Scope) -> bool:
    """uvicorn reports a Unix socket's server address as (path, None)."""
    server = scope.get("server")
    return bool(server) and server[1] is None


def bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            text = value.decode("latin-1").strip()
            if text[:7].lower() == "bearer ":
                return text[7:].strip() or None
            return ""  # present but not a bearer token: treated as a bad token
    return None


def _expects_continue(scope: Scope) -> bool:
    return any(
        name == b"expect" and value.lower() == b"100-continue"
        for name, value in scope.get("headers", [])
    )


def declared_length(scope: Scope) -> int:
    """The request's Content-Length, or 0 when it gives none (or none that is a number)."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


async def send_error(
    send: Any,
    code: ErrorCode,
    message: str,
    request_id: str,
    *,
    close: bool = False,
    jsonrpc: bool = False,
) -> None:
    """The error envelope, or with `jsonrpc` the JSON-RPC error that carries it."""
    refusal = jsonrpc_refusal(code, message) if jsonrpc else error_envelope(code, message)
    body = json.dumps(refusal).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-request-id", request_id.encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    if code is ErrorCode.UNAUTHORIZED:
        headers.append((b"www-authenticate", b'Bearer realm="memhub"'))
    await send({"type": "http.response.start", "status": code.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ApiMiddleware:
    """Resolves the caller, enforces the body limit, logs and measures each request."""

    def __init__(self, app: Any, *, context: Any, direct: Any = None) -> None:
        self.app = app
        self.context = context
        self.direct = direct  # api.direct.DirectRoutes: hot routes that skip the router

    def _identity(self, scope: Scope) -> Identity | None | str:
        """An Identity, None when no credentials were given, or "bad" for a rejected token."""
        token = bearer_token(scope)
        if token is None:
            return local_operator() if over_unix_socket(scope) else None
        identity = self.context.tokens.verify(token) if token else None
        return identity if identity is not None else "bad"

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = secrets.token_hex(8)
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        identity = self._identity(scope)
        state["identity"] = identity if isinstance(identity, Identity) else None
        state["bad_token"] = identity == "bad"
        status_holder = {"status": 500, "started": False}

        async def send_wrapper(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                status_holder["started"] = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        limited_receive = self._limit_body(scope, receive)
        direct = self.direct.match(scope) if self.direct is not None else None
        limit = self.context.max_body_bytes
        try:
            # A body declared over the limit is refused before any of it is read (so no
            # `100 Continue` invites it). A client waiting for that `100 Continue` sends
            # no body: its connection is closed, since what it sends next is no body. One
            # already sending keeps its connection, the rest of its body passed over
            # unread, rather than be reset mid-upload before it could read the refusal.
            # A caller without credentials is told 401 first, by its route, which reads
            # no body either, as at /mcp.
            if isinstance(identity, Identity) and declared_length(scope) > limit:
                raise BodyTooLarge(limit, declared=True)
            if direct is None:
                await self.app(scope, limited_receive, send_wrapper)
            else:
                await self.direct.serve(*direct, scope, limited_receive, send_wrapper)
        except Exception as error:
            # Routes answer their own errors; this catches what escaped them (other doors,
            # an error while rendering an error) so no caller gets a bare text 500.
            if status_holder["started"]:
                raise
            close = False
            if isinstance(error, BodyTooLarge):
                code, message = ErrorCode.TOO_LARGE, str(error)
                close = error.declared and _expects_continue(scope)
            else:
                log.exception("unhandled error", request_id=request_id, path=scope.get("path"))
                code, message = ErrorCode.INTERNAL, "internal error; see the daemon log"
            status_holder["status"] = code.http_status
            jsonrpc = scope.get("path") in self.context.jsonrpc_paths
            await send_error(send, code, message, request_id, close=close, jsonrpc=jsonrpc)
        finally:
            self._record(scope, status_holder["status"], time.perf_counter() - started)

    def _limit_body(self, scope: Scope, receive: Any) -> Any:
        limit = self.context.max_body_bytes
        received = 0

        async def wrapped() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        return wrapped

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("state", {}).get("route_name") or "unmatched"
        metrics = self.context.hub.metrics
        metrics.requests.inc(route, str(status))
        metrics.request_seconds.observe(route, value=seconds)
        if not access_log.enabled():
            return
        identity = scope["state"].get("identity")
        access_log.write(
            "request",
            request_id=scope["state"]["request_id"],
            method=scope.get("method"),
            route=route,
            path=scope.get("path"),
            status=status,
            duration_ms=round(seconds * 1000, 3),
            token=identity.name if identity is not None else None,
            workspace=scope.get("path_params", {}).get("workspace"),
            transport="unix" if over_unix_socket(scope) else "tcp",
        )


class BodyTooLarge(Exception):
    """A body over `limit` bytes: as received, or as its Content-Length `declared` it."""

    def __init__(self, limit: int, *, declared: bool = False) -> None:
        super().__init__(f"request body is larger than {limit} bytes")
        self.limit = limit
        self.declared = declared
