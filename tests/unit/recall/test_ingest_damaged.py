"""Transcripts as they reach a store after a crash, an editor or another tool: a line
cut short, a byte order mark, times out of range, lone surrogates, a damaged ChatGPT
tree. Each is ingested as what it is, or reported; never a crash or raw JSON drawers."""

from __future__ import annotations

import json

import pytest

from memhubd.recall.ingest.formats import FormatError, detect, epoch, json_lines, parse

USER = {"type": "user", "message": {"role": "user", "content": "why do retries storm?"}}
ASSISTANT = {
    "type": "assistant",
    "message": {"role": "assistant", "content": "the backoff had no jitter"},
}


def claude(*lines: object) -> str:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)


def test_a_line_cut_short_is_left_out_and_the_rest_read_as_the_transcript() -> None:
    text = claude(USER, ASSISTANT, USER, ASSISTANT, '{"type":"user","mess')
    lines = json_lines(text)
    assert lines is not None and lines.skipped == [5]
    assert detect(text, "s.jsonl", lines) == "claude-code"
    assert len(parse(text, "claude-code", "s.jsonl", lines).conversations[0].turns) == 4


def test_text_with_many_lines_that_are_not_json_is_no_transcript() -> None:
    text = claude(USER, "some prose", "more prose", ASSISTANT)
    assert json_lines(text) is None
    assert detect(text, "notes.txt") == "text"


@pytest.mark.parametrize(
    "value", [float("inf"), float("nan"), 1e300, "inf", "99999999999999999999", -1e20, True]
)
def test_a_time_out_of_range_is_unknown(value: object) -> None:
    assert epoch(value) is None


def test_times_in_range_are_read() -> None:
    assert epoch(1_700_000_000.9) == 1_700_000_000
    assert epoch("2024-05-01T10:00:00Z") == 1_714_557_600
    assert epoch("1700000000") == 1_700_000_000


@pytest.mark.parametrize(
    "mapping",
    [
        {"b": "oops"},
        {"b": {"id": "b", "children": [], "message": "str"}},
        {
            "b": {"id": "b", "children": [], "message": {"create_time": "2024"}},
            "c": {"id": "c", "children": [], "message": {"create_time": 5}},
        },
    ],
    ids=["node not an object", "message not an object", "mixed create_time types"],
)
def test_a_damaged_chatgpt_tree_is_refused_with_a_reason(mapping: dict) -> None:
    # Nothing in these trees is a message: a reason, never AttributeError or TypeError
    export = json.dumps([{"title": "t", "current_node": "b", "mapping": mapping}])
    with pytest.raises(FormatError, match="no user or assistant messages"):
        parse(export, "chatgpt", "conversations.json")


def test_a_damaged_node_beside_good_ones_leaves_the_branch_readable() -> None:
    message = {"author": {"role": "user"}, "content": {"parts": ["hello"]}, "create_time": 5}
    mapping = {
        "a": {"id": "a", "parent": None, "children": ["b"], "message": message},
        "b": {"id": "b", "parent": "a", "children": [], "message": "damaged"},
        "x": "not a node",
    }
    export = json.dumps([{"title": "t", "current_node": "b", "mapping": mapping}])
    (conversation,) = parse(export, "chatgpt", "conversations.json").conversations
    assert [turn.text for turn in conversation.turns] == ["hello"]
