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


def session(result: str, tool: str = "Edit", is_error: bool | None = True) -> str:
    """A tool call and its result; `is_error` None leaves the flag out of the result."""
    use = {"type": "tool_use", "id": "toolu_4", "name": tool, "input": {"file_path": "s.py"}}
    rejected: dict[str, Any] = {"type": "tool_result", "tool_use_id": "toolu_4", "content": result}
    if is_error is not None:
        rejected["is_error"] = is_error
    lines = [
        said("user", "Make the quay index warm up faster"),
        said("assistant", [use]),
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


def test_a_rejection_written_without_is_error_still_gives_the_users_words() -> None:
    first, second = chunk(parse(session(REJECTED + WORDS, is_error=None), "claude-code"))

    assert second.content.startswith("> " + WORDS[:40])
    assert second.speaker == "user"


NOTES = (
    "# Quay notes\n" + "The warm start reads the index once. " * 5 + "\n"
    "From an old session: To tell you how to proceed, the user said:\n"
    + "Keep the scheduler, drop the cache. "
    * 60
)


def test_a_file_quoting_the_rejection_sentence_is_tool_output_cut_to_600() -> None:
    [exchange] = chunk(parse(session(NOTES, "Read", is_error=False), "claude-code"))

    assert exchange.speaker == "user"
    assert exchange.content.startswith("> Make the quay index warm up faster\n")
    assert "[tool_result] # Quay notes" in exchange.content
    assert exchange.content.count("Keep the scheduler") < 15
    assert exchange.content.endswith("Understood: the flag goes in the cache module.")


def test_only_a_result_that_opens_with_the_rejection_is_one() -> None:
    for is_error in (None, True):
        tool_output = "Exit code 1\n" + NOTES

        [exchange] = chunk(parse(session(tool_output, "Bash", is_error), "claude-code"))

        assert "[tool_result] Exit code 1" in exchange.content
        assert exchange.content.count("Keep the scheduler") < 15


def test_a_result_that_is_no_error_is_no_rejection() -> None:
    [exchange] = chunk(parse(session(REJECTED + WORDS, is_error=False), "claude-code"))

    assert "[tool_result] " + REJECTED.strip() in exchange.content
    assert WORDS not in exchange.content
