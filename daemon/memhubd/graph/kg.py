"""Answers of the knowledge graph over stored periods and derived facts together:
query (valid at an instant, or everything), timeline of one entity, and stats.

Inputs are already what the caller may see; nothing here reads a store or decides
access. Orders are total, so every door gives the same answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from memhubd.graph.facts import Fact
from memhubd.recall.store import TripleStats

TOP_PREDICATES = 5


def matches(
    fact: Fact,
    subject: str | None = None,
    predicate: str | None = None,
    obj: str | None = None,
    at: int | None = None,
) -> bool:
    """Exact, case-sensitive matches on the given fields; `at` keeps facts valid then."""
    if subject is not None and fact.subject != subject:
        return False
    if predicate is not None and fact.predicate != predicate:
        return False
    if obj is not None and fact.object != obj:
        return False
    return at is None or fact.valid_at(at)


def merge(
    stored: Iterable[Fact], derived: Iterable[Fact], limit: int, offset: int = 0
) -> list[Fact]:
    """Stored and derived facts as one list: confidence first, then id (mempal's order),
    then the period's start; at most `limit` of them, from place `offset` on."""
    every = [*stored, *derived]
    every.sort(key=lambda f: (-f.confidence, f.id, f.valid_from or 0))
    return every[offset : offset + limit]


def timeline(stored: Iterable[Fact], derived: Iterable[Fact], entity: str) -> list[Fact]:
    """Every period where `entity` is subject or object, expired and retired included,
    oldest first (a fact with no start counts as the oldest), then by id."""
    every = [f for f in (*stored, *derived) if f.mentions(entity)]
    every.sort(key=_oldest_first)
    return every


def _oldest_first(fact: Fact) -> tuple[bool, int, str, bool, int]:
    """A period's place in a timeline: no start before any start (even before 1970)."""
    start, end = fact.valid_from, fact.valid_to
    return (start is not None, start or 0, fact.id, end is not None, end or 0)


def stats(stored: TripleStats, derived: Sequence[Fact], now: int) -> dict[str, Any]:
    """mempal's counts over both kinds: total, active (valid now), expired (ended, or
    retired), entities and the top predicates; `stored` and `derived` say how the total
    splits. A period that starts after `now` is neither active nor expired."""
    active = stored.active + sum(1 for fact in derived if fact.valid_at(now))
    upcoming = stored.upcoming + sum(
        1
        for fact in derived
        if not fact.retired and fact.valid_from is not None and fact.valid_from > now
    )
    total = stored.total + len(derived)
    entities = set(stored.entities)
    predicates: Counter[str] = Counter(stored.predicates)
    for fact in derived:
        entities.update((fact.subject, fact.object))
        predicates[fact.predicate] += 1
    top = sorted(predicates.items(), key=lambda item: (-item[1], item[0]))[:TOP_PREDICATES]
    return {
        "total": total,
        "active": active,
        "expired": total - active - upcoming,
        "entities": len(entities),
        "top_predicates": [[name, count] for name, count in top],
        "stored": stored.total,
        "derived": len(derived),
    }
