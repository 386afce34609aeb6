"""A diary read by type finds the entries of that type however many newer entries of
other types (or other drawers of the writer's room) came after them, with and without a
query, through the JSON API and memctl."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
DIARY = f"/v1/workspaces/{WS}/diary"
LESSON = "Deploy the ledger only after the staging backup has finished."
OBSERVATIONS = [
    f"Deploy deploy deploy: deploy number {n} of the ledger went out, deploy logs clean."
    for n in range(8)
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("diary-type")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        live.add_token("agent", "write:recall,read:summary,read:search", workspaces=[WS])
        yield live


@pytest.fixture(scope="module")
def lesson(daemon: LiveDaemon) -> str:
    """One lesson, then newer observations and another drawer of the writer's room."""
    with daemon.http(daemon.tokens["agent"]) as http:
        answer = http.post(DIARY, json={"type": "LESSON", "content": LESSON})
        assert answer.status_code == 201, answer.text
        for text in OBSERVATIONS:
            written = http.post(DIARY, json={"type": "OBSERVATION", "content": text})
            assert written.status_code == 201, written.text
        other = http.post(
            f"/v1/workspaces/{WS}/recall/ingest",
            json={"content": "deploy deploy deploy notes", "room": "agent", "source": "notes"},
        )
        assert other.status_code == 201, other.text
    return answer.json()["drawer_id"]


def read(daemon: LiveDaemon, **params: Any) -> list[dict[str, Any]]:
    with daemon.http(daemon.tokens["agent"]) as http:
        answer = http.get(DIARY, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()["entries"]


def test_a_type_read_finds_an_older_entry_behind_newer_ones(daemon, lesson) -> None:
    for limit in (1, 2, 20):
        entries = read(daemon, type="LESSON", limit=limit)
        assert [e["drawer_id"] for e in entries] == [lesson], limit


def test_newest_first_without_a_type_keeps_the_limit(daemon, lesson) -> None:
    entries = read(daemon, limit=3)
    assert [e["text"] for e in entries] == OBSERVATIONS[::-1][:3]
    everything = read(daemon, limit=100)
    assert len(everything) == len(OBSERVATIONS) + 1
    assert everything[-1]["drawer_id"] == lesson  # the notes drawer is no entry


def test_a_type_read_with_a_query_finds_it_too(daemon, lesson) -> None:
    entries = read(daemon, type="LESSON", q="deploy ledger", limit=1)
    assert [e["drawer_id"] for e in entries] == [lesson]
    assert entries[0]["score"] > 0


def test_memctl_reads_it_with_limit_one(daemon, lesson) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", daemon.tokens["agent"]]
        + ["-w", WS, "diary", "read", "--type", "LESSON", "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr
    assert "[LESSON]" in result.stdout and LESSON in result.stdout


def test_a_read_with_a_query_looks_among_a_bounded_number_of_matches(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With fewer entries of the type than asked for, the search asks for more only up to
    its bound, however large the writer's room."""
    from memhubd.service import diary as diary_service

    monkeypatch.setattr(diary_service, "SEARCHED_AT_MOST", 40, raising=False)
    asked: list[int] = []
    searching = diary_service.search

    def counted(
        store: Any, embedder: Any, query: str, where: Any, fetch: int, *rest: Any, **named: Any
    ) -> Any:
        asked.append(fetch)
        return searching(store, embedder, query, where, fetch, *rest, **named)

    monkeypatch.setattr(diary_service, "search", counted)
    files = [{"name": f"n{n}.md", "content": f"marmot note number {n}"} for n in range(100)]
    with daemon.http(daemon.tokens["agent"], timeout=60) as http:
        stored = http.post(
            f"/v1/workspaces/{WS}/recall/ingest", json={"files": files, "room": "agent"}
        )
        assert stored.status_code in (200, 201), stored.text
        read = http.get(DIARY, params={"type": "PATTERN", "q": "marmot", "limit": 5})
    assert read.status_code == 200 and read.json()["entries"] == []
    assert asked and max(asked) <= 40, asked
