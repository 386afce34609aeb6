"""JSONL lines end at a line feed only. JSON strings may hold U+2028, U+2029 and U+0085
raw (JavaScript's JSON.stringify writes U+2028 so); a transcript whose messages hold
them is read message for message, never cut apart, left out or stored as raw text."""

from __future__ import annotations

import json

import pytest

from memhubd.recall.ingest import FormatError, chunk, detect, parse
from memhubd.recall.ingest.formats import json_lines


def user(text: str, at: str) -> dict[str, object]:
    return {
        "type": "user",
        "cwd": "/home/ana/src/billing",
        "message": {"role": "user", "content": text},
        "timestamp": at,
    }


def assistant(text: str, at: str) -> dict[str, object]:
    content = [
        {"type": "thinking", "thinking": "private reasoning", "signature": "x"},
        {"type": "text", "text": text},
    ]
    return {
        "type": "assistant",
        "message": {"role": "assistant", "content": content},
        "timestamp": at,
    }


def session(*values: dict[str, object], end: str = "\n") -> str:
    # ensure_ascii=False writes the separators raw, as Claude Code's JSON.stringify does
    return "".join(json.dumps(v, ensure_ascii=False) + end for v in values)


def test_a_message_holding_a_raw_line_separator_stays_in_its_own_exchange() -> None:
    values = []
    for n in range(10):
        values += [user(f"question {n}", f"2025-06-03T10:{n:02d}:00Z")]
        values += [assistant(f"answer {n}", f"2025-06-03T10:{n:02d}:30Z")]
    values[8] = user("the refund policy says:\u2028refunds within 14 days", "2025-06-03T10:04:00Z")
    text = session(*values)

    lines = json_lines(text)
    assert lines is not None and lines.skipped == []
    assert detect(text, "s.jsonl", lines) == "claude-code"
    chunks = chunk(parse(text, "claude-code", "s.jsonl", lines))

    assert len(chunks) == 10
    assert chunks[4].content == "> the refund policy says:\u2028refunds within 14 days\nanswer 4"
    assert chunks[4].locator == "lines 9-10"


def test_a_short_session_with_separators_in_every_message_is_still_a_session() -> None:
    text = session(
        user("pasted:\u2028Clause 7.2\u2029Clause 7.3", "2025-06-03T10:00:00Z"),
        assistant("noted\u0085both clauses", "2025-06-03T10:00:30Z"),
        user("and the\u2028next one", "2025-06-03T10:01:00Z"),
        assistant("fine", "2025-06-03T10:01:30Z"),
        end="\r\n",
    )

    assert detect(text, "s.jsonl") == "claude-code"
    chunks = chunk(parse(text, "claude-code"))

    assert [c.content for c in chunks] == [
        "> pasted:\u2028Clause 7.2\u2029Clause 7.3\nnoted\u0085both clauses",
        "> and the\u2028next one\nfine",
    ]
    assert all(c.said_at is not None for c in chunks)
    assert not any("private reasoning" in c.content for c in chunks)


def test_a_forced_format_error_names_the_line_as_numbered_by_line_feeds() -> None:
    text = session(user("a\u2028b", "2025-06-03T10:00:00Z")) + "oops\nnope\nstill not\n"

    with pytest.raises(FormatError, match="line 2 is not JSON"):
        parse(text, "claude-code")
