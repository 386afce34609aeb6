"""A watched transcript directory that is missing at start, or deleted and created
again while the daemon runs, is watched again once it is there: its transcripts are
ingested without a restart."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.recall_watching import FIXTURE, WS, exchange, status

DEADLINE_S = 15.0


def stored(daemon: LiveDaemon, word: str, source: str) -> bool:
    """Whether a drawer of `source` holding `word` is found."""
    with daemon.http(daemon.admin_token) as http:
        hits = http.post(f"/v1/workspaces/{WS}/recall/search", json={"query": word}).json()
    return any(h["source_file"] == source and word in h["content"] for h in hits["hits"])


def wait_until(check: Any, what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.1)


def watching(tmp_path: Path, *dirs: Path) -> dict[str, Any]:
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(d) for d in dirs]}}
    return workspaces


def test_a_directory_missing_at_start_is_watched_once_it_appears(tmp_path: Path) -> None:
    later = tmp_path / "claude-projects" / "-srv-later"
    with start_daemon(tmp_path, watching(tmp_path, later)) as daemon:
        assert status(daemon)["drawer_count"] == 0  # served, and nothing to watch yet
        later.mkdir(parents=True)
        (later / "a.jsonl").write_text(FIXTURE.read_text())
        wait_until(lambda: status(daemon)["drawer_count"] == 3, "the existing session ingested")
        # And it is followed from then on, not only scanned once.
        (later / "b.jsonl").write_text(exchange("Is the guava cron moved?", "Yes, to 04:00 UTC."))
        wait_until(
            lambda: stored(daemon, "guava", "-srv-later/b.jsonl"),
            "a session created after the directory appeared ingested",
        )
        assert status(daemon)["drawer_count"] == 4


def test_a_directory_deleted_and_created_again_is_watched_again(tmp_path: Path) -> None:
    sessions = tmp_path / "claude-projects" / "-srv-billing"
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text(FIXTURE.read_text())
    with start_daemon(tmp_path, watching(tmp_path, sessions)) as daemon:
        wait_until(lambda: status(daemon)["drawer_count"] == 3, "the first session ingested")

        # Deleted and at once created again, with a new session in a new subdirectory.
        shutil.rmtree(sessions)
        (sessions / "sub").mkdir(parents=True)
        (sessions / "sub" / "b.jsonl").write_text(
            exchange("Where does the papaya invoice job run?", "On the billing-2 host.")
        )
        wait_until(
            lambda: stored(daemon, "papaya", "-srv-billing/sub/b.jsonl"),
            "the session in the recreated directory ingested",
        )

        # Deleted, left missing for a while, then created again.
        shutil.rmtree(sessions)
        time.sleep(1.5)  # long enough for the watcher to notice that it is gone
        sessions.mkdir()
        (sessions / "c.jsonl").write_text(exchange("Who owns the kiwi report?", "The ops team."))
        wait_until(
            lambda: stored(daemon, "kiwi", "-srv-billing/c.jsonl"),
            "the session in the directory created again later ingested",
        )
        # And the new watch follows appends too.
        with (sessions / "c.jsonl").open("a") as handle:
            handle.write(exchange("When is the mango audit?", "Next Thursday."))
        wait_until(
            lambda: stored(daemon, "mango", "-srv-billing/c.jsonl"),
            "lines appended in the recreated directory ingested",
        )
        # One row retired: the kiwi exchange, stored again with the mango one as context.
        assert status(daemon)["deleted_count"] == 1
