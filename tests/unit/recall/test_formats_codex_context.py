"""Codex records context it injects as `role: "user"` messages: a skill's instructions,
the notice of an interrupted turn, a subagent's report, hook and extension context,
old warnings. None of it is the user's words: it neither opens an exchange nor reads
as something the user said. A shell command the user ran (`!cmd`) is kept as a tool
turn."""

from __future__ import annotations

import itertools
import json

import pytest

from memhubd.recall.ingest import chunk, parse

AT = itertools.count(10)


def line(kind: str, payload: dict) -> str:
    minute, second = divmod(next(AT), 60)
    at = f"2025-11-20T09:{minute:02}:{second:02}.000Z"
    return json.dumps({"timestamp": at, "type": kind, "payload": payload})


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

AGENTS_MD = (
    "# AGENTS.md instructions for /home/ana/src/wharf\n\n<INSTRUCTIONS>\n"
    "Run `make check` before every commit.\n</INSTRUCTIONS>"
)
UNIFIED_EXEC_WARNING = (
    "Warning: The maximum number of unified exec processes you can keep open is 60 and you "
    "currently have 61 processes open. Reuse older processes or close them to prevent "
    "automatic pruning of old processes"
)
REROUTED_WARNING = (
    "Warning: Your account was flagged for potentially high-risk cyber activity and this "
    "request was routed to gpt-5.2 as a fallback. To regain access to gpt-5.3-codex, apply "
    "for trusted access: https://chatgpt.com/cyber or learn more: "
    "https://developers.openai.com/codex/concepts/cyber-safety"
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
        said("user", UNIFIED_EXEC_WARNING),
        said("user", REROUTED_WARNING),
        said("assistant", "The load test was stopped halfway."),
    )

    assert contents(text) == [
        "> Run the load test\nStarting it.\nThe load test was stopped halfway."
    ]


def test_the_instructions_of_an_agents_md_file_are_not_the_users_words() -> None:
    text = rollout(
        said("user", AGENTS_MD), said("user", "Rename wharf"), said("assistant", "Done.")
    )

    assert contents(text) == ["> Rename wharf\nDone."]


@pytest.mark.parametrize(
    "typed",
    [
        "<skill> blocks in our SKILL.md render raw; also the quay deploy key rotation failed",
        "# AGENTS.md instructions are stale: the wharf build moved to `make check`",
        "<turn_aborted> shows up in my logs after every Ctrl-C",
        "<external_ticket> tags leak into the wharf changelog",
        "Warning: apply_patch was requested via exec_command -- why does wharf print this?",
        "Warning: The maximum number of unified exec processes you can keep open is 60?",
        "Warning: Your account was flagged for potentially high-risk cyber activity. Why?",
    ],
)
def test_a_message_that_only_starts_like_injected_context_is_the_users(typed: str) -> None:
    text = rollout(said("user", typed), said("assistant", "Looking into it."))

    assert contents(text) == [f"> {typed}\nLooking into it."]


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


def test_a_message_that_only_starts_like_a_shell_command_is_the_users() -> None:
    typed = "<user_shell_command> wraps the output of my !ls; " + "is all of it stored? " * 40
    text = rollout(said("user", typed), said("assistant", "Yes, cut to 600 characters."))

    [exchange] = chunk(parse(text, "codex"))

    assert exchange.content == f"> {typed.strip()}\nYes, cut to 600 characters."
    assert exchange.speaker == "user"
