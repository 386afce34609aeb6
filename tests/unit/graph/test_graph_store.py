"""The knowledge graph in the recall store: validity periods with valid_from inclusive
and valid_to exclusive, invalidation that never deletes, re-adding after invalidation,
timelines in time order and mempal's stats, merged with derived facts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memhubd.graph import Fact, merge, stats, timeline, triple_id
from memhubd.graph.kg import matches
from memhubd.recall.store import (
    AuditEntry,
    DrawerStore,
    NewTriple,
    TripleFilter,
    open_store,
)

AUDIT = AuditEntry("tester", "test", "kg")
T0 = 1_700_000_000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DrawerStore]:
    opened = open_store(tmp_path / "ws.db")
    yield opened
    opened.close()


def add(store: DrawerStore, s: str, p: str, o: str, at: int | None = T0, **kw: object) -> Fact:
    new = NewTriple(triple_id(s, p, o), s, p, o, "tester", at, **kw)  # type: ignore[arg-type]
    triple, _created = store.add_triple(new, AUDIT)
    return Fact.of(triple)


def facts(store: DrawerStore, **where: object) -> list[Fact]:
    return [Fact.of(t) for t in store.triples(TripleFilter(**where), 100)]  # type: ignore[arg-type]


def test_triple_ids_are_mempals() -> None:
    ident = triple_id("Alice", "works_at", "Acme")
    assert ident.startswith("triple_alice_works_at_") and len(ident.rsplit("_", 1)[1]) == 8
    assert triple_id("!!", "??", "x").startswith("triple_____")  # sanitized, never empty
    assert triple_id("", "", "x").startswith("triple_x_x_")


def test_as_of_includes_valid_from_and_excludes_valid_to(store: DrawerStore) -> None:
    fact = add(store, "Alice", "works_at", "Acme", T0)
    store.invalidate_triple(fact.id, T0 + 100, AUDIT)
    assert facts(store, at=T0 - 1) == []
    assert [f.id for f in facts(store, at=T0)] == [fact.id]  # the first instant counts
    assert [f.id for f in facts(store, at=T0 + 99)] == [fact.id]
    assert facts(store, at=T0 + 100) == []  # the end instant does not
    (period,) = facts(store)
    assert (period.valid_from, period.valid_to) == (T0, T0 + 100)
    assert period.valid_at(T0) and not period.valid_at(T0 + 100)


def test_invalidate_never_deletes_and_only_closes_an_open_period(store: DrawerStore) -> None:
    fact = add(store, "Bob", "reports_to", "Carol")
    assert store.invalidate_triple(fact.id, T0 + 5, AUDIT) is not None
    assert store.invalidate_triple(fact.id, T0 + 6, AUDIT) is None  # already closed
    assert store.invalidate_triple("triple_nobody", T0, AUDIT) is None
    assert len(facts(store)) == 1 and facts(store)[0].valid_to == T0 + 5


def test_re_adding_after_invalidation_opens_a_new_period_and_keeps_the_old(
    store: DrawerStore,
) -> None:
    fact = add(store, "Bob", "reports_to", "Carol", T0)
    store.invalidate_triple(fact.id, T0 + 10, AUDIT)
    again = add(store, "Bob", "reports_to", "Carol", T0 + 20)
    assert again.id == fact.id and again.valid_to is None
    periods = facts(store, id=fact.id)
    assert [(f.valid_from, f.valid_to) for f in periods] == [(T0, T0 + 10), (T0 + 20, None)]
    assert facts(store, at=T0 + 15) == []
    assert [f.valid_from for f in facts(store, at=T0 + 5)] == [T0]
    assert [f.valid_from for f in facts(store, at=T0 + 25)] == [T0 + 20]


def test_adding_a_valid_triple_again_changes_nothing(store: DrawerStore) -> None:
    add(store, "Ann", "founder_of", "Acme", T0)
    triple, created = store.add_triple(
        NewTriple(triple_id("Ann", "founder_of", "Acme"), "Ann", "founder_of", "Acme", "x", T0 + 9),
        AUDIT,
    )
    assert not created and triple.valid_from == T0
    assert len(facts(store)) == 1
    assert [a.action for a in store.audit()] == ["kg"]  # one write, one audit entry


# Two facts whose ids' 8 hex digits agree (found by trying objects).
CLASHING = [("Alice", "knows", "Person122548"), ("Alice", "knows", "Person169710")]


def test_two_facts_sharing_an_id_are_both_kept_the_second_under_the_long_id(
    store: DrawerStore,
) -> None:
    (s, p, first), (_s, _p, second) = CLASHING
    assert triple_id(s, p, first) == triple_id(s, p, second)
    kept = []
    for o in (first, second, second):  # the second fact twice: then it is valid already
        new = NewTriple(triple_id(s, p, o), s, p, o, "tester", T0, long_id=triple_id(s, p, o, 16))
        kept.append(store.add_triple(new, AuditEntry("t", "test", "kg", {"triple_id": new.id})))
    (one, made_one), (two, made_two), (again, made_again) = kept
    assert (made_one, made_two, made_again) == (True, True, False)
    assert one.id == triple_id(s, p, first) and one.object == first
    assert two.id == triple_id(s, p, second, 16) and two.object == second
    assert again.id == two.id and again.object == second
    assert [f.object for f in facts(store, object=second)] == [second]
    assert sorted(e.detail["triple_id"] for e in store.audit()) == sorted([one.id, two.id])
    # Invalidating the second by its id closes it alone
    assert store.invalidate_triple(two.id, T0 + 5, AUDIT) is not None
    assert [f.object for f in facts(store, at=T0 + 6)] == [first]


def test_timeline_orders_periods_by_time_for_subject_or_object(store: DrawerStore) -> None:
    late = add(store, "Dan", "manages", "Eve", T0 + 50)
    early = add(store, "Eve", "works_at", "Acme", T0 + 10)
    add(store, "Zed", "works_at", "Acme", T0)  # not about Eve
    store.invalidate_triple(early.id, T0 + 20, AUDIT)
    derived = Fact("derived_x", "decision:x", "about", "Eve", None, None, source_declaration="d:x")
    stored = facts(store, entity="Eve")
    assert [f.id for f in timeline(stored, [derived], "Eve")] == ["derived_x", early.id, late.id]


def test_stats_count_stored_and_derived_like_mempal(store: DrawerStore) -> None:
    one = add(store, "Ann", "works_at", "Acme", T0)
    add(store, "Bob", "works_at", "Acme", T0)
    add(store, "Ann", "manages", "Bob", T0)
    store.invalidate_triple(one.id, T0 + 1, AUDIT)
    derived = [
        Fact("derived_a", "decision:a", "about", "Ann", None, None, source_declaration="decision:a"),
        Fact("derived_b", "decision:b", "supersedes", "a", None, None, source_declaration="d:b",
             retired=True),
    ]  # fmt: skip
    now = T0 + 100
    answer = stats(store.triple_stats(now), derived, now)
    assert answer["total"] == 5 and answer["stored"] == 3 and answer["derived"] == 2
    assert answer["active"] == 3 and answer["expired"] == 2
    # Ann, Acme, Bob, decision:a, decision:b, a
    assert answer["entities"] == 6
    assert answer["top_predicates"][0] == ["works_at", 2]
    assert len(answer["top_predicates"]) == 4


def test_merge_orders_by_confidence_then_id_and_limits(store: DrawerStore) -> None:
    low = add(store, "Ann", "likes", "Tea", T0, confidence=0.5)
    high = add(store, "Ann", "likes", "Coffee", T0)
    derived = Fact("derived_a", "decision:a", "about", "Ann", None, None, source_declaration="d")
    merged = merge(facts(store), [derived], 10)
    assert [f.id for f in merged] == sorted([high.id, "derived_a"]) + [low.id]
    assert len(merge(facts(store), [derived], 2)) == 2
    # A page from an offset is that stretch of the whole order
    assert [f.id for f in merge(facts(store), [derived], 2, 1)] == [f.id for f in merged[1:3]]


def test_matches_is_exact_and_respects_the_instant() -> None:
    fact = Fact("t", "Ann", "works_at", "Acme", T0, T0 + 10)
    assert matches(fact, subject="Ann", at=T0) and not matches(fact, subject="ann")
    assert not matches(fact, at=T0 + 10) and matches(fact, obj="Acme")
    retired = Fact("d", "x", "about", "y", None, None, source_declaration="x", retired=True)
    assert matches(retired) and not matches(retired, at=T0)


def test_a_period_not_started_yet_is_neither_active_nor_expired(store: DrawerStore) -> None:
    add(store, "Bo", "joins", "Acme", T0 + 1000)  # starts later
    add(store, "Cy", "works_at", "Acme", T0)
    ended = add(store, "Di", "works_at", "Acme", T0)
    store.invalidate_triple(ended.id, T0 + 5, AUDIT)
    upcoming = Fact(
        "derived_u", "decision:u", "about", "Bo", T0 + 2000, None, source_declaration="d"
    )
    now = T0 + 100
    answer = stats(store.triple_stats(now), [upcoming], now)
    assert (answer["total"], answer["active"], answer["expired"]) == (4, 1, 1)


def test_a_period_with_no_start_comes_before_one_that_started_before_1970(
    store: DrawerStore,
) -> None:
    old = add(store, "Eve", "born_in", "Oslo", -5000)
    derived = Fact("derived_x", "decision:x", "about", "Eve", None, None, source_declaration="d:x")
    stored = facts(store, entity="Eve")
    assert [f.id for f in timeline(stored, [derived], "Eve")] == ["derived_x", old.id]


def test_a_written_triples_confidence_is_a_float_as_when_read_back(store: DrawerStore) -> None:
    # SQLite's RETURNING gives a REAL column's 1.0 as the integer 1
    new = NewTriple(triple_id("A", "knows", "B"), "A", "knows", "B", "tester", T0, 1.0)
    added, _created = store.add_triple(new, AUDIT)
    again, _created = store.add_triple(new, AUDIT)
    ended = store.invalidate_triple(added.id, T0 + 5, AUDIT)
    assert ended is not None
    for triple in (added, again, ended, *store.triples(TripleFilter(), 10)):
        assert type(triple.confidence) is float and triple.confidence == 1.0
