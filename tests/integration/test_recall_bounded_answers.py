"""Recall answers an agent can bound: `max_chars` cuts each search hit's content at every
door (the JSON API's GET and POST searches, MCP `memory_search`, `memctl recall search`)
and the hit says so, and every door reads one drawer whole by its id (the drawer route,
MCP `memory_get_drawer`, `memctl recall show`), as wake-up's text tells each of them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memhub_protocol.recall import MAX_HIT_CHARS
from tests.integration.conftest import LiveDaemon, copy_examples, memctl, start_daemon

TEAM = "team-coding"
QUERY = "zebrafish migration note"
# One content ingest is one drawer, however long: 60,000 characters, some of them
# outside ASCII, so a cut counted in bytes would differ from one counted in characters.
LONG = ("zebrafish migration note. " + "lorem ipsum dolor sit amet, café 🦓 " * 2000)[:60_000]
SHORT = "a zebrafish migration note in brief"
CUT = 300


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("bounded")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        with live.http(live.admin_token, timeout=60) as http:
            for content, source in ((LONG, "notes/long.txt"), (SHORT, "notes/short.txt")):
                body = {"content": content, "source": source, "room": "notes"}
                answer = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json=body)
                assert answer.status_code == 201, answer.text
        yield live


def reader(daemon: LiveDaemon) -> str:
    return daemon.tokens.get("reader") or daemon.add_token(
        "reader", "read:summary,read:search", workspaces=[TEAM]
    )


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, secret: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


def by_length(hits: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {hit["content_chars"]: hit for hit in hits}


def assert_bounded(hits: list[dict[str, Any]]) -> str:
    """The long drawer's hit is cut and says so; the short one is whole. Its id."""
    assert len(hits) == 2
    found = by_length(hits)
    long, short = found[len(LONG)], found[len(SHORT)]
    assert long["content"] == LONG[:CUT] and long["content_truncated"] is True
    assert long["citation"] == "notes/long.txt" and long["drawer_id"]
    assert short["content"] == SHORT and short["content_truncated"] is False
    return str(long["drawer_id"])


def api_searches(daemon: LiveDaemon, secret: str, **asked: Any) -> list[httpx2.Response]:
    with daemon.http(secret) as http:
        body = {"query": QUERY, **asked}
        return [
            http.post(f"/v1/workspaces/{TEAM}/recall/search", json=body),
            http.get(f"/v1/workspaces/{TEAM}/recall/search", params={"q": QUERY, **asked}),
            http.post("/v1/recall/search", json=body),
        ]


def test_every_api_search_cuts_each_hit_to_max_chars(daemon: LiveDaemon) -> None:
    for answer in api_searches(daemon, reader(daemon), max_chars=CUT):
        assert answer.status_code == 200, answer.text
        assert_bounded(answer.json()["hits"])
        assert len(answer.content) < 10_000  # the long drawer alone is 60,000 characters


def test_a_search_without_max_chars_answers_whole_contents_as_before(daemon: LiveDaemon) -> None:
    for answer in api_searches(daemon, reader(daemon)):
        assert answer.status_code == 200, answer.text
        hits = answer.json()["hits"]
        assert sorted(h["content"] for h in hits) == sorted([LONG, SHORT])
        assert not any("content_truncated" in h or "content_chars" in h for h in hits)


def test_aaak_of_a_bounded_search_quotes_the_cut_contents(daemon: LiveDaemon) -> None:
    with daemon.http(reader(daemon)) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/search",
            json={"query": QUERY, "max_chars": CUT},
            params={"format": "aaak"},
        )
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["aaak"]) < 10_000
    # Each zettel's fields but its quote are read from the whole drawer, as unbounded.
    with daemon.http(reader(daemon)) as http:
        tiny, whole = (
            http.post(
                f"/v1/workspaces/{TEAM}/recall/search",
                json={"query": QUERY, **bound},
                params={"format": "aaak"},
            ).json()["aaak"]
            for bound in ({"max_chars": 7}, {})
        )
    for short, full in zip(tiny.splitlines()[1:], whole.splitlines()[1:], strict=True):
        fields, full_fields = short.split("|"), full.split("|")
        assert fields[:2] == full_fields[:2] and fields[3:] == full_fields[3:]
        assert len(fields[2]) <= 7 + 2  # the quote, cut


