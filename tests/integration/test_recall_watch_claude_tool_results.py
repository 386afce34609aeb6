"""A watched Claude Code projects directory: the large tool outputs Claude Code 2.x
offloads to `<session>/tool-results/` beside `<session>.jsonl` are never sources, at
the start's scan or when they arrive later; the session and its subagents are."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
FIRST = "aa11bb22-3333-4444-8555-666677778888"
SECOND = "cc33dd44-5555-4666-8777-888899990000"
OUTPUT = "M orchard/relay.py\n" * 4000  # a large `git status`, offloaded


def session(question: str, answer: str) -> str:
    return "".join(
        json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"
        for role, text in (("user", question), ("assistant", answer))
    )


def sources(daemon: LiveDaemon) -> set[str]:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"/v1/workspaces/{WS}/recall/search",
            json={"query": "orchard relay watchdog", "limit": 100},
        )
    assert answer.status_code == 200, answer.text
    return {hit["source_file"] for hit in answer.json()["hits"]}


def wait_for(daemon: LiveDaemon, wanted: str, timeout: float = 15.0) -> set[str]:
    deadline = time.monotonic() + timeout
    while wanted not in (found := sources(daemon)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def write_session(where: Path, name: str, question: str) -> None:
    (where / name / "tool-results").mkdir(parents=True)
    (where / name / "subagents").mkdir()
    (where / name / "tool-results" / "b7xq2kd9a.txt").write_text(OUTPUT)
    (where / name / "subagents" / "agent-a1.jsonl").write_text(
        session(f"{question} (subagent)", "The orchard relay has a watchdog.")
    )
    (where / f"{name}.jsonl").write_text(session(question, "The orchard relay watchdog fired."))


def test_offloaded_tool_results_of_a_watched_session_are_never_sources(tmp_path: Path) -> None:
    projects = tmp_path / "-home-dev-orchard"
    projects.mkdir()
    write_session(projects, FIRST, "Why is the orchard relay stuck?")
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(projects)]}}
    with start_daemon(tmp_path, workspaces) as daemon:
        name = projects.name
        # the start's scan
        found = wait_for(daemon, f"{name}/{FIRST}/subagents/agent-a1.jsonl")
        assert found == {f"{name}/{FIRST}.jsonl", f"{name}/{FIRST}/subagents/agent-a1.jsonl"}
        # a new output offloaded while the session runs, and a session moved in whole
        (projects / FIRST / "tool-results" / "toolu_01.txt").write_text(OUTPUT)
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        write_session(outside, SECOND, "Does the orchard relay need a watchdog?")
        os.rename(outside / f"{SECOND}.jsonl", projects / f"{SECOND}.jsonl")
        os.rename(outside / SECOND, projects / SECOND)
        found = wait_for(daemon, f"{name}/{SECOND}/subagents/agent-a1.jsonl")
        time.sleep(1.0)  # events about the offloaded outputs would have been ingested by now
        assert sources(daemon) == {
            f"{name}/{FIRST}.jsonl",
            f"{name}/{FIRST}/subagents/agent-a1.jsonl",
            f"{name}/{SECOND}.jsonl",
            f"{name}/{SECOND}/subagents/agent-a1.jsonl",
        }
