"""The shelf's embedder against a real embeddings server on loopback: a failure is
recorded until a call succeeds and logged once per change, and a failed load is tried
again after a while, never on every use."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memhubd.recall import shelf as shelf_module
from memhubd.recall.embed import EmbedderError, EmbedderSettings
from memhubd.recall.shelf import RecallSettings, RecallShelf
from tests.fake_embeddings import FakeEmbeddings, fake_embeddings


@pytest.fixture
def server() -> Iterator[FakeEmbeddings]:
    with fake_embeddings(dimension=16) as running:
        yield running


@pytest.fixture
def shelf(tmp_path: Path, server: FakeEmbeddings) -> Iterator[RecallShelf]:
    # A model name per test: embedders are cached per settings across the process.
    settings = EmbedderSettings(
        kind="http", url=server.url, model=f"fake-{tmp_path.name}", dimension=16
    )
    opened = RecallShelf(tmp_path, RecallSettings(embedder=settings))
    yield opened
    opened.close()


def test_a_failure_is_logged_once_and_shown_until_a_call_succeeds(
    shelf: RecallShelf, server: FakeEmbeddings, shelf_logs: list[dict[str, Any]]
) -> None:
    embedder = shelf.embedder()
    assert embedder is not None and shelf.embedder_failure is None
    server.mode = "e500"
    with contextlib.nullcontext(shelf_logs) as logs:
        for _ in range(5):
            with pytest.raises(EmbedderError, match="HTTP 500"):
                embedder.embed(["alpha"])
        failure = shelf.embedder_failure
        assert failure is not None and "HTTP 500" in failure.message
        assert shelf.embedder_error == failure.public
        assert abs(failure.at - time.time()) < 60
        embedder.embed(["   "])  # a blank text reaches no model: it proves nothing
        assert shelf.embedder_failure is failure
        server.mode = "ok"
        embedder.embed(["alpha"])
    assert shelf.embedder_failure is None and shelf.embedder_error is None
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == [
        "embedder failed; what it could not embed is stored without vectors "
        "and searched with BM25 alone"
    ]
    assert [e["event"] for e in logs if e["log_level"] == "info"] == ["embedder answers again"]


def test_a_failed_load_is_tried_again_only_once_the_retry_is_due(
    shelf: RecallShelf,
    server: FakeEmbeddings,
    monkeypatch: pytest.MonkeyPatch,
    shelf_logs: list[dict[str, Any]],
) -> None:
    monkeypatch.setattr(shelf_module, "EMBEDDER_RETRY_S", 0.3)
    server.mode = "down"
    with contextlib.nullcontext(shelf_logs) as logs:
        assert shelf.embedder() is None
        first = len(server.requests)
        for _ in range(20):
            assert shelf.embedder() is None
        assert len(server.requests) == first  # no request before the retry is due
        time.sleep(0.35)
        assert shelf.embedder() is None  # due: tried again in a thread, still down
        until(lambda: len(server.requests) > first)
        until(lambda: not shelf._loading.locked())  # that try is over
        server.mode = "ok"
        time.sleep(0.35)
        shelf.embedder()  # due again: tried in a thread, which loads it this time
        until(lambda: shelf.embedder() is not None)
    assert shelf.embedder_error is None
    events = [e["event"] for e in logs]
    assert events == [
        "embedder unavailable; recall search uses BM25 only",
        "embedder answers again",
    ]


def until(condition: Callable[[], bool], within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.01)


def test_a_due_retry_is_never_waited_for(
    shelf: RecallShelf, server: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shelf_module, "EMBEDDER_RETRY_S", 0.0)
    server.mode = "down"
    assert shelf.embedder() is None  # the first use waits for its load, which fails
    # an endpoint that takes the request and does not answer until it is let go
    server.mode = "hold"
    asked = len(server.requests)
    assert shelf.embedder() is None  # the retry is due: made in a thread of its own
    until(lambda: len(server.requests) > asked)
    # the load waits on the endpoint, and every use meanwhile goes on without it
    assert not server.gate.is_set()
    assert all(shelf.embedder() is None for _ in range(5))
    assert len(server.requests) == asked + 1  # one retry at a time
    server.gate.set()
    until(lambda: shelf.embedder() is not None)
    assert shelf.embedder_error is None
