"""When Claude asks the user questions (its `AskUserQuestion` tool), the user's answers
come back as that call's `tool_result`. They are the user's words: kept whole (the
600-character cut is for tool output) as the user's turn, which the assistant's next
answer follows. Only the result of such a call is read that way."""

from __future__ import annotations

import json
from typing import Any

from memhubd.recall.ingest import chunk, parse

ANSWERED = "User has answered your questions: "
END = ". You can now continue with the user's answers in mind."
QUESTIONS = {
    "questions": [
        {
            "question": "Which store should the quay cache use?",
            "header": "Store",
            "options": [{"label": "SQLite", "description": "one file"}],
            "multiSelect": False,
        }
    ]
}
ANSWER = (
    '"Which store should the quay cache use?"="'
    + "Keep it in SQLite, one file per workspace, and never block a reader. " * 12
    + 'Call the flag QUAY_WARM_START."'
)


def said(role: str, content: Any) -> str:
    return json.dumps(
        {"type": role, "sessionId": "s1", "message": {"role": role, "content": content}}
    )


def session(result: str, tool: str = "AskUserQuestion", **flags: Any) -> str:
    use = {"type": "tool_use", "id": "toolu_7", "name": tool, "input": QUESTIONS}
    answered = {"type": "tool_result", "tool_use_id": "toolu_7", "content": result, **flags}
    lines = [
        said("user", "Make the quay index warm up faster"),
        said("assistant", [use]),
        said("user", [answered]),
        said("assistant", "SQLite it is; the flag goes in the cache module."),
    ]
    return "\n".join(lines) + "\n"


def test_the_users_answers_to_the_assistants_questions_are_kept_whole_as_theirs() -> None:
    assert len(ANSWER) > 600

    first, second = chunk(parse(session(ANSWERED + ANSWER + END), "claude-code"))

    assert first.content.startswith("> Make the quay index warm up faster\n[tool_use Ask")
    assert first.content.endswith("[tool_result] " + ANSWERED.strip())
    assert second.content == ("> " + ANSWER + "\nSQLite it is; the flag goes in the cache module.")
    assert second.speaker == "user"


def test_answers_in_a_list_of_text_blocks_are_read_the_same() -> None:
    blocks = [{"type": "text", "text": ANSWERED + ANSWER + END}]

    _, second = chunk(parse(session(blocks, is_error=False), "claude-code"))  # type: ignore[arg-type]

    assert second.content.startswith("> " + ANSWER[:60])


def test_another_tools_output_that_looks_like_answers_is_tool_output_cut_to_600() -> None:
    [exchange] = chunk(parse(session(ANSWERED + ANSWER + END, "Read"), "claude-code"))

    assert "[tool_result] " + ANSWERED in exchange.content
    assert "QUAY_WARM_START" not in exchange.content  # cut as tool output
    assert exchange.speaker == "user"


def test_a_failed_question_call_stays_a_tool_result() -> None:
    failed = ANSWERED + "nothing: the dialog was closed" + END

    [exchange] = chunk(parse(session(failed, is_error=True), "claude-code"))

    assert "[tool_result] " + failed in exchange.content


def test_a_result_that_names_no_call_is_not_taken_for_answers_to_one_that_has_no_id() -> None:
    use = {"type": "tool_use", "name": "AskUserQuestion", "input": QUESTIONS}
    result = {"type": "tool_result", "content": ANSWERED + ANSWER + END}
    lines = [said("user", "Warm the quay index"), said("assistant", [use]), said("user", [result])]

    [exchange] = chunk(parse("\n".join(lines) + "\n", "claude-code"))

    assert "QUAY_WARM_START" not in exchange.content
