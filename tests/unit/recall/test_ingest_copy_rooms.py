"""The room of a file whose every chunk is another source's drawer (a transcript renamed
aside, a copy of a note): it stays with those drawers after a taxonomy edit, rather than
being stored a second time in the room the taxonomy gives now, and a drawer the caller
may not read never decides it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from recall_fakes import HashingEmbedder, options

from memhubd.recall.ingest import IngestOptions, Ingestor, SourceLock, pipeline
from memhubd.recall.store import AuditEntry, DrawerStore, TaxonomyEntry, open_store

NOTE = (
    "# Alpha\n\nthe alpha service owns invoices and their numbering.\n\n"
    "# Beta\n\nthe beta service owns refunds and the refunds queue.\n\n"
)
# A room the taxonomy gives the note once edited; before, its directory's room.
BILLING = TaxonomyEntry("billing", ("invoices", "refunds"))


@pytest.fixture
def ingestor(tmp_path: Path):
    store = open_store(tmp_path / "ws.db")
    yield Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    store.close()


def _rooms(store: DrawerStore) -> dict[str, int]:
    counts: dict[str, int] = {}
    for batch in store.iter_live(1000):
        for d in batch:
            counts[d.room] = counts.get(d.room, 0) + 1
    return counts


def _copy_after_taxonomy_edit(ingestor: Ingestor, given: IngestOptions) -> tuple:
    """`notes/a-old.md` (a copy of `notes/a.md`) ingested again, as a dry run and for
    real, after the taxonomy was edited to route its text elsewhere."""
    ingestor.store.set_taxonomy(BILLING, AuditEntry("t", "test", "taxonomy"))
    dry = ingestor.ingest_text("notes/a-old.md", NOTE, options(**_fields(given, dry_run=True)))
    real = ingestor.ingest_text("notes/a-old.md", NOTE, given)
    return dry, real


def _fields(given: IngestOptions, **changes: object) -> dict[str, object]:
    values = {name: getattr(given, name) for name in given.__slots__}
    values.update(changes)
    return values


def test_a_copy_stays_in_the_room_of_the_drawers_it_holds_after_a_taxonomy_edit(
    ingestor: Ingestor,
) -> None:
    # Given a note stored in its directory's room and a copy of it, its copies recorded
    store = ingestor.store
    assert ingestor.ingest_text("notes/a.md", NOTE, options()).room == "notes"
    first = ingestor.ingest_text("notes/a-old.md", NOTE, options())
    assert (first.status, first.duplicates) == ("unchanged", 2)
    recorded = store.copies_of_source("notes/a-old.md")
    assert len(recorded) == 2

    # When the copy is ingested again after the taxonomy routes its text to another room
    dry, real = _copy_after_taxonomy_edit(ingestor, options())

    # Then it is a duplicate where its drawers are, dry run alike, and keeps its copies
    assert (real.room, real.status, real.chunks, real.duplicates) == ("notes", "unchanged", 0, 2)
    assert (dry.room, dry.chunks, dry.duplicates) == ("notes", 0, 2)
    assert store.copies_of_source("notes/a-old.md") == recorded
    assert _rooms(store) == {"notes": 2}
    # And a new file of that text still goes where the taxonomy says
    assert ingestor.ingest_text("top.md", NOTE + "more\n", options()).room == "billing"


def test_a_copy_without_copies_on_record_stays_where_its_chunks_are_stored(
    ingestor: Ingestor,
) -> None:
    # Given a note and its copy as a store from before copies were recorded holds them
    store = ingestor.store
    ingestor.ingest_text("notes/a.md", NOTE, options())
    ingestor.ingest_text("notes/a-old.md", NOTE, options())
    store.set_copies("notes/a-old.md", [])

    # When the copy is ingested again after a taxonomy edit
    dry, real = _copy_after_taxonomy_edit(ingestor, options())

    # Then it joins the room its chunks are stored in, and its copies are recorded now
    assert (real.room, real.status, real.chunks, real.duplicates) == ("notes", "unchanged", 0, 2)
    assert (dry.room, dry.chunks, dry.duplicates) == ("notes", 0, 2)
    assert len(store.copies_of_source("notes/a-old.md")) == 2
    assert _rooms(store) == {"notes": 2}


def test_a_file_sharing_a_chunk_with_another_keeps_the_room_inferred_for_it(
    ingestor: Ingestor,
) -> None:
    ingestor.ingest_text("notes/a.md", NOTE, options())
    ingestor.store.set_taxonomy(BILLING, AuditEntry("t", "test", "taxonomy"))
    grown = NOTE + "# Gamma\n\nthe gamma service owns invoices of payouts.\n\n"
    grown += "# Delta\n\nthe delta service owns refunds of disputes.\n\n"
    # Half its chunks stored elsewhere: no copy, a file of its own in the taxonomy's room
    assert ingestor.ingest_text("notes/b.md", grown, options()).room == "billing"


@pytest.mark.parametrize("records_copies", [True, False])
def test_a_drawer_the_caller_may_not_read_never_decides_the_room_of_a_copy(
    ingestor: Ingestor, records_copies: bool
) -> None:
    # Given a lead-only note and its copy, stored by a lead
    store = ingestor.store
    lead = options(identity="lead", roles=frozenset({"lead"}), readers=("lead",))
    ingestor.ingest_text("notes/a.md", NOTE, lead)
    ingestor.ingest_text("notes/a-old.md", NOTE, lead)
    if not records_copies:
        store.set_copies("notes/a-old.md", [])
    # When a dev, who may not read them, ingests the copy after a taxonomy edit
    dev = options(identity="dev", roles=frozenset({"dev"}), replaces_others=False)
    _dry, real = _copy_after_taxonomy_edit(ingestor, dev)
    # Then its room is the one inferred now, as if nothing were stored
    assert (real.room, real.chunks) == ("billing", 2)


def test_a_copy_in_another_directory_joins_the_room_of_the_note_it_copies(
    ingestor: Ingestor,
) -> None:
    # Given a note stored in the default room, and no taxonomy
    assert ingestor.ingest_text("a.md", NOTE, options()).room == "default"
    # When a copy of it comes from a directory of its own
    copy = ingestor.ingest_text("archive/a.md", NOTE, options())
    # Then it is a duplicate there, recorded as the note's copy, not stored twice
    assert (copy.room, copy.chunks, copy.duplicates) == ("default", 0, 2)
    assert len(ingestor.store.copies_of_source("archive/a.md")) == 2
    assert _rooms(ingestor.store) == {"default": 2}


@pytest.mark.parametrize("embed_batch", [4096, 1])
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_copy_sent_in_the_same_request_as_its_note_joins_the_note_s_room(
    ingestor: Ingestor, monkeypatch: pytest.MonkeyPatch, embed_batch: int, dry_run: bool
) -> None:
    # Given no taxonomy, and requests of any size (one file a group: the copy is
    # prepared while the note may still be being written)
    monkeypatch.setattr(pipeline, "EMBED_BATCH", embed_batch)
    # When a note and a copy of it from a directory of its own come in one request
    note, copy = ingestor.ingest_texts(
        [("a.md", NOTE), ("archive/a.md", NOTE)], options(dry_run=dry_run)
    )
    # Then the copy takes the note's room and is its duplicate, as when sent after it
    assert (note.room, note.chunks, note.duplicates) == ("default", 2, 0)
    assert (copy.room, copy.chunks, copy.duplicates) == ("default", 0, 2)
    assert _rooms(ingestor.store) == ({} if dry_run else {"default": 2})


PLANTS = ("plants.md", "# Plants\n\nthe office plants need water.\n")
Answer = tuple[str, str, int, int, int]


def _answers(
    fresh, given: Callable[[Ingestor], object], request: list[tuple[str, str]]
) -> dict[str, list[Answer]]:
    """What `request` answers on a store `given` fills, its files sent one at a time, as
    one request, and as one dry run (each on a store of its own)."""
    answers = {}
    for how in ("one at a time", "real run", "dry run"):
        _store, ingestor = fresh()
        given(ingestor)
        if how == "one at a time":
            reports = [ingestor.ingest_text(s, t, options()) for s, t in request]
        else:
            reports = ingestor.ingest_texts(request, options(dry_run=how == "dry run"))
        answers[how] = [(r.source, r.room, r.chunks, r.duplicates, r.replaced) for r in reports]
    return answers


@pytest.mark.parametrize("embed_batch", [4096, 1])
@pytest.mark.parametrize(
    ("note", "copy", "taxonomy", "room"),
    [
        ("a.md", "archive/a.md", None, "archive"),
        ("notes/a.md", "notes/a-old.md", BILLING, "billing"),
    ],
)
def test_a_file_of_a_request_is_placed_seeing_what_earlier_files_retire_as_one_at_a_time(
    fresh,
    monkeypatch: pytest.MonkeyPatch,
    embed_batch: int,
    note: str,
    copy: str,
    taxonomy: TaxonomyEntry | None,
    room: str,
) -> None:
    # Given a note stored in its directory's room (in one case a taxonomy edited since
    # routes its text elsewhere), and requests of any size (one file a group: the copy
    # is prepared once the note's edit is written, or before)
    monkeypatch.setattr(pipeline, "EMBED_BATCH", embed_batch)

    def given(ingestor: Ingestor) -> None:
        ingestor.ingest_text(note, NOTE, options())
        if taxonomy is not None:
            ingestor.store.set_taxonomy(taxonomy, AuditEntry("t", "test", "taxonomy"))

    # When the note loses a chunk and a copy of its old text comes in the same request
    beta = NOTE[NOTE.index("# Beta") :]
    answers = _answers(fresh, given, [(note, beta), PLANTS, (copy, NOTE)])
    # Then the copy holds less than half its chunks in the note's room: it takes the
    # room inferred for it, in the dry run and the real run as one file at a time
    assert answers["one at a time"][2] == (copy, room, 2, 0, 0)
    assert answers["real run"] == answers["one at a time"]
    assert answers["dry run"] == answers["one at a time"]


@pytest.mark.parametrize("embed_batch", [4096, 1])
def test_a_copy_whose_drawer_an_earlier_file_retires_is_placed_as_one_at_a_time(
    fresh, monkeypatch: pytest.MonkeyPatch, embed_batch: int
) -> None:
    # Given a copy of a note's first chunk, recorded for `dev`, and the note shared with
    # `lead` since: the copy may no longer take the chunk's drawer over
    monkeypatch.setattr(pipeline, "EMBED_BATCH", embed_batch)
    alpha, beta = NOTE[: NOTE.index("# Beta")], NOTE[NOTE.index("# Beta") :]

    def given(ingestor: Ingestor) -> None:
        ingestor.ingest_text("a.md", NOTE, options(readers=("dev",)))
        assert ingestor.ingest_text("archive/a.md", alpha, options(readers=("dev",))).room == (
            "default"
        )
        ingestor.ingest_text("a.md", NOTE, options(readers=("dev", "lead")))

    # When the note drops the chunk (its drawer retired) and the copy comes after it
    answers = _answers(fresh, given, [("a.md", beta), PLANTS, ("archive/a.md", alpha)])
    # Then the copy holds nothing stored any more: it is stored in its own directory's
    # room, in the dry run and the real run as one file at a time
    assert answers["one at a time"][2] == ("archive/a.md", "archive", 1, 0, 0)
    assert answers["real run"] == answers["one at a time"]
    assert answers["dry run"] == answers["one at a time"]
