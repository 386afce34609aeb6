"""Ingest: idempotent per source, appended transcripts, bad files, rooms, dedup,
near-duplicate warnings, and two processes ingesting one source at once."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from recall_fakes import HashingEmbedder, fixture_text, options

from memhubd.recall.ingest import Ingestor, SourceLock
from memhubd.recall.ingest.pipeline import record_of
from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, TaxonomyEntry, open_store

CLAUDE = "claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"
WORKER = Path(__file__).with_name("ingest_worker.py")


def live(store: DrawerStore) -> list:
    return [d for batch in store.iter_live(1000) for d in batch]


def test_the_same_file_twice_stores_each_chunk_once(ingestor: Ingestor, store: DrawerStore) -> None:
    text = fixture_text(CLAUDE)
    first = ingestor.ingest_text("s.jsonl", text, options())
    second = ingestor.ingest_text("s.jsonl", text, options())
    assert (first.status, first.chunks) == ("ingested", 3)
    assert (second.status, second.chunks, second.duplicates) == ("unchanged", 0, 3)
    assert len(live(store)) == 3


def test_an_appended_transcript_adds_only_what_is_new(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    lines = fixture_text(CLAUDE).splitlines(keepends=True)
    ingestor.ingest_text("s.jsonl", "".join(lines[:6]), options())  # ends mid-exchange
    before = {d.id for d in live(store)}
    report = ingestor.ingest_text("s.jsonl", "".join(lines), options())
    after = live(store)
    # The grown exchange replaces its partial chunk; the summary and first exchange stay.
    assert (report.chunks, report.replaced, report.duplicates) == (1, 1, 2)
    assert len(after) == 3
    assert len(before & {d.id for d in after}) == 2
    assert "Added test_backoff_is_capped_at_ten_minutes" in after[-1].content


def test_an_exchange_deleted_while_it_grows_stays_deleted_as_it_grows(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    # Given a session seen mid-exchange, whose partial exchange is deleted on purpose
    lines = fixture_text(CLAUDE).splitlines(keepends=True)
    ingestor.ingest_text("s.jsonl", "".join(lines[:6]), options())
    partial = live(store)[-1]
    store.soft_delete(partial.id, AuditEntry("tester", "test", "delete"))
    # When the session appends the rest of that exchange
    report = ingestor.ingest_text("s.jsonl", "".join(lines), options())
    # Then the grown exchange is not brought back, nor is any of its text
    assert (report.chunks, report.deleted) == (0, 1)
    assert len(live(store)) == 2
    assert not any(partial.content in d.content for d in live(store))
    assert not any("test_backoff_is_capped_at_ten_minutes" in d.content for d in live(store))
    # And a later exchange of the same session is stored as usual
    more = json.dumps(
        {
            "type": "user",
            "sessionId": "3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34",
            "timestamp": "2025-06-05T10:00:00Z",
            "message": {"role": "user", "content": "Ship the backoff change to staging."},
        }
    )
    after = ingestor.ingest_text("s.jsonl", "".join(lines) + more + "\n", options())
    assert (after.chunks, after.deleted) == (1, 1)
    assert "Ship the backoff change" in live(store)[-1].content


def _session_line(role: str, text: str, minute: int) -> str:
    message = {
        "role": role,
        "content": text if role == "user" else [{"type": "text", "text": text}],
    }
    stamp = f"2025-06-03T09:{minute:02d}:00Z"
    return (
        json.dumps({"type": role, "sessionId": "s-grow", "timestamp": stamp, "message": message})
        + "\n"
    )


@pytest.mark.parametrize("partial", [1500, 1900, 3000])
def test_an_exchange_deleted_while_it_grows_stays_deleted_once_cut_into_windows(
    ingestor: Ingestor, store: DrawerStore, partial: int
) -> None:
    # Given an exchange seen part-written (of `partial` characters), deleted on purpose,
    # whose reply then grows past one chunk (cut into overlapping windows)
    reply = " ".join(f"w{n}" for n in range(1300))  # about 6,500 characters
    head = [
        _session_line("user", "How do deploys start?", 0),
        _session_line("assistant", "With the runbook.", 1),
        _session_line("user", "My token is hunter2, forget it.", 2),
    ]
    text = "".join(head)
    ingestor.ingest_text(
        "grow.jsonl", text + _session_line("assistant", reply[:partial], 3), options()
    )
    (victim,) = [d for d in live(store) if "hunter2" in d.content]
    tail = victim.content.split()[-1]
    store.soft_delete(victim.id, AuditEntry("tester", "test", "delete"))
    report = ingestor.ingest_text(
        "grow.jsonl", text + _session_line("assistant", reply, 4), options()
    )
    # Then none of its windows is stored: neither the deleted words nor its last one
    assert report.chunks == 0 and report.deleted >= 2
    rows = (
        sqlite3.connect(store.path)
        .execute("SELECT content, coalesce(context, '') FROM drawers WHERE deleted_at IS NULL")
        .fetchall()
    )
    assert len(rows) == 1  # the first exchange
    assert not any("hunter2" in c or f" {tail} " in f" {c} " for row in rows for c in row)


def test_a_bad_file_is_reported_and_nothing_of_it_is_stored(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    report = ingestor.ingest_text("notes.txt", "plain words\n", options(format="claude-code"))
    assert report.status == "failed" and "not claude-code" in report.reason
    assert live(store) == [] and store.audit() == []


def test_a_deleted_drawer_is_not_brought_back_by_reingesting(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    text = fixture_text("notes/standup-2025-06-06.txt")
    ingestor.ingest_text("standup.txt", text, options())
    (only,) = live(store)
    store.soft_delete(only.id, AuditEntry("tester", "test", "delete"))
    report = ingestor.ingest_text("other-name.txt", text, options())
    assert (report.chunks, report.deleted) == (0, 1)
    assert live(store) == []


def test_a_transcript_cut_short_then_whole_again_keeps_every_exchange(
    ingestor: Ingestor, store: DrawerStore, embedder: HashingEmbedder
) -> None:
    # Given a transcript ingested whole, then seen cut short (a rewrite in two steps)
    lines = fixture_text(CLAUDE).splitlines(keepends=True)
    whole = "".join(lines)
    ingestor.ingest_text("s.jsonl", whole, options())
    ids = sorted(d.id for d in live(store))
    cut = ingestor.ingest_text("s.jsonl", "".join(lines[:3]), options())
    assert cut.replaced > 0 and len(live(store)) < len(ids)
    # When it comes back whole
    epoch = _vector_epoch(store)
    report = ingestor.ingest_text("s.jsonl", whole, options())
    assert _vector_epoch(store) == epoch  # no reload of every vector for it
    # Then the drawers its changes retired are back, as a first ingest would store them
    assert report.deleted == 0
    assert sorted(d.id for d in live(store)) == ids
    assert store.audit()[0].detail["revived"] == cut.replaced  # the write says so (newest first)
    record = record_of(embedder)
    for drawer in live(store):  # each found again by its vector, and by its words
        (vector,) = embedder.embed([drawer.content])
        best = store.nearest(vector, record, DrawerFilter(), 1)
        assert store.get([best[0].rowid])[best[0].rowid].id == drawer.id
    # and a drawer deleted on purpose still stays deleted
    store.soft_delete(ids[0], AuditEntry("tester", "test", "delete"))
    again = ingestor.ingest_text("s.jsonl", whole, options())
    assert again.deleted == 1 and ids[0] not in {d.id for d in live(store)}


def _vector_epoch(store: DrawerStore) -> str | None:
    with sqlite3.connect(store.path) as connection:  # type: ignore[attr-defined]
        row = connection.execute("SELECT value FROM meta WHERE key = 'vector_epoch'").fetchone()
    return row[0] if row else None


def test_rooms_come_from_the_request_then_taxonomy_then_directory(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    text = fixture_text("notes/architecture.md")
    assert ingestor.ingest_text("design/a.md", text, options(room="given")).room == "given"
    store.set_taxonomy(
        TaxonomyEntry("money", ("cents", "ledger")), AuditEntry("tester", "test", "taxonomy")
    )
    assert ingestor.ingest_text("design/b.md", text + "\nmore", options()).room == "money"
    standup = (
        fixture_text("notes/standup-2025-06-06.txt").replace("cents", "c").replace("ledger", "l")
    )
    assert ingestor.ingest_text("meetings/s.txt", standup, options()).room == "meetings"
    assert ingestor.ingest_text("top.txt", "nothing routable here", options()).room == "default"


def test_taxonomy_keywords_match_whole_words_not_substrings(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    store.set_taxonomy(TaxonomyEntry("api", ("api",)), AuditEntry("t", "test", "taxonomy"))
    assert ingestor.ingest_text("x.txt", "a rapid fix", options()).room == "default"


def test_manual_content_is_one_drawer_and_repeats_answer_its_id(ingestor: Ingestor) -> None:
    first = ingestor.ingest_content("Decision: cents everywhere.", options(), None)
    again = ingestor.ingest_content("Decision: cents everywhere.", options(), None)
    assert first.chunks == 1 and first.source.startswith("mempal://drawer/drawer_ws_")
    assert again.status == "unchanged" and again.drawer_ids == first.drawer_ids


def test_content_sent_again_after_a_taxonomy_change_stays_in_its_room(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    note = "The release train leaves every second Tuesday."
    taxonomy = AuditEntry("tester", "test", "taxonomy")
    first = ingestor.ingest_content(note, options(), "notes/release-train.txt")
    deleted = ingestor.ingest_content("An old release note.", options(), None)
    store.soft_delete(deleted.drawer_ids[0], AuditEntry("tester", "test", "delete"))
    # Given a taxonomy that now routes both texts to another room
    store.set_taxonomy(TaxonomyEntry("releases", ("release", "train")), taxonomy)

    # When they are sent again without a room
    again = ingestor.ingest_content(note, options(), "notes/release-train.txt")
    gone = ingestor.ingest_content("An old release note.", options(), None)

    # Then the stored one answers unchanged with its id, the deleted one stays deleted
    assert (first.room, again.room) == ("default", "default")
    assert again.status == "unchanged" and again.drawer_ids == first.drawer_ids
    assert gone.room == "default" and gone.status != "ingested"
    assert [d.content for batch in store.iter_live(100) for d in batch] == [note]
    # And a new text still goes where the taxonomy says
    assert ingestor.ingest_content("A release note.", options(), None).room == "releases"


def test_a_room_inferred_again_never_follows_a_drawer_the_caller_cannot_read(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    note = "The release train leaves every second Tuesday."
    hidden = ingestor.ingest_content(note, options(identity="lead", readers=("leads",)), None)
    store.set_taxonomy(
        TaxonomyEntry("releases", ("release", "train")), AuditEntry("t", "test", "taxonomy")
    )
    mine = ingestor.ingest_content(note, options(identity="dev", roles=frozenset({"devs"})), None)
    assert hidden.room == "default" and mine.room == "releases" and mine.status == "ingested"


def test_a_near_duplicate_is_reported_with_the_similar_drawer(ingestor: Ingestor) -> None:
    ingestor.ingest_content("we deploy billing on monday after the migration", options(), None)
    report = ingestor.ingest_content(
        "We deploy billing on Monday, after the migration!", options(), None
    )
    (warning,) = report.near_duplicates
    assert warning["similarity"] >= 0.95 and warning["preview"].startswith("we deploy")
    assert report.chunks == 1  # a warning, not a refusal


def test_a_dry_run_counts_and_writes_nothing(ingestor: Ingestor, store: DrawerStore) -> None:
    report = ingestor.ingest_text("s.jsonl", fixture_text(CLAUDE), options(dry_run=True))
    assert (report.status, report.chunks, report.lock_wait_ms) == ("dry_run", 3, None)
    assert live(store) == []


def test_lock_wait_is_reported(ingestor: Ingestor) -> None:
    report = ingestor.ingest_text("s.jsonl", fixture_text(CLAUDE), options())
    assert report.lock_wait_ms is not None and report.lock_wait_ms >= 0


def test_two_processes_ingesting_one_source_store_each_chunk_once(tmp_path: Path) -> None:
    exchanges = [
        {"type": "user", "message": {"role": "user", "content": f"question number {i}"}}
        if i % 2 == 0
        else {"type": "assistant", "message": {"role": "assistant", "content": f"answer {i}"}}
        for i in range(4000)
    ]
    source = tmp_path / "big.jsonl"
    source.write_text("\n".join(json.dumps(e) for e in exchanges), encoding="utf-8")
    database, locks, go = tmp_path / "ws.db", tmp_path / "locks", tmp_path / "go"
    argv = [
        sys.executable,
        str(WORKER),
        str(database),
        str(locks),
        "big.jsonl",
        str(source),
        str(go),
    ]
    workers = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    go.touch()
    reports = [json.loads(w.communicate(timeout=120)[0]) for w in workers]
    assert all(w.returncode == 0 for w in workers)
    assert sorted(r["chunks"] for r in reports) == [0, 2000]
    assert sorted(r["duplicates"] for r in reports) == [0, 2000]
    from memhubd.recall.store import open_store

    store = open_store(database)
    assert store.status().drawer_count == 2000
    assert store.status().vector_count == 2000
    store.close()


def test_vectors_are_skipped_with_a_warning_when_the_embedder_changed(
    store: DrawerStore, tmp_path: Path
) -> None:
    Ingestor(store, HashingEmbedder("first"), SourceLock(tmp_path / "l")).ingest_content(
        "one", options(), None
    )
    other = Ingestor(store, HashingEmbedder("second"), SourceLock(tmp_path / "l"))
    report = other.ingest_content("two", options(), None)
    assert report.chunks == 1 and "reindex" in report.warnings[0]
    assert store.status().vector_count == 1


def test_the_day_said_is_searchable_but_not_part_of_the_content(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    from memhubd.recall.store import DrawerFilter

    ingestor.ingest_text("s.jsonl", fixture_text(CLAUDE), options())
    rows = store.lexical(["june"], DrawerFilter(), 10)
    found = store.get([r.rowid for r in rows])
    assert len(found) == 2  # the two exchanges with timestamps; the summary line has none
    assert all("June" not in d.content for d in found.values())


def test_a_stray_line_neither_turns_a_transcript_into_text_nor_replaces_it(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    lines = fixture_text(CLAUDE).splitlines()
    ingestor.ingest_text("s.jsonl", "\n".join(lines) + "\n", options())
    damaged = "\n".join([*lines[:3], "garbage", *lines[3:], '{"type":"user","mess']) + "\n"
    report = ingestor.ingest_text("s.jsonl", damaged, options())
    assert report.format == "claude-code"
    # nothing stored or replaced: the exchanges after the stray line only moved a line down
    assert (report.status, report.chunks, report.replaced, report.duplicates) == (
        "ingested",
        0,
        0,
        3,
    )
    assert report.warnings and "2 line(s) not JSON, left out" in report.warnings[0]
    assert not any(d.content.lstrip().startswith("{") for d in live(store))
    again = ingestor.ingest_text("s.jsonl", damaged, options())
    assert (again.status, again.duplicates) == ("unchanged", 3)


def test_a_byte_order_mark_does_not_hide_the_format(ingestor: Ingestor) -> None:
    report = ingestor.ingest_text("s.jsonl", "\ufeff" + fixture_text(CLAUDE), options())
    assert (report.format, report.status, report.chunks) == ("claude-code", "ingested", 3)


def test_a_lone_surrogate_in_a_transcript_is_stored_as_a_replacement_character(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    user = '{"type":"user","message":{"role":"user","content":"lone \\ud800 surrogate"}}\n'
    answer = '{"type":"assistant","message":{"role":"assistant","content":"ok"}}\n'
    report = ingestor.ingest_text("s.jsonl", user + answer, options())
    assert report.status == "ingested", report.reason
    (drawer,) = live(store)
    assert "lone \ufffd" in drawer.content and "\ud800" not in drawer.content


def test_manual_notes_share_a_bounded_set_of_lock_files(tmp_path: Path) -> None:
    # Every note and diary entry is its own source: a lock file per drawer grew without
    # bound (lock files are never removed). Notes lock on one of 256 stripes instead.
    store = open_store(tmp_path / "ws.db")
    locks = tmp_path / "locks"
    ingestor = Ingestor(store, None, SourceLock(locks))
    try:
        for n in range(600):
            report = ingestor.ingest_content(f"note {n}: the queue drains", options(), None)
            assert report.status == "ingested", report
        again = ingestor.ingest_content("note 7: the queue drains", options(), None)
        assert again.status == "unchanged"
        assert len(list(locks.iterdir())) <= 256
        assert store.status().drawer_count == 600
    finally:
        store.close()


def test_two_chunks_of_one_ingest_whose_short_ids_clash_are_both_stored(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    """Two exchanges whose texts' SHA-256 begin with the same 8 hex digits (86270692):
    the second takes the 16-digit form instead of being counted as the first again, on
    the first ingest as on the next."""

    def exchange(n: int) -> str:
        user = {
            "type": "user",
            "message": {"role": "user", "content": f"Which shelf holds ledger box {n}?"},
        }
        said = f"Ledger box {n} sits on the top shelf."
        assistant = {"type": "assistant", "message": {"role": "assistant", "content": said}}
        return json.dumps(user) + "\n" + json.dumps(assistant) + "\n"

    text = exchange(9690) + exchange(52041)
    first = ingestor.ingest_text("clash.jsonl", text, options())
    stored = live(store)
    assert (first.chunks, first.duplicates) == (2, 0)
    assert sorted(len(d.id.rsplit("_", 1)[1]) for d in stored) == [8, 16]
    assert {d.content.splitlines()[0] for d in stored} == {
        "> Which shelf holds ledger box 9690?",
        "> Which shelf holds ledger box 52041?",
    }
    again = ingestor.ingest_text("clash.jsonl", text, options())
    assert (again.status, again.chunks, again.duplicates) == ("unchanged", 0, 2)
    assert len(live(store)) == 2
