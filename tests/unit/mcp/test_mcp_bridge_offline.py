"""The stdio bridge without a daemon: JSON-RPC errors for requests, silence for
notifications, and the HTTP headers it derives from each message."""

from __future__ import annotations

import io
import json
import socket

import httpx

from memctl.mcp_bridge import (
    DAEMON_UNREACHABLE,
    PARSE_ERROR,
    Relay,
    encode_header_value,
    replies_from,
    routing_headers,
    run_bridge,
)
from memctl.transport import parse_target

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def relay_lines(url: str, raw: bytes) -> tuple[list[dict], str]:
    stdout, stderr = io.BytesIO(), io.StringIO()
    assert run_bridge(url, "t", stdin=io.BytesIO(raw), stdout=stdout, stderr=stderr) == 0
    return [json.loads(line) for line in stdout.getvalue().splitlines()], stderr.getvalue()


def lines(*messages: object) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def test_daemon_down_answers_each_request_with_an_error_and_notifications_with_nothing():
    url = f"http://127.0.0.1:{closed_port()}"
    replies, stderr = relay_lines(url, lines(PING, INITIALIZED, {**PING, "id": "b"}))
    assert sorted(str(r["id"]) for r in replies) == ["1", "b"]
    for reply in replies:
        assert reply["error"]["code"] == DAEMON_UNREACHABLE
        assert "connection refused" in reply["error"]["message"]
    assert "cannot reach memhubd" in stderr


def test_missing_unix_socket_is_reported_as_unreachable(tmp_path):
    replies, stderr = relay_lines(f"unix://{tmp_path}/none.sock", lines(PING))
    assert replies[0]["error"]["code"] == DAEMON_UNREACHABLE
    assert str(tmp_path) in stderr


def test_a_line_that_is_not_json_gets_a_parse_error():
    url = f"http://127.0.0.1:{closed_port()}"
    replies, _stderr = relay_lines(url, b"{nope\n\n")
    assert replies == [{"jsonrpc": "2.0", "id": None, "error": replies[0]["error"]}]
    assert replies[0]["error"]["code"] == PARSE_ERROR


def relay() -> Relay:
    return Relay(parse_target("http://127.0.0.1:1"), httpx.Client(), io.BytesIO(), io.StringIO())


def test_modern_requests_are_routed_by_version_method_and_name():
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    message["params"] = {"name": "memory_map", "arguments": {}, "_meta": meta}
    assert routing_headers(message, relay()) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "memory_map",
    }


def test_handshake_requests_carry_the_negotiated_version_after_initialize():
    bridge = relay()
    assert routing_headers({"method": "initialize", "id": 1}, bridge) == {}
    bridge.protocol_version, bridge.session_id = "2025-06-18", "s1"
    assert routing_headers({"method": "tools/list", "id": 2}, bridge) == {
        "Mcp-Session-Id": "s1",
        "MCP-Protocol-Version": "2025-06-18",
    }


def test_header_values_outside_printable_ascii_are_base64_wrapped():
    assert encode_header_value("memhub://team/map") == "memhub://team/map"
    assert encode_header_value("mémoire") == "=?base64?bcOpbW9pcmU=?="
    assert encode_header_value(" padded") == "=?base64?IHBhZGRlZA==?="


def test_event_stream_replies_are_split_into_messages():
    body = 'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n: ping\n\n'
    body += 'data: {"jsonrpc":"2.0",\ndata: "id":2,"result":{}}\n\n'
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, text=body)
    assert [m["id"] for m in replies_from(response)] == [1, 2]


def test_accepted_notification_has_no_reply():
    assert replies_from(httpx.Response(202)) == []


def test_a_line_too_long_to_relay_is_refused_and_not_held(monkeypatch, tmp_path):
    """A line over the bound is answered with a parse error and dropped as it comes, from a
    descriptor read in chunks (as stdin) and from a plain stream; the next line is relayed."""
    import memctl.mcp_bridge as bridge

    monkeypatch.setattr(bridge, "MAX_LINE_BYTES", 100_000)
    url = f"http://127.0.0.1:{closed_port()}"
    raw = b'{"jsonrpc": "2.0", "id": 7, "method": "' + b"x" * 300_000 + b'"}\n' + lines(PING)
    answers = []
    replies, _ = relay_lines(url, raw)
    answers.append(replies)
    fed = tmp_path / "stdin"
    fed.write_bytes(raw)
    stdout, stderr = io.BytesIO(), io.StringIO()
    with open(fed, "rb") as stdin:  # a real descriptor: read in chunks
        assert run_bridge(url, "t", stdin=stdin, stdout=stdout, stderr=stderr) == 0
    answers.append([json.loads(line) for line in stdout.getvalue().splitlines()])
    for replies in answers:
        refused = [r for r in replies if r["id"] is None]
        assert len(refused) == 1 and refused[0]["error"]["code"] == PARSE_ERROR
        assert "longer than 100000 bytes" in refused[0]["error"]["message"]
        assert [r["id"] for r in replies if r["id"] is not None] == [1]  # the ping, relayed
