"""An http embedder that fails after it loaded, or is down when first needed, through a
real daemon and a real embeddings server on loopback: writes are stored without vectors
and say why, search answers with BM25 alone, reindex refuses with the embedder's message,
and `recall status` shows the failure until the embedder answers again."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memhubd.recall import shelf as shelf_module
from tests.fake_embeddings import FakeEmbeddings, fake_embeddings
from tests.integration.conftest import LiveDaemon, copy_examples, memctl, start_daemon

WS = "writing"
BASE = f"/v1/workspaces/{WS}"
SECRET = "password hunter2"


@pytest.fixture
def embeddings() -> Iterator[FakeEmbeddings]:
    with fake_embeddings(dimension=16) as server:
        yield server


@pytest.fixture
def daemon(tmp_path: Path, embeddings: FakeEmbeddings) -> Iterator[LiveDaemon]:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    settings = {
        "recall.embedder": "http",
        "recall.embedder_url": embeddings.url,
        "recall.embedder_model": "fake",
        "recall.embedder_dimension": 16,
    }
    with start_daemon(tmp_path, workspaces, **settings) as live:
        yield live


def call(daemon: LiveDaemon, method: str, path: str, **body: Any) -> Any:
    with daemon.http(daemon.admin_token) as http:
        if method == "GET":
            return http.get(path)
        return http.request(method, path, json=body)


def ingest(daemon: LiveDaemon, content: str) -> dict[str, Any]:
    answer = call(daemon, "POST", f"{BASE}/recall/ingest", content=content)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def status(daemon: LiveDaemon) -> dict[str, Any]:
    return call(daemon, "GET", f"{BASE}/recall/status").json()


def search(daemon: LiveDaemon, query: str) -> dict[str, Any]:
    answer = call(daemon, "POST", f"{BASE}/recall/search", query=query)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_ingest_while_the_embedder_fails_stores_the_drawer_without_a_vector_and_says_why(
    daemon: LiveDaemon, embeddings: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an embedder that loaded and embedded a first drawer
    assert ingest(daemon, "the heron waits by the reed bed")["chunks"] == 1
    before = status(daemon)
    assert before["vectors_usable"] is True and before["vectors_missing"] == 0
    # when it starts answering HTTP 500
    embeddings.mode = "e500"
    answer = ingest(daemon, "the otter slides down the muddy bank")
    # then the drawer is stored, and the answer says it has no vector and why
    (source,) = answer["sources"]
    assert answer["failed"] == [] and source["status"] == "ingested" and answer["chunks"] == 1
    (warning,) = source["warnings"]
    assert "HTTP 500" in warning and "model exploded" in warning and "reindex" in warning
    # and status names the failure (its public form: no upstream body), when, and the
    # drawer left without a vector
    failing = status(daemon)
    assert failing["embedder_error"].endswith("answered HTTP 500")
    assert abs(failing["embedder_failed_at"] - time.time()) < 60
    assert failing["vectors_usable"] is False
    assert (failing["vector_count"], failing["vectors_missing"]) == (1, 1)
    # and so does memctl, without sending to a reindex that would fail alike
    code, out, err = memctl(daemon, daemon.admin_token, "-w", WS, "recall", "status")
    assert code == 0, err
    assert "embedder call failed at " in out and "answered HTTP 500" in out
    assert "model exploded" not in out
    assert "drawers_without_vectors: 1 (run `memctl recall reindex` once the embedder" in out
    assert "vectors from" not in out
    # and search finds it by its words, saying vector search is unavailable
    found = search(daemon, "otter muddy bank")
    assert any("otter" in hit["content"] for hit in found["hits"])
    assert any("vector search unavailable" in w and "HTTP 500" in w for w in found["warnings"])
    # and searches right after the failure go without it, not waiting on it again
    embeddings.mode = "ok"
    asked = len(embeddings.requests)
    paused = search(daemon, "otter")
    assert len(embeddings.requests) == asked
    assert any("vector search unavailable" in w for w in paused["warnings"])
    # when the embedder answers again, the first query after the pause (or any write)
    # asks it, and that success clears the failure
    monkeypatch.setattr(shelf_module, "QUERY_PAUSE_S", 0.0)
    search(daemon, "otter")
    assert len(embeddings.requests) == asked + 1
    recovered = status(daemon)
    assert recovered["embedder_error"] is None and recovered["embedder_failed_at"] is None
    assert recovered["vectors_usable"] is True and recovered["vectors_missing"] == 1
    # and a reindex gives the drawer its vector
    done = call(daemon, "POST", f"{BASE}/recall/reindex")
    assert done.status_code == 200, done.text
    assert status(daemon)["vectors_missing"] == 0
    code, out, err = memctl(daemon, daemon.admin_token, "-w", WS, "recall", "status")
    assert code == 0 and "failed" not in out and "without_vectors" not in out, out


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("e500", 'answered HTTP 500: {"error": "model exploded"}'),
        ("wrongdim", "returned 17-d vectors"),
        ("fewer", "returned 0 vectors for 1 texts"),
        ("nan", "NaN or infinite values"),
        ("big", "NaN or infinite values"),
        ("bigint", "too large for float32"),
        ("down", "embedding request to"),
    ],
)
def test_reindex_while_the_embedder_fails_is_refused_with_its_message(
    daemon: LiveDaemon, embeddings: FakeEmbeddings, mode: str, message: str
) -> None:
    # given a drawer with its vector
    ingest(daemon, "the kingfisher dives for minnows")
    # when the embedder fails during a reindex
    embeddings.mode = mode
    answer = call(daemon, "POST", f"{BASE}/recall/reindex")
    # then the reindex is refused as an unavailable dependency, with the embedder's words
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["code"] == "workspace_unavailable"
    assert message in error["message"] and "the old vectors stay in use" in error["message"]
    assert message in error["detail"]["embedder_error"]
    # and the vectors stored before are still there and in use once it answers again
    embeddings.mode = "ok"
    after = status(daemon)
    assert after["vector_count"] == 1 and after["vectors_missing"] == 0
    assert any("kingfisher" in hit["content"] for hit in search(daemon, "kingfisher")["hits"])


def test_files_ingested_while_the_embedder_fails_are_all_stored_asking_it_once(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    ingest(daemon, "warm the embedder up")
    embeddings.mode = "e500"
    embeddings.requests.clear()
    files = [
        {"name": "notes/birds.md", "content": "# Birds\n\nThe crane stands in the marsh.\n"},
        {"name": "notes/fish.md", "content": "# Fish\n\nThe pike hides in the weeds.\n"},
    ]
    answer = call(daemon, "POST", f"{BASE}/recall/ingest", files=files)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["failed"] == [] and [s["status"] for s in body["sources"]] == ["ingested"] * 2
    assert all("HTTP 500" in s["warnings"][0] for s in body["sources"])
    assert len(embeddings.requests) == 1  # the later file is not sent again
    assert status(daemon)["vectors_missing"] == body["chunks"] > 0


def test_a_diary_entry_written_while_the_embedder_fails_is_stored(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    ingest(daemon, "warm the embedder up")
    embeddings.mode = "fewer"
    answer = call(daemon, "POST", f"{BASE}/diary", type="OBSERVATION", content="geese fly south")
    assert answer.status_code in (200, 201), answer.text
    assert answer.json()["status"] == "ingested"
    (warning,) = answer.json()["warnings"]  # the writer is told, as an ingest's is
    assert "returned 0 vectors for 1 texts" in warning and "reindex" in warning
    code, out, err = memctl(
        daemon, daemon.admin_token, "-w", WS, "diary", "write", "OBSERVATION", "cranes too"
    )
    assert code == 0, err
    assert out.startswith("stored: ") and "\nwarning: " in out and "0 vectors" in out
    assert "returned 0 vectors for 1 texts" in status(daemon)["embedder_error"]
    assert status(daemon)["vectors_missing"] == 2


def test_a_search_whose_query_embedding_fails_asks_the_embedder_once(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    ingest(daemon, "the swallow nests under the eaves")
    embeddings.mode = "e500"
    embeddings.requests.clear()
    found = search(daemon, "swallow eaves")
    assert any("swallow" in hit["content"] for hit in found["hits"])
    assert len(embeddings.requests) == 1


def test_an_embedder_down_when_first_needed_is_used_once_it_answers(
    daemon: LiveDaemon, embeddings: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shelf_module, "EMBEDDER_RETRY_S", 0.5)
    # given an endpoint that is down when the daemon first needs it
    embeddings.mode = "down"
    answer = ingest(daemon, "the wren sings at dawn")
    assert answer["chunks"] == 1
    down = status(daemon)
    assert down["embedder"] is None and "embedding request to" in down["embedder_error"]
    assert down["vectors_missing"] == 1
    # and it is not asked again before the retry is due, and a reindex says why it waits
    embeddings.requests.clear()
    search(daemon, "wren")
    refused = call(daemon, "POST", f"{BASE}/recall/reindex")
    assert embeddings.requests == []
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "workspace_unavailable"
    assert "embedding request to" in refused.json()["error"]["message"]
    # when it answers again and the retry is due, the next use tries it (in a thread of
    # its own, that use going on without it)
    embeddings.mode = "ok"
    time.sleep(0.6)
    search(daemon, "wren")
    deadline = time.monotonic() + 10
    while status(daemon)["embedder"] is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    ingest(daemon, "the robin sings at dusk")
    # then the embedder runs, the failure is cleared, and new drawers get vectors
    up = status(daemon)
    assert up["embedder"] == {"name": "openai:fake", "dimension": 16}
    assert up["embedder_error"] is None and up["vectors_usable"] is True
    assert (up["vector_count"], up["vectors_missing"]) == (1, 1)


def test_a_diary_search_right_after_a_failure_goes_without_the_embedder(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    answer = call(daemon, "POST", f"{BASE}/diary", type="LESSON", content="herons fish at dusk")
    assert answer.status_code == 201, answer.text
    embeddings.mode = "e500"
    search(daemon, "herons")  # fails, and is recorded
    asked = len(embeddings.requests)
    read = call(daemon, "GET", f"{BASE}/diary?q=herons+dusk")
    assert read.status_code == 200, read.text
    assert [e["text"] for e in read.json()["entries"]] == ["herons fish at dusk"]
    assert len(embeddings.requests) == asked


def test_an_embedder_failure_shows_other_callers_nothing_of_the_request_nor_when(
    daemon: LiveDaemon, embeddings: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an embedder that loaded, then answers errors that quote their input
    ingest(daemon, "the heron waits by the reed bed")
    embeddings.mode = "echo"
    # when an admin writes a private diary entry
    wrote = call(daemon, "POST", f"{BASE}/diary", type="OBSERVATION", content=SECRET)
    assert wrote.status_code == 201, wrote.text
    # then its writer is told why in full: the text quoted is its own
    (warning,) = wrote.json()["warnings"]
    assert SECRET in warning and "reindex" in warning
    # and a caller of no roles learns that vector search is unavailable, never what
    # was sent, nor when someone else used the embedder
    limited = daemon.add_token("limited", "read:summary,read:search", workspaces=[WS])
    with daemon.http(limited) as http:
        seen = http.get(f"{BASE}/recall/status").json()
        found = http.post(f"{BASE}/recall/search", json={"query": "heron"}).json()
    assert seen["hidden_count"] == 1
    assert seen["embedder_error"].endswith("answered HTTP 400")
    assert seen["embedder_failed_at"] is None
    assert "hunter2" not in json.dumps(seen)
    assert any("vector search unavailable" in w for w in found["warnings"])
    assert "hunter2" not in json.dumps(found["warnings"])
    code, out, err = memctl(daemon, limited, "-w", WS, "recall", "status")
    assert code == 0, err
    assert "hunter2" not in out and "answered HTTP 400" in out
    # when that caller's own query fails, its answer quotes its own words
    monkeypatch.setattr(shelf_module, "QUERY_PAUSE_S", 0.0)
    with daemon.http(limited) as http:
        own = http.post(f"{BASE}/recall/search", json={"query": "merger with ACME"}).json()
    assert any("merger with ACME" in w for w in own["warnings"])
    # and a third caller's status shows none of them
    other = daemon.add_token("other", "read:summary", workspaces=[WS], roles=["dev"])
    with daemon.http(other) as http:
        third = http.get(f"{BASE}/recall/status").json()
    assert "ACME" not in json.dumps(third) and third["embedder_failed_at"] is None
    # while an admin of every workspace is told when it failed
    assert abs(status(daemon)["embedder_failed_at"] - time.time()) < 60


def test_a_reindex_by_an_admin_who_may_not_read_every_drawer_quotes_none(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    wrote = call(daemon, "POST", f"{BASE}/diary", type="OBSERVATION", content=SECRET)
    assert wrote.status_code == 201, wrote.text
    embeddings.mode = "echo"
    scoped = daemon.add_token("ws-admin", "admin,read:summary", workspaces=[WS])
    with daemon.http(scoped) as http:
        answer = http.post(f"{BASE}/recall/reindex")
    assert answer.status_code == 503, answer.text
    assert "answered HTTP 400" in answer.json()["error"]["message"]
    assert "hunter2" not in answer.text


def test_status_never_loads_nor_retries_the_embedder(
    daemon: LiveDaemon, embeddings: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shelf_module, "EMBEDDER_RETRY_S", 0.2)
    # given a daemon whose embedder no request has needed yet, status loads nothing
    first = status(daemon)
    assert first["embedder_pending"] is True and first["embedder"] is None
    assert first["embedder_error"] is None and embeddings.requests == []
    code, out, err = memctl(daemon, daemon.admin_token, "-w", WS, "recall", "status")
    assert code == 0 and "embedder: not loaded yet" in out, out + err
    # given an endpoint down when first needed, that then accepts and never answers
    embeddings.mode = "down"
    ingest(daemon, "the wren sings at dawn")
    embeddings.mode = "hold"
    time.sleep(0.3)  # the retry is due
    asked = len(embeddings.requests)
    try:
        # when status is asked, it answers at once, without trying the embedder
        with daemon.http(daemon.admin_token, timeout=5) as http:
            started = time.monotonic()
            answer = http.get(f"{BASE}/recall/status")
            took = time.monotonic() - started
        assert answer.status_code == 200 and took < 3, (answer.text, took)
        assert len(embeddings.requests) == asked
        body = answer.json()
        assert body["embedder_pending"] is False and body["embedder"] is None
        assert "embedding request to" in body["embedder_error"]
    finally:
        embeddings.gate.set()


def test_status_and_wake_up_answer_while_searches_wait_on_a_hanging_embedder(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    ingest(daemon, "the heron waits by the reed bed")
    embeddings.mode = "hold"
    asked = len(embeddings.requests)
    searches = [threading.Thread(target=search, args=(daemon, f"heron {i}")) for i in range(6)]
    try:
        for thread in searches:
            thread.start()
        deadline = time.monotonic() + 5
        while len(embeddings.requests) < asked + 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(embeddings.requests) >= asked + 4  # every search slot is held
        with daemon.http(daemon.admin_token, timeout=3) as http:
            assert http.get(f"{BASE}/recall/status").status_code == 200
            assert http.get(f"{BASE}/recall/wake-up").status_code == 200
    finally:
        embeddings.gate.set()
        for thread in searches:
            thread.join(15)


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, secret: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


@pytest.mark.anyio
async def test_mcp_ingest_while_the_embedder_fails_says_why_in_warnings(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    ingest(daemon, "warm the embedder up")
    embeddings.mode = "e500"
    async with mcp_client(daemon, daemon.admin_token) as client:
        result = await client.call_tool(
            "memory_ingest", {"wing": WS, "content": "the otter slides down the bank"}
        )
    answer = json.loads(result.content[0].text)
    assert answer["status"] == "ingested" and answer["drawer_id"]
    (warning,) = answer["warnings"]
    assert "HTTP 500" in warning and "without vectors" in warning


def test_writes_while_the_embedder_could_not_load_say_they_have_no_vector(
    daemon: LiveDaemon, embeddings: FakeEmbeddings
) -> None:
    # given an endpoint down when the daemon first needs it
    embeddings.mode = "down"
    # when an ingest and a diary entry are written
    answer = ingest(daemon, "the wren sings at dawn")
    wrote = call(daemon, "POST", f"{BASE}/diary", type="LESSON", content="wrens sing early")
    # then each answer says its drawers are stored without vectors, and why
    (warning,) = answer["sources"][0]["warnings"]
    assert "the embedder is unavailable (embedding request to" in warning
    assert "without vectors" in warning and "reindex" in warning
    assert wrote.status_code == 201, wrote.text
    (diary_warning,) = wrote.json()["warnings"]
    assert "the embedder is unavailable" in diary_warning
    assert status(daemon)["vectors_missing"] == 2
