"""The speaker boost: a query naming exactly one speaker lifts what that speaker said,
never hides anyone else, and a query naming two speakers or none boosts nothing."""

from __future__ import annotations

import pytest

from memhubd.recall.ids import content_hash
from memhubd.recall.search import Weights, names_speaker, search
from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, NewDrawer

# Melanie's turns mention pottery more often, so BM25 alone ranks them first.
TURNS = [
    ("Melanie", "Pottery class started again: pottery class, pottery class, my calm."),
    ("Melanie", "The pottery kiln broke, so no pottery this week."),
    ("Caroline", "I signed up for a pottery class last month."),
    ("Melanie", "Camping with the kids was loud and lovely."),
]


@pytest.fixture
def chat(store: DrawerStore) -> DrawerStore:
    drawers = [
        NewDrawer(
            id=f"d{i}",
            room="default",
            content=text,
            source_file="chat.txt",
            source_kind="text",
            chunk_index=i,
            content_hash=content_hash(text),
            identity="test",
            speaker=speaker,
        )
        for i, (speaker, text) in enumerate(TURNS)
    ]
    store.write(drawers, None, None, AuditEntry("test", "test", "ingest"))
    return store


def speakers(store: DrawerStore, query: str, weights: Weights) -> list[str | None]:
    hits = search(store, None, query, DrawerFilter(), 10, weights).hits
    return [h.drawer.speaker for h in hits]


def test_the_speaker_a_query_names_is_lifted_above_others(chat: DrawerStore) -> None:
    plain = speakers(chat, "When did Caroline start pottery?", Weights(source=0, speaker=0))
    assert plain[0] == "Melanie"
    boosted = speakers(chat, "When did Caroline start pottery?", Weights(source=0, speaker=1.0))
    assert boosted[0] == "Caroline"
    assert boosted.count("Melanie") == plain.count("Melanie")  # lifted, nobody hidden


def test_the_boost_is_a_signal_of_the_hit(chat: DrawerStore) -> None:
    hits = search(chat, None, "Caroline pottery", DrawerFilter(), 10, Weights(speaker=1.0)).hits
    assert {"bm25", "speaker"} <= set(hits[0].signals)
    assert all("speaker" not in h.signals for h in hits if h.drawer.speaker != "Caroline")


@pytest.mark.parametrize(
    "query", ["Did Caroline and Melanie both try pottery?", "Who likes pottery?"]
)
def test_two_speakers_or_none_boost_nothing(chat: DrawerStore, query: str) -> None:
    assert speakers(chat, query, Weights(source=0, speaker=1.0)) == speakers(
        chat, query, Weights(source=0, speaker=0)
    )


def test_a_speaker_is_named_by_all_of_its_words() -> None:
    assert names_speaker("Jon Snow", {"did", "jon", "snow", "go"})
    assert not names_speaker("Jon Snow", {"did", "jon", "go"})
    assert not names_speaker("", {"jon"})


def test_a_role_a_transcript_gives_its_turns_names_nobody() -> None:
    assert not names_speaker("user", {"keyerror", "user", "id"})
    assert not names_speaker("assistant", {"assistant"})
    assert not names_speaker("Tool", {"tool", "failed"})


def test_a_query_saying_user_lifts_no_exchange_of_a_transcript(store: DrawerStore) -> None:
    texts = [
        ("user", "> Does the session cookie expire?\nIt lasts a day."),
        ("user", "> Why does login fail?\nThe user table lost its index."),
        (None, "KeyError: 'user_id' raised by the profile loader when the row is missing"),
    ]
    store.write(
        [
            NewDrawer(
                id=f"t{i}",
                room="default",
                content=text,
                source_file=f"s{i}.jsonl",
                source_kind="claude-code",
                chunk_index=0,
                content_hash=content_hash(text),
                identity="test",
                speaker=speaker,
            )
            for i, (speaker, text) in enumerate(texts)
        ],
        None,
        None,
        AuditEntry("test", "test", "ingest"),
    )
    query = "KeyError: 'user_id'"
    hits = search(store, None, query, DrawerFilter(), 10, Weights(source=0, speaker=1.0)).hits
    assert hits[0].drawer.id == "t2"
    assert all("speaker" not in h.signals for h in hits)
