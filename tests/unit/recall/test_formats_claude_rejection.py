"""When the user rejects a tool call and types how to go on, Claude Code stores those
words in the `tool_result`, after a fixed sentence. They are the user's words: kept
whole (the 600-character cut is for tool output) as the user's turn, which the
assistant's next answer follows."""

from __future__ import annotations

import json
from typing import Any

from memhubd.recall.ingest import chunk, parse

REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected "
    "(eg. if it was a file edit, the new_string was NOT written to the file). "
    "To tell you how to proceed, the user said:\n"
)
WORDS = (
    "Leave the scheduler alone. " * 30
    + "Put the fix in the quay cache module and call the flag QUAY_WARM_START."
)


def said(role: str, content: Any) -> str:
    return json.dumps(
        {"type": role, "sessionId": "s1", "message": {"role": role, "content": content}}
    )


def session(result: str) -> str:
    edit = {"type": "tool_use", "id": "toolu_4", "name": "Edit", "input": {"file_path": "s.py"}}
    rejected = {
        "type": "tool_result",
        "tool_use_id": "toolu_4",
        "is_error": True,
        "content": result,
    }
    lines = [
        said("user", "Make the quay index warm up faster"),
        said("assistant", [edit]),
        said("user", [rejected]),
        said("assistant", "Understood: the flag goes in the cache module."),
    ]
    return "\n".join(lines) + "\n"


def test_the_words_typed_on_rejecting_a_tool_call_are_kept_whole_as_the_users() -> None:
    assert len(WORDS) > 600

    first, second = chunk(parse(session(REJECTED + WORDS), "claude-code"))

    assert first.content.startswith("> Make the quay index warm up faster\n[tool_use Edit]")
    assert first.content.endswith("[tool_result] " + REJECTED.split(" To tell")[0])
    assert second.content == "> " + WORDS + "\nUnderstood: the flag goes in the cache module."
    assert second.speaker == "user"


def test_a_rejection_without_words_stays_a_tool_result() -> None:
    plain = "The user doesn't want to proceed with this tool use. The tool use was rejected."

    [exchange] = chunk(parse(session(plain), "claude-code"))

    assert "[tool_result] " + plain in exchange.content
