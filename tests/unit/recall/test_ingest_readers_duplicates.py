"""A chunk already stored as another source's drawer is a duplicate only for an ingest
whose readers may all read that drawer: text sent for readers the drawer is kept from is
stored again for them (counted the same by a dry run), and what a caller may not read
never shows in its counts."""

from __future__ import annotations

import pytest
from recall_fakes import options

from memhubd.recall.ingest import IngestOptions, SourceReport
from memhubd.recall.store import DrawerStore

NOTE = (
    "# Cache\n\nthe cache key is the pnpm store hash of the lock file.\n\n"
    "# Runner\n\nthe runner keeps the store between jobs of one branch.\n\n"
)
TEXT = "pnpm store hash"


def _with(given: IngestOptions, **changes: object) -> IngestOptions:
    values = {name: getattr(given, name) for name in given.__slots__}
    values.update(changes)
    return IngestOptions(**values)  # type: ignore[arg-type]


def counts(report: SourceReport) -> tuple[int, int, int, int]:
    return report.chunks, report.duplicates, report.replaced, report.deleted


def readable_by(store: DrawerStore, role: str) -> list[str]:
    """The sources of the live drawers holding TEXT a caller of `role` may read."""
    return sorted(
        d.source_file
        for batch in store.iter_live(1000)
        for d in batch
        if TEXT in d.content and (d.readers is None or role in d.readers)
    )


def _both_runs(fresh, first: list[tuple[str, IngestOptions]], then: IngestOptions) -> list:
    """`first` ingested (each a file of NOTE and its options), then `copy.md` holding
    NOTE with `then`, as a dry run and for real in a store of their own: its counts, and
    the store after the real run."""
    answers: list[tuple[int, int, int, int]] = []
    for dry_run in (True, False):
        store, ingestor = fresh()
        for source, given in first:
            ingestor.ingest_text(source, NOTE, given)
        answers.append(counts(ingestor.ingest_text("copy.md", NOTE, _with(then, dry_run=dry_run))))
    return [*answers, store]


def test_text_sent_for_readers_a_stored_drawer_is_kept_from_is_stored_again_for_them(
    fresh,
) -> None:
    # Given a note stored for reviewers only
    first = [("review.md", options(readers=("reviewer",)))]
    # When a copy of it is ingested for devs
    dry, real, store = _both_runs(fresh, first, options(readers=("dev",)))
    # Then its chunks are stored for devs, the dry run counting as the real run
    assert dry == real == (2, 0, 0, 0)
    assert readable_by(store, "dev") == ["copy.md"]
    assert readable_by(store, "reviewer") == ["review.md"]


def test_text_sent_for_every_caller_is_stored_again_beside_a_narrower_drawer(fresh) -> None:
    first = [("review.md", options(readers=("reviewer",)))]
    dry, real, store = _both_runs(fresh, first, options())
    assert dry == real == (2, 0, 0, 0)
    assert readable_by(store, "dev") == ["copy.md"]


@pytest.mark.parametrize(
    ("stored", "sent"), [(None, ("dev",)), (None, None), (("dev", "lead"), ("dev",))]
)
def test_a_drawer_every_reader_of_the_ingest_may_read_is_its_duplicate(
    fresh, stored: tuple[str, ...] | None, sent: tuple[str, ...] | None
) -> None:
    first = [("note.md", options(readers=stored))]
    dry, real, store = _both_runs(fresh, first, options(readers=sent))
    assert dry == real == (0, 2, 0, 0)
    assert readable_by(store, "dev") == ["note.md"]


def test_a_copy_sent_again_naming_no_readers_stays_a_copy(fresh) -> None:
    # Given a dev-only note and a copy of it, ingested for devs too (its copies recorded)
    first = [("note.md", options(readers=("dev",))), ("copy.md", options(readers=("dev",)))]
    # When the copy is sent again naming no readers, which leaves readers as they are
    dry, real, store = _both_runs(fresh, first, options())
    # Then nothing is stored for every caller
    assert dry == real == (0, 2, 0, 0)
    assert readable_by(store, "guest") == []
    assert len(store.copies_of_source("copy.md")) == 2


