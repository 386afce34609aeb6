"""Slack messages are grouped while the chunk stays within 800 characters and nobody
pauses an hour: a message that would take a chunk past 800 starts the next one."""

from __future__ import annotations

import json

from memhubd.recall.ingest import chunk, parse
from memhubd.recall.ingest.chunk import WINDOW


def export(messages: list[tuple[str, str, float]]) -> str:
    return json.dumps(
        [
            {
                "type": "message",
                "user": "U1",
                "text": text,
                "ts": f"{ts:.6f}",
                "user_profile": {"real_name": name},
            }
            for name, text, ts in messages
        ]
    )


def test_two_long_messages_half_a_minute_apart_are_two_chunks() -> None:
    first, second = "a" * 700, "b" * 700
    text = export([("Dana", first, 1749024000), ("Lee", second, 1749024030)])
    chunks = chunk(parse(text, "slack"))
    assert [c.content for c in chunks] == [f"Dana: {first}", f"Lee: {second}"]
    assert all(len(c.content) <= WINDOW for c in chunks)


def test_short_messages_fill_a_chunk_up_to_the_window_and_no_further() -> None:
    messages = [("Dana", f"message {n:03} " + "x" * 60, 1749024000 + n) for n in range(40)]
    chunks = chunk(parse(export(messages), "slack"))
    assert len(chunks) > 1
    assert all(len(c.content) <= WINDOW for c in chunks)
    # Each chunk but the last is full: the next message would have passed the window.
    line = len("Dana: message 000 " + "x" * 60)
    assert all(len(c.content) + 1 + line > WINDOW for c in chunks[:-1])
    said = [m[1] for m in messages]
    assert [t for c in chunks for t in c.content.removeprefix("Dana: ").split("\nDana: ")] == said


def test_a_message_longer_than_the_window_is_a_chunk_of_its_own() -> None:
    long = "word " * 300
    text = export(
        [
            ("Dana", "short before", 1749024000),
            ("Lee", long.strip(), 1749024010),
            ("Dana", "short after", 1749024020),
        ]
    )
    chunks = chunk(parse(text, "slack"))
    assert [c.content for c in chunks] == [
        "Dana: short before",
        f"Lee: {long.strip()}",
        "Dana: short after",
    ]
