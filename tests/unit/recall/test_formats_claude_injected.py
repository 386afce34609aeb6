"""Claude Code writes into a session lines and blocks that nobody said: the marker of a
request the user interrupted, the context an IDE adds to the user's message, and the
assistant line it writes when no reply came (an API error). None of it reads as the
user's or the assistant's words, nor opens an exchange; what the user typed beside
it is kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from recall_fakes import options

from memhubd.recall.ingest import Ingestor, chunk, formats, parse
from memhubd.recall.store import DrawerStore

INTERRUPTED = "[Request interrupted by user]"
INTERRUPTED_TOOL = "[Request interrupted by user for tool use]"
OPENED = (
    "<ide_opened_file>The user opened the file /home/ana/src/quay/index.py in the IDE. "
    "This may or may not be related to the current task.</ide_opened_file>"
)
SELECTED = (
    "<ide_selection>The user selected the lines 10 to 12 from /home/ana/src/quay/index.py:\n"
    "cache = Cache(tmpfs=True)\n\nThis may or may not be related to the current task."
    "</ide_selection>"
)


def said(role: str, content: Any, minute: int, **fields: Any) -> str:
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        message["model"] = fields.pop("model", "claude-opus-4-6")
    return json.dumps(
        {
            "type": role,
            "sessionId": "s1",
            "cwd": "/home/ana/src/quay",
            "timestamp": f"2025-11-03T10:{minute:02d}:00Z",
            "message": message,
            **fields,
        }
    )


def text(*texts: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": t} for t in texts]


def session(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def exchanges(text: str) -> list[str]:
    return [c.content for c in chunk(parse(text, "claude-code"))]


def test_an_interrupt_marker_is_no_user_words_and_opens_no_exchange() -> None:
    given = session(
        said("user", "Why is the quay index build slow?", 0),
        said("assistant", "Let me look at the cache settings.", 1),
        said("user", text(INTERRUPTED), 2),
        said("user", INTERRUPTED_TOOL, 3),  # the string form
        said("user", "Move the cache to /var/cache/quay.", 4),
        said("assistant", "Moved it.", 5),
    )

    turns = parse(given, "claude-code").conversations[0].turns

    assert [t.role for t in turns] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert exchanges(given) == [
        f"> Why is the quay index build slow?\nLet me look at the cache settings.\n"
        f"{INTERRUPTED}\n{INTERRUPTED_TOOL}",
        "> Move the cache to /var/cache/quay.\nMoved it.",
    ]


def test_a_marker_before_what_the_user_typed_is_left_out_and_the_words_kept() -> None:
    given = session(
        said("assistant", "Rebuilding the index now.", 0),
        said("user", text(INTERRUPTED, "Stop, use the warm cache instead."), 1),
        said("assistant", "Using the warm cache.", 2),
    )

    assert exchanges(given) == [
        "Rebuilding the index now.",
        "> Stop, use the warm cache instead.\nUsing the warm cache.",
    ]


def test_ide_context_is_no_user_words_and_what_was_typed_beside_it_is_kept() -> None:
    given = session(
        said("user", text(OPENED, SELECTED, "Why does this line disable the cache?"), 0),
        said("assistant", "tmpfs=True keeps it in memory only.", 1),
        said("user", text(OPENED), 2),  # a line of its own, as the IDE writes it too
        said("user", OPENED + "\n" + SELECTED, 3),  # the string form, two blocks in one
        said("assistant", "The index file builds the cache at start.", 4),
    )

    assert exchanges(given) == [
        "> Why does this line disable the cache?\ntmpfs=True keeps it in memory only.\n"
        "The index file builds the cache at start.",
    ]


@pytest.mark.parametrize("form", ["string", "block"])
def test_ide_context_opening_the_typed_text_in_one_piece_is_left_out_of_it(form: str) -> None:
    typed = OPENED + "\n" + SELECTED + "\n\nWhy does this line disable the cache?"
    given = session(
        said("user", typed if form == "string" else text(typed), 0),
        said("assistant", "tmpfs=True keeps it in memory only.", 1),
    )

    assert exchanges(given) == [
        "> Why does this line disable the cache?\ntmpfs=True keeps it in memory only."
    ]


def test_a_user_message_that_only_mentions_an_ide_tag_is_the_users_words() -> None:
    typed = "<ide_opened_file> shows up in my prompt, what writes it?"
    given = session(said("user", text(typed), 0), said("assistant", "The IDE plugin.", 1))

    assert exchanges(given) == [f"> {typed}\nThe IDE plugin."]


@pytest.mark.parametrize(
    "fields",
    [
        {"isApiErrorMessage": True, "model": "<synthetic>"},
        {"isApiErrorMessage": True},
        {"model": "<synthetic>"},
    ],
)
def test_an_api_error_written_in_the_assistants_place_is_no_reply(
    fields: dict[str, Any],
) -> None:
    error = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}'
    given = session(
        said("user", "Why is the quay index build slow?", 0),
        said("assistant", text(error), 1, **fields),
        said("assistant", "Its cache dir is on tmpfs.", 2),
    )

    assert exchanges(given) == ["> Why is the quay index build slow?\nIts cache dir is on tmpfs."]


def test_a_session_stored_with_its_markers_as_user_words_is_stored_again_without(
    ingestor: Ingestor, store: DrawerStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a session stored when its interrupt marker opened an exchange of its own
    given = session(
        said("user", "Why is the quay index build slow?", 0),
        said("assistant", "Let me look at the cache settings.", 1),
        said("user", text(INTERRUPTED), 2),
    )
    with monkeypatch.context() as before:
        before.setattr(formats, "_CLAUDE_INTERRUPTED", frozenset())
        ingestor.ingest_text("s.jsonl", given, options())
    assert len([d for batch in store.iter_live(100) for d in batch]) == 2
    # When it is ingested again
    report = ingestor.ingest_text("s.jsonl", given, options())
    # Then the marker's drawer is retired and the exchange stored with it in its place
    live = [d.content for batch in store.iter_live(100) for d in batch]
    assert live == [
        f"> Why is the quay index build slow?\nLet me look at the cache settings.\n{INTERRUPTED}"
    ]
    assert (report.chunks, report.replaced) == (1, 2)
