"""A source narrowed to some readers stays narrowed as it grows: an ingest naming no
readers (as every watched one) gives its new and changed chunks the readers the source's
stored chunks share, and naming no importance, a changed chunk keeps the one it replaces.
A dry run counts what the real run writes."""

from __future__ import annotations

import json
from collections.abc import Callable

from recall_fakes import options
from test_ingest_context import EXCHANGES, transcript

from memhubd.recall.ingest import Ingestor
from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore

SOURCE = "claude/live.jsonl"
DEV = DrawerFilter(roles=frozenset({"dev"}))
LEAD = DrawerFilter(roles=frozenset({"lead"}))

Fresh = Callable[[], tuple[DrawerStore, Ingestor]]


def live(store: DrawerStore) -> list[tuple[str, tuple[str, ...] | None, int]]:
    """(content, readers, importance) of the source's live drawers, in source order."""
    rows = [d for batch in store.iter_live(100) for d in batch if d.source_file == SOURCE]
    return [(d.content, d.readers, d.importance) for d in sorted(rows, key=lambda d: d.chunk_index)]


def grown(count: int, answer: str) -> str:
    """The transcript of `count` exchanges, the last one answered once more."""
    stamp = f"2025-06-{2 + count:02d}T09:05:00Z"
    message = {"role": "assistant", "content": answer}
    return (
        transcript(count)
        + json.dumps({"type": "assistant", "timestamp": stamp, "message": message})
        + "\n"
    )


def test_an_exchange_appended_to_a_narrowed_transcript_stays_narrowed(fresh: Fresh) -> None:
    # Given a transcript narrowed to lead, at importance 4
    store, ingestor = fresh()
    ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",), importance=4))
    # When the session appends an exchange and the file is ingested naming neither
    appended = ingestor.ingest_text(SOURCE, transcript(4), options())
    # Then the new exchange is the lead's alone, at the source's importance
    assert (appended.status, appended.chunks) == ("ingested", 1)
    assert appended.readers_written == [("lead",)]  # what the watcher's event counts by
    assert [(r[1], r[2]) for r in live(store)] == [(("lead",), 4)] * 4
    assert not store.lexical(["membership"], DEV, 10)
    assert store.lexical(["membership"], LEAD, 10)
    # And readers given widen all of it, the appended exchange too, as before
    ingestor.ingest_text(SOURCE, transcript(4), options(readers=("lead", "dev")))
    assert {r[1] for r in live(store)} == {("lead", "dev")}
    assert store.lexical(["membership"], DEV, 10)


def test_a_grown_last_exchange_keeps_its_readers_and_importance(fresh: Fresh) -> None:
    # Given a transcript narrowed to lead, at importance 4
    store, ingestor = fresh()
    ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",), importance=4))
    # When its last exchange grows (the changed chunk replaces the stored one)
    more = "Also check the zookeeper quorum before the rebalance."
    report = ingestor.ingest_text(SOURCE, grown(3, more), options())
    # Then the grown exchange keeps who reads it and its importance
    assert (report.chunks, report.replaced) == (1, 1)
    rows = live(store)
    assert len(rows) == 3 and more in rows[-1][0] and EXCHANGES[2][1] in rows[-1][0]
    assert [(r[1], r[2]) for r in rows] == [(("lead",), 4)] * 3
    assert not store.lexical(["zookeeper"], DEV, 10)
    assert store.lexical(["zookeeper"], LEAD, 10)


def test_a_dry_run_counts_the_narrowed_chunks_as_the_real_run_stores_them(
    fresh: Fresh,
) -> None:
    # Given a transcript narrowed to lead, and a batch that appends to it and sends a
    # copy of the whole session for every caller, naming no readers
    batch = [(SOURCE, transcript(4)), ("claude/copy.jsonl", transcript(4))]
    reports = []
    for dry_run in (True, False):
        store, ingestor = fresh()
        ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",)))
        reports.append(
            [
                (r.status, r.chunks, r.duplicates)
                for r in ingestor.ingest_texts(batch, options(dry_run=dry_run))
            ]
        )
    # Then no chunk of the copy is a duplicate of the lead's drawers, the appended one
    # included, in the dry run as in the real run
    dry, real = reports
    assert [r[1:] for r in dry] == [r[1:] for r in real] == [(1, 3), (4, 0)]


def test_the_watcher_meeting_a_narrowed_transcript_renamed_aside_keeps_it_narrowed(
    fresh: Fresh,
) -> None:
    # Given a watched transcript narrowed by hand to lead, then renamed aside (its text
    # under a new name) while a new session starts under the old one
    aside = "claude/live.jsonl.1"
    watcher = {"identity": "recall-watcher", "door": "watch", "keeps_stored_readers": True}
    batch = [(aside, transcript(3)), (SOURCE, transcript(1))]
    results = []
    for dry_run in (True, False):
        store, ingestor = fresh()
        ingestor.ingest_text(SOURCE, transcript(3), options(**{**watcher, "dry_run": False}))
        ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",), importance=4))
        # When the watcher, which names no readers, ingests both files
        reports = ingestor.ingest_texts(batch, options(dry_run=dry_run, **watcher))
        results.append([(r.chunks, r.duplicates) for r in reports])
    # Then the renamed file's exchanges are the lead's drawers, not stored again for
    # every caller, in the dry run as in the real run, handed to it as the session drops
    # them
    dry, real = results
    assert dry == real
    assert real[0] == (0, 3)
    assert not store.lexical(["rebalance"], DEV, 10)
    assert len(store.lexical(["rebalance"], LEAD, 10)) == 2
    # while a caller sending the same text without readers still publishes it
    store, ingestor = fresh()
    ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",)))
    ingestor.ingest_text("notes/copy.jsonl", transcript(3), options())
    assert store.lexical(["rebalance"], DEV, 10)


def test_a_narrowed_transcript_whose_drawers_were_deleted_keeps_its_readers_for_what_follows(
    fresh: Fresh,
) -> None:
    # Given a watched transcript narrowed to lead whose every drawer was then deleted
    # on purpose (taken out while the session is still written to)
    watcher = {"identity": "recall-watcher", "door": "watch", "keeps_stored_readers": True}
    store, ingestor = fresh()
    ingestor.ingest_text(SOURCE, transcript(3), options(**watcher))
    narrowed = ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",)))
    ids = [d.id for batch in store.iter_live(100) for d in batch if d.source_file == SOURCE]
    assert len(ids) == 3 and narrowed.status == "ingested"
    store.soft_delete_many(ids, AuditEntry("tester", "test", "delete"))
    # When the session appends an exchange and the watcher ingests the file
    report = ingestor.ingest_text(SOURCE, transcript(4), options(**watcher))
    # Then the new exchange is stored for lead alone, the deleted ones stay deleted
    assert (report.chunks, report.deleted) == (1, 3)
    assert [r[1] for r in live(store)] == [("lead",)]
    assert not store.lexical(["membership"], DEV, 10)
    assert store.lexical(["membership"], LEAD, 10)