@pytest.mark.parametrize("value", [0, -1, MAX_HIT_CHARS + 1, "many", True])
def test_a_max_chars_out_of_bounds_is_refused_at_every_api_search(
    daemon: LiveDaemon, value: Any
) -> None:
    for answer in api_searches(daemon, reader(daemon), max_chars=value):
        if value is True and answer.request.method == "GET":
            continue  # `?max_chars=true` is the text "true": refused as "many" is
        assert answer.status_code == 422, (value, answer.text)
        assert answer.json()["error"]["detail"]["field"] == "max_chars"


@pytest.mark.anyio
async def test_mcp_cuts_hits_and_reads_the_cut_drawer_whole(daemon: LiveDaemon) -> None:
    async with mcp_client(daemon, reader(daemon)) as client:
        found = await client.call_tool("memory_search", {"query": QUERY, "max_chars": CUT})
        assert not found.is_error, found.content[0].text
        drawer_id = assert_bounded(json.loads(found.content[0].text)["results"])
        read = await client.call_tool("memory_get_drawer", {"drawer_id": drawer_id})
        assert not read.is_error, read.content[0].text
        answer = json.loads(read.content[0].text)
        assert answer["drawer"]["content"] == LONG and answer["wing"] == TEAM
        for value in (0, MAX_HIT_CHARS + 1, "300"):
            refused = await client.call_tool("memory_search", {"query": QUERY, "max_chars": value})
            assert refused.is_error and "max_chars" in refused.content[0].text
        whole = await client.call_tool("memory_search", {"query": QUERY})
        hits = json.loads(whole.content[0].text)["results"]
        assert sorted(h["content"] for h in hits) == sorted([LONG, SHORT])


def test_memctl_cuts_hits_and_shows_the_cut_drawer_whole(daemon: LiveDaemon) -> None:
    secret = reader(daemon)
    code, out, err = memctl(
        daemon, secret, "-w", TEAM, "recall", "search", QUERY, "--max-chars", str(CUT), "--json"
    )
    assert code == 0, err
    drawer_id = assert_bounded(json.loads(out)["hits"])
    code, out, err = memctl(
        daemon, secret, "-w", TEAM, "recall", "search", QUERY, "--max-chars", "300"
    )
    assert code == 0, err
    assert f"[cut at {CUT} of {len(LONG)} characters: memctl recall show {drawer_id}" in out
    code, out, err = memctl(daemon, secret, "-w", TEAM, "recall", "show", drawer_id, "--json")
    assert code == 0, err
    assert json.loads(out)["drawer"]["content"] == LONG
    code, out, err = memctl(daemon, secret, "-w", TEAM, "recall", "show", drawer_id)
    assert code == 0, err
    assert out.startswith(f"{TEAM}/notes {drawer_id}\nsource: notes/long.txt")
    code, _, err = memctl(daemon, secret, "-w", TEAM, "recall", "search", QUERY, "--max-chars", "0")
    assert code == 2 and "--max-chars" in err


@pytest.mark.anyio
async def test_wake_up_points_each_door_at_its_own_way_to_read_a_drawer(
    daemon: LiveDaemon,
) -> None:
    secret = reader(daemon)
    with daemon.http(secret) as http:
        api = http.get(f"/v1/workspaces/{TEAM}/recall/wake-up").json()["text"]
    assert f"read a drawer whole: GET /v1/workspaces/{TEAM}/recall/drawers/<drawer_id>" in api
    async with mcp_client(daemon, secret) as client:
        woken = await client.call_tool("memory_wake_up", {})
    assert (
        "read a drawer whole: memory_get_drawer {drawer_id}"
        in json.loads(woken.content[0].text)["text"]
    )
    code, out, err = memctl(daemon, secret, "-w", TEAM, "recall", "wake-up")
    assert code == 0, err
    assert "read a drawer whole: memctl recall show <drawer_id>" in out
    assert "GET /v1/" not in out
