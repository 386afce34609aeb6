"""What the watched-directory tests share: a real Claude Code session to watch, an
exchange as its JSONL lines, and a workspace's recall status from the daemon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.conftest import LiveDaemon

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
