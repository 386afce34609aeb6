"""Ingest of a changed source: chunks that only moved stay live (and their place is
updated), a dry run reports what the real run does, and the near-duplicate warning
never names the drawer the same write retires."""

from __future__ import annotations

import json
from pathlib import Path

from recall_fakes import HashingEmbedder, options

from memhubd.recall.ingest import Ingestor, SourceLock, SourceReport
from memhubd.recall.store import DrawerFilter, DrawerStore, open_store

SECTIONS = {
    "Alpha": "the alpha service owns invoices and their numbering.",
    "Beta": "the beta service owns refunds and the refunds queue.",
    "Gamma": "the gamma service owns payouts to merchants.",
    "Zeta": "the zeta service owns disputes and chargebacks.",
}


def markdown(*names: str, **changed: str) -> str:
    return "".join(f"# {n}\n\n{changed.get(n, SECTIONS[n])}\n\n" for n in names)


def transcript(*turns: tuple[str, str]) -> str:
    return "".join(
        json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"
        for role, text in turns
    )


def live(store: DrawerStore) -> list:
    return [d for batch in store.iter_live(1000) for d in batch]


def places(store: DrawerStore, source: str) -> list[tuple[int, str]]:
    """(chunk_index, first line of content) of a source's live drawers, in order."""
    return sorted(
        (d.chunk_index, d.content.splitlines()[0]) for d in live(store) if d.source_file == source
    )


def counts(report: SourceReport) -> tuple[int, int, int]:
    return report.chunks, report.duplicates, report.replaced


QUESTION = ("user", "Which datacenter hosts the primary ledger database for the euro region?")
ANSWER = (
    "assistant",
    "The primary ledger database for the euro region is hosted in Frankfurt, rack F-12, "
    "with a hot standby in Dublin that takes over within two minutes of a failover.",
)
ADDED = ("assistant", "It moved to Frankfurt in March.")
LATER = ("user", "And which one hosts the card vault?")


