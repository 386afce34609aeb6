"""Watched transcript directories: a running daemon ingests new sessions and appended
lines on its own, once each, and leaves a half-written last line for later."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures/recall/claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"
)
WS = "team-coding"


def line(role: str, text: str) -> str:
    return json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"


def wait_for(daemon: LiveDaemon, check: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    with daemon.http(daemon.admin_token) as http:
        while True:
            status = http.get(f"/v1/workspaces/{WS}/recall/status").json()
            if check(status) or time.monotonic() > deadline:
                return status
            time.sleep(0.1)


def test_watched_sessions_are_ingested_and_appends_follow(tmp_path: Path) -> None:
    sessions = tmp_path / "claude-projects" / "-srv-billing"
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text(FIXTURE.read_text())
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(sessions)]}}
    with start_daemon(tmp_path, workspaces) as daemon:
        status = wait_for(daemon, lambda s: s["drawer_count"] == 3)
        assert status["drawer_count"] == 3
        with (sessions / "a.jsonl").open("a") as handle:
            handle.write(line("user", "Did the capped backoff ship to production?"))
            handle.write(line("assistant", "Yes, in release 2.15 on Tuesday."))
            handle.write('{"type": "user", "message": {"role": "us')  # still being written
        status = wait_for(daemon, lambda s: s["drawer_count"] == 4)
        assert status["drawer_count"] == 4
        with daemon.http(daemon.admin_token) as http:
            hits = http.post(
                f"/v1/workspaces/{WS}/recall/search", json={"query": "release 2.15 Tuesday"}
            ).json()["hits"]
            audit_free = http.get(f"/v1/workspaces/{WS}/recall/status").json()
        assert hits[0]["source_file"] == "-srv-billing/a.jsonl"
        assert hits[0]["identity"] == "recall-watcher"
        # One row retired: the third exchange, stored again with the fourth's words as
        # its context. Nothing else: the appends were whole, so no partial line was
        # stored and replaced.
        assert audit_free["deleted_count"] == 1


def test_a_removed_workspaces_watch_ends_with_it(tmp_path: Path) -> None:
    """A transcript directory watched for a configured workspace is not watched for a
    workspace added later under the same name: that is another workspace."""
    sessions = tmp_path / "claude-projects" / "-srv-billing"
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text(FIXTURE.read_text())
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(sessions)]}}
    other = copy_examples(tmp_path / "other", ["writing"])["writing"]
    with start_daemon(tmp_path, workspaces) as daemon:
        assert wait_for(daemon, lambda s: s["drawer_count"] == 3)["drawer_count"] == 3
        with daemon.http(daemon.admin_token) as http:
            assert http.delete(f"/v1/workspaces/{WS}").status_code == 200
            added = http.post("/v1/workspaces", json={"name": WS, "path": other})
            assert added.status_code == 201, added.text
        # when a new session and lines of the old one are written in the watched directory
        (sessions / "b.jsonl").write_text(FIXTURE.read_text())
        with (sessions / "a.jsonl").open("a") as handle:
            handle.write(line("user", "Did the capped backoff ship to production?"))
            handle.write(line("assistant", "Yes, in release 2.15 on Tuesday."))
        # then the workspace now under that name stores none of them
        time.sleep(3)  # the watch's debounce and a second's look, three times over
        assert wait_for(daemon, lambda s: False, timeout=0)["drawer_count"] == 0


def test_a_removal_that_fails_keeps_the_watch(tmp_path: Path) -> None:
    """A removal whose state cannot be archived serves the workspace again: its
    transcript directories stay watched."""
    sessions = tmp_path / "claude-projects" / "-srv-billing"
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text(FIXTURE.read_text())
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(sessions)]}}
    with start_daemon(tmp_path, workspaces) as daemon:
        assert wait_for(daemon, lambda s: s["drawer_count"] == 3)["drawer_count"] == 3
        blocker = daemon.state_dir / "removed"
        assert not blocker.exists()
        blocker.write_text("not a folder\n")  # where the archive cannot go
        try:
            with daemon.http(daemon.admin_token, timeout=60) as http:
                assert http.delete(f"/v1/workspaces/{WS}").status_code == 500
        finally:
            blocker.unlink()
        with (sessions / "a.jsonl").open("a") as handle:
            handle.write(line("user", "Did the capped backoff ship to production?"))
            handle.write(line("assistant", "Yes, in release 2.15 on Tuesday."))
        status = wait_for(daemon, lambda s: s["drawer_count"] == 4)
        assert status["drawer_count"] == 4
