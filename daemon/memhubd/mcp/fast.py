"""A direct answer to the commonest MCP request: one `tools/call` POSTed to the stateless
JSON endpoint, run by the SDK's own tool handler and written as the SDK writes it.

The SDK spends more on a call than most tools do (a server session, streams and tasks
per POST on the handshake-era wire, middleware and validation passes on the 2026 one).
Whatever this module is not sure to answer exactly as the SDK would (initialize,
notifications, batches, other methods, unknown protocol versions, `Mcp-Param-*`
headers, `_meta` beyond the version envelope, a body it cannot parse) goes to the SDK
unchanged, body included. A one-text result is written into the bytes the SDK encodes
around a stand-in id and text, made once per wire version (`Envelopes`); its text is
escaped once, straight to bytes, or comes already escaped when the tool kept it
(`kept.Splice`). It must not check identity or origin (`McpEndpoint` did), nor know
what a tool does.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner, modern_error_data
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    find_invalid_x_mcp_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    DEFAULT_NEGOTIATED_VERSION,
    PROTOCOL_VERSION_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    ErrorData,
    Implementation,
    JSONRPCError,
    JSONRPCResponse,
    TextContent,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic_core import PydanticSerializationError, to_json
from starlette.responses import Response

from memhubd.mcp.kept import KeptText, Splice, escaped_ascii, offer_splice, withdraw_splice

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

METHOD = "tools/call"
_ENVELOPE = {PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY}
_REQUEST_KEYS = {"jsonrpc", "id", "method", "params"}
_PARAM_KEYS = {"name", "arguments", "_meta"}
_PARAM_HEADER = b"mcp-param-"
_VERSION_HEADER = b"mcp-protocol-version"
# Texts shorter than this are encoded with their envelope, as the SDK does: splicing
# pays off once escaping the text costs more than encoding a second, small envelope.
SPLICE_MIN_CHARS = 2048
_STAND_IN = "memhub:fast-path:text"
# The id an envelope is made with, found again in its bytes and replaced by the call's.
_STAND_IN_ID = 918273645546372819
# Ids the envelopes take: plain ints written alike by `json.dumps` and pydantic.
_MAX_ENVELOPE_ID = 2**53


class ToolCall:
    """One `tools/call` the fast path answers: who to call, with what, on which wire."""

    __slots__ = ("request_id", "name", "arguments", "version", "modern")

    def __init__(
        self,
        request_id: int | str,
        name: str,
        arguments: dict[str, Any],
        version: str,
        modern: bool,
    ) -> None:
        self.request_id = request_id
        self.name = name
        self.arguments = arguments
        self.version = version
        self.modern = modern


class ToolCallFastPath:
    """ASGI app in front of the SDK's: answers a plain `tools/call`, hands on the rest."""

    def __init__(self, server: Any, fallback: ASGIApp, max_body_bytes: int) -> None:
        self.server = server
        self.fallback = fallback
        self.max_body_bytes = max_body_bytes
        lowlevel = server._lowlevel_server
        for name in ("_handle_call_tool", "_tool_input_schema"):
            if not callable(getattr(server, name, None)):
                raise AttributeError(f"this mcp SDK has no {name}")
        # `_serialize` reads only the server (cache hints, the serverInfo stamp): one
        # runner serves every call, the version is passed with each result.
        connection = Connection.from_envelope(DEFAULT_NEGOTIATED_VERSION, None, None)
        self._runner = ServerRunner(lowlevel, connection, None)
        if not callable(getattr(self._runner, "_serialize", None)):
            raise AttributeError("this mcp SDK's ServerRunner has no _serialize")
        self.schemas = HeaderSchemas(server)
        self.envelopes = Envelopes(self._runner)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = scope["headers"]
        if scope["method"] != "POST" or not _plain_post(headers, self.max_body_bytes):
            await self.fallback(scope, receive, send)
            return
        body = await _read_body(receive)
        call = parse_tool_call(body, headers, self.schemas)
        if call is None:
            await self.fallback(scope, _replay(body, receive), send)
            return
        splice, offered = offer_splice()
        try:
            response = await answer(self.server, self._runner, self.envelopes, call, splice)
        finally:
            withdraw_splice(offered)
        await response(scope, receive, send)


def _plain_post(headers: list[tuple[bytes, bytes]], max_body_bytes: int) -> bool:
    """A JSON POST of a known length within the limit, accepting JSON, with no routing
    headers this module leaves to the SDK."""
    length = content_type = accept = None
    for key, value in headers:
        if key == b"content-length":
            length = value
        elif key == b"content-type":
            content_type = value
        elif key == b"accept":
            accept = value
        elif key.startswith(_PARAM_HEADER):
            return False
    if length is None or not length.isdigit() or int(length) > max_body_bytes:
        return False
    return _is_json_type(content_type) and _accepts_json(accept)


