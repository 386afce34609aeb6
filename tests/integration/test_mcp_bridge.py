"""`memctl mcp`, the stdio bridge, end to end: the MCP SDK's stdio client launches it
against a real daemon, over TCP and over the Unix socket."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from test_mcp import TEAM, mcp_daemon_at

from memctl.cli import build_parser
from memctl.mcp_bridge import run_bridge
from tests.integration.conftest import LiveDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with mcp_daemon_at(tmp_path_factory.mktemp("bridge"), [TEAM, "writing"]) as live:
        yield live


def bridge_command(*options: str) -> list[str]:
    """`python -m memctl mcp ...`, or the bridge module itself where memctl lacks the command."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "mcp" in commands.choices:
        return ["-m", "memctl", "mcp", *options]
    return ["-m", "memctl.mcp_bridge", *options]


def bridge(daemon: LiveDaemon, url: str, secret: str | None, tmp: Path) -> StdioServerParameters:
    options = ["--url", url] + (["--token", secret] if secret else [])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["XDG_CONFIG_HOME"] = str(tmp)  # no client.toml of the machine's user
    return StdioServerParameters(command=sys.executable, args=bridge_command(*options), env=env)


def reader(daemon: LiveDaemon) -> str:
    return daemon.tokens.get("bridge-reader") or daemon.add_token(
        "bridge-reader", "read:summary,read:search", workspaces=[TEAM]
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_client_uses_every_kind_of_request_through_the_bridge(
    daemon, tmp_path, mode: str
) -> None:
    params = bridge(daemon, daemon.url, reader(daemon), tmp_path)
    async with Client(params, mode=mode) as client:
        assert client.server_info.name == "memhub"
        assert "memory_map" in (client.instructions or "")
        tools = {tool.name for tool in (await client.list_tools()).tools}
        listed = await client.call_tool("memory_list", {"limit": 3})
        status = await client.call_tool("memory_status", {})
        source = (await client.read_resource(f"memhub://{TEAM}/file/symbols.mem")).contents[0]
        prompt = await client.get_prompt("memdsl_task_brief", {"task": "tag a release"})
    # Every tool the daemon serves (memdsl's nine and memhub's) reaches the bridge's client.
    assert tools == set(json.loads(status.content[0].text)["tools"]) and len(tools) > 11
    assert not listed.is_error and len(json.loads(listed.content[0].text)["items"]) == 3
    assert json.loads(status.content[0].text)["identity"]["name"] == "bridge-reader"
    assert source.text == (Path(daemon.workspaces[TEAM]) / "symbols.mem").read_text()
    assert prompt.messages[0].content.text.endswith("Task: tag a release")


async def test_bridge_over_the_unix_socket_serves_the_local_operator(daemon, tmp_path) -> None:
    params = bridge(daemon, daemon.socket_url, None, tmp_path)
    async with Client(params) as client:
        status = json.loads((await client.call_tool("memory_status", {})).content[0].text)
    assert status["identity"]["name"] == "local-operator"
    assert {w["name"] for w in status["workspaces"]} == {TEAM, "writing"}


async def test_bridge_relays_tool_errors_unchanged(daemon, tmp_path) -> None:
    params = bridge(daemon, daemon.url, reader(daemon), tmp_path)
    async with Client(params) as client:
        result = await client.call_tool("memory_propose", {"source": "x"})
    assert result.is_error and "write:candidate" in result.content[0].text


def run_lines(url: str, secret: str | None, *messages: object) -> tuple[list[dict], str]:
    stdin = io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    stdout, stderr = io.BytesIO(), io.StringIO()
    assert run_bridge(url, secret, stdin=stdin, stdout=stdout, stderr=stderr) == 0
    replies = [json.loads(line) for line in stdout.getvalue().splitlines()]
    return replies, stderr.getvalue()


PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize(
    "secret", ["mh_wrong_000000000000000000000000000", "mh_t\u00f6ken_00000000000000000000000"]
)
def test_a_rejected_token_becomes_a_json_rpc_error(daemon, secret: str) -> None:
    # A token of any character memctl sends in a header (up to U+00FF) is refused alike
    replies, stderr = run_lines(daemon.url, secret, PING)
    assert [reply["id"] for reply in replies] == [7]
    error = replies[0]["error"]
    # The words an MCP client at /mcp sees, after the daemon's address and status.
    said = "unauthorized: invalid or expired token; send Authorization: Bearer <token>"
    assert error["message"] == f"memhubd at {daemon.url} answered 401: {said}"
    assert error["code"] == -32001 and error["data"]["error"]["code"] == "unauthorized"
    assert "401" in stderr


def test_notifications_get_no_reply_and_requests_get_theirs(daemon) -> None:
    replies, _stderr = run_lines(daemon.url, reader(daemon), INITIALIZED, PING)
    assert replies == [{"jsonrpc": "2.0", "id": 7, "result": {}}]
