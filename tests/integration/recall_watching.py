"""What the watched-directory tests share: a real Claude Code session to watch, an
exchange as its JSONL lines, and a workspace's recall status from the daemon."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.integration.conftest import LiveDaemon, copy_examples

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures/recall/claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"
)
WS = "team-coding"


def exchange(question: str, answer: str) -> str:
    return "".join(
        json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"
        for role, text in (("user", question), ("assistant", answer))
    )


def status(daemon: LiveDaemon, workspace: str = WS) -> dict[str, Any]:
    with daemon.http(daemon.admin_token) as http:
        return http.get(f"/v1/workspaces/{workspace}/recall/status").json()


def watched_session(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """FIXTURE as `a.jsonl` in a Claude Code projects folder, and the workspaces (a copy
    of the examples' WS) whose recall watches that folder."""
    sessions = tmp_path / "claude-projects" / "-srv-billing"
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text(FIXTURE.read_text())
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(sessions)]}}
    return sessions, workspaces


def wait_for_status(daemon: LiveDaemon, check: Any, timeout: float = 10.0) -> dict[str, Any]:
    """WS's recall status once `check` holds for it, or the last one after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        now = status(daemon)
        if check(now) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)
