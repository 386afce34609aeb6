"""Codex records context it injects as `role: "user"` messages: a skill's instructions,
the notice of an interrupted turn, a subagent's report, hook and extension context,
old warnings. None of it is the user's words: it neither opens an exchange nor reads
as something the user said. A shell command the user ran (`!cmd`) is kept as a tool
turn."""

from __future__ import annotations

import json

from memhubd.recall.ingest import chunk, parse

AT = iter(range(10, 60))


def line(kind: str, payload: dict) -> str:
    return json.dumps(
        {"timestamp": f"2025-11-20T09:00:{next(AT)}.000Z", "type": kind, "payload": payload}
    )


def said(role: str, *texts: str) -> str:
    kind = "output_text" if role == "assistant" else "input_text"
    content = [{"type": kind, "text": text} for text in texts]
    return line("response_item", {"type": "message", "role": role, "content": content})


def rollout(*lines: str) -> str:
    meta = line("session_meta", {"id": "s1", "cwd": "/home/ana/src/wharf"})
    return "\n".join([meta, *lines]) + "\n"


SKILL = (
    "<skill>\n<name>changelog</name>\n<path>/home/ana/.codex/skills/changelog/SKILL.md</path>\n"
    "Sort entries by area, newest first.\n</skill>"
)
ABORTED = (
    "<turn_aborted>\nThe user interrupted the previous turn on purpose. "
    "Tools may have partially executed.\n</turn_aborted>"
)


def contents(text: str) -> list[str]:
    return [c.content for c in chunk(parse(text, "codex"))]


def test_a_skill_injected_after_the_prompt_stays_out_of_the_exchange() -> None:
    call = {"type": "function_call", "name": "shell", "arguments": '{"cmd":"git log"}'}
    text = rollout(
        said("user", "Use $changelog to write up this week's merges"),
        said("user", SKILL),
        line("response_item", call),
        said("assistant", "Wrote three entries under Storage."),
    )

    assert contents(text) == [
        "> Use $changelog to write up this week's merges\n"
        '[tool_use shell] {"cmd":"git log"}\n'
        "Wrote three entries under Storage."
    ]


def test_notices_of_aborted_turns_and_subagents_are_not_the_users_words() -> None:
    text = rollout(
        said("user", "Run the load test"),
        said("assistant", "Starting it."),
        said("user", ABORTED),
        said("user", '<SUBAGENT_NOTIFICATION>\n{"status":"completed"}\n</subagent_notification>'),
        said("user", '<hook_prompt hook_run_id="h1">Run the linter again</hook_prompt>'),
        said("user", "<external_ticket>WH-88 is open</external_ticket>"),
        said("user", "<extension_context>\nmode: focus\n</extension_context>"),
        said("user", "<goal_context>\nship the wharf API\n</goal_context>"),
        said(
            "user",
            "Warning: apply_patch was requested via exec_command. "
            "Use the apply_patch tool instead of exec_command.",
        ),
        said("assistant", "The load test was stopped halfway."),
    )

    assert contents(text) == [
        "> Run the load test\nStarting it.\nThe load test was stopped halfway."
    ]


def test_words_typed_beside_an_injected_item_are_kept() -> None:
    text = rollout(said("user", "<environment_context>\n</environment_context>", "Rename wharf"))

    assert contents(text) == ["> Rename wharf"]


def test_a_shell_command_the_user_ran_is_a_tool_turn() -> None:
    ran = (
        "<user_shell_command>\n<command>\nls dist\n</command>\n"
        "<result>\nExit code: 0\nOutput:\nwharf.whl\n</result>\n</user_shell_command>"
    )
    text = rollout(said("user", "Build the wheel"), said("assistant", "Built."), said("user", ran))

    [exchange] = contents(text)

    assert exchange.startswith("> Build the wheel\nBuilt.\n<user_shell_command>")
    assert "wharf.whl" in exchange
