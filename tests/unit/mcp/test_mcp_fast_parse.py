"""What the fast path takes on itself, and what it leaves to the SDK (None): never a
request the SDK's own parser or models would refuse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from memhubd.mcp.fast import HeaderSchemas, parse_tool_call

MODERN = sorted(MODERN_PROTOCOL_VERSIONS)[-1]


class NoTools:
    def _tool_input_schema(self, name: str) -> Any:
        return None


def call(arguments: Any, meta: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "memory_query", "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def modern_headers() -> list[tuple[bytes, bytes]]:
    return [
        (b"mcp-protocol-version", MODERN.encode()),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"memory_query"),
    ]


def parse(body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    return parse_tool_call(body, headers or [], HeaderSchemas(NoTools()))


def test_a_plain_call_is_taken() -> None:
    found = parse(json.dumps(call({"query": "deploy"})).encode())
    assert found is not None and found.arguments == {"query": "deploy"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
        b'{"name":"memory_query","arguments":{"query":"\\ud800"}}}',
        b"\xef\xbb\xbf" + json.dumps(call({"query": "x"})).encode(),
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
        b'{"name":"memory_query","arguments":{"limit":NaN}}}',
    ],
    ids=["lone surrogate", "byte order mark", "NaN"],
)
def test_what_the_sdks_parser_refuses_is_left_to_it(body: bytes) -> None:
    assert parse(body) is None


def test_arguments_nested_deeper_than_32_levels_are_left_to_the_sdk() -> None:
    deep: Any = 1
    for _ in range(40):
        deep = {"a": deep}
    assert parse(json.dumps(call({"x": deep})).encode()) is None
    shallow: Any = 1
    for _ in range(20):
        shallow = [shallow]
    assert parse(json.dumps(call({"x": shallow})).encode()) is not None


@pytest.mark.parametrize("number", [b"100000000000000000000", b"-9223372036854775809", b"0.5"])
def test_numbers_orjson_reads_otherwise_than_the_sdk_are_left_to_it(number: bytes) -> None:
    # orjson reads an integer past 64 bits as a float; json.loads keeps it an int
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
        b'{"name":"memory_list","arguments":{"limit":' + number + b"}}}"
    )
    assert parse(body) is None
    within = body.replace(number, b"9223372036854775807")
    assert parse(within) is not None


def test_an_envelope_the_sdks_models_refuse_is_left_to_it() -> None:
    good = {
        PROTOCOL_VERSION_META_KEY: MODERN,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: {"name": "t", "version": "1"},
    }
    body = json.dumps(call({"query": "x"}, good)).encode()
    assert parse(body, modern_headers()) is not None
    for key, bad in (
        (CLIENT_CAPABILITIES_META_KEY, 5),
        (CLIENT_INFO_META_KEY, {"name": "t"}),
        (PROTOCOL_VERSION_META_KEY, 7),
    ):
        body = json.dumps(call({"query": "x"}, {**good, key: bad})).encode()
        assert parse(body, modern_headers()) is None, key
