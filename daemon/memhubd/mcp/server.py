"""The MCP endpoint of the daemon: an `MCPServer` served at exactly `/mcp` on TCP and
on the Unix socket, stateless with JSON responses.

`mount_mcp` adds the route and the session manager's lifespan to an `ApiContext`.
The endpoint reuses the API middleware's identity (401 without one), refuses
browser requests from non-local origins, and hands the identity to the tools. What it
refuses before MCP is a JSON-RPC error carrying the JSON API's envelope, at that status.
Answers larger than `limits.max_result_bytes` are replaced by a refusal, as on the
JSON API. It must not verify tokens itself or know what a tool does.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

import structlog
from mcp.server import MCPServer
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    TextContent,
)
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.routing import Route

from memhub_protocol import ErrorCode, jsonrpc_refusal
from memhubd import __version__
from memhubd.api.app import ApiContext
from memhubd.api.middleware import BodyTooLarge, declared_length, over_unix_socket
from memhubd.mcp import payloads, text
from memhubd.mcp.caller import (
    reset_caller,
    set_caller,
    stop_watching,
    visible_names,
    watch_workspace,
)
from memhubd.mcp.cowork_tools import register_cowork_tools
from memhubd.mcp.diary_tools import register_diary_tools
from memhubd.mcp.fast import ToolCallFastPath
from memhubd.mcp.graph_tools import register_graph_tools
from memhubd.mcp.kept import current_splice
from memhubd.mcp.origin import rebinding_problem
from memhubd.mcp.recall_tools import register_recall_tools
from memhubd.mcp.resources import register_resources
from memhubd.mcp.tools import register_tools, reply
from memhubd.runtime.config import McpConfig
from memhubd.runtime.hub import Hub

log = structlog.get_logger("memhubd.mcp")

MCP_PATH = "/mcp"
ROUTE_NAME = "mcp"
_MEMDSL_SCHEME = "memdsl://"


class MemhubMCP(MCPServer):
    """MCPServer whose resource lists show memdsl's names only to one-workspace callers,
    and whose answers never exceed `limits.max_result_bytes` (as on the JSON API)."""

    def __init__(self, hub: Hub) -> None:
        # No `subscriptions/listen` (protocol 2026-07-28): this server sends nothing
        # unasked, so a listen stream would only hold a connection open, unbounded and
        # past its token's revocation, as the GET stream refused below would; without
        # it, `server/discover` says no list changes are ever announced.
        super().__init__(
            "memhub", instructions=text.INSTRUCTIONS, version=__version__, subscriptions=False
        )
        self.hub = hub

    def _result_limit(self) -> int:
        return int(self.hub.limits.max_result_bytes)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        about, watching = watch_workspace()
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as error:
            # memdsl's tools answer as memdsl's server does; memhub's own say which
            # argument is wrong in one line, not the argument model's exception text.
            cause = error.__cause__
            if name in payloads.MEMDSL_TOOL_NAMES:
                raise
            if isinstance(cause, ValidationError):
                raise ToolError(f"invalid: {_argument_problems(cause)}") from None
            # The SDK prefixes a tool's own error with "Error executing tool NAME: ";
            # memhub's tools say theirs as the argument checks do, in one line.
            prefix = f"Error executing tool {name}: "
            message = str(error)
            if message.startswith(prefix):
                raise ToolError(message[len(prefix) :]) from None
            raise
        finally:
            stop_watching(watching)
        if not isinstance(result, CallToolResult):
            return result
        size, limit = _text_bytes(result.content), self._result_limit()
        if size <= limit:
            return result
        return too_large_result(name, size, limit, about[0] if about else None)

    async def read_resource(
        self, uri: Any, context: Any = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        contents = await super().read_resource(uri, context)
        if isinstance(contents, InputRequiredResult):
            return contents
        contents = list(contents)
        size = sum(_size(item.content) for item in contents)
        limit = self._result_limit()
        if size > limit:
            raise ResourceError(
                f"too_large: {uri} is {size} bytes, larger than {limit} bytes "
                "(limits.max_result_bytes); read a narrower resource (one file, or use "
                "the tools with a smaller limit or filters)"
            )
        return contents

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> GetPromptResult | InputRequiredResult:
        # The SDK answers an unknown prompt or argument as an internal error (and logs
        # a traceback); the caller is told which name is wrong, as for a resource.
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
        takes = [argument.name for argument in prompt.arguments or ()]
        unknown = sorted(set(arguments or {}) - set(takes))
        if unknown:
            listed = ", ".join(repr(key) for key in unknown)
            message = f"Unknown argument of prompt {name}: {listed} (it takes: {', '.join(takes)})"
            raise MCPError(INVALID_PARAMS, message, {"name": name, "arguments": unknown})
        return await super().get_prompt(name, arguments, context)

    def _show_memdsl(self) -> bool:
        names = visible_names(self.hub)
        return names is None or len(names) == 1

    async def list_resources(self) -> list[Any]:
        items = await super().list_resources()
        if self._show_memdsl():
            return items
        return [r for r in items if not str(r.uri).startswith(_MEMDSL_SCHEME)]

    async def list_resource_templates(self) -> list[Any]:
        items = await super().list_resource_templates()
        if self._show_memdsl():
            return items
        return [t for t in items if not t.uri_template.startswith(_MEMDSL_SCHEME)]


def _size(content: str | bytes) -> int:
    if isinstance(content, bytes):
        return len(content)
    # `isascii` reads a flag CPython keeps with the string: an ASCII answer (most are)
    # is measured without encoding it again.
    return len(content) if content.isascii() else len(content.encode("utf-8", "surrogatepass"))


def _text_bytes(content: list[Any]) -> int:
    # A text handed over to the fast path's splice is measured by what it stands for.
    splice = current_splice()
    total = 0
    for item in content:
        if isinstance(item, TextContent):
            kept = splice.taken(item.text) if splice is not None else None
            total += kept.size if kept is not None else _size(item.text)
    return total


def too_large_result(
    tool: str, size: int, limit: int, workspace: str | None = None
) -> CallToolResult:
    """An answer over the limit, as memdsl answers a request it cannot serve: `ok:false`,
    naming the workspace the refused answer was about."""
    return reply(payloads.too_large(tool, size, limit, workspace=workspace))


def build_mcp_server(hub: Hub) -> MemhubMCP:
    server = MemhubMCP(hub)
    register_tools(server, hub)
    register_recall_tools(server, hub)
    register_cowork_tools(server, hub)
    register_graph_tools(server, hub)
    register_diary_tools(server, hub)
    register_resources(server, hub)
    _refuse_unknown_arguments(server)
    _list_in_memdsls_order(server)
    return server


def _list_in_memdsls_order(server: MemhubMCP) -> None:
    """`tools/list` as memdsl lists its nine tools (map, query, check, types, explain,
    list, lint, propose, review_list), memhub's own after them."""
    tools = server._tool_manager._tools
    ordered = {name: tools[name] for name in payloads.TOOL_NAMES if name in tools}
    ordered.update((name, tool) for name, tool in tools.items() if name not in ordered)
    tools.clear()
    tools.update(ordered)


