"""What /mcp refuses before MCP (a token, a host, a size, a method, a content type) is a
JSON-RPC error carrying the JSON API's envelope, at the refusal's HTTP status: the MCP
SDK's client passes that error on to the agent, where it reported any other body as
"Server returned an error response"."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from memhub_protocol import MCP_REFUSED, route_by_name
from tests.integration.conftest import LiveDaemon
from tests.integration.test_mcp import MCP_HEADERS, TEAM, mcp_client, mcp_daemon_at, team_reader

pytestmark = pytest.mark.anyio

MAX_BODY_BYTES = 1024 * 1024  # limits.max_body_bytes by default
UNAUTHORIZED = "invalid or expired token; send Authorization: Bearer <token>"
TOO_LARGE = f"request body is larger than {MAX_BODY_BYTES} bytes"
SEND_LESS = "; send less in one request (split a long text over several calls)"
PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with mcp_daemon_at(tmp_path_factory.mktemp("mcp-refusals")) as live:
        yield live


def refusal(answer: httpx2.Response, status: int, code: str) -> dict:
    """The JSON-RPC error of a refusal, checked against the envelope it carries."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None, body
    error = body["error"]
    envelope = error["data"]["error"]
    assert error["code"] == MCP_REFUSED and envelope["code"] == code
    assert error["message"].startswith(f"{code}: {envelope['message']}")
    return error


# --- through the MCP SDK's client -------------------------------------------------------


async def test_an_agent_whose_token_is_revoked_is_told_so(daemon) -> None:
    secret = daemon.add_token("revoked-midway", "read:summary", workspaces=[TEAM])
    async with mcp_client(daemon, secret) as client:
        await client.call_tool("memory_status", {})
        with daemon.http(daemon.admin_token) as http:
            revoked = http.delete(route_by_name("token_revoke").url(token_name="revoked-midway"))
        assert revoked.status_code == 200, revoked.text
        with pytest.raises(MCPError) as refused:
            await client.call_tool("memory_status", {})
    assert refused.value.error.code == MCP_REFUSED
    assert refused.value.error.message == f"unauthorized: {UNAUTHORIZED}"
    assert refused.value.error.data["error"]["code"] == "unauthorized"


async def test_an_agent_sending_too_much_is_told_to_send_less(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("memory_query", {"query": "x" * 2_000_000})
        answered = await client.call_tool("memory_status", {})  # the session goes on
    assert refused.value.error.code == MCP_REFUSED
    assert refused.value.error.message == f"too_large: {TOO_LARGE}{SEND_LESS}"
    assert refused.value.error.data["error"]["code"] == "too_large"
    assert not answered.is_error


# --- each refusal on the wire -----------------------------------------------------------


@pytest.mark.parametrize("secret", [None, "mh_notatoken_0000000000000000000000000000000000"])
def test_a_missing_or_unknown_token_is_401_with_www_authenticate(daemon, secret) -> None:
    headers = {**MCP_HEADERS, **({"authorization": f"Bearer {secret}"} if secret else {})}
    with httpx2.Client(timeout=10) as http:
        answer = http.post(f"{daemon.url}/mcp", json=PING, headers=headers)
    error = refusal(answer, 401, "unauthorized")
    reason = "invalid or expired token" if secret else "missing token"
    assert error["data"]["error"]["message"] == f"{reason}; send Authorization: Bearer <token>"
    assert answer.headers["www-authenticate"].startswith('Bearer realm="memhub"')
    assert ('error="invalid_token"' in answer.headers["www-authenticate"]) == bool(secret)


def test_a_body_declared_over_the_limit_is_413(daemon) -> None:
    body = json.dumps({**PING, "params": {"pad": "x" * MAX_BODY_BYTES}})
    headers = {**MCP_HEADERS, "authorization": f"Bearer {team_reader(daemon)}"}
    with httpx2.Client(timeout=30) as http:
        answer = http.post(f"{daemon.url}/mcp", content=body, headers=headers)
    assert refusal(answer, 413, "too_large")["message"] == f"too_large: {TOO_LARGE}{SEND_LESS}"


def test_a_chunked_body_over_the_limit_is_413(daemon) -> None:
    def chunks() -> Iterator[bytes]:
        yield json.dumps(PING)[:-1].encode() + b', "params": {"pad": "'
        for _ in range(20):
            yield b"x" * 100_000
        yield b'"}}'

    headers = {
        **MCP_HEADERS,
        "content-type": "application/json",
        "authorization": f"Bearer {team_reader(daemon)}",
    }
    with httpx2.Client(timeout=30) as http:
        answer = http.post(f"{daemon.url}/mcp", content=chunks(), headers=headers)
    assert refusal(answer, 413, "too_large")["message"] == f"too_large: {TOO_LARGE}{SEND_LESS}"


def test_a_browser_request_from_a_foreign_origin_is_403(daemon) -> None:
    headers = {
        **MCP_HEADERS,
        "authorization": f"Bearer {team_reader(daemon)}",
        "origin": "http://evil.example",
    }
    with httpx2.Client(timeout=10) as http:
        answer = http.post(f"{daemon.url}/mcp", json=PING, headers=headers)
    error = refusal(answer, 403, "forbidden")
    assert "DNS rebinding protection" in error["message"]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/json-rpc", "application/jsonl", "Application/JSON"]
)
def test_a_body_that_is_not_json_by_its_content_type_is_400(daemon, content_type) -> None:
    headers = {
        **MCP_HEADERS,
        "content-type": content_type,
        "authorization": f"Bearer {team_reader(daemon)}",
    }
    with httpx2.Client(timeout=10) as http:
        answer = http.post(f"{daemon.url}/mcp", content=json.dumps(PING), headers=headers)
    error = refusal(answer, 400, "invalid")
    assert error["message"] == "invalid: Content-Type must be application/json"


def test_a_json_content_type_with_parameters_is_served(daemon) -> None:
    headers = {
        **MCP_HEADERS,
        "content-type": "application/json; charset=utf-8",
        "authorization": f"Bearer {team_reader(daemon)}",
    }
    with httpx2.Client(timeout=10) as http:
        answer = http.post(f"{daemon.url}/mcp", content=json.dumps(PING), headers=headers)
    assert answer.status_code != 400, answer.text
    assert "Content-Type must be" not in answer.text


def test_a_method_but_post_is_405_with_allow(daemon) -> None:
    with httpx2.Client(timeout=10) as http:
        answer = http.get(f"{daemon.url}/mcp", headers={"accept": "text/event-stream"})
    error = refusal(answer, 405, "method_not_allowed")
    assert answer.headers["allow"] == "POST"
    assert error["message"] == "method_not_allowed: GET is not served here; use POST"
    assert error["data"]["error"]["detail"] == {"path": "/mcp", "allow": ["POST"]}
