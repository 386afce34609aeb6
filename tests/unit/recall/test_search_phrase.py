"""An identifier in a query (`tenant_id`, `src/quay/cache.py`, `v0.5.1`) lifts the
candidates that hold it whole: BM25 searches its words apart, so
exchanges using the words here and there would outrank the one that names it."""

from __future__ import annotations

import pytest

from memhubd.recall.ids import content_hash
from memhubd.recall.search import Weights, query_phrases, search
from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, NewDrawer

NOISE = [
    "The tenant asked for the id of their invoice; the card of the tenant was lost.",
    "Each tenant gets an id. The tenant table keys on id, tenant by tenant.",
    "Which id does the tenant see? The id of the tenant's plan, per tenant.",
    "Tenant onboarding: issue an id, then the tenant signs; id checks per tenant.",
]
HOLDER = "The loader raised KeyError: 'tenant_id' when the config row was missing."


@pytest.mark.parametrize(
    ("query", "phrases"),
    [
        ("KeyError: 'tenant_id'", [("tenant", "id")]),
        ("where is src/quay/cache.py:142", [("src", "quay", "cache", "py", "142")]),
        ("upgrade to v0.5.1 with --dry-run", [("v0", "5", "1"), ("dry", "run")]),
        ("PROJ-1234 and rate-limiter-v2", [("proj", "1234"), ("rate", "limiter", "v2")]),
        ('what did we say about "session cookie" expiry', []),
        ("How does Melanie prioritize self-care?", []),
        ("What did Caroline's kids paint?", []),
        ("tenant id", []),
    ],
)
def test_identifiers_are_phrases_and_quoted_words_or_compounds_are_not(
    query: str, phrases: list
) -> None:
    assert query_phrases(query) == phrases


def write_notes(store: DrawerStore, texts: list[str], prefix: str) -> None:
    """Each text a Markdown note of its own, `<prefix><n>`."""
    store.write(
        [
            NewDrawer(
                id=f"{prefix}{i}",
                room="default",
                content=text,
                source_file=f"{prefix}{i}.md",
                source_kind="markdown",
                chunk_index=0,
                content_hash=content_hash(text),
                identity="test",
            )
            for i, text in enumerate(texts)
        ],
        None,
        None,
        AuditEntry("test", "test", "ingest"),
    )


@pytest.fixture
def notes(store: DrawerStore) -> DrawerStore:
    other = [
        f"Harbour crane {i} moved {i * 7} containers before the shift ended." for i in range(30)
    ]
    texts = [*NOISE, HOLDER, *other]
    write_notes(store, texts, "n")
    return store


def first(store: DrawerStore, query: str, weights: Weights) -> str:
    return search(store, None, query, DrawerFilter(), 5, weights).hits[0].drawer.content


def test_the_drawer_holding_the_identifier_whole_comes_first(notes: DrawerStore) -> None:
    assert first(notes, "tenant_id", Weights(phrase=0)) != HOLDER  # BM25 alone
    hits = search(notes, None, "tenant_id", DrawerFilter(), 5, Weights()).hits
    assert hits[0].drawer.content == HOLDER
    assert "phrase" in hits[0].signals
    assert all("phrase" not in h.signals for h in hits[1:])


def test_the_first_hits_do_not_depend_on_how_many_are_asked_for(store: DrawerStore) -> None:
    noise = [f"Tenant {i} asked which id the billing run {i} gave them." for i in range(90)]
    holder = "Setup notes. " * 30 + HOLDER  # long: BM25 ranks it last
    texts = [*noise, holder]
    write_notes(store, texts, "m")
    firsts = {
        limit: [h.drawer.id for h in search(store, None, "tenant_id", DrawerFilter(), limit).hits][
            :10
        ]
        for limit in (10, 50, 51, 100)
    }
    assert firsts[10] == firsts[50] == firsts[51] == firsts[100]
    assert firsts[10][0] == "m90"
