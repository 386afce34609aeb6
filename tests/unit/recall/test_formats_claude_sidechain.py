"""Claude Code sidechain lines (a subagent's turns, `isSidechain: true`) never split the
main thread's exchanges: each subagent run is chunked as a conversation of its own."""

from __future__ import annotations

import json
from typing import Any

from memhubd.recall.ingest import chunk, parse

SESSION = "5d6e7f80-0000-4000-8000-000000000001"


def line(uuid: str, parent: str | None, role: str, content: Any, side: bool = False) -> str:
    return json.dumps(
        {
            "parentUuid": parent,
            "isSidechain": side,
            "sessionId": SESSION,
            "cwd": "/home/ana/src/billing",
            "type": role,
            "message": {"role": role, "content": content},
            "uuid": uuid,
            "timestamp": "2025-06-03T09:14:02Z",
        }
    )


TASK = [{"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {"prompt": "find"}}]
RESULT = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "retry cap is 10"}]


def session(*sidechains: list[str]) -> str:
    lines = [
        line("m1", None, "user", "Why does the webhook worker retry so often?"),
        line("m2", "m1", "assistant", [{"type": "text", "text": "Let me ask a subagent."}, *TASK]),
        *(entry for run in sidechains for entry in run),
        line("m3", "m2", "user", RESULT),
        line("m4", "m3", "assistant", "It retries ten times with no backoff; cap it."),
        line("m5", "m4", "user", "Add the backoff then."),
        line("m6", "m5", "assistant", "Done: exponential backoff capped at ten minutes."),
    ]
    return "\n".join(lines) + "\n"


def run(key: str, prompt: str, answer: str, parent: str | None = "m2") -> list[str]:
    return [
        line(f"{key}1", parent, "user", prompt, side=True),
        line(f"{key}2", f"{key}1", "assistant", answer, side=True),
    ]


def test_a_subagent_run_leaves_the_main_exchange_whole() -> None:
    text = session(run("s", "Find where retries are configured.", "In worker.py: max_retries=10."))
    chunks = chunk(parse(text, "claude-code"))
    main, second, side = (c.content for c in chunks)
    assert main.startswith("> Why does the webhook worker retry so often?")
    assert "[tool_result] retry cap is 10" in main
    assert "It retries ten times with no backoff" in main
    assert "Find where retries" not in main and "max_retries=10" not in main
    assert second.startswith("> Add the backoff then.")
    assert side == "> Find where retries are configured.\nIn worker.py: max_retries=10."
    # The main thread's neighbours are its own exchanges, not the subagent's.
    assert "max_retries=10" not in chunks[0].context + chunks[1].context


def test_interleaved_subagent_runs_stay_apart() -> None:
    first, second = (
        run("a", "Read the worker.", "Worker read."),
        run("b", "Read the cron.", "Cron read."),
    )
    # Two subagents at once: their lines alternate in the file.
    text = session([first[0], second[0], first[1], second[1]])
    chunks = chunk(parse(text, "claude-code"))
    assert [c.content for c in chunks[2:]] == [
        "> Read the worker.\nWorker read.",
        "> Read the cron.\nCron read.",
    ]
    assert "Read the" not in chunks[0].content


def test_a_subagent_transcript_on_its_own_is_chunked_as_a_session() -> None:
    lines = [
        *run("s", "First task.", "First done.", parent=None),
        line("s3", "s2", "user", "Second task.", side=True),
        line("s4", "s3", "assistant", "Second done.", side=True),
    ]
    chunks = chunk(parse("\n".join(lines) + "\n", "claude-code"))
    assert [c.content for c in chunks] == [
        "> First task.\nFirst done.",
        "> Second task.\nSecond done.",
    ]