def _is_json_type(value: bytes | None) -> bool:
    # As the SDK's `_check_content_type`: any comma part before the first `;`.
    text = (value or b"").decode("latin-1")
    parts = [part.strip() for part in text.split(";")[0].split(",")]
    return "application/json" in parts


def _accepts_json(value: bytes | None) -> bool:
    # As the SDK's `check_accept_headers` (JSON responses need the JSON type only).
    text = (value or b"").decode("latin-1")
    types = [item.strip().split(";")[0].strip().lower() for item in text.split(",")]
    return any(t in ("*/*", "application/json", "application/*") for t in types)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # a disconnect: what was read goes on to the SDK, which handles it
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the SDK after the body was read here: the body first, then the rest."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class HeaderSchemas:
    """Which tools' input schemas declare `Mcp-Param-*` headers, looked up once per schema.

    A schema without a (valid) `x-mcp-header` annotation makes the SDK's header check
    accept every call that carries no such header, and calls that carry one never reach
    `parse_tool_call`: for those tools the check, a walk of the whole schema, is skipped.
    """

    def __init__(self, server: Any) -> None:
        self.server = server
        # Tool name -> (its schema object, whether calls must be checked against it).
        self._known: dict[str, tuple[Any, bool]] = {}

    def to_check(self, name: str) -> Any | None:
        """The schema to check a call of `name` against, or None when nothing needs checking."""
        schema = self.server._tool_input_schema(name)
        if schema is None:  # no such tool: nothing to check, and nothing kept for a name
            return None  # a caller chose (kept, any number of names would pile up)
        known = self._known.get(name)
        if known is None or known[0] is not schema:  # a tool registered again is looked at anew
            annotated = find_invalid_x_mcp_header(schema) is None and bool(x_mcp_header_map(schema))
            known = self._known[name] = (schema, annotated)
        return schema if known[1] else None


# Deeper requests are left to the SDK (the JSON API refuses bodies nested deeper than 32).
_MAX_DEPTH = 32


def _unusual(value: Any, limit: int) -> bool:
    """Whether `value` nests lists and objects more than `limit` levels deep, or holds a
    float: orjson reads an integer past 64 bits as a float where the SDK's `json.loads`
    keeps it an int (a `limit` of 10**20 is clamped there, refused here), so a call with
    any float is left to the SDK."""
    level: list[Any] = [value]
    for _ in range(limit + 1):
        inner = []
        for item in level:
            if isinstance(item, dict):
                inner.extend(item.values())
            elif isinstance(item, list):
                inner.extend(item)
            elif type(item) is float:
                return True
        if not inner:
            return False
        level = inner
    return any(isinstance(item, dict | list) or type(item) is float for item in level)


def _envelope_valid(meta: dict[str, Any]) -> bool:
    """The version envelope's members as the SDK's models accept them."""
    try:
        if PROTOCOL_VERSION_META_KEY in meta and not isinstance(
            meta[PROTOCOL_VERSION_META_KEY], str
        ):
            return False
        if CLIENT_CAPABILITIES_META_KEY in meta:
            ClientCapabilities.model_validate(meta[CLIENT_CAPABILITIES_META_KEY])
        if CLIENT_INFO_META_KEY in meta:
            Implementation.model_validate(meta[CLIENT_INFO_META_KEY])
    except ValueError:  # pydantic's ValidationError
        return False
    return True


def parse_tool_call(
    body: bytes, headers: list[tuple[bytes, bytes]], schemas: HeaderSchemas
) -> ToolCall | None:
    """The call `body` asks for, or None when the SDK must answer it."""
    try:
        # orjson, as strict as the SDK's parser where json.loads is not: a lone UTF-16
        # surrogate, a byte order mark or a non-finite number goes to the SDK, which
        # refuses it (the stdlib parser accepts all three).
        request = orjson.loads(body)
    except (ValueError, RecursionError):
        return None
    if _unusual(request, _MAX_DEPTH):
        return None  # the SDK's parser decides how deep is too deep, and reads numbers
    if not isinstance(request, dict) or not request.keys() <= _REQUEST_KEYS:
        return None
    request_id, params = request.get("id"), request.get("params")
    if request.get("jsonrpc") != "2.0" or request.get("method") != METHOD:
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    if not isinstance(params, dict) or not params.keys() <= _PARAM_KEYS:
        return None
    name, arguments = params.get("name"), params.get("arguments", {})
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    version = next((v.decode("latin-1") for k, v in headers if k == _VERSION_HEADER), None)
    if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
        if "_meta" in params:
            return None
        return ToolCall(request_id, name, arguments, version or DEFAULT_NEGOTIATED_VERSION, False)
    if version not in MODERN_PROTOCOL_VERSIONS:
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not meta.keys() <= _ENVELOPE or not _envelope_valid(meta):
        return None
    text_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
    if find_duplicated_routing_header(text_headers) is not None:
        return None
    verdict = classify_inbound_request(request, headers=dict(text_headers))
    if isinstance(verdict, InboundLadderRejection):
        return None
    schema = schemas.to_check(name) if arguments else None
    if schema is not None and validate_mcp_param_headers(schema, arguments, dict(text_headers)):
        return None
    return ToolCall(request_id, name, arguments, verdict.protocol_version, True)


