"""MCP edges where a caller is told what it got wrong, or warned before a loss: an
unknown prompt or prompt argument is invalid params naming it, memhub's own arguments
are taken as strictly as the JSON API takes them, `memdsl://file/` takes a path with
its directories, errors name arguments by the tool's names, and the tools that take
away what no door gives back say they are destructive."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.test_mcp import (
    TEAM,
    call,
    mcp_client,
    mcp_mounted,
    team_reader,
    token,
    tool_error,
)

pytestmark = pytest.mark.anyio

NOTES = 'module teamcode.subnotes\n\nentity Person.Ada {\n  canonical_name: "Ada"\n}\n'
LEGACY_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("mcp-edges")
    workspaces = copy_examples(root / "ws", [TEAM, "writing"])
    (root / "ws" / TEAM / "sub").mkdir()
    (root / "ws" / TEAM / "sub" / "notes.mem").write_text(NOTES, encoding="utf-8")
    with mcp_mounted(), start_daemon(root, workspaces) as live:
        yield live


def writer(daemon: LiveDaemon) -> str:
    scopes = "read:summary,read:search,write:recall,write:candidate"
    return token(daemon, "edges-writer", scopes, workspaces=[TEAM])


def legacy_post(daemon: LiveDaemon, secret: str, method: str, params: Any) -> dict[str, Any]:
    """One JSON-RPC request on the 2025-06-18 wire, as clients before 2026 send it."""
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    with daemon.http(secret) as http:
        response = http.post("/mcp", json=message, headers=LEGACY_HEADERS)
    assert response.status_code in (200, 400), response.text
    return dict(response.json())


# --- prompts ------------------------------------------------------------------------------


async def test_an_unknown_prompt_is_invalid_params_naming_it(daemon) -> None:
    # Given a prompt name with a typo
    async with mcp_client(daemon, team_reader(daemon)) as client:
        # When it is asked for
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("memdsl_task_breif", {"task": "x"})
    legacy = legacy_post(daemon, team_reader(daemon), "prompts/get", {"name": "memdsl_task_breif"})

    # Then the caller is told which name is unknown, as for an unknown resource
    assert refused.value.error.code == INVALID_PARAMS
    assert "memdsl_task_breif" in refused.value.error.message
    assert legacy["error"]["code"] == INVALID_PARAMS
    assert "memdsl_task_breif" in legacy["error"]["message"]


async def test_an_unknown_prompt_argument_is_invalid_params_naming_it(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("memdsl_task_brief", {"taks": "x"})
        # The argument it does take still renders the prompt.
        brief = await client.get_prompt("memdsl_task_brief", {"task": "ship 2.0"})
    legacy = legacy_post(
        daemon,
        team_reader(daemon),
        "prompts/get",
        {"name": "memdsl_write_declaration", "arguments": {"facts": "x"}},
    )

    message = refused.value.error.message
    assert refused.value.error.code == INVALID_PARAMS
    assert "'taks'" in message and "task" in message and "memdsl_task_brief" in message
    assert legacy["error"]["code"] == INVALID_PARAMS and "'facts'" in legacy["error"]["message"]
    assert brief.messages[0].content.text.endswith("Task: ship 2.0")


# --- memhub's own arguments, strictly -----------------------------------------------------


@pytest.mark.parametrize("argument", ["max_must", "max_bytes"])
@pytest.mark.parametrize("value", [True, "2", 2.0, -1], ids=["true", "string", "float", "neg"])
async def test_query_budgets_take_integers_only_as_the_json_api_does(
    daemon, argument: str, value: Any
) -> None:
    arguments = {"query": "force push main", argument: value}
    async with mcp_client(daemon, team_reader(daemon)) as client:
        refused = await call(client, "memory_query", arguments)
        schema = {t.name: t for t in (await client.list_tools()).tools}["memory_query"]
    with daemon.http(team_reader(daemon)) as http:
        api = http.post(f"/v1/workspaces/{TEAM}/query", json=arguments)

    # A value the caller can fix is an ok:false answer, in the JSON API's words,
    # whatever is wrong with it
    assert api.status_code == 422, api.text
    assert refused["ok"] is False and refused["status"] == "invalid", refused
    assert api.json()["error"]["message"] in json.dumps(refused), (refused, api.json())
    # And the schema still asks for an integer
    assert {"type": "integer"} in schema.input_schema["properties"][argument]["anyOf"]


async def test_memdsls_own_query_arguments_keep_memdsls_reading(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        payload = await call(client, "memory_query", {"query": "force push main", "limit": "2"})
    assert payload["ok"] is True


async def test_times_are_a_string_or_an_integer_in_the_schema_and_the_refusal(daemon) -> None:
    async with mcp_client(daemon, writer(daemon)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = [
            tools["memory_kg"].input_schema["properties"]["as_of"],
            tools["memory_fact_check"].input_schema["properties"]["now"],
        ]
        as_of = await tool_error(client, "memory_kg", {"action": "query", "as_of": ["a"]})
        fraction = await tool_error(client, "memory_kg", {"action": "query", "as_of": 1.5})
        now = await tool_error(client, "memory_fact_check", {"text": "x", "now": 1800000000.0})
        whole = await call(client, "memory_kg", {"action": "query", "as_of": 1800000000})

    for schema in listed:
        assert {branch["type"] for branch in schema["anyOf"]} == {"string", "integer", "null"}
    assert as_of.startswith("invalid: 'as_of' must be") and as_of.count("as_of") == 1
    assert fraction == as_of
    assert now.startswith("invalid: 'now' must be") and now.count("now") == 1
    assert whole["workspace"] == TEAM


# --- memdsl://file/ with directories ------------------------------------------------------


async def test_memdsl_file_takes_a_path_in_a_subdirectory(daemon) -> None:
    # Given a one-workspace caller and a file in a subdirectory of the workspace
    async with mcp_client(daemon, team_reader(daemon)) as client:
        # When it reads the file by its relative path, slashes as they are or encoded
        plain = (await client.read_resource("memdsl://file/sub/notes.mem")).contents[0].text
        encoded = (await client.read_resource("memdsl://file/sub%2Fnotes.mem")).contents[0].text
    # Then both are the file's source
    assert plain == encoded == NOTES


@pytest.mark.parametrize(
    "uri",
    [
        "memdsl://file/../writing/voice.mem",
        "memdsl://file/sub/../../writing/voice.mem",
        "memdsl://file/%2E%2E/writing/voice.mem",
        "memdsl://file//etc/passwd",
    ],
)
async def test_memdsl_file_refuses_a_path_out_of_the_workspace(daemon, uri: str) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
    assert refused.value.error.code == INVALID_PARAMS


# --- argument names -----------------------------------------------------------------------


async def test_peek_partner_names_its_partner_argument_tool(daemon) -> None:
    async with mcp_client(daemon, writer(daemon)) as client:
        refused = await tool_error(client, "memory_peek_partner", {"tool": "x" * 201})
    assert "'tool' must be at most 200 characters" in refused
    assert "'partner'" not in refused


async def test_ingest_refuses_a_source_longer_than_a_path(daemon) -> None:
    # Given a citation as long as the API refuses for `source`
    async with mcp_client(daemon, writer(daemon)) as client:
        # When memory_ingest is given it
        refused = await tool_error(
            client, "memory_ingest", {"content": "deploy checklist", "source": "s" * 4097}
        )
    # Then it is refused as the JSON API refuses it, naming the argument
    assert "'source' must be at most 4096 characters" in refused


# --- annotations --------------------------------------------------------------------------


async def test_tools_that_take_away_what_no_door_gives_back_are_destructive(daemon) -> None:
    async with mcp_client(daemon, daemon.admin_token) as client:
        tools = (await client.list_tools()).tools
    destructive = {t.name for t in tools if t.annotations and t.annotations.destructive_hint}
    read_only = {t.name for t in tools if t.annotations and t.annotations.read_only_hint}

    assert destructive == {"memory_delete", "memory_taxonomy"}
    # Every other write only adds: a drawer, a proposal, a message, a diary entry, a
    # triple or the end of one's validity (still read with as_of).
    assert all(t.annotations is not None for t in tools)
    assert {"memory_ingest", "memory_kg", "memory_propose"}.isdisjoint(destructive | read_only)


# --- nothing is sent unasked ------------------------------------------------------------

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "edge", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_post(daemon: LiveDaemon, secret: str, method: str, params: Any) -> dict[str, Any]:
    """One JSON-RPC request on the 2026-07-28 wire (a per-request envelope), read whole
    within a few seconds: a stream held open would fail it."""
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {**params, "_meta": MODERN_META},
    }
    headers = {
        **LEGACY_HEADERS,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    with daemon.http(secret) as http:
        response = http.post("/mcp", json=message, headers=headers, timeout=5.0)
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return dict(json.loads(text))


def test_a_listen_stream_is_refused_and_no_list_change_is_announced(daemon) -> None:
    secret = team_reader(daemon)
    discovered = modern_post(daemon, secret, "server/discover", {})
    capabilities = discovered["result"]["capabilities"]
    assert capabilities["tools"].get("listChanged") in (None, False), capabilities
    assert capabilities["resources"].get("subscribe") in (None, False), capabilities
    assert capabilities["prompts"].get("listChanged") in (None, False), capabilities

    listened = modern_post(
        daemon, secret, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    assert listened["error"]["code"] == -32601, listened
