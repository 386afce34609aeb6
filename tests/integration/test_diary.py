"""The agent diary through a real daemon: an entry is private to its writer and to
reviewers unless shared, through the JSON API, MCP and memctl; recall search and drawer
reads never show a private entry to anyone else."""

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

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
DIARY = f"/v1/workspaces/{WS}/diary"
AGENT = "write:recall,read:summary,read:search"
LESSON = "Run the ledger migration twice in staging; the first run hides lock waits."
SHARED = "The billing reviewers answer fastest before noon."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("diary")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        live.add_token("agent-a", AGENT, workspaces=[WS], roles=["dev"])
        live.add_token("agent-b", AGENT, workspaces=[WS], roles=["dev"])
        live.add_token("lead", "review,read:summary,read:search", workspaces=[WS], roles=["dev"])
        yield live


@pytest.fixture(scope="module")
def entries(daemon: LiveDaemon) -> dict[str, str]:
    """agent-a's private lesson, then its shared observation (drawer ids)."""
    out = {}
    with daemon.http(daemon.tokens["agent-a"]) as http:
        for kind, text, shared in (("LESSON", LESSON, False), ("observation", SHARED, True)):
            answer = http.post(DIARY, json={"type": kind, "content": text, "shared": shared})
            assert answer.status_code == 201, answer.text
            out[kind.upper()] = answer.json()["drawer_id"]
    return out