async def answer(
    server: Any,
    runner: ServerRunner[Any],
    envelopes: Envelopes,
    call: ToolCall,
    splice: Splice,
) -> Response:
    """Run the SDK's `tools/call` handler; its result as that wire's SDK writes it."""
    params = CallToolRequestParams.model_construct(name=call.name, arguments=call.arguments)
    text = None
    try:
        # The handler the SDK registers for tools/call: the same tool lookup, argument
        # validation, ToolError-to-isError conversion and logging; `MemhubMCP.call_tool`
        # adds the max_result_bytes refusal. A tool may hand its text over to `splice`.
        result = await server._handle_call_tool(None, params)
        body = envelopes.fill(call, result, splice)
        if body is not None:
            return _json_response(call, 200, body)
        result = _unspliced(result, splice)
        dumped = runner._serialize(METHOD, call.version, result)
        dumped, text = _stand_in(dumped)
        message: JSONRPCResponse | JSONRPCError = JSONRPCResponse(
            jsonrpc="2.0", id=call.request_id, result=dumped
        )
    except Exception as exc:  # the SDK answers these as JSON-RPC errors too
        error = modern_error_data(exc) if call.modern else _legacy_error(exc)
        message = JSONRPCError(jsonrpc="2.0", id=call.request_id, error=error)
    if call.modern:
        status, body = _modern_body(message, text)
        return _json_response(call, status, body)
    return _json_response(call, 200, _legacy_body(message, text))


def _json_response(call: ToolCall, status: int, body: bytes) -> Response:
    if call.modern:  # as `_streamable_http_modern._write`
        return Response(body, status_code=status, media_type="application/json")
    return Response(body, status_code=status, headers={"Content-Type": "application/json"})


def _one_text(result: Any) -> str | None:
    """The text of a result that is one plain text item and nothing else, else None."""
    if (
        type(result) is not CallToolResult
        or result.meta is not None
        or result.structured_content is not None
        or result.result_type != "complete"
        or type(result.is_error) is not bool
        or len(result.content) != 1
    ):
        return None
    item = result.content[0]
    if type(item) is not TextContent or item.annotations is not None or item.meta is not None:
        return None
    return item.text if type(item.text) is str else None


def _unspliced(result: Any, splice: Splice) -> Any:
    """`result` with a text handed over to `splice` put back in the marker's place."""
    kept = splice.taken(_one_text(result))
    if kept is None:
        return result
    item = TextContent(type="text", text=json.loads(kept.escaped))
    return CallToolResult(content=[item], is_error=result.is_error)


class Envelopes:
    """The bytes the SDK writes around a one-text `tools/call` result with an int id,
    per wire version and `isError`: made once by the SDK's own serialisation of a
    result with a stand-in id and text, then filled with each call's id and text.

    Such a result's wire form depends on nothing else (the serverInfo stamp and cache
    hints are the server's), so the filled bytes are the ones the SDK would write.
    """

    def __init__(self, runner: ServerRunner[Any]) -> None:
        self.runner = runner
        # (version, modern, is_error) -> (before the id, between id and text, after), or
        # None when the stand-ins were not found exactly once, in order.
        self._made: dict[tuple[str, bool, bool], tuple[bytes, bytes, bytes] | None] = {}

    def fill(self, call: ToolCall, result: Any, splice: Splice) -> bytes | None:
        """The answer's bytes, or None when the envelope cannot hold this call's result."""
        text = _one_text(result)
        request_id = call.request_id
        if text is None or type(request_id) is not int or abs(request_id) >= _MAX_ENVELOPE_ID:
            return None
        key = (call.version, call.modern, result.is_error)
        if key not in self._made:
            self._made[key] = self._make(call, result.is_error)
        parts = self._made[key]
        escaped = _escaped(text, splice.taken(text), call.modern)
        if parts is None or escaped is None:
            return None
        before, between, after = parts
        return b"".join((before, str(request_id).encode(), between, escaped, after))

    def _make(self, call: ToolCall, is_error: bool) -> tuple[bytes, bytes, bytes] | None:
        item = TextContent(type="text", text=_STAND_IN)
        result = CallToolResult(content=[item], is_error=is_error)
        dumped = self.runner._serialize(METHOD, call.version, result)
        message = JSONRPCResponse(jsonrpc="2.0", id=_STAND_IN_ID, result=dumped)
        body = _modern_body(message)[1] if call.modern else _legacy_body(message)
        quoted_id = b'"id":' + str(_STAND_IN_ID).encode()
        quoted_text = b'"' + _STAND_IN.encode() + b'"'
        if body.count(quoted_id) != 1 or body.count(quoted_text) != 1:
            return None
        before, _, rest = body.partition(quoted_id)
        between, found, after = rest.partition(quoted_text)
        if not found:
            return None  # the text came before the id
        return before + b'"id":', between, after


