"""A one-text `tools/call` result is written into an envelope the SDK encoded once per
wire version around a stand-in id and text: the bytes must be those the SDK's own
serialisation writes for the whole result, whatever the text and id. A text a tool
kept comes already escaped and is measured by what it stands for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server import MCPServer
from mcp_types import CallToolResult, ImageContent, JSONRPCResponse, TextContent
from pydantic_core import PydanticSerializationError

from memhubd.mcp.fast import ToolCall, ToolCallFastPath, _legacy_body, _modern_body, _unspliced
from memhubd.mcp.kept import KEEP_MIN_CHARS, KeptText, KeptTexts, Splice, keepable

LONG = "x" * KEEP_MIN_CHARS
TEXTS = {
    "short": '{"ok":true}',
    "ascii json": '{"ok":true,"text":"a \\"quoted\\" word\\nand a back\\\\slash"}' + LONG,
    "control characters": "".join(chr(i) for i in range(32)) + LONG,
    "delete": "before\x7fafter" + LONG,
    "non-ascii": "caf\u00e9 \u4e2d\u6587 \U0001f600 \u2028\u2029 \ufeff" + LONG,
    "the stand-ins": '"memhub:fast-path:text" 918273645546372819' + LONG,
    # past ORJSON_FROM_CHARS: escaped by orjson instead of pydantic
    "long ascii json": '{"text":"a \\"quoted\\" word\\nand a back\\\\slash"}' * 400 + LONG,
    "long control characters": "".join(chr(i) for i in range(32)) * 600,
}
WIRES = {"2026-07-28": True, "2025-06-18": False, "2025-03-26": False}


async def _fallback(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not used")


@pytest.fixture(scope="module")
def fast_path() -> ToolCallFastPath:
    return ToolCallFastPath(MCPServer("memhub"), _fallback, 1 << 20)


def call(version: str, request_id: int | str = 7) -> ToolCall:
    return ToolCall(request_id, "memory_query", {}, version, WIRES[version])


def sdk_bytes(fast_path: ToolCallFastPath, version: str, result: Any, request_id: Any) -> bytes:
    """What the fast path wrote before envelopes: the SDK's serialisation, whole."""
    dumped = fast_path._runner._serialize("tools/call", version, result)
    message = JSONRPCResponse(jsonrpc="2.0", id=request_id, result=dumped)
    return _modern_body(message)[1] if WIRES[version] else _legacy_body(message)


def text_result(text: str, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
@pytest.mark.parametrize("version", WIRES)
@pytest.mark.parametrize("is_error", [False, True])
@pytest.mark.parametrize("request_id", [0, 7, -3, 2**53 - 1])
def test_an_envelope_filled_is_the_sdks_encoding_of_the_whole_result(
    fast_path: ToolCallFastPath, text: str, version: str, is_error: bool, request_id: int
) -> None:
    result = text_result(text, is_error)
    filled = fast_path.envelopes.fill(call(version, request_id), result, Splice())
    assert filled == sdk_bytes(fast_path, version, result, request_id)


def test_a_text_with_a_lone_surrogate_is_left_to_the_sdks_path(
    fast_path: ToolCallFastPath,
) -> None:
    result = text_result("half a pair \ud800 " + LONG)
    modern = fast_path.envelopes.fill(call("2026-07-28"), result, Splice())
    assert modern == sdk_bytes(fast_path, "2026-07-28", result, 7)
    # pydantic's encoder fails on the whole message: the SDK's path fails the same way
    assert fast_path.envelopes.fill(call("2025-06-18"), result, Splice()) is None
    with pytest.raises(PydanticSerializationError):
        sdk_bytes(fast_path, "2025-06-18", result, 7)


@pytest.mark.parametrize(
    "result",
    [
        CallToolResult(content=[TextContent(type="text", text="a")] * 2),
        CallToolResult(content=[TextContent(type="text", text="a")], structured_content={"a": 1}),
        CallToolResult(content=[TextContent(type="text", text="a")], _meta={"k": 1}),
        CallToolResult(content=[ImageContent(type="image", data="AA==", mime_type="image/png")]),
        {"content": [{"type": "text", "text": "a"}]},
    ],
    ids=["two texts", "structured", "meta", "image", "a mapping"],
)
def test_other_results_are_left_to_the_sdks_path(fast_path: ToolCallFastPath, result: Any) -> None:
    assert fast_path.envelopes.fill(call("2026-07-28"), result, Splice()) is None


@pytest.mark.parametrize("request_id", ["call-7", 2**53, True])
def test_ids_other_than_plain_ints_are_left_to_the_sdks_path(
    fast_path: ToolCallFastPath, request_id: Any
) -> None:
    result = text_result(LONG)
    assert fast_path.envelopes.fill(call("2026-07-28", request_id), result, Splice()) is None


@pytest.mark.parametrize("version", WIRES)
def test_a_kept_text_handed_over_is_written_as_the_text_it_stands_for(
    fast_path: ToolCallFastPath, version: str
) -> None:
    # given a tool that handed its kept text over and answered with the marker
    text = '{"ok":true,"rendered_text":"MUST\\n- a \\"rule\\""}' + LONG
    kept = keepable(text)
    assert kept is not None
    splice = Splice()
    result = text_result(splice.hand_over(kept))
    # then the answer's bytes are those of the real text, on the envelope and the SDK path
    expected = sdk_bytes(fast_path, version, text_result(text), 7)
    assert fast_path.envelopes.fill(call(version), result, splice) == expected
    assert sdk_bytes(fast_path, version, _unspliced(result, splice), 7) == expected
    # and the marker stands for nothing in a call whose tool handed nothing over
    assert Splice().taken(splice.marker) is None
    assert splice.taken(text) is None


def test_only_long_plain_ascii_texts_are_kept_and_their_escape_is_json_dumps() -> None:
    assert keepable("x" * (KEEP_MIN_CHARS - 1)) is None
    assert keepable(TEXTS["non-ascii"]) is None
    assert keepable(TEXTS["delete"]) is None
    for name in ("ascii json", "control characters", "long ascii json", "long control characters"):
        text = TEXTS[name]
        kept = keepable(text)
        assert kept is not None and kept.size == len(text.encode())
        assert kept.escaped == json.dumps(text).encode()


def test_kept_texts_are_bounded_in_bytes_least_recently_used_first_out() -> None:
    texts = KeptTexts(4 * (1000 + 256))
    for key in "abcd":
        texts.put(key, KeptText(b"x" * 1000, 1000))
    assert texts.get("a") is not None  # a is now the most recently used
    texts.put("e", KeptText(b"x" * 1000, 1000))
    assert texts.get("b") is None and texts.get("a") is not None and len(texts) == 4
    texts.put("huge", KeptText(b"x" * 2000, 2000))  # over a quarter: not kept
    assert texts.get("huge") is None and texts.used <= texts.max_bytes
