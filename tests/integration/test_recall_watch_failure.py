"""A recall transcript watch that fails unexpectedly: the daemon's other work (reloads,
MCP) goes on, the failure is logged, and the watch starts again after a pause."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import memhubd.server as server_module
import memhubd.service.recall as recall_module
from tests.integration.conftest import copy_examples, start_daemon
from tests.integration.test_mcp import INITIALIZE, MCP_HEADERS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/recall"
SESSION = FIXTURES / "claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"
WS = "team-coding"
PROBE = """
fact notes.watch_failure_probe {
  claim: "Reloads go on while the transcript watch is down."
  evidence { source: "test" quote: "probe" }
}
"""


def wait_for(predicate: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_failing_transcript_watch_leaves_reloads_and_mcp_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a watched directory whose watch fails (an error no handler expects) until
    # the fault is cleared
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "first.jsonl").write_text(SESSION.read_text())
    fault = {"on": True}
    identity = recall_module._directory_identity

    def failing(root: str) -> Any:
        if fault["on"]:
            raise ValueError("an unforeseen failure")
        return identity(root)

    monkeypatch.setattr(recall_module, "_directory_identity", failing)
    monkeypatch.setattr(server_module, "RECALL_WATCH_RETRY_S", 0.2, raising=False)
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    root = Path(workspaces[WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(inbox)]}}

    with start_daemon(tmp_path, workspaces) as daemon, daemon.unix() as client:
        time.sleep(0.5)  # the watch has failed by now, at least once
        # When a workspace file is edited
        before = client.get(f"/v1/workspaces/{WS}").json()["generation"]
        (root / "probe.mem").write_text(PROBE, encoding="utf-8")
        # Then it is still reloaded, and MCP still answers
        wait_for(lambda: client.get(f"/v1/workspaces/{WS}").json()["generation"] > before)
        answered = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert answered.status_code == 200, answered.text
        # And once the fault is gone, the watch starts again and ingests the directory
        fault["on"] = False

        def ingested() -> bool:
            found = client.post(
                f"/v1/workspaces/{WS}/recall/search", json={"query": "backoff", "limit": 50}
            )
            assert found.status_code == 200, found.text
            return any(h["source_file"] == "inbox/first.jsonl" for h in found.json()["hits"])

        wait_for(ingested)
