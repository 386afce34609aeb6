"""Hand-over of a drawer its source drops to another file holding its text: who may see
the file it is cited from, whose ingests keep or lose a file's copies, and a dry run
that answers as the real run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from recall_fakes import HashingEmbedder, options

from memhubd.recall.ingest import IngestOptions, Ingestor, SourceLock
from memhubd.recall.store import DrawerStore, open_store

SECTIONS = {
    "Alpha": "the alpha service owns invoices and their numbering.",
    "Beta": "the beta service owns refunds and the refunds queue.",
    "Zeta": "confidential: the zeta service is to be sold in March.",
}
BETA = "refunds queue"


def markdown(*names: str) -> str:
    return "".join(f"# {n}\n\n{SECTIONS[n]}\n\n" for n in names)


def alice(**changes: object) -> IngestOptions:
    return options(identity="alice", roles=frozenset({"dev"}), replaces_others=False, **changes)


def lead(**changes: object) -> IngestOptions:
    return options(identity="lead", roles=frozenset({"lead"}), replaces_others=False, **changes)


def admin(**changes: object) -> IngestOptions:
    return options(identity="root", **changes)


def cited_from(store: DrawerStore, text: str, writer: str = "alice") -> list[str]:
    """The files the writer's live drawers holding `text` are cited from."""
    return sorted(
        d.source_file
        for batch in store.iter_live(1000)
        for d in batch
        if text in d.content and d.identity == writer
    )


def _drop_beta_from_a(
    ingestor: Ingestor, store: DrawerStore, drop_as: IngestOptions
) -> tuple[int, int, list[str]]:
    """`a.md` sent without its Beta section, as a dry run and for real: what each
    replaced, and where Beta's drawer is cited from after."""
    dry = ingestor.ingest_text("a.md", markdown("Alpha"), IngestOptions(**_as_dict(drop_as, True)))
    real = ingestor.ingest_text("a.md", markdown("Alpha"), drop_as)
    return dry.replaced, real.replaced, cited_from(store, BETA)


def _as_dict(given: IngestOptions, dry_run: bool) -> dict[str, object]:
    values = {name: getattr(given, name) for name in given.__slots__}
    values["dry_run"] = dry_run
    return values


def test_a_file_sent_again_without_readers_is_no_home_for_a_drawer_its_chunks_are_kept_from(
    fresh,
) -> None:
    # Given a note every caller reads and a dev-only file holding one of its sections,
    # sent again naming no readers (its stored chunks stay dev-only)
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice())
    ingestor.ingest_text("secret.md", markdown("Zeta", "Beta"), alice(readers=("dev",)))
    ingestor.ingest_text("secret.md", markdown("Zeta", "Beta"), alice())
    # When the note drops that section
    # Then the drawer is retired, not cited from the dev-only file, dry run alike
    assert _drop_beta_from_a(ingestor, store, alice()) == (1, 1, [])


def test_a_drawer_widened_after_its_copy_was_recorded_is_not_handed_to_the_narrower_file(
    fresh,
) -> None:
    # Given a note and a file holding one of its sections, both dev-only, then the note
    # widened to guests too
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev",)))
    ingestor.ingest_text("secret.md", markdown("Zeta", "Beta"), alice(readers=("dev",)))
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev", "guest")))
    # When the note drops the section, then no guest is shown the dev-only file's name
    assert _drop_beta_from_a(ingestor, store, alice()) == (1, 1, [])


def test_a_file_narrowed_by_an_admin_is_no_longer_a_home_for_its_writers_drawers(fresh) -> None:
    # Given a note and a file holding one of its sections, read by every caller, then
    # the file sent again by an admin for leads only
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice())
    ingestor.ingest_text("secret.md", markdown("Zeta", "Beta"), alice())
    ingestor.ingest_text("secret.md", markdown("Zeta", "Beta"), admin(readers=("lead",)))
    # When the note drops the section, then the drawer is not cited from the lead-only file
    assert _drop_beta_from_a(ingestor, store, alice()) == (1, 1, [])