def test_a_section_inserted_at_the_top_keeps_the_sections_it_moved(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    # Given a note of three sections
    ingestor.ingest_text("notes/s.md", markdown("Alpha", "Beta", "Gamma"), options())
    # When a section is added above them
    report = ingestor.ingest_text(
        "notes/s.md", markdown("Zeta", "Alpha", "Beta", "Gamma"), options()
    )
    # Then only it is written, the others stay live, each at its new place
    assert counts(report) == (1, 3, 0)
    assert places(store, "notes/s.md") == [
        (0, "# Zeta"),
        (1, "# Alpha"),
        (2, "# Beta"),
        (3, "# Gamma"),
    ]
    # and ingesting the same file again changes nothing
    again = ingestor.ingest_text(
        "notes/s.md", markdown("Zeta", "Alpha", "Beta", "Gamma"), options()
    )
    assert (again.status, *counts(again)) == ("unchanged", 0, 4, 0)


def test_a_moved_section_that_changes_later_replaces_its_old_version(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    ingestor.ingest_text("notes/s.md", markdown("Alpha", "Beta", "Gamma"), options())
    ingestor.ingest_text("notes/s.md", markdown("Zeta", "Alpha", "Beta", "Gamma"), options())
    edited = markdown("Zeta", "Alpha", "Beta", "Gamma", Alpha="the alpha service was retired.")
    report = ingestor.ingest_text("notes/s.md", edited, options())
    assert counts(report) == (1, 3, 1)
    contents = [d.content for d in live(store)]
    assert len(contents) == 4 and not any("invoices" in c for c in contents)


def test_a_section_removed_from_the_top_retires_only_it(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    ingestor.ingest_text("notes/s.md", markdown("Alpha", "Beta", "Gamma"), options())
    report = ingestor.ingest_text("notes/s.md", markdown("Beta", "Gamma"), options())
    assert counts(report) == (0, 2, 1)
    assert places(store, "notes/s.md") == [(0, "# Beta"), (1, "# Gamma")]


def test_a_dry_run_reports_what_the_real_run_replaces(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    first = transcript(QUESTION, ANSWER, LATER)
    versions = [
        transcript(QUESTION, ANSWER, LATER, ("assistant", "The card vault is in Dublin.")),
        transcript(QUESTION),  # cut short: the answer and the later exchange retired
        transcript(QUESTION, ANSWER, LATER),
    ]
    ingestor.ingest_text("claude/s.jsonl", first, options())
    for text in versions:
        dry = ingestor.ingest_text("claude/s.jsonl", text, options(dry_run=True))
        real = ingestor.ingest_text("claude/s.jsonl", text, options())
        assert counts(dry) == counts(real) and real.replaced > 0
    for text in (markdown("Alpha", "Beta"), markdown("Zeta", "Alpha", "Beta"), markdown("Beta")):
        dry = ingestor.ingest_text("notes/m.md", text, options(dry_run=True))
        real = ingestor.ingest_text("notes/m.md", text, options())
        assert counts(dry) == counts(real)


def test_a_dry_run_counts_chunks_an_earlier_file_of_the_batch_would_write(
    tmp_path: Path,
) -> None:
    # A resumed session repeats the exchanges of the session it resumes.
    first = transcript(QUESTION, ANSWER)
    resumed = transcript(QUESTION, ANSWER, LATER, ("assistant", "The card vault is in Dublin."))
    # A note losing a section that the next note of the batch holds, which stores it again.
    batch = [
        ("claude/r1.jsonl", first),
        ("claude/r2.jsonl", resumed),
        ("notes/a.md", markdown("Zeta", "Alpha")),
        ("notes/b.md", markdown("Beta")),
    ]

    def run(name: str, dry_run: bool) -> list[tuple[str, int, int, int]]:
        store = open_store(tmp_path / f"{name}.db")
        ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / f"{name}-locks"))
        ingestor.ingest_text("notes/a.md", markdown("Alpha", "Zeta", "Beta"), options())
        reports = ingestor.ingest_texts(batch, options(dry_run=dry_run))
        store.close()
        return [(r.source, *counts(r)) for r in reports]

    real = run("real", False)
    assert real[1:] == [
        ("claude/r2.jsonl", 1, 1, 0),
        ("notes/a.md", 0, 2, 1),
        ("notes/b.md", 1, 0, 0),
    ]
    assert run("dry", True) == real


def test_the_near_duplicate_warning_skips_the_drawer_the_write_retires(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    # Given an exchange stored, then grown by one more assistant line
    ingestor.ingest_text("claude/n.jsonl", transcript(QUESTION, ANSWER), options())
    report = ingestor.ingest_text("claude/n.jsonl", transcript(QUESTION, ANSWER, ADDED), options())
    # Then the grown exchange replaces the old one without being called its near-duplicate
    assert counts(report) == (1, 0, 1)
    assert report.near_duplicates == []


def test_the_near_duplicate_warning_names_the_nearest_drawer_that_stays(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    # Given the exchange kept, grown, in another file
    ingestor.ingest_text("claude/kept.jsonl", transcript(QUESTION, ANSWER, ADDED), options())
    ingestor.ingest_text("claude/n.jsonl", transcript(QUESTION, ANSWER), options())
    # When the second grows by one word (its old version, nearer still, retired by the write)
    report = ingestor.ingest_text(
        "claude/n.jsonl", transcript(QUESTION, ANSWER, ("assistant", "March.")), options()
    )
    # Then the warning names the drawer that stays
    (warning,) = report.near_duplicates
    (kept,) = [d.id for d in live(store) if d.source_file == "claude/kept.jsonl"]
    assert report.replaced == 1 and warning["similar_drawer_id"] == kept


def test_sections_swapped_keep_their_drawers_at_their_new_places(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    ingestor.ingest_text("notes/s.md", markdown("Alpha", "Beta", "Gamma"), options())
    ids = {d.id for d in live(store)}
    report = ingestor.ingest_text("notes/s.md", markdown("Alpha", "Gamma", "Beta"), options())
    assert (report.status, *counts(report)) == ("ingested", 0, 3, 0)
    assert {d.id for d in live(store)} == ids
    assert places(store, "notes/s.md") == [(0, "# Alpha"), (1, "# Gamma"), (2, "# Beta")]
    assert store.audit()[0].detail["moved"] == 2  # the write says so (newest first)


def _citations(store: DrawerStore, source: str) -> list[tuple[int, str, str]]:
    return sorted(
        (d.chunk_index, d.locator, d.content) for d in live(store) if d.source_file == source
    )


def test_a_kept_chunk_cites_where_its_text_stands_after_an_edit_before_it(
    tmp_path: Path,
) -> None:
    # An edit that changes a section's length (or a line added above an exchange) shifts
    # every later chunk's characters (or lines) while their indexes stay: each kept
    # chunk's citation must be the one a first ingest of the new text gives it.
    summary = json.dumps({"type": "summary", "summary": "Where the ledger lives"}) + "\n"
    cases = [
        (
            "notes/s.md",
            markdown("Alpha", "Beta", "Gamma"),
            markdown("Alpha", "Beta", "Gamma", Alpha="the alpha service owns invoices, "),
        ),
        (
            "notes/s.md",
            markdown("Alpha", "Beta", "Gamma"),
            markdown("Alpha", "Beta", "Gamma", Alpha="it was retired."),
        ),
        (
            "claude/s.jsonl",
            transcript(QUESTION, ANSWER, LATER),
            summary + transcript(QUESTION, ANSWER, LATER),
        ),
    ]
    for n, (source, before, after) in enumerate(cases):
        edited, fresh = open_store(tmp_path / f"edited-{n}.db"), open_store(tmp_path / f"{n}.db")
        ingestor = Ingestor(edited, None, SourceLock(tmp_path / f"locks-{n}"))
        ingestor.ingest_text(source, before, options())
        report = ingestor.ingest_text(source, after, options())
        assert report.status == "ingested" and report.replaced == (n < 2)
        Ingestor(fresh, None, SourceLock(tmp_path / f"locks-{n}")).ingest_text(
            source, after, options()
        )
        assert _citations(edited, source) == _citations(fresh, source)
        if source.endswith(".md"):  # a character locator holds exactly the drawer's text
            for _index, locator, content in _citations(edited, source):
                start, end = map(int, locator.rpartition(" ")[2].split("-"))
                assert after[start:end] == content
        edited.close()
        fresh.close()


def test_a_chunk_its_source_drops_goes_on_cited_from_a_file_that_holds_it(
    tmp_path: Path,
) -> None:
    # A copy of a note counts its sections as duplicates of the note's drawers; when the
    # note then changes a section, that section's drawer goes on cited from the copy
    # (whose text still holds it) instead of leaving search: in one command whatever
    # order the files come in, and across commands.
    before = markdown("Alpha", "Beta", "Gamma")
    after = markdown("Alpha", "Beta", "Gamma", Beta="the beta service was split in two.")
    for n, order in enumerate(
        (["notes/aa-copy.md", "notes/zz.md"], ["notes/zz.md", "notes/aa-copy.md"])
    ):
        for dry_run in (True, False):
            store = open_store(tmp_path / f"{n}-{dry_run}.db")
            ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / f"locks-{n}"))
            ingestor.ingest_text("notes/zz.md", before, options())
            texts = {"notes/aa-copy.md": before, "notes/zz.md": after}
            reports = ingestor.ingest_texts(
                [(s, texts[s]) for s in order], options(dry_run=dry_run)
            )
            by_source = {r.source: counts(r) for r in reports}
            if order[0] == "notes/aa-copy.md":  # the copy first: its chunks are duplicates
                assert by_source == {"notes/aa-copy.md": (0, 3, 0), "notes/zz.md": (1, 2, 0)}
            else:  # the note first: its old Beta is retired, and the copy brings it back
                assert by_source == {"notes/zz.md": (1, 2, 1), "notes/aa-copy.md": (1, 2, 0)}
            if not dry_run:
                contents = {d.content: d for d in live(store)}
                old_beta = "# Beta\n\n" + SECTIONS["Beta"]
                assert contents[old_beta].source_file == "notes/aa-copy.md"
                start, end = map(int, contents[old_beta].locator.rpartition(" ")[2].split("-"))
                assert before[start:end] == old_beta
                assert len(contents) == 4
                # Found by words and by vector, once
                assert len(store.lexical(["refunds"], DrawerFilter(), 10)) == 1
                # The same command again writes nothing
                again = ingestor.ingest_texts([(s, texts[s]) for s in order], options())
                assert [r.status for r in again] == ["unchanged", "unchanged"]
            store.close()


def test_a_renamed_transcript_keeps_the_exchanges_the_new_session_drops(
    ingestor: Ingestor, store: DrawerStore, embedder: HashingEmbedder
) -> None:
    # A session renamed aside (or rotated) is ingested as duplicates of the old drawers;
    # a new session started under the old name then drops them from that source, and
    # they go on cited from the renamed file, with their vectors, found by both signals.
    session = transcript(QUESTION, ANSWER, LATER)
    ingestor.ingest_text("claude/s.jsonl", session, options())
    renamed = ingestor.ingest_text("claude/s.jsonl.1", session, options())
    assert counts(renamed) == (0, 2, 0)
    fresh = ingestor.ingest_text(
        "claude/s.jsonl", transcript(("user", "Start over: what is on the agenda?")), options()
    )
    assert counts(fresh) == (1, 0, 0)  # nothing retired: both handed to the renamed file
    assert store.audit()[0].detail["handed_over"] == 2
    old = [d for d in live(store) if d.source_file == "claude/s.jsonl.1"]
    assert len(old) == 2 and {d.chunk_index for d in old} == {0, 1}
    status = store.status()
    assert (status.drawer_count, status.vector_count) == (3, 3)
    assert store.lexical(["frankfurt"], DrawerFilter(), 5)
    vector = embedder.embed([ANSWER[1]])[0]
    best = store.nearest(vector, store.embedder(), DrawerFilter(), 1)
    assert store.get([best[0].rowid])[best[0].rowid].source_file == "claude/s.jsonl.1"
    # The renamed file sent again is its own source now: unchanged
    again = ingestor.ingest_text("claude/s.jsonl.1", session, options())
    assert (again.status, again.duplicates) == ("unchanged", 2)
    # A copy another writer recorded never takes a drawer
    ingestor.ingest_text("notes/n.md", markdown("Alpha"), options())
    ingestor.ingest_text("notes/other.md", markdown("Alpha"), options(identity="bob"))
    dropped = ingestor.ingest_text("notes/n.md", markdown("Beta"), options())
    assert dropped.replaced == 1
    assert not [d for d in live(store) if "invoices" in d.content]


def _sources_of(store: DrawerStore, text: str) -> list[str]:
    return sorted(d.source_file for d in live(store) if text in d.content)


def test_copies_follow_a_drawer_stored_again_and_never_outlive_the_file_holding_the_text(
    tmp_path: Path,
) -> None:
    beta = "refunds queue"
    dropped = markdown("Alpha", "Gamma")

    def fresh(name: str) -> tuple[DrawerStore, Ingestor]:
        store = open_store(tmp_path / f"{name}.db")
        return store, Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / f"{name}-locks"))

    # A drawer stored again (new importance) keeps the copy another file recorded
    store, ingestor = fresh("refreshed")
    ingestor.ingest_text("notes/a.md", markdown("Alpha", "Beta", "Gamma"), options())
    ingestor.ingest_text("notes/b-copy.md", markdown("Beta"), options())
    again = ingestor.ingest_text(
        "notes/a.md", markdown("Alpha", "Beta", "Gamma"), options(importance=3)
    )
    assert again.status == "ingested"
    assert ingestor.ingest_text("notes/a.md", dropped, options()).replaced == 0
    assert _sources_of(store, beta) == ["notes/b-copy.md"]
    store.close()

    # A file kept from some readers never takes a drawer every caller reads
    store, ingestor = fresh("readers")
    ingestor.ingest_text("notes/a.md", markdown("Alpha", "Beta", "Gamma"), options())
    ingestor.ingest_text("notes/merger.md", markdown("Beta"), options(readers=("ops",)))
    assert ingestor.ingest_text("notes/a.md", dropped, options()).replaced == 1
    assert _sources_of(store, beta) == []
    store.close()

    # A file that no longer holds the text (sent again by another writer) is not cited
    store, ingestor = fresh("stale")
    ingestor.ingest_text("notes/a.md", markdown("Alpha", "Beta", "Gamma"), options())
    ingestor.ingest_text("notes/b.md", markdown("Beta", "Zeta"), options())
    ingestor.ingest_text("notes/b.md", markdown("Zeta"), options(identity="bob"))
    assert ingestor.ingest_text("notes/a.md", dropped, options()).replaced == 1
    assert _sources_of(store, beta) == []
    store.close()


def _batch_counts(
    tmp_path: Path, first: list[str], batch: list[tuple[str, str]], dry_run: bool
) -> list[tuple[str, int, int, int]]:
    """Each of `first` ingested with all three sections, then `batch` in one ingest (a dry
    run or not), each in a store of its own: the batch's counts."""
    name = "dry" if dry_run else "real"
    store = open_store(tmp_path / f"{name}.db")
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / f"{name}-locks"))
    for source in first:
        ingestor.ingest_text(source, markdown("Alpha", "Beta", "Gamma"), options())
    reports = ingestor.ingest_texts(batch, options(dry_run=dry_run))
    store.close()
    return [(r.source, *counts(r)) for r in reports]


