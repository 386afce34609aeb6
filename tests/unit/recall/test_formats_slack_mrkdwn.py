"""Slack writes a message's text as mrkdwn: `&`, `<` and `>` escaped, mentions, channels
and links as `<…>` control sequences. Stored, the text reads as it did in Slack. Notices
Slack posts as messages are nobody's words; a message that only shares a file is kept
as a `[file: …]` line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memhubd.recall.ingest import parse

TS = iter(range(1762300000, 1762400000, 60))


def posted(user: str, name: str | None, text: str, **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": f"{next(TS)}.000100",
    }
    if name:
        message["user_profile"] = {"real_name": name, "display_name": name.split()[0].lower()}
    return {**message, **fields}


def lines(*messages: dict[str, Any]) -> list[str]:
    turns = parse(json.dumps(list(messages)), "slack").conversations[0].turns
    return [f"{t.speaker}: {t.text}" for t in turns]


def test_escapes_mentions_channels_and_links_read_as_they_did_in_slack() -> None:
    assert lines(
        posted("U1", "Ines Okafor", "R&amp;D: if x &lt; 3 &amp;&amp; y &gt; 2, page <@U2>"),
        posted(
            "U2",
            "Tomas Berg",
            "See <https://ci.example.org/run/42?a=1&amp;b=2|run 42> "
            "and <https://ci.example.org/run/41>, cc <@U9> in <#C7|ledger-ops>",
        ),
        posted("U1", None, "<!here> <!channel|channel> <!everyone> <!subteam^S1|@oncall>"),
        posted("U2", "Tomas Berg", "An old mention: <@U1|ines>, a mail <mailto:t@x.org|t@x.org>"),
    ) == [
        "Ines Okafor: R&D: if x < 3 && y > 2, page @Tomas Berg",
        "Tomas Berg: See run 42 (https://ci.example.org/run/42?a=1&b=2) and "
        "https://ci.example.org/run/41, cc @U9 in #ledger-ops",
        "U1: @here @channel @everyone @oncall",
        "Tomas Berg: An old mention: @ines, a mail t@x.org (mailto:t@x.org)",
    ]


def test_an_escaped_entity_is_unescaped_once() -> None:
    assert lines(posted("U1", "Ines Okafor", "write &amp;lt; for &lt;")) == [
        "Ines Okafor: write &lt; for <"
    ]


@pytest.mark.parametrize(
    "subtype",
    [
        "channel_name", "channel_purpose", "channel_topic", "channel_archive",
        "channel_unarchive", "pinned_item", "tombstone",
    ],
)  # fmt: skip
def test_notices_slack_posts_as_messages_are_nobodys_words(subtype: str) -> None:
    notice = posted("U1", "Ines Okafor", "<@U1> did something to the channel", subtype=subtype)

    assert lines(posted("U2", "Tomas Berg", "Morning."), notice) == ["Tomas Berg: Morning."]


def test_a_message_sharing_only_files_is_kept_as_file_lines() -> None:
    files = [{"id": "F1", "title": "Queen cells on frame 4", "name": "IMG_0412.jpg"},
             {"id": "F2", "name": "ledger.csv"}, {"id": "F3", "mode": "hidden_by_limit"}]  # fmt: skip
    shared = posted("U1", "Ines Okafor", "", subtype="file_share", files=files)
    hidden = posted("U2", "Tomas Berg", "", files=[{"id": "F4", "mode": "tombstone"}])

    assert lines(shared, hidden, posted("U2", "Tomas Berg", "Thanks.")) == [
        "Ines Okafor: [file: Queen cells on frame 4]\n[file: ledger.csv]",
        "Tomas Berg: Thanks.",
    ]
