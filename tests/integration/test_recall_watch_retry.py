"""A watched transcript whose ingest failed for a reason that passes (here its ingest
lock held by another process for longer than the lock timeout) is tried again on its
own once the reason is gone: its lines become searchable without the file changing
again and without a restart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from memhubd.recall.ingest.lock import SourceLock
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.recall_watching import FIXTURE, WS, exchange, status

SOURCE = "-srv-billing/a.jsonl"
LOCK_TIMEOUT_S = 0.5


def stored(daemon: LiveDaemon, word: str) -> bool:
    """Whether a drawer of the watched transcript holding `word` is found."""
    with daemon.http(daemon.admin_token) as http:
        hits = http.post(f"/v1/workspaces/{WS}/recall/search", json={"query": word}).json()
    return any(h["source_file"] == SOURCE and word in h["content"] for h in hits["hits"])


def wait_until(check: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.1)


def test_a_watched_file_whose_ingest_failed_on_a_held_lock_is_tried_again(
    tmp_path: Path,
) -> None:
    # Given a watched transcript, ingested, with a short ingest lock timeout.
    sessions = tmp_path / "claude-projects" / "-srv-billing"
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text(FIXTURE.read_text())
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(sessions)]}}
    settings = {"recall.lock_timeout_s": LOCK_TIMEOUT_S}
    with start_daemon(tmp_path, workspaces, **settings) as daemon:
        wait_until(lambda: status(daemon)["drawer_count"] == 3, "the session ingested", 15)

        # When another process holds the transcript's ingest lock while lines are
        # appended, for longer than the watcher waits for it...
        locks = SourceLock(daemon.state_dir / "recall" / "locks" / WS, timeout_s=1)
        with locks.hold(SOURCE):
            with (sessions / "a.jsonl").open("a") as handle:
                handle.write(exchange("Where does the quince export run?", "On batch-3."))
            time.sleep(LOCK_TIMEOUT_S + 2.5)  # the event's ingest (and a retry) gave up
            assert not stored(daemon, "quince")
        # ...then lets it go, and the file is not touched again.

        # Then the appended exchange is ingested all the same, within a few seconds.
        wait_until(lambda: stored(daemon, "quince"), "the appended exchange ingested", 8)
        assert status(daemon)["drawer_count"] == 4


def failed(path: str, reason: str, seen: tuple[int, int] = (10, 1)) -> Any:
    from memhubd.recall.ingest import SourceReport
    from memhubd.service.recall import WatchedFile

    return WatchedFile(path, SourceReport(path, "failed", reason), seen, passing=True)


def test_failing_files_are_tried_again_ever_less_often_and_logged_once_per_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memhubd.recall.ingest import SourceReport
    from memhubd.service import recall

    logged: list[str] = []
    monkeypatch.setattr(recall.log, "warning", lambda event, **fields: logged.append(event))
    monkeypatch.setattr(recall.log, "info", lambda event, **fields: logged.append(event))
    retries = recall._Retries(WS, "/w")
    # Given a file whose ingest fails on a full disk, tried again each time it is due.
    now = 0.0
    waits = []
    for _ in range(9):
        assert retries.settle(["/w/a"], [failed("/w/a", "disk full")], now)
        waits.append(retries.failing["/w/a"].due - now)
        now = retries.failing["/w/a"].due
        assert retries.due(now - 0.01) == [] and retries.due(now) == ["/w/a"]
    # Then it waits twice as long each time, up to a bound, and is logged once.
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert logged == ["watched file not ingested, tried again later"]
    # A new reason is logged; a change to the file starts the waits over.
    retries.settle(["/w/a"], [failed("/w/a", "database is locked", seen=(20, 2))], now)
    assert retries.failing["/w/a"].due - now == 1
    assert logged[1:] == ["watched file not ingested, tried again later"]
    # Once it goes through it is forgotten, and that is logged once.
    ingested = recall.WatchedFile("/w/a", SourceReport("w/a"), (20, 2))
    assert retries.settle(["/w/a"], [ingested], now)
    assert retries.failing == {} and logged[2:] == ["watched file retry ended"]


def test_failing_files_are_forgotten_when_gone_and_remembered_within_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memhubd.service import recall

    monkeypatch.setattr(recall, "RETRIES_REMEMBERED", 10)
    retries = recall._Retries(WS, "/w")
    assert retries.settle(None, [failed(f"/w/sub/{n}", "disk full") for n in range(10)], 0)
    # A directory's ingest that no longer finds one of them forgets it.
    assert retries.settle(["/w/sub"], [failed(f"/w/sub/{n}", "disk full") for n in range(9)], 0)
    assert len(retries.failing) == 9 and "/w/sub/9" not in retries.failing
    # More than the bound: none is remembered, the whole directory is ingested again.
    assert not retries.settle(None, [failed(f"/w/{n}", "disk full") for n in range(11)], 0)
    assert retries.failing == {}
