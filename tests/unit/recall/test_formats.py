"""Format detection by content and normalisation of the hand-written fixtures, which
follow the real on-disk shapes of each tool's transcripts."""

from __future__ import annotations

import json

import pytest
from recall_fakes import fixture_text

from memhubd.recall.ingest import FormatError, chunk, detect, parse

CLAUDE = "claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"
CODEX = "codex/rollout-2025-06-05T14-02-11-5c0e9d7a-2f1b-4c3d-9e8f-a1b2c3d4e5f6.jsonl"
CHATGPT = "chatgpt/conversations.json"
SLACK = "slack/deploys/2025-06-04.json"


@pytest.mark.parametrize(
    ("relative", "kind"),
    [
        (CLAUDE, "claude-code"),
        (CODEX, "codex"),
        (CHATGPT, "chatgpt"),
        (SLACK, "slack"),
        ("notes/architecture.md", "markdown"),
        ("notes/standup-2025-06-06.txt", "text"),
    ],
)
def test_each_fixture_is_detected_by_its_content(relative: str, kind: str) -> None:
    # The name given is deliberately uninformative: content decides.
    assert detect(fixture_text(relative), "upload.txt") == kind


def test_claude_code_session_keeps_exchanges_tool_calls_and_summary_but_not_thinking() -> None:
    parsed = parse(fixture_text(CLAUDE), "claude-code")
    chunks = chunk(parsed)
    assert parsed.project == "billing"
    assert [c.content.splitlines()[0] for c in chunks] == [
        "[summary] Fix retry storm in invoice webhook worker",
        "> The invoice webhook worker hammers Stripe after an outage. "
        "Why does it retry so aggressively?",
        "> Agreed. Use the jittered backoff and write a test for the cap.",
    ]
    first = chunks[1]
    assert "[tool_use Grep]" in first.content and "max_retries = 50" in first.content
    assert "I should look at the worker's retry policy first." not in first.content  # thinking
    assert first.locator == "lines 2-5"
    assert first.speaker == "user"
    assert first.said_at == 1748942042  # 2025-06-03T09:14:02Z


def test_chatgpt_export_follows_the_current_branch_only() -> None:
    parsed = parse(fixture_text(CHATGPT), "chatgpt")
    text = "\n".join(c.content for c in chunk(parsed))
    assert "autovacuum_vacuum_scale_factor on that table to 0.02" in text
    assert "try VACUUM FULL nightly" not in text  # the abandoned sibling answer
    assert [c.title for c in parsed.conversations] == [
        "Postgres vacuum tuning",
        "Naming the event bus",
    ]
    assert "Is 'courier' a good name" in text  # string parts of a multimodal message


def test_codex_rollout_prefers_response_items_and_drops_injected_context() -> None:
    parsed = parse(fixture_text(CODEX), "codex")
    chunks = chunk(parsed)
    assert parsed.project == "ledger"
    assert len(chunks) == 2
    assert chunks[0].content.startswith("> Why do the ledger totals drift")
    assert "<environment_context>" not in chunks[0].content
    # agent_message events repeat the response item: the text appears once.
    assert chunks[0].content.count("banker's rounding") == 1
    assert "[tool_use shell]" in chunks[0].content


def test_slack_export_names_speakers_and_skips_joins() -> None:
    chunks = chunk(parse(fixture_text(SLACK), "slack"))
    assert len(chunks) == 1
    assert chunks[0].content.splitlines()[0].startswith("Dana Whitfield: Friday deploy")
    assert "has joined the channel" not in chunks[0].content
    assert chunks[0].said_at == 1749024000


def test_markdown_chunks_stay_inside_their_section() -> None:
    chunks = chunk(parse(fixture_text("notes/architecture.md"), "markdown"))
    assert [c.locator.split(",")[0] for c in chunks] == [
        "section Billing architecture",
        "section Webhooks",
        "section Money",
        "section Migrations",
    ]


def test_plain_text_windows_overlap_and_never_exceed_the_window() -> None:
    text = " ".join(f"word{i}" for i in range(600))
    chunks = chunk(parse(text, "text"))
    assert len(chunks) > 1
    assert all(len(c.content) <= 800 for c in chunks)
    assert chunks[1].content.split()[0] in chunks[0].content  # overlap starts at a word


def test_an_overlong_exchange_is_split_rather_than_kept_whole() -> None:
    line = {"type": "user", "message": {"role": "user", "content": "question " * 10}}
    answer = {"type": "assistant", "message": {"role": "assistant", "content": "x " * 6000}}
    text = "\n".join(json.dumps(v) for v in (line, answer))
    chunks = chunk(parse(text, "claude-code"))
    assert len(chunks) > 1 and all(len(c.content) <= 4000 for c in chunks)


def test_a_file_forced_into_the_wrong_format_is_a_format_error() -> None:
    with pytest.raises(FormatError):
        parse("just some notes\n", "claude-code")
    with pytest.raises(FormatError):
        parse('{"type": "session_meta"}\nnot json\n', "codex")
