"""A line or message whose `type` or `subtype` is no text (a list, an object, a number,
or missing) is left out, as a line that is no JSON object is: it never fails the file
nor hides the rest of a session from detection."""

from __future__ import annotations

import pytest

from memhubd.recall.ingest import chunk, detect, parse
from memhubd.recall.ingest.formats import json_lines

CLAUDE = (
    '{"type":"user","message":{"role":"user","content":"rotate the keys"}}\n'
    '{"type":"assistant","message":{"role":"assistant","content":"done, all three"}}\n'
)
CODEX = (
    '{"type":"session_meta","payload":{"cwd":"/srv/keys"}}\n'
    '{"type":"response_item","payload":{"type":"message","role":"user",'
    '"content":"rotate the keys"}}\n'
)
OLDER_CODEX = (
    '{"type":"message","role":"user","content":"rotate the keys"}\n'
    '{"type":"message","role":"assistant","content":"done, all three"}\n'
)


def read(text: str) -> tuple[str, list[str]]:
    """The format detected by content, and the chunks' texts."""
    lines = json_lines(text)
    kind = detect(text, "f.jsonl", lines)
    return kind, [c.content for c in chunk(parse(text, kind, "f.jsonl", lines))]


@pytest.mark.parametrize("odd", ["{}", '{"type":5}', '{"type":null}', '{"type":[]}'])
def test_a_session_with_one_line_of_no_type_is_still_a_session(odd: str) -> None:
    assert read(CLAUDE + odd + "\n") == read(CLAUDE)
    assert read(CLAUDE)[0] == "claude-code"


@pytest.mark.parametrize("odd", ['{"type":[]}', '{"type":{"a":1}}', '{"type":5}'])
def test_a_rollout_with_a_line_of_another_type_is_still_a_rollout(odd: str) -> None:
    assert read(CODEX + odd + "\n") == read(CODEX)
    assert read(odd + "\n" + OLDER_CODEX) == read(OLDER_CODEX)
    assert read(OLDER_CODEX)[0] == "codex"
    chunks = [c.content for c in chunk(parse(CODEX + odd + "\n", "codex"))]
    assert chunks == read(CODEX)[1]


def test_a_slack_message_whose_subtype_is_no_text_is_kept_and_the_rest_too() -> None:
    export = (
        '[{"type":"message","user":"U1","text":"deploy at 5","ts":"1"},'
        '{"type":"message","user":"U1","text":"and the keys at 6","subtype":[],"ts":"2"}]'
    )
    kind, chunks = read(export)
    assert kind == "slack"
    assert "deploy at 5" in "\n".join(chunks) and "and the keys at 6" in "\n".join(chunks)
