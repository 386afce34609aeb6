"""A prompt the user types while Claude is still working is written by Claude Code only
as an `attachment` line (`queued_command`), beside `queue-operation` bookkeeping: it is
the user's turn, and the answer that follows is filed under it."""

from __future__ import annotations

import json
from typing import Any

from memhubd.recall.ingest import chunk, parse


def entry(kind: str, **fields: Any) -> str:
    base = {"type": kind, "sessionId": "s1", "cwd": "/home/ana/src/quay"}
    return json.dumps({**base, **fields})


def said(role: str, content: Any, at: str) -> str:
    return entry(role, timestamp=at, message={"role": role, "content": content})


def queued(prompt: Any, at: str, **more: Any) -> str:
    command = {"type": "queued_command", "prompt": prompt, **more}
    return entry("attachment", timestamp=at, attachment=command)


def session(*middle: str) -> str:
    lines = [
        said("user", "Why is the quay index build slow?", "2025-11-03T10:00:00Z"),
        said("assistant", "Profiling the build now.", "2025-11-03T10:00:05Z"),
        entry("queue-operation", operation="enqueue", content="ignored bookkeeping"),
        *middle,
        said(
            "assistant", "Yes: the cache dir was on tmpfs, so it was cold.", "2025-11-03T10:01:00Z"
        ),
    ]
    return "\n".join(lines) + "\n"


def test_a_prompt_queued_mid_turn_opens_its_own_exchange() -> None:
    text = session(
        queued(
            "is the cache dir cleared between runs?",
            "2025-11-03T10:00:30Z",
            commandMode="prompt",
            origin={"kind": "human"},
        )
    )

    chunks = chunk(parse(text, "claude-code"))

    assert [c.content for c in chunks] == [
        "> Why is the quay index build slow?\nProfiling the build now.",
        "> is the cache dir cleared between runs?\n"
        "Yes: the cache dir was on tmpfs, so it was cold.",
    ]
    assert chunks[1].speaker == "user"
    assert chunks[1].said_at == 1762164030  # 2025-11-03T10:00:30Z
    assert "ignored bookkeeping" not in chunks[0].content


def test_a_queued_prompt_without_a_mode_or_given_as_blocks_is_the_users_too() -> None:
    text = session(queued([{"type": "text", "text": "and the lock file?"}], "2025-11-03T10:00:30Z"))

    assert chunk(parse(text, "claude-code"))[1].content.startswith("> and the lock file?\n")


def test_queued_commands_that_are_not_the_users_prompt_are_not_user_turns() -> None:
    text = session(
        queued(
            "<task-notification>build done</task-notification>",
            "2025-11-03T10:00:30Z",
            commandMode="task-notification",
        ),
        queued(
            "ping from a peer",
            "2025-11-03T10:00:31Z",
            commandMode="prompt",
            origin={"kind": "peer"},
        ),
    )

    contents = [c.content for c in chunk(parse(text, "claude-code"))]

    assert len(contents) == 1
    assert "build done" not in contents[0] and "ping from a peer" not in contents[0]