def _escaped(text: str, kept: KeptText | None, modern: bool) -> bytes | None:
    """`text` as the wire's SDK encodes a string: the kept bytes when there are some."""
    if kept is not None:
        return kept.escaped
    return _escaped_ascii(text) if modern else _escaped_utf8(text)


def _stand_in(dumped: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The result with its one long text replaced by `_STAND_IN`, and that text (else None).

    Only the text's value changes: keys, their order and every other value stay as the
    SDK shaped them, so the envelope is the SDK's own encoding of everything else.
    """
    content = dumped.get("content")
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return dumped, None
    text = content[0].get("text")
    if not isinstance(text, str) or len(text) < SPLICE_MIN_CHARS or _STAND_IN in text:
        return dumped, None
    return {**dumped, "content": [{**content[0], "text": _STAND_IN}]}, text


def _put_back(message: JSONRPCResponse | JSONRPCError, text: str) -> JSONRPCResponse | JSONRPCError:
    """`message` with the text in place of the stand-in."""
    if not isinstance(message, JSONRPCResponse):
        return message
    item = {**message.result["content"][0], "text": text}
    result = {**message.result, "content": [item]}
    return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)


def _splice(envelope: bytes, encoded: bytes | None) -> bytes | None:
    """`envelope` with its one quoted stand-in replaced by `encoded`; None when the
    stand-in is not there exactly once or the text could not be encoded."""
    quoted = b'"' + _STAND_IN.encode() + b'"'
    if encoded is None or envelope.count(quoted) != 1:
        return None
    before, _, after = envelope.partition(quoted)
    return before + encoded + after


def _escaped_ascii(text: str) -> bytes:
    """`json.dumps(text)` (ASCII-only) as bytes.

    pydantic's encoder and orjson write the same bytes for an ASCII text without DEL
    (json.dumps writes DEL as \\u007f), in less time: taken when it applies.
    """
    if text.isascii() and "\x7f" not in text:
        return escaped_ascii(text)
    return json.dumps(text).encode("ascii")


def _escaped_utf8(text: str) -> bytes | None:
    """The text as pydantic's `model_dump_json` writes a string; None when it cannot
    (a lone surrogate), so that the SDK's own encoding fails as it would."""
    try:
        return to_json(text)
    except PydanticSerializationError:
        return None


def _legacy_error(exc: Exception) -> ErrorData:
    # As `JSONRPCDispatcher`: the shared ladder, then code 0 with the message.
    error = handler_exception_to_error_data(exc)
    return error if error is not None else ErrorData(code=0, message=str(exc))


def _modern_body(
    message: JSONRPCResponse | JSONRPCError, text: str | None = None
) -> tuple[int, bytes]:
    # As `_streamable_http_modern._write` for a request that has an id.
    status = 200
    if isinstance(message, JSONRPCError):
        status = ERROR_CODE_HTTP_STATUS.get(message.error.code, 200)
    body = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    encoded = json.dumps(body, separators=(",", ":")).encode("utf-8")
    if text is None:
        return status, encoded
    spliced = _splice(encoded, _escaped_ascii(text))
    return (status, spliced) if spliced is not None else _modern_body(_put_back(message, text))


def _legacy_body(message: JSONRPCResponse | JSONRPCError, text: str | None = None) -> bytes:
    # As `StreamableHTTPServerTransport._create_json_response` without a session id.
    encoded = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
    if text is None:
        return encoded
    spliced = _splice(encoded, _escaped_utf8(text))
    return spliced if spliced is not None else _legacy_body(_put_back(message, text))
