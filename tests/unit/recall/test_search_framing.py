"""Question-framing words ("what kind of art does she make?") are left out of the BM25
terms, so a drawer that only shares the framing does not outrank the one on the topic;
the vector query and the terms a result reports keep the whole question."""

from __future__ import annotations

import pytest

from memhubd.recall.ids import content_hash
from memhubd.recall.search import Weights, lexical_terms, query_terms, search
from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, NewDrawer

# The first turn shares only framing words with the question; the second is the answer.
TURNS = [
    "What kind of thing would you make? Make it the kind you like, make it any type.",
    "Lately I paint sunsets and abstract art.",
]
QUESTION = "What kind of art does Caroline make?"


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
        )
        for i, text in enumerate(TURNS)
    ]
    store.write(drawers, None, None, AuditEntry("test", "test", "ingest"))
    return store


def test_framing_words_are_left_out_of_the_lexical_terms() -> None:
    assert lexical_terms(query_terms(QUESTION)) == ["art", "caroline"]
    assert lexical_terms(query_terms("What might Maria describe as likely?")) == ["maria"]


def test_a_question_of_framing_words_alone_keeps_them() -> None:
    assert lexical_terms(query_terms("What did they say?")) == ["say"]


def test_the_topic_outranks_a_turn_that_shares_only_the_framing(chat: DrawerStore) -> None:
    result = search(chat, None, QUESTION, DrawerFilter(), 10, Weights(source=0, speaker=0))
    assert [h.drawer.content for h in result.hits] == [TURNS[1]]
    assert result.terms == ["kind", "art", "caroline", "make"]  # reported as asked