def test_a_batch_that_narrows_the_file_before_the_note_drops_the_text_hands_nothing(
    fresh,
) -> None:
    # An admin's one ingest narrows the file, then drops the section from the note: the
    # dry run finds the file narrowed by the earlier file of its batch, as the real run.
    batch = [("secret.md", markdown("Zeta", "Beta")), ("a.md", markdown("Alpha"))]
    answers = []
    for dry_run in (True, False):
        store, ingestor = fresh()
        ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice())
        ingestor.ingest_text("secret.md", markdown("Zeta", "Beta"), alice())
        reports = ingestor.ingest_texts(batch, admin(readers=("lead",), dry_run=dry_run))
        answers.append([(r.source, r.chunks, r.duplicates, r.replaced) for r in reports])
    assert answers[0] == answers[1] == [("secret.md", 0, 2, 0), ("a.md", 0, 1, 1)]
    assert cited_from(store, BETA) == []
    assert cited_from(store, BETA, "lead") == []


def test_the_file_is_still_a_home_when_its_readers_include_every_reader_of_the_drawer(
    fresh,
) -> None:
    # Given a note and a file holding one of its sections, both for devs and leads, then
    # the note narrowed to devs (a file naming other readers than a drawer's stores the
    # text itself: see test_ingest_readers_duplicates.py)
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev", "lead")))
    ingestor.ingest_text("copy.md", markdown("Zeta", "Beta"), alice(readers=("dev", "lead")))
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev",)))
    ingestor.ingest_text("copy.md", markdown("Zeta", "Beta"), alice())
    assert _drop_beta_from_a(ingestor, store, alice()) == (0, 0, ["copy.md"])


def test_content_sent_under_a_files_name_leaves_the_files_copies_as_they_are(fresh) -> None:
    # Given a note and a file holding one of its sections (its copy recorded), and
    # another writer's note stored from a file of its own
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice())
    ingestor.ingest_text("b.md", markdown("Zeta", "Beta"), alice())
    mallory = options(identity="mallory", roles=frozenset({"dev"}), replaces_others=False)
    ingestor.ingest_text("m.md", "a note of mallory's own", mallory)
    # When that writer sends the same note as content cited from the file
    ingestor.ingest_content("a note of mallory's own", mallory, "b.md")
    # Then the file still holds the section for the note's writer
    assert _drop_beta_from_a(ingestor, store, alice()) == (0, 0, ["b.md"])


def test_a_file_sent_again_by_a_writer_who_may_not_read_the_drawer_keeps_its_copy(
    fresh,
) -> None:
    # Given a dev-only note and a dev-only file holding one of its sections
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev",)))
    ingestor.ingest_text("b.md", markdown("Zeta", "Beta"), alice(readers=("dev",)))
    # When a writer who may not read them sends the file again, unchanged
    ingestor.ingest_text("b.md", markdown("Zeta", "Beta"), lead(readers=("lead",)))
    # Then the file, which still holds the section, takes it when the note drops it (the
    # other writer's own drawer of the section stays beside it)
    assert _drop_beta_from_a(ingestor, store, alice()) == (0, 0, ["b.md"])


def test_a_dry_run_finds_the_long_form_an_earlier_file_of_the_batch_retires(fresh) -> None:
    # Given a lead-only drawer under the short id, and bob's copy of its text under his
    # long form (the short one hidden from him)
    one, two = "# One\n\nThe heron cache keeps ten entries.\n", "# Two\n\nIt evicts oldest first.\n"
    bob = options(identity="bob", roles=frozenset({"dev"}), replaces_others=False)
    answers = []
    for dry_run in (True, False):
        store, ingestor = fresh()
        ingestor.ingest_text("x.md", one, lead(readers=("lead",)))
        ingestor.ingest_text("g.md", one, IngestOptions(**_as_dict(bob, False)))
        # When one batch changes g.md (retiring bob's drawer) and then sends its old text
        # as a new file
        batch = [("g.md", two), ("h.md", one)]
        reports = ingestor.ingest_texts(batch, IngestOptions(**_as_dict(bob, dry_run)))
        answers.append([(r.source, r.chunks, r.duplicates, r.replaced) for r in reports])
    # Then the dry run stores the text again, as the real run does
    assert answers[0] == answers[1] == [("g.md", 1, 0, 1), ("h.md", 1, 0, 0)]


def shown_to(store: DrawerStore, roles: frozenset[str]) -> set[str]:
    """The files a caller of `roles` (not a writer) is shown live drawers cited from."""
    return {
        d.source_file
        for batch in store.iter_live(1000)
        for d in batch
        if d.readers is None or not roles.isdisjoint(d.readers)
    }


