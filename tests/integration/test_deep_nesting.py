"""Nesting as deep as memdsl parses is served at every stage: parse (in the parse pool),
index, lint, map, query, explain and check, over the JSON API and MCP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memhubd.auth.tokens import TokenStore
from memhubd.lang import MAX_DEPTH
from tests.integration.conftest import start_daemon
from tests.integration.test_restart_cache import saved_snapshots

# memdsl 0.5.1 parses lists about 490 deep and blocks about 990 deep before Python's
# recursion limit stops it; memhub parses both to MAX_DEPTH.
DEPTH = 490


def deep_workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    lists = "data: " + "[" * DEPTH + "v" + "]" * DEPTH
    blocks = "data " + "{ a " * (DEPTH - 1) + "{ x: 1 " + "}" * DEPTH
    (root / "deep.mem").write_text(
        'fact deep.lists { claim: "deep lists" evidence { source: chat } ' + lists + " }\n"
        'fact deep.blocks { claim: "deep blocks" evidence { source: chat } ' + blocks + " }\n"
        'boundary deep.rule { rule: "Keep deep data readable" scope: global exceptions: [] '
        'evidence { source: chat quote: "q" } guard { deny_any: ["unreadable"] } }\n',
        encoding="utf-8",
    )
    return root


def test_memdsl_depths_are_within_the_limit() -> None:
    assert MAX_DEPTH >= DEPTH


@pytest.mark.anyio
async def test_deep_nesting_is_served_at_every_door(tmp_path: Path) -> None:
    root = deep_workspace(tmp_path / "ws" / "deep")
    with start_daemon(tmp_path, {"deep": str(root)}) as live:
        base = "/v1/workspaces/deep"
        with live.http(live.admin_token) as http:
            lint = http.get(f"{base}/lint")
            mapped = http.get(f"{base}/map")
            query = http.post(f"{base}/query", json={"query": "deep lists blocks"})
            explained = [
                http.get(f"{base}/declarations/fact:deep.{n}") for n in ("lists", "blocks")
            ]
            check = http.post(f"{base}/check", json={"task": "t", "candidate": "unreadable"})
        headers = {"Authorization": f"Bearer {live.admin_token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as client,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=client)) as mcp,
        ):
            found = await mcp.call_tool("memory_query", {"query": "deep lists"})
    assert lint.status_code == 200 and lint.json()["errors"] == 0, lint.text
    assert mapped.status_code == 200, mapped.text
    assert query.status_code == 200, query.text
    ids = {d["id"] for section in ("should", "context") for d in query.json()[section]}
    assert {"fact:deep.lists", "fact:deep.blocks"} <= ids
    for answer in explained:
        assert answer.status_code == 200, answer.text
    assert check.status_code == 200 and check.json()["verdict"] == "block", check.text
    assert not found.is_error and json.loads(found.content[0].text)["ok"] is True


def test_deep_nesting_survives_a_restart_from_the_saved_state(tmp_path: Path) -> None:
    root = deep_workspace(tmp_path / "ws" / "deep")
    answers = []
    for start in range(2):  # the second start restores what the first one saved
        with start_daemon(tmp_path, {"deep": str(root)}) as live:
            if start == 0:
                saved_snapshots(live.state_dir)
            with live.http(live.admin_token) as http:
                answer = http.get("/v1/workspaces/deep/declarations/fact:deep.blocks")
            assert answer.status_code == 200, answer.text
            answers.append(answer.json())
        TokenStore(tmp_path / "state").revoke("admin")  # start_daemon registers its own
    assert answers[0] == answers[1]
