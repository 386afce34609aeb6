"""Recall -> governed memory through a real daemon: a transcript is ingested, a drawer
is found by search (with its structured signals and as AAAK), a proposal quoting it is
made through the JSON API, MCP and memctl, a person approves it, and a query serves
the new declaration. Until then nothing of it is memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memhubd.recall import aaak
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"
SESSION = "5d1c2b3a-7e6f-4a1b-9c8d-0123456789ab"
DECISION = "We decided to keep the shipment events on NATS JetStream because replay is built in."
ASIDE = "Redis stays only for the rate limiter."
QUESTION = "Should the shipment event queue go back to Redis Streams?"
QUERY = "shipment events NATS JetStream replay"


def transcript() -> str:
    """A two-turn Claude Code session, as its JSONL file holds it."""
    common = {"sessionId": SESSION, "cwd": "/home/ana/src/tidewater", "isSidechain": False}
    turns = [
        {"type": "user", "message": {"role": "user", "content": QUESTION}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"No. {DECISION} {ASIDE}"}],
            },
        },
    ]
    lines = [
        {**common, **turn, "uuid": f"u-{i}", "timestamp": f"2026-11-02T10:0{i}:00Z"}
        for i, turn in enumerate(turns)
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("recall-review")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        agent = "write:recall,write:candidate,read:summary,read:search"
        live.add_token("agent", agent, workspaces=[WS], roles=["dev"])
        live.add_token("alice", "review,read:summary,read:search", roles=["*"])
        live.add_token("blind-reviewer", "review,read:summary", roles=["*"])
        with live.http(live.tokens["agent"], timeout=60) as http:
            upload = {"name": f"claude-code/{SESSION}.jsonl", "content": transcript()}
            answer = http.post(f"{BASE}/recall/ingest", json={"files": [upload]})
            assert answer.status_code == 201, answer.text
        yield live


@pytest.fixture(scope="module")
def drawer(daemon: LiveDaemon) -> dict[str, Any]:
    """The search hit holding the decision."""
    with daemon.http(daemon.tokens["agent"]) as http:
        hits = http.post(f"{BASE}/recall/search", json={"query": QUERY}).json()["hits"]
    found = [h for h in hits if DECISION in h["content"]]
    assert found, hits
    return found[0]


def approve(daemon: LiveDaemon, proposal_id: str) -> dict[str, Any]:
    with daemon.http(daemon.tokens["alice"]) as http:
        answer = http.post(
            f"{BASE}/proposals/{proposal_id}/approve", json={"into": "decisions.mem"}
        )
    assert answer.status_code == 200, answer.text
    return answer.json()


def served(daemon: LiveDaemon, decl_id: str, query: str) -> tuple[int, str]:
    with daemon.http(daemon.tokens["agent"]) as http:
        one = http.get(f"{BASE}/declarations/{decl_id}")
        pack = http.post(f"{BASE}/query", json={"query": query})
    assert pack.status_code == 200, pack.text
    return one.status_code, pack.text


# -- search: signals and AAAK ----------------------------------------------------------------


def test_search_hits_carry_structured_signals(drawer: dict[str, Any]) -> None:
    assert drawer["flags"][0] == "DECISION" and drawer["importance_stars"] == 4
    assert {"NAT", "JET"} <= set(drawer["entities"])
    assert "determ" in drawer["emotions"]  # "decided"
    assert drawer["topics"] and all(t == t.lower() for t in drawer["topics"])


def test_search_and_wake_up_in_aaak_parse_back(daemon: LiveDaemon, drawer) -> None:
    with daemon.http(daemon.tokens["agent"]) as http:
        found = http.post(f"{BASE}/recall/search?format=aaak", json={"query": QUERY}).json()
        woken = http.get(f"{BASE}/recall/wake-up", params={"format": "aaak"}).json()
        bad = http.get(f"{BASE}/recall/wake-up", params={"format": "xml"})
    document = aaak.parse(found["aaak"])
    assert document.header.wing == WS and document.header.source == "search"
    assert [z.quote for z in document.zettels] == [
        aaak.decode(aaak.encode(h["content"], "w", "r", "d", "s").document) for h in found["hits"]
    ]
    wake = aaak.parse(woken["text"])
    assert wake.header.source == "wake-up" and len(wake.zettels) == 1
    assert DECISION in wake.zettels[0].quote
    assert bad.status_code == 422


def test_compress_through_the_api_and_memctl(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.tokens["agent"]) as http:
        answer = http.post("/v1/recall/compress", json={"text": aaak.SPEC_EXAMPLE})
        empty = http.post("/v1/recall/compress", json={"text": " "})
    assert answer.status_code == 200, answer.text
    lines = answer.json()["document"].splitlines()
    assert lines[0].startswith("V1|manual|compress|") and lines[0].endswith("|cli")
    assert lines[1] == aaak.parse(answer.json()["document"]).zettels[0].render()
    assert "|★★★★|determ|DECISION+TECHNICAL" in lines[1]
    assert empty.status_code == 422
    code, out, err = memctl(daemon, "agent", "recall", "compress", aaak.SPEC_EXAMPLE)
    assert code == 0, err
    assert out.splitlines()[1] == lines[1]


# -- propose from a drawer -------------------------------------------------------------------


def test_a_drawer_becomes_memory_only_through_a_reviewer(daemon: LiveDaemon, drawer) -> None:
    claim = "Shipment events stay on NATS JetStream because replay is built in."
    body = {
        "type": "fact",
        "id": "tidewater.events_stay_on_nats",
        "fields": {"subject": "Service.Tidewater", "claim": claim},
    }
    with daemon.http(daemon.tokens["agent"]) as http:
        answer = http.post(f"{BASE}/recall/drawers/{drawer['drawer_id']}/propose", json=body)
    assert answer.status_code == 201, answer.text
    proposed = answer.json()
    assert proposed["status"] == "pending_review"
    decl_id = "fact:tidewater.events_stay_on_nats"
    assert proposed["declaration_id"] == decl_id
    # the evidence quotes the drawer verbatim (the sentence that supports the claim)
    assert proposed["drawer"]["quote"] == DECISION and DECISION in drawer["content"]
    source = proposed["source"]
    assert f"drawer: {drawer['drawer_id']}" in source
    assert f"recall:{drawer['drawer_id']} claude-code/{SESSION}.jsonl" in source
    # not memory yet
    assert served(daemon, decl_id, QUERY)[0] == 404

    # the reviewer sees the drawer beside the proposal; one who may not search does not
    with daemon.http(daemon.tokens["alice"]) as http:
        shown = http.get(f"{BASE}/proposals/{proposed['proposal_id']}").json()
    with daemon.http(daemon.tokens["blind-reviewer"]) as http:
        blind = http.get(f"{BASE}/proposals/{proposed['proposal_id']}").json()
    assert shown["recall_drawer"]["content"] == drawer["content"]
    assert shown["recall_drawer"]["quote_found"] is True
    assert blind["recall_drawer"] == {"drawer_id": drawer["drawer_id"], "withheld": True}

    approved = approve(daemon, proposed["proposal_id"])
    assert approved["declaration_id"] == decl_id
    status, pack = served(daemon, decl_id, QUERY)
    assert status == 200 and decl_id in pack


def test_a_quote_must_be_verbatim_and_the_drawer_readable(daemon: LiveDaemon, drawer) -> None:
    url = f"{BASE}/recall/drawers/{drawer['drawer_id']}/propose"
    body = {"type": "fact", "id": "tidewater.x", "fields": {"subject": "Service.Tidewater"}}
    with daemon.http(daemon.tokens["agent"]) as http:
        invented = http.post(url, json={**body, "quote": "replay is free"})
        evidence = http.post(url, json={**body, "fields": {"evidence.quote": "x"}})
        missing = http.post(f"{BASE}/recall/drawers/drawer_nope_x_00000000/propose", json=body)
        bad_name = http.post(url, json={**body, "id": "x { }"})
    with daemon.http(daemon.tokens["alice"]) as http:
        no_scope = http.post(url, json=body)
    for answer in (invented, evidence, bad_name):
        assert answer.status_code == 422, answer.text
    assert invented.json()["error"]["detail"]["field"] == "quote"
    assert missing.status_code == 404 and no_scope.status_code == 403
    with daemon.http(daemon.tokens["alice"]) as http:
        pending = http.get(f"{BASE}/proposals").json()["proposals"]
    assert not [p for p in pending if p["declaration"] == "fact:tidewater.x"]


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {daemon.tokens[token]}"}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


async def tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


@pytest.mark.anyio
async def test_the_same_through_mcp(daemon: LiveDaemon, drawer) -> None:
    async with mcp_client(daemon, "agent") as client:
        hits = (await tool(client, "memory_search", {"query": QUERY}))["results"]
        hit = next(h for h in hits if h["drawer_id"] == drawer["drawer_id"])
        assert hit["flags"] == drawer["flags"] and hit["entities"] == drawer["entities"]
        arguments = {
            "drawer_id": drawer["drawer_id"],
            "type": "fact",
            "id": "tidewater.redis_for_rate_limits",
            "fields": {"subject": "Service.Tidewater", "claim": "Redis serves the rate limiter."},
            "quote": ASIDE,
        }
        proposed = await tool(client, "memory_propose_from_recall", arguments)
        refused = await tool(
            client, "memory_propose_from_recall", {**arguments, "quote": "Redis is gone."}
        )
    assert proposed["ok"] is True and proposed["status"] == "pending_review"
    assert proposed["drawer"]["quote"] == ASIDE
    assert refused["ok"] is False and "verbatim" in json.dumps(refused["errors"])

    approve(daemon, proposed["proposal_id"])
    async with mcp_client(daemon, "agent") as client:
        pack = await tool(client, "memory_query", {"query": "rate limiter Redis"})
        status = await tool(client, "memory_status", {})
        woken = await tool(client, "memory_wake_up", {"format": "aaak"})
        found = await tool(client, "memory_search", {"query": QUERY, "format": "aaak"})
    assert "fact:tidewater.redis_for_rate_limits" in json.dumps(pack)
    assert DECISION in aaak.parse(woken["text"]).zettels[0].quote
    assert len(aaak.parse(found["aaak"]).zettels) == len(found["results"])
    assert "memory_diary" in status["memory_protocol"]


@pytest.mark.anyio
async def test_instructions_carry_the_recall_protocol(daemon: LiveDaemon) -> None:
    async with mcp_client(daemon, "agent") as client:
        instructions = client.instructions or ""
        status = await tool(client, "memory_status", {})
    assert status["memory_protocol"] == instructions
    for phrase in ("memory_search", "drawer_id", "declaration id", "firm decisions"):
        assert phrase in instructions
    for phrase in ("memory_diary", "fact-check", "memory_cowork_push", "memory_check"):
        assert phrase in instructions


def memctl(daemon: LiveDaemon, token: str, *argv: str) -> tuple[int, str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", daemon.tokens[token]]
        + ["-w", WS, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
        cwd=Path(__file__).resolve().parents[2],
    )
    return result.returncode, result.stdout, result.stderr


def test_the_same_through_memctl(daemon: LiveDaemon, drawer) -> None:
    code, out, err = memctl(
        daemon,
        "agent",
        "propose",
        "--from-drawer",
        drawer["drawer_id"],
        "--type",
        "fact",
        "--id",
        "tidewater.no_redis_streams",
        "--field",
        "subject=Service.Tidewater",
        "--field",
        "claim=The shipment event queue does not go back to Redis Streams.",
        "--json",
    )
    assert code == 0, err
    proposed = json.loads(out)
    assert proposed["drawer"]["quote"] in drawer["content"]
    code, out, err = memctl(daemon, "alice", "review", "show", proposed["proposal_id"])
    assert code == 0, err
    assert f"recall drawer {drawer['drawer_id']}" in out and "quote found verbatim" in out
    assert DECISION in out
    code, _out, err = memctl(
        daemon, "agent", "propose", "--from-drawer", drawer["drawer_id"], "--type", "fact"
    )
    assert code == 2 and "--id NAME" in err  # a usage error