def test_a_drawer_widened_since_its_copy_was_recorded_is_not_handed_to_a_file_of_copies_only(
    fresh,
) -> None:
    # Given a dev-only note and a dev-only file holding only one of its sections (no
    # chunk of the writer's own: every chunk a duplicate), then the note widened to guests
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev",)))
    ingestor.ingest_text("aside.md", markdown("Beta"), alice(readers=("dev",)))
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev", "guest")))
    # When the note drops the section
    # Then the drawer is retired, dry run alike, and no guest is shown the file's name
    assert _drop_beta_from_a(ingestor, store, alice()) == (1, 1, [])
    assert shown_to(store, frozenset({"guest"})) == {"a.md"}


def test_a_file_of_copies_only_takes_the_drawer_when_its_readers_cover_the_drawers_then(
    fresh,
) -> None:
    # Given a note for devs and guests and a file holding only one of its sections,
    # ingested for both (a copy: the text is stored for every reader it names), then the
    # note narrowed to devs
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev", "guest")))
    ingestor.ingest_text("aside.md", markdown("Beta"), alice(readers=("dev", "guest")))
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev",)))
    # When the note drops the section, then the file takes it, dry run alike
    assert _drop_beta_from_a(ingestor, store, alice()) == (0, 0, ["aside.md"])
    assert shown_to(store, frozenset({"dev"})) == {"a.md", "aside.md"}


@pytest.mark.parametrize(
    ("note", "first", "again", "kept", "cited"),
    [
        # narrower than the note: no home for it, its copy not kept at all
        (("dev", "guest"), ("dev", "guest"), ("dev",), set(), []),
        (("dev", "guest"), ("dev",), ("dev", "guest"), {("dev", "guest")}, ["aside.md"]),
        (("dev",), ("dev",), None, {("dev",)}, []),
    ],
    ids=["narrowed", "widened", "naming none"],
)
def test_a_file_of_copies_only_sent_again_records_the_readers_it_is_sent_with(
    fresh,
    note: tuple[str, ...],
    first: tuple[str, ...],
    again: tuple[str, ...] | None,
    kept: set[tuple[str, ...]],
    cited: list[str],
) -> None:
    # Given a note and a file holding only one of its sections (a copy), sent again
    # unchanged with other readers, or naming none
    store, ingestor = fresh()
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=note))
    ingestor.ingest_text("aside.md", markdown("Beta"), alice(readers=first))
    report = ingestor.ingest_text("aside.md", markdown("Beta"), alice(readers=again))
    # Then its copy holds the readers of the last ingest naming some
    assert report.status == "unchanged"
    assert {c.readers for c in store.copies_of_source("aside.md")} == kept
    # and they decide, once the note is for devs and guests and drops the section
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice(readers=("dev", "guest")))
    replaced = 0 if cited else 1
    assert _drop_beta_from_a(ingestor, store, alice()) == (replaced, replaced, cited)


@pytest.mark.parametrize("sent_again", [False, True], ids=["as migrated", "sent again"])
def test_a_schema_8_copy_counts_for_a_file_of_copies_only_once_the_file_is_sent_again(
    tmp_path: Path, sent_again: bool
) -> None:
    # Given a note and a file holding only one of its sections, both read by every
    # caller, in a store of schema 8 (its copies recorded with no readers)
    path = tmp_path / "ws.db"
    store = open_store(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    ingestor.ingest_text("a.md", markdown("Alpha", "Beta"), alice())
    ingestor.ingest_text("aside.md", markdown("Beta"), alice())
    store.close()
    with sqlite3.connect(path) as connection:
        connection.execute("ALTER TABLE drawer_copies DROP COLUMN readers")
        connection.execute("PRAGMA user_version = 8")
    # When the current version opens it (and the file is ingested again, or not)
    store = open_store(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    if sent_again:
        assert ingestor.ingest_text("aside.md", markdown("Beta"), alice()).status == "unchanged"
    # Then the note dropping the section hands it to the file only once the file was sent
    # again (its readers unknown till then), dry run alike
    expected = (0, 0, ["aside.md"]) if sent_again else (1, 1, [])
    assert _drop_beta_from_a(ingestor, store, alice()) == expected
    store.close()
