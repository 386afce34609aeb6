"""MCP at /mcp on a real daemon, through the MCP SDK's own client, over TCP and the
Unix socket: listings, every tool and resource, authentication, workspace grants,
access policies, and agreement with the JSON API."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import memhubd.server as server_module
from memhub_protocol import route_by_name
from memhubd.auth.access import HIDDEN_MARKER
from memhubd.mcp import mount_mcp
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

pytestmark = pytest.mark.anyio

TEAM = "team-coding"
TOOLS = {
    "memory_map": {},
    "memory_types": {},
    "memory_query": {"query": "force push to main"},
    "memory_check": {"task": "push to main", "candidate": "git push --force origin main"},
    "memory_explain": {"id": "decision:api.version_in_path"},
    "memory_list": {"limit": 5},
    "memory_lint": {},
    "memory_review_list": {},
    "memory_status": {},
    "memory_workspaces": {},
}
SCHEMAS = {
    "memory_map": "memdsl.mcp.map.v1",
    "memory_types": "memdsl.mcp.types.v1",
    "memory_query": "memdsl.mcp.query.v1",
    "memory_check": "memdsl.mcp.check.v1",
    "memory_explain": "memdsl.mcp.explain.v1",
    "memory_list": "memdsl.mcp.list.v1",
    "memory_lint": "memdsl.mcp.lint.v1",
    "memory_review_list": "memdsl.mcp.review_list.v1",
    "memory_status": "memhub.mcp.status.v1",
    "memory_workspaces": "memhub.mcp.workspaces.v1",
}


@contextmanager
def mcp_mounted() -> Iterator[None]:
    """Daemons started inside serve MCP (a no-op once `run_daemon` mounts it itself)."""
    original = server_module.build_app

    def build(context: Any) -> Any:
        mount_mcp(context)
        return original(context)

    server_module.build_app = build
    try:
        yield
    finally:
        server_module.build_app = original


@contextmanager
def mcp_daemon_at(root: Path, names: list[str] | None = None) -> Iterator[LiveDaemon]:
    workspaces = copy_examples(root / "ws", names)
    with mcp_mounted():
        starting = start_daemon(root, workspaces)
        daemon = starting.__enter__()
    try:
        yield daemon
    finally:
        starting.__exit__(None, None, None)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with mcp_daemon_at(tmp_path_factory.mktemp("mcp")) as live:
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def team_reader(daemon: LiveDaemon) -> str:
    return token(daemon, "team-reader", "read:summary,read:search", workspaces=[TEAM])


@asynccontextmanager
async def mcp_client(
    daemon: LiveDaemon, secret: str | None, *, unix: bool = False
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    transport = httpx2.AsyncHTTPTransport(uds=daemon.socket_path) if unix else None
    base = "http://memhub" if unix else daemon.url
    http = httpx2.AsyncClient(headers=headers, transport=transport, timeout=30)
    async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
        yield client


def api_get(daemon: LiveDaemon, secret: str, route: str, **params: Any) -> Any:
    query = params.pop("query_params", None)
    with daemon.http(secret) as http:
        response = http.get(route_by_name(route).url(**params), params=query)
    assert response.status_code == 200, response.text
    return response.json()


def api_file(daemon: LiveDaemon, secret: str, file_id: str) -> str:
    with daemon.http(secret) as http:
        response = http.get(route_by_name("file").url(workspace=TEAM, file_id=file_id))
    assert response.status_code == 200, response.text
    return response.text


def api_post(daemon: LiveDaemon, secret: str, route: str, body: dict, **params: Any) -> Any:
    with daemon.http(secret) as http:
        response = http.post(route_by_name(route).url(**params), json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    assert len(result.content) == 1 and result.content[0].type == "text"  # memdsl's one JSON text
    return json.loads(result.content[0].text)


async def tool_error(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error
    return result.content[0].text


# --- listings ---------------------------------------------------------------------------


# Tools whose answer spans every workspace the caller may use, so they name none.
CROSS_WORKSPACE_TOOLS = {"memory_tunnels"}


async def test_lists_described_tools_that_take_a_workspace(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= set(TOOLS) | {"memory_propose"}
    for tool in tools.values():
        assert len(tool.description or "") > 60, tool.name
        if tool.name in CROSS_WORKSPACE_TOOLS:
            continue
        assert "workspace" in tool.input_schema["properties"], tool.name
        assert "workspace" not in tool.input_schema.get("required", []), tool.name


async def test_instructions_state_the_memory_protocol(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        instructions = client.instructions or ""
    for phrase in ("memory_map", "MUST", "SHOULD", "CONTEXT", "CONFLICT", "MISSING"):
        assert phrase in instructions
    for phrase in ("no_match", "memory_explain", "memory_check", "NEEDS_REVIEW", "approve"):
        assert phrase in instructions


# Texts that once told agents the server could not write: none may come back.
DENIALS = (
    "not available",
    "always empty",
    "does not accept",
    "stores nothing",
    "not supported",
    "yet",
)
# What each review-gated tool really does, as its description must say.
CAPABILITIES = {
    "memory_propose": ("review", "pending", "proposal_id", "ok:false", "supersedes"),
    "memory_review_list": ("pending", "approved", "rejected", "proposed"),
}


async def test_texts_describe_the_server_as_it_is(daemon) -> None:
    """Descriptions, instructions and prompts name only what exists and deny nothing it does."""
    async with mcp_client(daemon, team_reader(daemon)) as client:
        instructions = client.instructions or ""
        tools = {tool.name: tool.description or "" for tool in (await client.list_tools()).tools}
        listed = (await client.list_prompts()).prompts
        prompts = [p.name for p in listed]
        bodies = []
        for prompt in listed:
            arguments = {a.name: "x" for a in prompt.arguments or []}
            rendered = await client.get_prompt(prompt.name, arguments)
            bodies.append("\n".join(m.content.text for m in rendered.messages))
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {
            t.uri_template.replace("{+", "{")
            for t in (await client.list_resource_templates()).resource_templates
        }
    texts = {"instructions": instructions, **tools, **dict(zip(prompts, bodies, strict=True))}
    for where, words in texts.items():
        lowered = words.lower()
        assert not [d for d in DENIALS if re.search(rf"\b{d}\b", lowered)], where
        assert set(re.findall(r"\bmemory_[a-z_]+", words)) <= set(tools), where
        for uri in re.findall(r"mem(?:dsl|hub)://[\w{}+/]+", words):
            assert uri.rstrip(".") in resources | templates, (where, uri)
    for tool, phrases in CAPABILITIES.items():
        assert all(phrase in tools[tool] for phrase in phrases), tool
    assert "memory_propose" in instructions and "memory_review_list" in instructions
    assert "approves" in instructions
    write_prompt = bodies[prompts.index("memdsl_write_declaration")]
    assert "memory_propose" in write_prompt and "proposal_id" in write_prompt


async def test_one_workspace_caller_also_sees_memdsl_resources(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert resources == {
        "memhub://status",
        "memhub://workspaces",
        "memdsl://status",
        "memdsl://map",
        "memdsl://types",
        "memdsl://files",
    }
    assert "memhub://{workspace}/file/{+file_id}" in templates
    assert "memdsl://file/{+file_id}" in templates
    assert prompts == {"memdsl_task_brief", "memdsl_write_declaration"}


async def test_several_workspace_caller_sees_only_memhub_resources(daemon) -> None:
    async with mcp_client(daemon, daemon.admin_token) as client:
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
    assert resources == {"memhub://status", "memhub://workspaces"}
    assert all(t.startswith("memhub://") for t in templates) and len(templates) == 4


async def test_prompts_carry_the_task_and_the_observation(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        brief = await client.get_prompt("memdsl_task_brief", {"task": "ship 2.0"})
        write = await client.get_prompt("memdsl_write_declaration", {"fact": "we use tabs"})
    assert brief.messages[0].content.text.endswith("Task: ship 2.0")
    assert "memory_map" in brief.messages[0].content.text
    assert write.messages[0].content.text.endswith("Observation: we use tabs")
    assert "memory_types" in write.messages[0].content.text


# --- every tool and resource, on both listeners -----------------------------------------


@pytest.mark.parametrize("unix", [False, True], ids=["tcp", "unix"])
async def test_every_tool_answers_in_its_memdsl_shape(daemon, unix: bool) -> None:
    async with mcp_client(daemon, team_reader(daemon), unix=unix) as client:
        for name, arguments in TOOLS.items():
            payload = await call(client, name, arguments)
            assert payload["ok"] is True, (name, payload)
            assert payload["schema_version"] == SCHEMAS[name]
            assert isinstance(payload.get("next_actions", []), list)


@pytest.mark.parametrize("unix", [False, True], ids=["tcp", "unix"])
async def test_every_resource_reads(daemon, unix: bool) -> None:
    secret = team_reader(daemon)
    async with mcp_client(daemon, secret, unix=unix) as client:
        texts = {}
        uris = [
            "memhub://status",
            "memhub://workspaces",
            f"memhub://{TEAM}/map",
            f"memhub://{TEAM}/types",
            f"memhub://{TEAM}/files",
            f"memhub://{TEAM}/file/rules.mem",
            "memdsl://status",
            "memdsl://map",
            "memdsl://types",
            "memdsl://files",
            "memdsl://file/0",
        ]
        for uri in uris:
            texts[uri] = (await client.read_resource(uri)).contents[0].text
    for uri in uris:
        if "/file/" not in uri:
            assert json.loads(texts[uri])["ok"] is True, uri
    assert texts[f"memhub://{TEAM}/file/rules.mem"] == api_file(daemon, secret, "rules.mem")
    first = json.loads(texts["memdsl://files"])["files"][0]
    assert first["file_id"] == "0"
    assert texts["memdsl://file/0"] == api_file(daemon, secret, Path(first["path"]).name)


async def test_unknown_memdsl_file_id_answers_memdsl_not_found_payload(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        text = (await client.read_resource("memdsl://file/999")).contents[0].text
    assert json.loads(text)["status"] == "not_found"


async def test_unknown_memhub_file_is_a_resource_error(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        with pytest.raises(MCPError, match="no source file"):
            await client.read_resource(f"memhub://{TEAM}/file/nothing.mem")


# --- authentication, scopes, grants -----------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("secret", [None, "mh_notatoken_0000000000000000000000000000000000"])
def test_mcp_without_a_valid_token_is_401_with_an_envelope(daemon, secret) -> None:
    with daemon.http(secret) as http:
        response = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 401
    assert response.json()["error"]["data"]["error"]["code"] == "unauthorized"
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_mcp_over_the_unix_socket_without_token_is_the_local_operator(daemon) -> None:
    with daemon.unix() as http:
        response = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "memhub"


async def test_local_operator_calls_tools_over_the_unix_socket(daemon) -> None:
    async with mcp_client(daemon, None, unix=True) as client:
        status = await call(client, "memory_status", {})
    assert status["identity"]["name"] == "local-operator"
    assert {w["name"] for w in status["workspaces"]} == set(daemon.workspaces)


async def test_read_only_token_calling_propose_is_told_the_missing_scope(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        message = await tool_error(client, "memory_propose", {"source": "fact a { claim: x }"})
    assert "write:candidate" in message


async def test_token_without_search_scope_cannot_query(daemon) -> None:
    secret = token(daemon, "summary-only", "read:summary", workspaces=[TEAM])
    async with mcp_client(daemon, secret) as client:
        message = await tool_error(client, "memory_query", {"query": "deploy"})
        assert (await call(client, "memory_map", {}))["ok"] is True
    assert "read:search" in message


async def test_workspace_without_a_grant_is_an_error_listing_usable_ones(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        ungranted = await tool_error(client, "memory_map", {"workspace": "writing"})
        unknown = await tool_error(client, "memory_map", {"workspace": "nope"})
        with pytest.raises(MCPError, match=TEAM):
            await client.read_resource("memhub://writing/map")
    # A workspace without a grant answers as one that does not exist
    assert "workspace_not_found" in ungranted and f"may use: {TEAM}" in ungranted
    assert ungranted.replace("'writing'", "'nope'") == unknown


async def test_workspace_is_required_when_the_caller_may_use_several(daemon) -> None:
    async with mcp_client(daemon, daemon.admin_token) as client:
        message = await tool_error(client, "memory_map", {})
        named = await call(client, "memory_map", {"workspace": "writing"})
    assert "'workspace' argument is required" in message
    assert all(name in message for name in daemon.workspaces)
    assert named["workspace"] == "writing"


async def test_memdsl_resources_refuse_a_caller_with_several_workspaces(daemon) -> None:
    async with mcp_client(daemon, daemon.admin_token) as client:
        with pytest.raises(MCPError, match="exactly one workspace"):
            await client.read_resource("memdsl://map")


# --- writes are proposals ---------------------------------------------------------------


PROPOSAL = """fact notes.tabs_style {
  claim: "We indent with tabs."
  evidence { source: "review thread" quote: "tabs, please" }
}
"""


async def test_propose_stores_a_pending_proposal_that_is_not_served(daemon) -> None:
    secret = token(daemon, "writer", "read:summary,read:search,write:candidate", workspaces=[TEAM])
    root = Path(daemon.workspaces[TEAM])
    sources_before = sorted(p for p in root.rglob("*.mem"))
    async with mcp_client(daemon, secret) as client:
        result = await client.call_tool("memory_propose", {"source": PROPOSAL, "reason": "seen"})
        queue = await call(client, "memory_review_list", {"status": "pending"})
        explained = await call(client, "memory_explain", {"id": "fact:notes.tabs_style"})
    payload = json.loads(result.content[0].text)
    assert not result.is_error
    assert payload["status"] == "pending_review" and payload["declaration_id"] == (
        "fact:notes.tabs_style"
    )
    assert payload["proposal_id"] in payload["next_actions"][0]
    assert [p["id"] for p in queue["proposals"]] == [payload["proposal_id"]]
    assert explained["status"] == "not_found"
    assert sorted(p for p in root.rglob("*.mem")) == sources_before


async def test_an_invalid_proposal_is_refused_and_nothing_is_stored(daemon) -> None:
    secret = token(daemon, "writer2", "read:summary,write:candidate", workspaces=[TEAM])
    async with mcp_client(daemon, secret) as client:
        before = await call(client, "memory_review_list", {"status": "all"})
        result = await client.call_tool("memory_propose", {"source": "fact a { claim: x "})
        after = await call(client, "memory_review_list", {"status": "all"})
    refusal = json.loads(result.content[0].text)
    # memdsl's convention: a refusal is an `ok:false` payload, not a tool error.
    assert not result.is_error and refusal["ok"] is False
    assert refusal["status"] == "invalid" and refusal["errors"]
    assert after["total"] == before["total"]


async def test_review_list_rejects_an_unknown_status(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        payload = await call(client, "memory_review_list", {"status": "someday"})
    assert payload["ok"] is False and payload["status"] == "invalid"


def fact_named(name: str) -> str:
    return PROPOSAL.replace("notes.tabs_style", name)


def review_writer(daemon: LiveDaemon) -> str:
    return token(
        daemon,
        "review-writer",
        "read:summary,write:candidate",
        workspaces=[TEAM],
        roles=["developer"],
    )


async def test_review_list_pages_by_offset_to_the_newest_proposals(daemon) -> None:
    # given three new proposals at the end of the queue
    async with mcp_client(daemon, review_writer(daemon)) as client:
        for n in range(3):
            await call(client, "memory_propose", {"source": fact_named(f"notes.paged_{n}")})
        everything = await call(client, "memory_review_list", {"status": "all", "limit": 200})
        total = everything["total"]
        ids = [p["id"] for p in everything["proposals"]]

        # when the caller pages with an offset
        last = await call(
            client, "memory_review_list", {"status": "all", "limit": 1, "offset": total - 1}
        )
        middle = await call(
            client, "memory_review_list", {"status": "all", "limit": 1, "offset": total - 3}
        )
        past_the_end = await call(
            client, "memory_review_list", {"status": "all", "offset": total + 5}
        )

    # then each page is that slice of what total counts, and says where the next starts
    assert len(ids) == total <= 200
    assert "offset" not in everything and "next_offset" not in everything  # memdsl's answer
    assert [p["id"] for p in last["proposals"]] == ids[-1:]
    assert (last["total"], last["offset"], last["next_offset"]) == (total, total - 1, None)
    assert last["next_actions"] == [everything["next_actions"][0]]
    assert [p["id"] for p in middle["proposals"]] == [ids[-3]]
    assert middle["next_offset"] == total - 2
    hint = middle["next_actions"][1]
    assert f'status="all", limit=1, offset={total - 2}, workspace=' in hint
    assert "2 more proposal(s)" in hint
    assert past_the_end["proposals"] == [] and past_the_end["next_offset"] is None


@pytest.mark.parametrize("offset", [-1, "2", 1.5, True])
async def test_review_list_refuses_an_offset_that_is_not_a_whole_number(daemon, offset) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        payload = await call(client, "memory_review_list", {"offset": offset})
    assert payload["ok"] is False and payload["status"] == "invalid"
    assert "'offset' must be an integer at least 0" in payload["error"]


async def test_review_show_gives_one_proposal_with_its_source_and_decision(daemon) -> None:
    # given a pending proposal and a rejected one
    async with mcp_client(daemon, review_writer(daemon)) as client:
        pending = await call(client, "memory_propose", {"source": fact_named("notes.shown")})
        rejected = await call(client, "memory_propose", {"source": fact_named("notes.refused")})
    with daemon.http(daemon.admin_token) as http:
        url = route_by_name("proposal_reject").url(
            workspace=TEAM, proposal_id=rejected["proposal_id"]
        )
        assert http.post(url, json={"reason": "say it as a rule"}).status_code == 200

    # when a reader shows each over MCP
    async with mcp_client(daemon, team_reader(daemon)) as client:
        shown = await call(client, "memory_review_show", {"id": pending["proposal_id"]})
        decided = await call(client, "memory_review_show", {"id": rejected["proposal_id"]})

    # then it reads what the JSON API's show answers: source, validation, decision
    expected = api_get(
        daemon, team_reader(daemon), "proposal", workspace=TEAM, proposal_id=pending["proposal_id"]
    )
    assert {k: v for k, v in shown.items() if k != "next_actions"} == expected
    assert shown["proposal"]["source"] == fact_named("notes.shown")
    assert shown["proposal"]["proposer"] == "review-writer"
    assert shown["validation"]["ok"] is True
    assert "human-only" in shown["next_actions"][0]
    assert decided["proposal"]["status"] == "rejected"
    assert decided["proposal"]["reject_reason"] == "say it as a rule"
    assert decided["validation"] is None


async def test_review_show_hides_what_the_list_hides(daemon) -> None:
    # given a proposal whose declaration only the security role may read
    source = fact_named("notes.secret").replace(
        '"tabs, please" }', '"tabs, please" }\n  access_policy { readers: [security] }'
    )
    with daemon.http(daemon.admin_token) as http:
        made = http.post(
            route_by_name("proposal_create").url(workspace=TEAM), json={"source": source}
        )
    assert made.status_code == 201, made.text
    hidden_id = made.json()["proposal_id"]

    async with mcp_client(daemon, review_writer(daemon)) as client:
        listed = await call(client, "memory_review_list", {"status": "all", "limit": 200})
        hidden = await tool_error(client, "memory_review_show", {"id": hidden_id})
        unknown = await tool_error(client, "memory_review_show", {"id": "p-20260101-000000-abcdef"})
        empty = await tool_error(client, "memory_review_show", {"id": " "})

    assert hidden_id not in {p["id"] for p in listed["proposals"]}
    assert listed["hidden_by_access_policy"] >= 1
    assert hidden.startswith("not_found") and hidden_id in hidden
    assert hidden.replace(hidden_id, "ID") == unknown.replace("p-20260101-000000-abcdef", "ID")
    assert "'id' must not be empty" in empty


# --- memdsl's argument handling ---------------------------------------------------------


async def test_empty_query_and_empty_id_are_invalid_payloads(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        query = await call(client, "memory_query", {"query": "   "})
        explain = await call(client, "memory_explain", {"id": ""})
        check = await call(client, "memory_check", {"task": "x", "candidate": " "})
    assert (query["status"], query["error"]) == ("invalid", "query_required")
    assert (explain["status"], explain["error"]) == ("invalid", "id_required")
    assert (check["status"], check["error"]) == ("invalid", "task_and_candidate_required")


async def test_explain_answers_the_declaration_with_evidence_and_relations(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        payload = await call(client, "memory_explain", {"id": "api.version_in_path"})
    declaration = payload["declaration"]
    assert declaration["id"] == "decision:api.version_in_path"
    assert {"relations", "referenced_by", "evidence", "fields"} <= set(declaration)
    assert "decision:api.version_in_path" in payload["rendered_text"]


async def test_unknown_id_is_a_not_found_payload(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        payload = await call(client, "memory_explain", {"id": "fact:nothing.here"})
    assert payload == {
        "ok": False,
        "schema_version": "memdsl.mcp.explain.v1",
        "status": "not_found",
        "workspace": TEAM,
        "id": "fact:nothing.here",
        "next_actions": payload["next_actions"],
    }


async def test_query_limit_is_clamped_to_fifty(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        wide = await call(client, "memory_query", {"query": "deploy release", "limit": 500})
    secret = team_reader(daemon)
    fifty = api_post(
        daemon, secret, "query", {"query": "deploy release", "limit": 50}, workspace=TEAM
    )
    assert wide["evidence_pack"] == fifty


async def test_no_match_offers_the_workspace_vocabulary(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        payload = await call(client, "memory_query", {"query": "zzqx unheard"})
        mapped = await call(client, "memory_map", {})
    assert payload["status"] == "no_match" and payload["ok"] is True
    assert payload["vocabulary"] == mapped["vocabulary"]
    assert any("vocabulary" in action for action in payload["next_actions"])


async def test_a_visible_global_rule_means_a_query_never_misses(daemon) -> None:
    secret = token(daemon, "developer", "read:search", workspaces=[TEAM], roles=["developer"])
    async with mcp_client(daemon, secret) as client:
        payload = await call(client, "memory_query", {"query": "zzqx unheard"})
    assert payload["status"] == "ok" and payload["evidence_pack"]["must"]
    assert "vocabulary" not in payload


# --- the same answers as the JSON API ---------------------------------------------------

QUERIES = ["force push to main", "release changelog", "payment keys in logs", "zzqx unheard"]


@pytest.mark.parametrize("query", QUERIES)
async def test_query_gives_the_json_api_evidence_pack(daemon, query: str) -> None:
    secret = team_reader(daemon)
    expected = api_post(daemon, secret, "query", {"query": query}, workspace=TEAM)
    async with mcp_client(daemon, secret) as client:
        payload = await call(client, "memory_query", {"query": query})
    assert payload["evidence_pack"] == expected
    assert payload["status"] == (
        "ok" if expected["must"] or expected["should"] or expected["context"] else "no_match"
    )


async def test_check_gives_the_json_api_compliance_pack(daemon) -> None:
    secret = team_reader(daemon)
    body = {"task": "push to main", "candidate": "git push --force origin main"}
    expected = api_post(daemon, secret, "check", body, workspace=TEAM)
    async with mcp_client(daemon, secret) as client:
        payload = await call(client, "memory_check", body)
    assert payload["compliance_pack"] == expected
    assert payload["status"] == expected["verdict"]


def visible_ids(daemon: LiveDaemon, secret: str) -> list[str]:
    listing = api_get(
        daemon,
        secret,
        "list",
        workspace=TEAM,
        query_params={"include_inactive": "true", "limit": "500"},
    )
    return [item["id"] for item in listing["items"]]


async def test_access_policy_hides_the_same_declarations_over_mcp(daemon) -> None:
    secret = token(
        daemon, "maintainer", "read:summary,read:search", workspaces=[TEAM], roles=["maintainer"]
    )
    everything = visible_ids(daemon, daemon.admin_token)
    seen = visible_ids(daemon, secret)
    hidden = sorted(set(everything) - set(seen))
    assert hidden, "the example must hide something from a maintainer"
    async with mcp_client(daemon, secret) as client:
        listed = await call(client, "memory_list", {"include_inactive": True, "limit": 500})
        explained = await call(client, "memory_explain", {"id": hidden[0]})
        source = (await client.read_resource(f"memhub://{TEAM}/file/rules.mem")).contents[0].text
        pack = await call(client, "memory_query", {"query": "force push main branch"})
        mapped = await call(client, "memory_map", {})
    assert [item["id"] for item in listed["items"]] == seen
    assert explained["status"] == "not_found"
    assert source == api_file(daemon, secret, "rules.mem") and HIDDEN_MARKER in source
    expected = api_post(
        daemon, secret, "query", {"query": "force push main branch"}, workspace=TEAM
    )
    assert pack["evidence_pack"] == expected
    for payload in (pack, mapped):
        assert not any(decl_id in json.dumps(payload) for decl_id in hidden)


async def test_browser_request_from_a_foreign_origin_is_refused(daemon) -> None:
    secret = team_reader(daemon)
    with daemon.http(secret) as http:
        foreign = http.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "origin": "http://evil.example"}
        )
        rebound = http.post(
            "/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "origin": "http://evil.example", "host": "evil.example"},
        )
        local = http.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "origin": "http://localhost:3000"}
        )
    assert foreign.status_code == rebound.status_code == 403
    assert foreign.json()["error"]["data"]["error"]["code"] == "forbidden"
    assert local.status_code == 200


# --- many agents at once ----------------------------------------------------------------

PROFILES = [
    ("agent-admin", "all", {}),
    ("agent-team", "read:summary,read:search", {"workspaces": [TEAM]}),
    ("agent-maintainer", "read:summary,read:search", {"roles": ["maintainer"]}),
    ("agent-developer", "read:summary,read:search", {"roles": ["developer"]}),
    ("agent-security", "read:summary,read:search", {"roles": ["security"]}),
    ("agent-writing", "read:summary,read:search", {"workspaces": ["writing"]}),
    ("agent-reviewer", "read:summary,read:search", {"roles": ["reviewer", "coding_agent"]}),
    ("agent-norole", "read:summary,read:search,write:candidate", {"workspaces": [TEAM]}),
]


async def test_eight_concurrent_clients_get_the_json_api_answers(daemon) -> None:
    import anyio

    plans = []
    for index, (name, scopes, grants) in enumerate(PROFILES):
        secret = token(daemon, name, scopes, **grants)
        workspace = grants.get("workspaces", [TEAM])[0]
        queries = QUERIES[index % len(QUERIES) :] + QUERIES[: index % len(QUERIES)]
        expected = {
            q: api_post(daemon, secret, "query", {"query": q}, workspace=workspace) for q in queries
        }
        listing = api_get(daemon, secret, "list", workspace=workspace)
        plans.append((secret, workspace, queries, expected, listing))
    answers: list[tuple[Any, Any]] = []

    async def agent(
        secret: str, workspace: str, queries: list[str], expected: dict, listing: dict
    ) -> None:
        async with mcp_client(daemon, secret) as client:
            for _round in range(2):
                for query in queries:
                    payload = await call(
                        client, "memory_query", {"query": query, "workspace": workspace}
                    )
                    answers.append((payload["evidence_pack"], expected[query]))
                    await anyio.sleep(0)
                listed = await call(client, "memory_list", {"workspace": workspace})
                answers.append(
                    (
                        {"total": listed["total"], "items": listed["items"]},
                        {"total": listing["total"], "items": listing["items"]},
                    )
                )

    async with anyio.create_task_group() as group:
        for plan in plans:
            group.start_soon(agent, *plan)
    assert len(answers) == len(PROFILES) * 2 * (len(QUERIES) + 1)
    for got, want in answers:
        assert got == want


# --- proposals of existing ids, and the result size limit ----------------------------------


async def test_reproposing_a_visible_id_answers_memdsls_duplicate_with_a_correction_hint(
    daemon,
) -> None:
    secret = token(daemon, "writer3", "read:summary,write:candidate", workspaces=[TEAM])
    source = (
        "decision queue.redis_streams {\n  subject: Service.Tidewater\n"
        '  decision: "Use Redis Streams."\n}'
    )
    async with mcp_client(daemon, secret) as client:
        payload = await call(client, "memory_propose", {"source": source})
    codes = [e["code"] for e in payload["errors"]]
    assert payload["ok"] is False and payload["status"] == "invalid"
    assert codes == ["duplicate_declaration_id", "missing_evidence"]
    assert "already declared at" in payload["errors"][0]["message"]
    assert "decisions.mem:" in payload["errors"][0]["message"]
    assert 'supersedes: "decision:queue.redis_streams"' in payload["next_actions"][1]


async def test_reproposing_a_hidden_id_never_says_where_it_is(daemon) -> None:
    secret = token(
        daemon,
        "maintainer-writer",
        "read:summary,read:search,write:candidate",
        workspaces=[TEAM],
        roles=["maintainer"],
    )
    hidden = sorted(set(visible_ids(daemon, daemon.admin_token)) - set(visible_ids(daemon, secret)))
    kind, name = hidden[0].split(":", 1)
    source = f'{kind} {name} {{ claim: "x" evidence {{ quote: "x" }} }}'
    async with mcp_client(daemon, secret) as client:
        result = await client.call_tool("memory_propose", {"source": source})
    text = result.content[0].text
    payload = json.loads(text)
    assert not result.is_error and payload["ok"] is False
    assert payload["errors"][0]["code"] == "duplicate_declaration_id"
    assert ".mem" not in text and "already declared at" not in text


@pytest.fixture(scope="module")
def small_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("mcp-small")
    with mcp_mounted():
        workspaces = copy_examples(root / "ws", [TEAM])
        with start_daemon(root, workspaces, **{"limits.max_result_bytes": 6000}) as live:
            yield live


async def test_a_tool_answer_over_max_result_bytes_is_an_ok_false_payload(small_daemon) -> None:
    async with mcp_client(small_daemon, small_daemon.admin_token) as client:
        result = await client.call_tool("memory_map", {})
        small = await call(client, "memory_explain", {"id": "decision:api.version_in_path"})
    payload = json.loads(result.content[0].text)
    assert not result.is_error and payload["ok"] is False
    assert payload["schema_version"] == "memdsl.mcp.map.v1"
    assert payload["status"] == "too_large" and payload["limit"] == 6000
    assert payload["size"] > 6000 and "max_result_bytes" in payload["message"]
    assert "limit" in payload["next_actions"][0]
    assert small["ok"] is True


async def test_a_resource_over_max_result_bytes_is_a_resource_error(small_daemon) -> None:
    async with mcp_client(small_daemon, small_daemon.admin_token) as client:
        with pytest.raises(MCPError, match="max_result_bytes"):
            await client.read_resource(f"memhub://{TEAM}/map")
        source = await client.read_resource(f"memhub://{TEAM}/file/symbols.mem")
    assert "Service.Tidewater" in source.contents[0].text


async def test_status_names_every_tool_the_server_serves(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        status = await call(client, "memory_status", {})
        memdsl = json.loads((await client.read_resource("memdsl://status")).contents[0].text)
    assert sorted(status["tools"]) == sorted(listed) == sorted(memdsl["tools"])
    assert memdsl["tools"][:9] == list(SCHEMAS_MEMDSL_ORDER) == listed[:9]  # as memdsl lists them


SCHEMAS_MEMDSL_ORDER = (
    "memory_map",
    "memory_query",
    "memory_check",
    "memory_types",
    "memory_explain",
    "memory_list",
    "memory_lint",
    "memory_propose",
    "memory_review_list",
)


async def test_an_argument_a_tool_does_not_take_is_refused_by_name(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        typo = await tool_error(client, "memory_query", {"query": "deploy", "limt": 1})
        listed = await client.list_tools()
    # The JSON API refuses an unknown field; a dropped one could change what a call means
    assert "limt" in typo and "Extra inputs are not permitted" in typo
    assert all(tool.input_schema.get("additionalProperties") is False for tool in listed.tools)


async def test_ingest_takes_readers_and_restricts_the_drawer_to_them(daemon) -> None:
    writer = token(daemon, "mcp-readers-writer", "write:recall,read:search", workspaces=[TEAM])
    other = token(daemon, "mcp-readers-other", "read:search", workspaces=[TEAM])
    async with mcp_client(daemon, writer) as client:
        stored = await call(
            client,
            "memory_ingest",
            {"content": "the vault rota is on the ops wiki", "readers": ["vault"]},
        )
        empty = await tool_error(client, "memory_ingest", {"content": "  "})
    assert "'content' must not be empty" in empty
    drawer = stored["drawer_id"]
    with daemon.http(other) as http:
        assert http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}").status_code == 404
    with daemon.http(daemon.admin_token) as http:
        shown = http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}").json()["drawer"]
    assert shown["readers"] == ["vault"]


async def test_a_body_over_the_limit_is_refused_with_the_daemons_envelope(daemon) -> None:
    headers = {
        "Authorization": f"Bearer {team_reader(daemon)}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "memory_query", "arguments": {"query": "x" * 2_000_000}},
        }
    )
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(f"{daemon.url}/mcp", content=body, headers=headers)
    assert answer.status_code == 413
    assert answer.json()["error"]["data"]["error"]["code"] == "too_large"


async def test_an_argument_over_a_limit_is_an_ok_false_answer_not_a_tool_error(daemon) -> None:
    async with mcp_client(daemon, daemon.admin_token) as client:
        long_query = await call(
            client, "memory_query", {"workspace": "writing", "query": "x" * 70_000}
        )
        many_types = await call(
            client,
            "memory_check",
            {"workspace": "writing", "task": "t", "candidate": "c", "exceptions": ["e"] * 101},
        )
    assert long_query["ok"] is False and long_query["status"] == "invalid"
    assert long_query["error"] == "too_large: 'query' is longer than 65536 characters"
    assert long_query["schema_version"] == "memdsl.mcp.query.v1"
    assert many_types["ok"] is False and "more than 100 items" in many_types["error"]


async def test_a_get_opens_no_stream_and_says_to_post(daemon) -> None:
    """A stateless server sends nothing unasked: a GET stream would only hold a
    connection open, unbounded and past its token's revocation."""
    headers = {"Authorization": f"Bearer {team_reader(daemon)}", "Accept": "text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        answers = [await http.get(f"{daemon.url}/mcp", headers=headers) for _ in range(20)]
        anonymous = await http.get(f"{daemon.url}/mcp", headers={"Accept": "text/event-stream"})
    assert {a.status_code for a in answers} == {405}
    assert answers[0].headers["allow"] == "POST"
    envelope = answers[0].json()["error"]["data"]  # the API's 405, in a JSON-RPC error
    assert envelope["error"]["message"] == "GET is not served here; use POST"
    assert envelope["error"]["code"] == "method_not_allowed"
    assert anonymous.status_code == 405  # as the API's, with or without a token


async def test_an_unknown_action_is_answered_after_the_callers_scope(daemon) -> None:
    """A tool whose scope follows its action checks the caller's scope and grant before
    it says which actions there are."""
    reader = team_reader(daemon)  # read scopes only
    nothing = token(daemon, "mcp-no-scopes", "write:candidate", workspaces=[TEAM])
    async with mcp_client(daemon, nothing) as client:
        refused = [
            await tool_error(client, tool, {"action": "bogus", "workspace": TEAM})
            for tool in ("memory_kg", "memory_diary", "memory_taxonomy")
        ]
    async with mcp_client(daemon, reader) as client:
        told = [
            await tool_error(client, tool, {"action": "bogus", "workspace": TEAM})
            for tool in ("memory_kg", "memory_diary", "memory_taxonomy")
        ]
        unknown_workspace = await tool_error(
            client, "memory_kg", {"action": "bogus", "workspace": "nowhere"}
        )
    for message in refused:
        assert "action must be" not in message and "scope" in message, message
    assert "action must be one of add, query" in told[0]
    assert "action must be write or read" in told[1]
    assert "action must be list or edit" in told[2]
    assert "action must be" not in unknown_workspace


async def test_memhubs_own_tools_name_their_own_arguments_and_types_strictly(daemon) -> None:
    writer = token(
        daemon, "mcp-strict", "read:summary,read:search,write:recall,write:candidate",
        workspaces=[TEAM],
    )  # fmt: skip
    async with mcp_client(daemon, writer) as client:
        timeline = await tool_error(client, "memory_kg", {"action": "timeline"})
        bogus = await tool_error(client, "memory_kg", {"action": "bogus"})
        far = await tool_error(
            client, "memory_cowork_push", {"target_tool": "x" * 300, "content": "hi"}
        )
        blank = await tool_error(
            client, "memory_diary", {"action": "write", "content": "   "}
        )
        loose = await tool_error(client, "memory_ingest", {"content": "a note", "importance": "3"})
        proposed = await call(
            client,
            "memory_propose_from_recall",
            {"drawer_id": "drawer_x", "type": "fact", "id": "f.x",
             "fields": {f"k{n}": "v" for n in range(51)}},
        )  # fmt: skip
        both = await call(client, "memory_recall_status", {"wing": TEAM, "workspace": f" {TEAM}"})
    assert "'subject' (the entity) is required" in timeline
    assert "action must be one of add, query, invalidate, timeline, stats" in bogus
    assert "'target_tool'" in far and "'to'" not in far
    assert "'content' must not be blank" in blank
    assert "importance" in loose  # "3" is no integer, as the JSON API says
    assert proposed["ok"] is False  # as memory_propose answers a bad proposal
    assert both["workspace"] == TEAM


async def test_memhubs_own_tools_say_which_argument_is_wrong_in_one_line(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        missing = await tool_error(client, "memory_search", {})
        several = await tool_error(client, "memory_search", {"query": "x", "top_k": 0, "colour": 1})
        typed = await tool_error(client, "memory_wake_up", {"limit": "5"})
        memdsls = await tool_error(client, "memory_query", {"query": "deploy", "limt": 1})
        bodys = await tool_error(client, "memory_peek_partner", {"tool": "auto", "limit": 0})
    assert missing == "invalid: 'query' is required"
    assert bodys.startswith("invalid: ") and "'limit'" in bodys  # the tool's own check
    assert several == (
        "invalid: 'top_k' must be at least 1; 'colour' is not an argument of this tool"
    )
    assert typed == "invalid: 'limit' must be an integer"
    assert "Extra inputs are not permitted" in memdsls  # memdsl's tools answer as memdsl's
    for text in (missing, several, typed):
        assert "pydantic" not in text and "Arguments" not in text


async def test_an_unknown_workspace_of_any_length_is_named_cut(daemon) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        refused = await tool_error(client, "memory_search", {"query": "x", "wing": "w" * 200_000})
    assert len(refused) < 1_000 and "unknown workspace 'www" in refused


async def test_a_delete_of_no_drawer_answers_in_the_shape_of_a_delete(daemon) -> None:
    writer = token(daemon, "mcp-deleter", "write:recall,read:search", workspaces=[TEAM])
    async with mcp_client(daemon, writer) as client:
        gone = await call(client, "memory_delete", {"drawer_id": "drawer_nowhere_00000000"})
    assert gone["workspace"] == TEAM and gone["deleted"] is False