def _refuse_unknown_arguments(server: MemhubMCP) -> None:
    """Every tool refuses an argument it does not take, as the JSON API refuses an
    unknown field: the SDK's argument models drop one silently, so a typo (`limt`) or
    an argument another door has (`readers` on ingest) would be ignored, and a call
    meant to restrict who may read a drawer would store it for everyone. Each tool's
    published schema says so too (`additionalProperties: false`)."""
    for tool in server._tool_manager.list_tools():
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)
        tool.parameters["additionalProperties"] = False


class McpEndpoint:
    """ASGI app at /mcp: rebinding check, authentication, caller binding, then the SDK."""

    def __init__(
        self, app: Any, allowed_hosts: tuple[str, ...] = (), max_body_bytes: int | None = None
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        state = scope.setdefault("state", {})
        state["route_name"] = ROUTE_NAME
        if scope["method"] != "POST":
            # Every request comes by POST. A GET would open the standalone stream that
            # carries what a server sends unasked, and this stateless server sends nothing
            # so (each stream would only hold a connection open, unbounded and past its
            # token's revocation); it has no session for a DELETE to end. The spec lets
            # such a server answer 405, with or without a token, as the app answers a
            # method any route does not serve (`Allow`, `detail.allow`).
            method = scope["method"]
            await _refuse(
                scope,
                receive,
                send,
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{method} is not served here; use POST",
                detail={"path": scope["path"], "allow": ["POST"]},
                headers={"Allow": "POST"},
            )
            return
        if not over_unix_socket(scope):
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            problem = rebinding_problem(
                headers.get("origin"), headers.get("host"), self.allowed_hosts
            )
            if problem is not None:
                await _refuse(scope, receive, send, ErrorCode.FORBIDDEN, problem)
                return
        identity = state.get("identity")
        if identity is None:
            reason = "invalid or expired token" if state.get("bad_token") else "missing token"
            message = f"{reason}; send Authorization: Bearer <token>"
            await _refuse(scope, receive, send, ErrorCode.UNAUTHORIZED, message)
            return
        if self.max_body_bytes is not None and declared_length(scope) > self.max_body_bytes:
            # Refused here with the daemon's error envelope, as the JSON API refuses it
            # (the SDK would answer a bare text line).
            message = str(BodyTooLarge(self.max_body_bytes))
            await _refuse(scope, receive, send, ErrorCode.TOO_LARGE, message)
            return
        if not _json_content(scope):
            # The SDK's own check answers a bare text line or its own error, which its
            # client reports as an unexplained error: refused here, 400 for every type.
            message = "Content-Type must be application/json"
            await _refuse(scope, receive, send, ErrorCode.INVALID, message, status=400)
            return
        token = set_caller(identity)

        async def send_plain_status(message: dict[str, Any]) -> None:
            # The SDK may send an HTTPStatus; access logs and metrics want the number.
            if message["type"] == "http.response.start":
                message["status"] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_plain_status)
        except BodyTooLarge as error:
            await _refuse(scope, receive, send, ErrorCode.TOO_LARGE, str(error))
        finally:
            reset_caller(token)


