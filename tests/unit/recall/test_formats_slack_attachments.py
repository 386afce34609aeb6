"""Slack messages whose words are only in `attachments` (integrations, CI bots post so):
the attachments' text is the message."""

from __future__ import annotations

import json

from memhubd.recall.ingest import chunk, parse

ASKED = {
    "type": "message",
    "text": "Did the nightly pass?",
    "user": "U7",
    "ts": "1762300000.000100",
    "user_profile": {"real_name": "Ines Okafor"},
}


def day(*messages: dict) -> str:
    return json.dumps([ASKED, *messages])


def test_a_bot_message_with_empty_text_keeps_its_attachment_text() -> None:
    bot = {
        "type": "message",
        "subtype": "bot_message",
        "text": "",
        "username": "nightly-ci",
        "bot_id": "B9",
        "ts": "1762300060.000200",
        "attachments": [
            {
                "fallback": "Nightly #412 failed",
                "pretext": "Nightly #412 failed",
                "text": "3 tests failed in ledger/rounding",
            }
        ],
    }

    content = chunk(parse(day(bot), "slack"))[0].content

    # The fallback repeats the pretext (it is the plain-text stand-in): read once.
    assert content == (
        "Ines Okafor: Did the nightly pass?\n"
        "nightly-ci: Nightly #412 failed\n3 tests failed in ledger/rounding"
    )


def test_an_attachment_with_only_a_fallback_is_read_from_its_fallback() -> None:
    bot = {
        "type": "message",
        "subtype": "bot_message",
        "text": "",
        "username": "pager",
        "ts": "1762300120.000300",
        "attachments": [{"fallback": "Disk 91% full on db-2"}, {"color": "danger"}],
    }

    content = chunk(parse(day(bot), "slack"))[0].content

    assert content.splitlines()[-1] == "pager: Disk 91% full on db-2"


def test_a_join_with_an_attachment_is_still_skipped() -> None:
    join = {
        "type": "message",
        "subtype": "channel_join",
        "text": "",
        "user": "U8",
        "ts": "1762300180.000400",
        "attachments": [{"text": "welcome card"}],
    }

    assert "welcome card" not in chunk(parse(day(join), "slack"))[0].content
