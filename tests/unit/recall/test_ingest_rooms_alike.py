"""Rooms whose names a drawer id spells alike (`billing-service`, `billing_service`,
`Billing Service`) are still different rooms: the same text ingested into each is
stored in each, and a drawer already stored keeps its id."""

from __future__ import annotations

from recall_fakes import options

from memhubd.recall.ids import drawer_id
from memhubd.recall.ingest import Ingestor
from memhubd.recall.store import DrawerFilter, DrawerStore

TEXT = "The billing service retries failed charges three times, then pages on-call.\n"


def rooms_of(store: DrawerStore) -> dict[str, str]:
    return {d.room: d.id for batch in store.iter_live(1000) for d in batch}


def test_the_same_text_in_a_room_spelt_alike_is_stored_in_that_room(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    first = ingestor.ingest_text("c1.txt", TEXT, options(room="billing-service"))
    second = ingestor.ingest_text("c2.txt", TEXT, options(room="billing_service"))
    assert (first.status, first.chunks) == ("ingested", 1)
    assert (second.status, second.chunks, second.duplicates) == ("ingested", 1, 0)
    held = rooms_of(store)
    assert set(held) == {"billing-service", "billing_service"}
    # The first keeps mempal's id; the second takes the long form.
    assert held["billing-service"] == drawer_id("ws", "billing-service", TEXT.strip())
    assert held["billing_service"] == drawer_id("ws", "billing_service", TEXT.strip(), digits=16)
    found = store.top(DrawerFilter(rooms=("billing_service",)), 10)
    assert [d.content for d in found] == [TEXT.strip()]


def test_reingesting_each_room_spelt_alike_changes_nothing(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    ingestor.ingest_text("c1.txt", TEXT, options(room="billing-service"))
    ingestor.ingest_text("c2.txt", TEXT, options(room="billing_service"))
    before = rooms_of(store)
    again = [
        ingestor.ingest_text("c1.txt", TEXT, options(room="billing-service")),
        ingestor.ingest_text("c2.txt", TEXT, options(room="billing_service")),
        # Another file of the same text in a room that holds it is its duplicate.
        ingestor.ingest_text("c3.txt", TEXT, options(room="billing_service")),
    ]
    assert [(r.status, r.chunks, r.duplicates) for r in again] == [("unchanged", 0, 1)] * 3
    assert rooms_of(store) == before


def test_a_note_in_a_room_spelt_alike_is_stored_and_cites_its_own_id(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    first = ingestor.ingest_content(TEXT, options(room="billing-service"), None)
    second = ingestor.ingest_content(TEXT, options(room="Billing Service"), None)
    third = ingestor.ingest_content(TEXT, options(room="billing service"), None)
    assert [r.status for r in (first, second, third)] == ["ingested"] * 3
    ids = [r.drawer_ids[0] for r in (first, second, third)]
    assert len(set(ids)) == 3
    for report, identifier in zip((first, second, third), ids, strict=True):
        assert report.source == f"mempal://drawer/{identifier}"
    held = {d.room: d for batch in store.iter_live(1000) for d in batch}
    assert set(held) == {"billing-service", "Billing Service", "billing service"}
    assert all(d.source_file == f"mempal://drawer/{d.id}" for d in held.values())
    # The same note again in its own room answers with the drawer it matched.
    repeat = ingestor.ingest_content(TEXT, options(room="Billing Service"), None)
    assert (repeat.status, repeat.drawer_ids) == ("unchanged", [ids[1]])


def test_a_dry_run_counts_rooms_spelt_alike_as_the_real_run_stores_them(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    files = [("billing-service/a.txt", TEXT), ("billing_service/b.txt", TEXT)]
    dry = ingestor.ingest_texts(files, options(dry_run=True))
    real = ingestor.ingest_texts(files, options())
    assert [(r.chunks, r.duplicates) for r in dry] == [(1, 0), (1, 0)]
    assert [(r.chunks, r.duplicates) for r in real] == [(1, 0), (1, 0)]
    assert [r.drawer_ids for r in dry] == [r.drawer_ids for r in real]
    assert set(rooms_of(store)) == {"billing-service", "billing_service"}