def test_a_batch_that_gives_the_note_new_readers_first_finds_its_copy_a_duplicate(
    fresh,
) -> None:
    # The note, stored for leads, is sent again for devs in the same batch as its copy:
    # the dry run finds the note's drawers read by devs, as the real run does.
    answers = []
    for dry_run in (True, False):
        store, ingestor = fresh()
        ingestor.ingest_text("note.md", NOTE, options(readers=("lead",)))
        batch = [("note.md", NOTE), ("copy.md", NOTE)]
        reports = ingestor.ingest_texts(batch, options(readers=("dev",), dry_run=dry_run))
        answers.append([counts(r) for r in reports])
    assert answers[0] == answers[1] == [(0, 2, 0, 0), (0, 2, 0, 0)]
    assert readable_by(store, "dev") == ["note.md"]


def test_the_counts_of_a_caller_who_may_not_read_the_stored_drawer_tell_nothing_of_it(
    fresh,
) -> None:
    # A dev sends text a lead-only drawer holds, for devs: counted as in an empty store
    dev = options(identity="dev", roles=frozenset({"dev"}), readers=("dev",))
    dry, real, _store = _both_runs(fresh, [], dev)
    hidden_dry, hidden_real, store = _both_runs(
        fresh, [("lead.md", options(identity="lead", readers=("lead",)))], dev
    )
    assert (hidden_dry, hidden_real) == (dry, real) == ((2, 0, 0, 0), (2, 0, 0, 0))
    assert readable_by(store, "dev") == ["copy.md"]


def test_content_sent_again_from_its_source_answers_as_it_was_stored(fresh) -> None:
    store, ingestor = fresh()
    note = "the cache key is the pnpm store hash of the lock file."
    first = ingestor.ingest_content(note, options(readers=("lead",)), "notes/ci.txt")
    again = ingestor.ingest_content(note, options(), "notes/ci.txt")
    elsewhere = ingestor.ingest_content(note, options(), "notes/other.txt")
    assert again.status == "unchanged" and again.drawer_ids == first.drawer_ids
    assert elsewhere.status == "ingested" and readable_by(store, "dev") == ["notes/other.txt"]


def _batch_counts(fresh, first: list[tuple[str, IngestOptions]], then: IngestOptions) -> list:
    """`first` ingested, then one batch of `note.md` and `copy.md` (both NOTE) with
    `then`, as a dry run and for real: each run's counts, and the store after the real run."""
    answers = []
    for dry_run in (True, False):
        store, ingestor = fresh()
        for source, given in first:
            ingestor.ingest_text(source, NOTE, given)
        batch = [("note.md", NOTE), ("copy.md", NOTE)]
        reports = ingestor.ingest_texts(batch, _with(then, dry_run=dry_run))
        answers.append([counts(r) for r in reports])
    return [*answers, store]


def test_a_batch_dry_run_stores_again_a_copy_of_chunks_an_earlier_file_moves_keeping_readers(
    fresh,
) -> None:
    # Given a note stored for leads
    first = [("note.md", options(readers=("lead",)))]
    # When it and a copy are sent in one batch into a named room, naming no readers (the
    # note's chunks move there, keeping theirs)
    dry, real, store = _batch_counts(fresh, first, options(room="deploys"))
    # Then the copy is stored again for every caller, and the dry run counts it so
    assert dry == real == [(2, 0, 2, 0), (2, 0, 0, 0)]
    assert readable_by(store, "guest") == ["copy.md"]


def test_a_batch_dry_run_finds_hidden_what_an_earlier_file_narrows_from_the_caller(
    fresh,
) -> None:
    # Given a note alice stored for devs and reviewers
    first = [("note.md", options(identity="alice", readers=("dev", "reviewer")))]
    # When carol, a dev, sends it for reviewers only and a copy of it in one batch
    carol = options(identity="carol", roles=frozenset({"dev"}), readers=("reviewer",))
    dry, real, store = _batch_counts(fresh, first, carol)
    # Then the copy finds the note's drawers hidden from carol and stores its own, as
    # the dry run counts
    assert dry == real == [(0, 2, 0, 0), (2, 0, 0, 0)]
    assert readable_by(store, "reviewer") == ["copy.md", "note.md"]
