"""Claude Code writes some `user` lines that the user did not type: the summary a
compaction leaves (`isCompactSummary`), a slash command's wrapper and output, a `!`
shell command and its output, a background task's notice. The summary is stored as
`summary` lines are, in a chunk of its own; the others are tool turns, kept but never
the user's words and never the start of an exchange."""

from __future__ import annotations

import json
from typing import Any

from memhubd.recall.ingest import chunk, parse


def said(role: str, content: Any, minute: int, **fields: Any) -> str:
    return json.dumps(
        {
            "type": role,
            "sessionId": "s1",
            "cwd": "/home/ana/src/quay",
            "timestamp": f"2025-11-03T10:{minute:02d}:00Z",
            "message": {"role": role, "content": content},
            **fields,
        }
    )


def session(*lines: str) -> str:
    return "\n".join(lines) + "\n"


COMPACT_SUMMARY = (
    "This session is being continued from a previous conversation that ran out of "
    "context. Summary: the quay index build was slow because its cache was cold."
)


def test_a_compaction_summary_is_a_summary_chunk_not_the_users_words() -> None:
    text = session(
        said("user", "Why is the quay index build slow?", 0),
        said("assistant", "Its cache dir is on tmpfs.", 1),
        json.dumps({"type": "system", "subtype": "compact_boundary", "content": "Compacted"}),
        said("user", COMPACT_SUMMARY, 2, isCompactSummary=True, isVisibleInTranscriptOnly=True),
        said("user", "Move the cache to /var/cache/quay then.", 3),
        said("assistant", "Moved it.", 4),
    )

    chunks = chunk(parse(text, "claude-code"))

    assert [c.content for c in chunks] == [
        "> Why is the quay index build slow?\nIts cache dir is on tmpfs.",
        "[summary] " + COMPACT_SUMMARY,
        "> Move the cache to /var/cache/quay then.\nMoved it.",
    ]
    assert [c.speaker for c in chunks] == ["user", "summary", "user"]


def test_harness_lines_are_tool_turns_inside_the_exchange_they_follow() -> None:
    harness = [
        "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
        "<command-args></command-args>",
        "<local-command-stdout>Set model to opus</local-command-stdout>",
        "<bash-input>df -h /var/cache</bash-input>",
        "<bash-stdout>/dev/sda2  40G  31G  9G  78% /var</bash-stdout><bash-stderr></bash-stderr>",
        "<task-notification>\n<status>completed</status>\n<summary>npm run build done"
        "</summary>\n</task-notification>",
    ]
    text = session(
        said("user", "Why is the quay index build slow?", 0),
        said("assistant", "Its cache dir is on tmpfs.", 1),
        *(said("user", line, 2 + n) for n, line in enumerate(harness)),
        said("assistant", "The build finished; /var has room for the cache.", 9),
    )

    parsed = parse(text, "claude-code")
    [exchange] = chunk(parsed)

    assert [t.role for t in parsed.conversations[0].turns] == [
        "user", "assistant", "tool", "tool", "tool", "tool", "tool", "assistant",
    ]  # fmt: skip
    assert exchange.speaker == "user"
    assert exchange.content.startswith("> Why is the quay index build slow?\n")
    assert "\n<bash-input>df -h /var/cache</bash-input>\n" in exchange.content
    assert "> <" not in exchange.content
