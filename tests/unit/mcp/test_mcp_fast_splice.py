"""The MCP fast path writes a long text answer by splicing it, escaped once, into the
envelope the SDK encodes around a stand-in: the bytes must be those of the whole
message encoded the SDK's way, on both wires, whatever the text holds. And the
`Mcp-Param-*` header check walks a tool's schema only when that schema declares one."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import JSONRPCError, JSONRPCResponse
from pydantic_core import PydanticSerializationError

from memhubd.mcp.fast import (
    _STAND_IN,
    SPLICE_MIN_CHARS,
    HeaderSchemas,
    _legacy_body,
    _modern_body,
    _stand_in,
)

LONG = "x" * SPLICE_MIN_CHARS
TEXTS = {
    "ascii json": '{"ok":true,"text":"a \\"quoted\\" word\\nand a back\\\\slash"}' + LONG,
    "control characters": "".join(chr(i) for i in range(32)) + LONG,
    "delete": "before\x7fafter" + LONG,
    "non-ascii": "caf\u00e9 \u4e2d\u6587 \U0001f600 \u2028\u2029 \ufeff" + LONG,
    "holds the stand-in": f'"{_STAND_IN}"' + LONG,
}


def result_with(text: str) -> dict[str, Any]:
    """A tools/call result as the SDK's `_serialize` shapes it (key order included)."""
    return {
        "content": [{"text": text, "type": "text"}],
        "isError": False,
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "memhub", "version": "0"}},
    }


def whole(text: str, request_id: int | str = 7) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result_with(text))


def spliced(text: str, request_id: int | str = 7) -> tuple[JSONRPCResponse, str | None]:
    dumped, taken = _stand_in(result_with(text))
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=dumped), taken


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
@pytest.mark.parametrize("request_id", [7, "call-7"])
def test_a_spliced_answer_is_the_whole_answer_encoded_by_the_sdk_on_both_wires(
    text: str, request_id: int | str
) -> None:
    # given a long text answer, its stand-in message and the text taken out
    message, taken = spliced(text, request_id)
    # when both wires write it
    # then the bytes are those of the message with its text, encoded whole
    assert _modern_body(message, taken) == _modern_body(whole(text, request_id))
    assert _legacy_body(message, taken) == _legacy_body(whole(text, request_id))


def test_the_text_is_taken_out_only_from_one_long_text_content() -> None:
    short = result_with("x" * (SPLICE_MIN_CHARS - 1))
    two = {**result_with(LONG), "content": [{"text": LONG, "type": "text"}] * 2}
    image = {"content": [{"data": LONG, "mimeType": "image/png", "type": "image"}]}
    for result in (short, two, image, {"isError": False}):
        assert _stand_in(result) == (result, None)
    dumped, taken = _stand_in(result_with(LONG))
    assert taken == LONG and dumped == result_with(_STAND_IN)


def test_a_text_with_a_lone_surrogate_is_answered_as_the_sdk_answers_it() -> None:
    # given a text JSON can carry escaped but UTF-8 cannot
    text = "half a pair \ud800 " + LONG
    message, taken = spliced(text)
    # then the modern wire escapes it as json.dumps does, and the legacy one fails as
    # pydantic's encoder fails on the whole message
    assert _modern_body(message, taken) == _modern_body(whole(text))
    with pytest.raises(PydanticSerializationError):
        _legacy_body(whole(text))
    with pytest.raises(PydanticSerializationError):
        _legacy_body(message, taken)


def test_errors_are_written_as_before() -> None:
    error = JSONRPCError.model_validate(
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}}
    )
    status, body = _modern_body(error)
    assert body == b'{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}'
    assert status in (200, 400)
    assert _legacy_body(error, None) == body


class Tools:
    """A server whose tools' input schemas are given."""

    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas

    def _tool_input_schema(self, name: str) -> Any:
        return self.schemas.get(name)


PLAIN = {"type": "object", "properties": {"query": {"type": "string"}}}
ANNOTATED = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
}
INVALID = {
    "type": "object",
    "properties": {"items": {"type": "array", "x-mcp-header": "Items"}},
}


def test_only_a_schema_that_declares_param_headers_is_checked() -> None:
    schemas = HeaderSchemas(Tools({"plain": PLAIN, "annotated": ANNOTATED, "invalid": INVALID}))
    assert schemas.to_check("plain") is None
    assert schemas.to_check("annotated") is ANNOTATED
    # the SDK validates nothing against a schema whose annotation is invalid
    assert schemas.to_check("invalid") is None
    assert schemas.to_check("unknown") is None


def test_a_tool_registered_again_is_looked_at_anew() -> None:
    tools = Tools({"tool": PLAIN})
    schemas = HeaderSchemas(tools)
    assert schemas.to_check("tool") is None
    tools.schemas["tool"] = ANNOTATED
    assert schemas.to_check("tool") is ANNOTATED


def test_names_of_tools_that_do_not_exist_are_never_kept() -> None:
    # Any caller may send any tool name: keeping each would grow without bound
    schemas = HeaderSchemas(Tools({"plain": PLAIN}))
    for n in range(1000):
        assert schemas.to_check(f"no-such-tool-{n}" + "z" * 1000) is None
    schemas.to_check("plain")
    assert list(schemas._known) == ["plain"]
