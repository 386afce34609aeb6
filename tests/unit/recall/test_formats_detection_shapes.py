"""Detection of the shapes that used to fall through to plain text: a Claude Code
session holding only summaries, an older Codex CLI rollout, and JSON that is no known
export (left out, so a Slack export's users.json never becomes searchable profiles)."""

from __future__ import annotations

import json

from recall_fakes import fixture_text, options

from memhubd.recall.ingest import Ingestor, chunk, detect, parse
from memhubd.recall.ingest.formats import NOT_AN_EXPORT, UNKNOWN_JSON, json_lines
from memhubd.recall.store import DrawerStore

SUMMARIES = (
    '{"type":"summary","summary":"Ledger migration planning",'
    '"leafUuid":"7d1c2b3a-0e9f-4a8b-8c7d-6e5f4a3b2c1d"}\n'
    '{"type":"summary","summary":"Rounding fix for currency conversion",'
    '"leafUuid":"8e2d3c4b-1f0a-4b9c-9d8e-7f6a5b4c3d2e"}\n'
)

# Codex CLI rollouts of spring 2025: a bare session header, state records, and response
# items at the top level with no `payload` wrapper (and no time of their own).
OLDER_CODEX_HEADER = {
    "id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e",
    "timestamp": "2025-05-20T10:00:00.000Z",
    "instructions": None,
}
OLDER_CODEX_ITEMS = [
    {"record_type": "state"},
    {
        "type": "message",
        "role": "user",
        "content": [
            {
                "type": "input_text",
                "text": "<environment_context>\n  <cwd>/home/ben/work/ledger</cwd>\n"
                "</environment_context>",
            }
        ],
    },
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Rename the ledger_entries table."}],
    },
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {
        "type": "function_call",
        "name": "shell",
        "arguments": '{"command":["rg","ledger_entries"]}',
        "call_id": "c1",
    },
    {"record_type": "state"},
    {"type": "function_call_output", "call_id": "c1", "output": '{"output":"db/schema.sql"}'},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Renamed it to ledger_postings."}],
    },
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Now update the reports."}],
    },
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "The two reports now read ledger_postings."}],
    },
]


def jsonl(*values: object) -> str:
    return "".join(json.dumps(v) + "\n" for v in values)


def test_a_claude_code_session_of_summaries_only_is_read_as_its_summaries() -> None:
    assert detect(SUMMARIES, "upload.txt") == "claude-code"
    chunks = chunk(parse(SUMMARIES, "claude-code"))

    assert [c.content for c in chunks] == [
        "[summary] Ledger migration planning\n[summary] Rounding fix for currency conversion"
    ]
    assert chunks[0].locator == "lines 1-2"


def test_an_older_codex_rollout_is_read_like_the_newer_shape() -> None:
    text = jsonl(OLDER_CODEX_HEADER, *OLDER_CODEX_ITEMS)

    assert detect(text, "upload.txt") == "codex"
    chunks = chunk(parse(text, "codex"))

    assert [c.content for c in chunks] == [
        "> Rename the ledger_entries table.\n"
        '[tool_use shell] {"command":["rg","ledger_entries"]}\n'
        '[tool_result] {"output":"db/schema.sql"}\n'
        "Renamed it to ledger_postings.",
        "> Now update the reports.\nThe two reports now read ledger_postings.",
    ]
    assert chunks[0].locator == "lines 4-9"
    # Its items have no time of their own: the session's start stands for them.
    assert [c.said_at for c in chunks] == [1747735200, 1747735200]


def test_a_later_part_of_an_older_codex_rollout_without_its_header_is_codex() -> None:
    assert detect(jsonl(*OLDER_CODEX_ITEMS[5:]), "s.part2.jsonl") == "codex"


def test_json_that_is_no_known_export_is_read_as_nothing_with_the_reason() -> None:
    history = jsonl(
        {"session_id": "5973b6c0", "ts": 1747735200, "text": "rename the ledger table"},
        {"session_id": "5973b6c0", "ts": 1747735260, "text": "now the reports"},
    )
    for name, text in [
        ("slack/users.json", fixture_text("slack/users.json")),
        ("slack/channels.json", fixture_text("slack/channels.json")),
        ("settings.json", '{"theme": "dark", "model": "opus"}'),
        ("history.jsonl", history),
    ]:
        kind = detect(text, name, json_lines(text))
        parsed = parse(text, kind, name)

        assert kind == UNKNOWN_JSON, name
        assert parsed.reason == NOT_AN_EXPORT
        assert chunk(parsed) == []


def test_a_slack_export_root_stores_its_channel_days_and_its_profiles_only_if_asked(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    names = ["slack/users.json", "slack/channels.json", "slack/deploys/2025-06-04.json"]

    reports = ingestor.ingest_texts([(n, fixture_text(n)) for n in names], options())

    assert [(r.source, r.status, r.format) for r in reports] == [
        ("slack/users.json", "skipped", UNKNOWN_JSON),
        ("slack/channels.json", "skipped", UNKNOWN_JSON),
        ("slack/deploys/2025-06-04.json", "ingested", "slack"),
    ]
    assert reports[0].reason == reports[1].reason == NOT_AN_EXPORT
    assert not store.chunks_of_source("slack/users.json")
    assert not store.chunks_of_source("slack/channels.json")
    assert store.chunks_of_source("slack/deploys/2025-06-04.json")

    asked = ingestor.ingest_text(names[0], fixture_text(names[0]), options(format="text"))

    assert (asked.status, asked.format) == ("ingested", "text")
    assert store.chunks_of_source("slack/users.json")


def test_claude_lines_whose_content_is_an_object_of_parts_are_read() -> None:
    """mempal's Claude JSONL takes a top-level `content` of `{parts: [strings]}` as well as
    a string or a list of strings: a file of such lines is a conversation, and such a line
    among real-shape lines is not dropped."""
    parts = (
        '{"type":"user","content":{"parts":["Which queue holds the retries?"]}}\n'
        '{"type":"assistant","content":{"parts":["The retry queue is ledger-retry.", 7]}}\n'
    )
    assert detect(parts, "upload.txt") == "claude-code"
    texts = [c.content for c in chunk(parse(parts, "claude-code"))]
    assert texts == ["> Which queue holds the retries?\nThe retry queue is ledger-retry."]
    mixed = (
        '{"type":"user","message":{"role":"user","content":"Where do retries go?"},'
        '"timestamp":"2025-05-20T10:00:00.000Z"}\n'
        '{"type":"assistant","message":{"role":"assistant","content":"To ledger-retry."},'
        '"timestamp":"2025-05-20T10:00:01.000Z"}\n' + parts
    )
    joined = "\n".join(c.content for c in chunk(parse(mixed, "claude-code")))
    assert "Which queue holds the retries?" in joined and "ledger-retry." in joined
