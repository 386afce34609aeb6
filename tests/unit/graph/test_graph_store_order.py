"""The store reads triples in the orders the graph answers use: oldest first (a period
with no start before any, even one before 1970), or best first by confidence; and every
period a batch at a time."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memhubd.graph import Fact, merge, timeline, triple_id
from memhubd.recall.store import AuditEntry, DrawerStore, NewTriple, TripleFilter, open_store

AUDIT = AuditEntry("tester", "test", "kg")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DrawerStore]:
    opened = open_store(tmp_path / "ws.db")
    yield opened
    opened.close()


def add(store: DrawerStore, o: str, at: int | None, confidence: float = 1.0) -> None:
    new = NewTriple(triple_id("Hub", "p", o), "Hub", "p", o, "tester", at, confidence)
    store.add_triple(new, AUDIT)


def test_oldest_first_puts_a_period_with_no_start_before_one_before_1970(
    store, tmp_path: Path
) -> None:
    add(store, "later", 100)
    add(store, "before-1970", -100)
    # An add always starts a period; a store written by mempal may hold one without.
    with sqlite3.connect(tmp_path / "ws.db") as db:
        db.execute(
            "INSERT INTO triples (id, subject, predicate, object, valid_from, identity, "
            "created_at) VALUES (?, 'Hub', 'p', 'no-start', NULL, 'mempal', 0)",
            (triple_id("Hub", "p", "no-start"),),
        )
    db.close()
    read = [Fact.of(t) for t in store.triples(TripleFilter(entity="Hub"), 2)]
    assert [f.object for f in read] == ["no-start", "before-1970"]
    every = [Fact.of(t) for t in store.triples(TripleFilter(entity="Hub"), 10)]
    assert [f.object for f in every] == [f.object for f in timeline(every, [], "Hub")]


def test_strongest_triples_come_in_the_order_of_a_query_answer(store) -> None:
    for i in range(20):
        add(store, f"o{i}", 1000 + i, confidence=1.0 if i == 19 else 0.5)
    best = [Fact.of(t) for t in store.strongest_triples(TripleFilter(predicate="p"), 5)]
    every = [Fact.of(t) for t in store.triples(TripleFilter(), 100)]
    assert [f.id for f in best] == [f.id for f in merge(every, [], 5)]
    assert best[0].object == "o19"


def test_triple_batches_read_every_period_once(store) -> None:
    for i in range(7):
        add(store, f"o{i}", i)
    batches = list(store.triple_batches(3))
    assert [len(b) for b in batches] == [3, 3, 1]
    assert sorted(t.object for b in batches for t in b) == sorted(f"o{i}" for i in range(7))