def test_a_dry_run_counts_a_later_file_of_the_batch_as_the_real_run_after_a_hand_over(
    tmp_path: Path,
) -> None:
    # The note drops a section the copy holds (handed to it), then the copy comes in the
    # same batch, unchanged: the dry run says what the real run does.
    first = ["notes/zz.md", "notes/aa-copy.md"]
    batch = [
        ("notes/zz.md", markdown("Alpha", "Gamma")),
        ("notes/aa-copy.md", markdown("Alpha", "Beta", "Gamma")),
    ]
    dry, real = (_batch_counts(tmp_path, first, batch, d) for d in (True, False))
    assert dry == real == [("notes/zz.md", 0, 2, 0), ("notes/aa-copy.md", 0, 3, 0)]


def test_a_dry_run_counts_the_change_of_a_drawer_handed_over_earlier_in_the_batch(
    tmp_path: Path,
) -> None:
    # The note drops a section the copy holds (handed to it); the copy, later in the same
    # batch, changes that section: the real run replaces the handed drawer, and so does
    # the dry run's count.
    first = ["notes/a.md", "notes/b-copy.md"]
    batch = [
        ("notes/a.md", markdown("Alpha", "Gamma")),
        ("notes/b-copy.md", markdown("Alpha", "Beta", "Gamma", Beta="beta was split.")),
    ]
    dry, real = (_batch_counts(tmp_path, first, batch, d) for d in (True, False))
    assert dry == real == [("notes/a.md", 0, 2, 0), ("notes/b-copy.md", 1, 2, 1)]