def read(daemon: LiveDaemon, token: str, **params: Any) -> dict[str, Any]:
    with daemon.http(daemon.tokens[token]) as http:
        answer = http.get(DIARY, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_writer_reads_its_whole_diary_newest_first(daemon, entries) -> None:
    diary = read(daemon, "agent-a")
    assert diary["full"] is True and diary["identity"] == "agent-a"
    assert [e["drawer_id"] for e in diary["entries"]] == [entries["OBSERVATION"], entries["LESSON"]]
    lesson = diary["entries"][1]
    assert (lesson["type"], lesson["text"], lesson["shared"]) == ("LESSON", LESSON, False)
    assert lesson["content"] == f"LESSON: {LESSON}"  # mempal's prefix convention
    assert lesson["importance"] == 3
    assert entries["LESSON"].startswith("drawer_team_coding_agent_a_")  # room = identity


def test_a_reviewer_reads_another_identitys_private_entries(daemon, entries) -> None:
    diary = read(daemon, "lead", identity="agent-a", type="LESSON")
    assert diary["full"] is True
    assert [e["drawer_id"] for e in diary["entries"]] == [entries["LESSON"]]


def test_others_see_only_shared_entries(daemon, entries) -> None:
    diary = read(daemon, "agent-b", identity="agent-a")
    assert diary["full"] is False
    assert [e["drawer_id"] for e in diary["entries"]] == [entries["OBSERVATION"]]
    assert read(daemon, "agent-b")["entries"] == []  # its own diary is empty


def test_recall_never_shows_a_private_entry_to_anyone_else(daemon, entries) -> None:
    with daemon.http(daemon.tokens["agent-b"]) as http:
        hits = http.post(
            f"/v1/workspaces/{WS}/recall/search", json={"query": "ledger migration staging noon"}
        ).json()["hits"]
        drawer = http.get(f"/v1/workspaces/{WS}/recall/drawers/{entries['LESSON']}")
        shared = http.get(f"/v1/workspaces/{WS}/recall/drawers/{entries['OBSERVATION']}")
    ids = {h["drawer_id"] for h in hits}
    assert entries["LESSON"] not in ids and entries["OBSERVATION"] in ids
    assert drawer.status_code == 404 and shared.status_code == 200


def test_the_writer_also_finds_its_private_entries_in_recall(daemon, entries) -> None:
    with daemon.http(daemon.tokens["agent-a"]) as http:
        hits = http.post(
            f"/v1/workspaces/{WS}/recall/search", json={"query": "ledger migration staging"}
        ).json()["hits"]
        drawer = http.get(f"/v1/workspaces/{WS}/recall/drawers/{entries['LESSON']}")
    assert entries["LESSON"] in {h["drawer_id"] for h in hits}
    assert drawer.status_code == 200 and drawer.json()["drawer"]["room"] == "agent-a"


def test_a_query_reads_the_best_matching_entry_first(daemon, entries) -> None:
    diary = read(daemon, "agent-a", q="ledger migration")
    assert diary["entries"][0]["drawer_id"] == entries["LESSON"]
    assert diary["entries"][0]["score"] > 0


def test_bad_input_is_refused_with_an_envelope(daemon) -> None:
    with daemon.http(daemon.tokens["agent-a"]) as http:
        bad_type = http.post(DIARY, json={"type": "RANT", "content": "x"})
        empty = http.post(DIARY, json={"type": "LESSON", "content": "  "})
        unknown = http.post(DIARY, json={"type": "LESSON", "content": "x", "room": "y"})
        limit = http.get(DIARY, params={"limit": "0"})
    with daemon.http(daemon.tokens["lead"]) as http:
        no_scope = http.post(DIARY, json={"type": "LESSON", "content": "x"})
    for answer in (bad_type, empty, unknown, limit):
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["code"] == "invalid"
    assert no_scope.status_code == 403


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
async def test_mcp_memory_diary_writes_and_reads_with_the_same_rules(daemon, entries) -> None:
    async with mcp_client(daemon, "agent-b") as client:
        written = await tool(
            client,
            "memory_diary",
            {"action": "write", "entry_type": "PATTERN", "content": "I over-plan small fixes."},
        )
        mine = await tool(client, "memory_diary", {"action": "read"})
        theirs = await tool(client, "memory_diary", {"action": "read", "identity": "agent-a"})
    assert written["type"] == "PATTERN" and written["shared"] is False
    assert [e["drawer_id"] for e in mine["entries"]] == [written["drawer_id"]]
    assert [e["drawer_id"] for e in theirs["entries"]] == [entries["OBSERVATION"]]
    async with mcp_client(daemon, "lead") as client:
        everything = await tool(client, "memory_diary", {"action": "read", "identity": "agent-b"})
        refused = await client.call_tool(
            "memory_diary", {"action": "write", "entry_type": "LESSON", "content": "x"}
        )
    assert [e["drawer_id"] for e in everything["entries"]] == [written["drawer_id"]]
    assert refused.is_error and "write:recall" in refused.content[0].text


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


def test_memctl_diary_write_and_read(daemon, entries) -> None:
    code, out, err = memctl(daemon, "agent-a", "diary", "write", "lesson", "Pin", "the", "seed.")
    assert code == 0, err
    assert "private to you and reviewers" in out
    code, out, err = memctl(daemon, "agent-a", "diary", "read", "--type", "LESSON")
    assert code == 0, err
    assert "[LESSON]" in out and "Pin the seed." in out and LESSON in out
    code, out, err = memctl(daemon, "agent-b", "diary", "read", "--identity", "agent-a")
    assert code == 0, err
    assert "(shared entries only)" in out and SHARED in out and "Pin the seed." not in out
    code, _out, err = memctl(daemon, "agent-a", "diary", "write", "RANT", "x")
    assert code == 2 and "OBSERVATION" in err


def test_the_same_entry_again_answers_as_stored_and_never_changes_its_sharing(
    daemon, entries
) -> None:
    with daemon.http(daemon.tokens["agent-a"]) as http:
        again = http.post(DIARY, json={"type": "LESSON", "content": LESSON, "importance": 5})
        assert again.status_code == 200, again.text
        assert again.json()["status"] == "unchanged" and again.json()["importance"] == 3
        for kind, text, shared in (("LESSON", LESSON, True), ("OBSERVATION", SHARED, False)):
            refused = http.post(DIARY, json={"type": kind, "content": text, "shared": shared})
            assert refused.status_code == 409, refused.text
            error = refused.json()["error"]
            assert error["detail"] == {
                "field": "shared",
                "drawer_id": entries[kind],
                "shared": not shared,
            }
            assert "sharing does not change" in error["message"]
    # Still as written first: the lesson private, the observation shared.
    assert [e["drawer_id"] for e in read(daemon, "agent-b", identity="agent-a")["entries"]] == [
        entries["OBSERVATION"]
    ]


def test_another_drawer_in_the_writers_room_is_never_its_entry(daemon, entries) -> None:
    text = "Rotate the staging tokens weekly."
    # Another identity stores the same text in agent-a's room, cited as its diary,
    # readable by agent-a's role.
    with daemon.http(daemon.tokens["agent-b"]) as http:
        planted = http.post(
            f"/v1/workspaces/{WS}/recall/ingest",
            json={
                "content": f"LESSON: {text}",
                "room": "agent-a",
                "source": "diary/agent-a",
                "readers": ["dev"],
            },
        )
        assert planted.status_code == 201, planted.text
    with daemon.http(daemon.tokens["agent-a"]) as http:
        written = http.post(DIARY, json={"type": "LESSON", "content": text})
    assert written.status_code == 201, written.text
    assert written.json()["status"] == "ingested" and written.json()["shared"] is False
    assert written.json()["drawer_id"] not in planted.json()["sources"][0]["drawer_ids"]
    mine = [e["text"] for e in read(daemon, "agent-a")["entries"]]
    assert text in mine


def test_a_withdrawn_entry_written_again_says_so(daemon, entries) -> None:
    text = "Builds are slow on Mondays."
    with daemon.http(daemon.tokens["agent-a"]) as http:
        first = http.post(DIARY, json={"type": "OBSERVATION", "content": text})
        drawer = first.json()["drawer_id"]
        assert http.delete(f"/v1/workspaces/{WS}/recall/drawers/{drawer}").status_code == 200
        again = http.post(DIARY, json={"type": "OBSERVATION", "content": text, "shared": True})
    assert again.status_code == 409, again.text
    assert again.json()["error"]["detail"] == {"field": "content", "status": "deleted"}