async def _refuse(
    scope: Any,
    receive: Any,
    send: Any,
    code: ErrorCode,
    message: str,
    *,
    detail: dict[str, Any] | None = None,
    status: int | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    """A request refused before MCP: a JSON-RPC error, the only error body an MCP client
    passes on to its caller, carrying the JSON API's envelope as its `data`."""
    headers = dict(headers or {})
    if code is ErrorCode.UNAUTHORIZED:
        headers["WWW-Authenticate"] = 'Bearer realm="memhub"'
        if scope["state"].get("bad_token"):
            headers["WWW-Authenticate"] += ', error="invalid_token"'
    body = jsonrpc_refusal(code, message, detail)
    response = JSONResponse(body, status or code.http_status, headers=headers)
    await response(scope, receive, send)


def _json_content(scope: Any) -> bool:
    # As the SDK checks a POST's Content-Type before reading it, so that every type it
    # would refuse in its own words is refused here: the media type exactly, as written
    # (`application/json-rpc` is another type), its parameters (`; charset=utf-8`) aside.
    for name, value in scope["headers"]:
        if name == b"content-type":
            media = value.decode("latin-1").split(";", 1)[0]
            return any(part.strip() == "application/json" for part in media.split(","))
    return False


def mount_mcp(context: ApiContext, settings: McpConfig | None = None) -> None:
    """Serve MCP at /mcp in the app built from `context` (call before `build_app`).

    Adds the route to `context.extra_routes` and wraps `context.lifespan` so the
    SDK's session manager runs inside the hub's lifespan. Does nothing when MCP is
    disabled or already mounted on this context.
    """
    settings = settings or McpConfig()
    mounted = any(getattr(route, "path", None) == MCP_PATH for route in context.extra_routes)
    if not settings.enabled or mounted:
        return
    server = build_mcp_server(context.hub)
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # Host checks are ours (McpEndpoint): the SDK's would refuse the Unix socket's
        # port-less Host header.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=context.max_body_bytes,
    )
    manager = server.session_manager
    app: Any = StreamableHTTPASGIApp(manager)
    if settings.fast_path:
        # The fast path calls SDK internals; an SDK that no longer has them is served
        # entirely by the SDK's own path rather than failing on the first call.
        try:
            app = ToolCallFastPath(server, app, context.max_body_bytes)
        except (AttributeError, TypeError, ImportError) as exc:
            log.warning("mcp_fast_path_disabled", reason=repr(exc))
    endpoint = McpEndpoint(app, settings.allowed_hosts, context.max_body_bytes)
    context.extra_routes.append(Route(MCP_PATH, endpoint, name=ROUTE_NAME))
    context.jsonrpc_paths.add(MCP_PATH)
    inner = context.lifespan

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with contextlib.AsyncExitStack() as stack:
            state = await stack.enter_async_context(inner(app)) if inner is not None else None
            await stack.enter_async_context(manager.run())
            yield state

    context.lifespan = lifespan


# What an argument model's error types say, for a caller (the rest: pydantic's words).
_ARGUMENT_PROBLEMS = {
    "missing": "is required",
    "extra_forbidden": "is not an argument of this tool",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
}


def _argument_problems(error: ValidationError) -> str:
    """One clause per wrong argument: `'top_k' must be an integer; 'query' is required`."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        kind, bounds = str(item.get("type")), item.get("ctx") or {}
        if kind == "greater_than_equal":
            said = f"must be at least {bounds.get('ge')}"
        elif kind == "less_than_equal":
            said = f"must be at most {bounds.get('le')}"
        else:
            said = _ARGUMENT_PROBLEMS.get(kind, str(item.get("msg", "is invalid")))
        problems.append(f"'{where}' {said}")
    return "; ".join(problems)
