"""A transcript ingested while it grows ends up stored as a one-shot ingest of its final
version stores it: every drawer's context (the neighbouring exchanges, the day said) and
what BM25 finds by it, from memory and from FTS5 alike. A drawer whose context changed is
stored again in place of its row, so the index in memory follows it without a rebuild."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from recall_fakes import HashingEmbedder, options
from test_store import fts_consistent

from memhubd.recall.ingest import Ingestor, SourceLock
from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, TaxonomyEntry, open_store
from memhubd.recall.store import bm25 as lexical_cache

SOURCE = "claude/live.jsonl"
EXCHANGES = [
    ("Which team owns the payments consumer group?", "The ledger team owns it since May."),
    ("Why did the consumer lag last night?", "A kafka rebalance stalled the partitions."),
    ("How long did the rebalance take?", "Eleven minutes, with cooperative sticky off."),
    ("What setting fixes it?", "Cooperative sticky assignment and static membership."),
    ("Who rolls it out?", "Priya, behind the consumer-config flag on Thursday."),
    ("Is the dead-letter topic affected?", "No, the dead-letter consumer has one partition."),
    ("When is the retro?", "Friday at ten, with the kafka rebalance timeline first."),
]
# Other drawers of the store, so that the queried words are rare (and BM25's IDF counts).
BACKGROUND = "".join(
    f"# {topic}\n\nThe {topic} runbook lists owners, alerts and dashboards.\n\n"
    for topic in ("billing", "search", "mobile", "email", "identity", "storage", "ci", "dns")
)
QUERIES = (["kafka", "rebalance"], ["priya"], ["thursday", "flag"], ["retro"])


def transcript(count: int) -> str:
    lines = []
    for number, (question, answer) in enumerate(EXCHANGES[:count]):
        stamp = f"2025-06-{3 + number:02d}T09:00:00Z"  # one day apart: the day is context
        for role, text in (("user", question), ("assistant", answer)):
            message = {"role": role, "content": text}
            lines.append(json.dumps({"type": role, "timestamp": stamp, "message": message}))
    return "\n".join(lines) + "\n"


def contexts(path: Path) -> dict[str, str | None]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT id, context FROM drawers WHERE deleted_at IS NULL"
        ).fetchall()
    return dict(rows)


def ranked(store: DrawerStore) -> list[list[tuple[str, float]]]:
    """Each query's ranking by drawer id and score."""
    out = []
    for terms in QUERIES:
        rows = store.lexical(terms, DrawerFilter(), 20)
        found = store.get([r.rowid for r in rows])
        out.append([(found[r.rowid].id, round(r.score, 9)) for r in rows])
    return out


def ingest(path: Path, *versions: str) -> DrawerStore:
    store = open_store(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(path.with_suffix(".locks")))
    ingestor.ingest_text("notes/runbooks.md", BACKGROUND, options())
    for text in versions:
        ingestor.ingest_text(SOURCE, text, options())
        ranked(store)  # the in-memory BM25 index is built, and must follow what comes next
    return store


@pytest.mark.parametrize("in_memory", [True, False], ids=["index", "fts5"])
def test_a_grown_transcript_is_stored_as_a_fresh_ingest_of_it_would_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: bool
) -> None:
    monkeypatch.setattr(lexical_cache, "ENABLED", in_memory)
    # Given a live session ingested at five exchanges, then again at seven
    grown = ingest(tmp_path / "grown.db", transcript(5), transcript(7))
    # and the seven-exchange file ingested once into an empty store
    fresh = ingest(tmp_path / "fresh.db", transcript(7))
    try:
        # Then every drawer has the context the fresh store gives it
        assert contexts(tmp_path / "grown.db") == contexts(tmp_path / "fresh.db")
        assert "Priya" in contexts(tmp_path / "grown.db")[_drawer_of(grown, 3)]
        # and BM25 ranks every query alike, from FTS5 while the index in memory catches
        # up, and from that index once it has
        assert ranked(grown) == ranked(fresh)
        assert grown.settle_lexical()
        assert ranked(grown) == ranked(fresh)
        fts_consistent(tmp_path / "grown.db")
    finally:
        grown.close()
        fresh.close()


def _drawer_of(store: DrawerStore, exchange: int) -> str:
    (found,) = [
        d.id for batch in store.iter_live(100) for d in batch if EXCHANGES[exchange][0] in d.content
    ]
    return found


def test_a_store_opened_elsewhere_ranks_by_the_refreshed_context(tmp_path: Path) -> None:
    # Given a second store object on the same file (another process's), its index built
    path = tmp_path / "ws.db"
    writer = ingest(path, transcript(5))
    reader = open_store(path)
    before = ranked(reader)
    # When the session grows and is ingested through the first
    Ingestor(writer, HashingEmbedder(), SourceLock(tmp_path / "locks")).ingest_text(
        SOURCE, transcript(7), options()
    )
    # Then the second ranks as a fresh store of the final file does
    fresh = ingest(tmp_path / "fresh.db", transcript(7))
    try:
        assert ranked(reader) == ranked(fresh) != before
        assert reader.settle_lexical()
        assert ranked(reader) == ranked(fresh)
    finally:
        for store in (writer, reader, fresh):
            store.close()


def test_a_growing_transcript_keeps_the_index_in_memory_without_a_rebuild(
    tmp_path: Path,
) -> None:
    # A watched session grows by an exchange at a time: each refresh must cost the rows
    # it touches, never a rebuild of the whole index (seconds of CPU in a large store).
    path = tmp_path / "ws.db"
    store = ingest(path, transcript(3))
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    try:
        assert store.settle_lexical()
        built = store._lexical._current
        for count in range(4, len(EXCHANGES) + 1):
            ingestor.ingest_text(SOURCE, transcript(count), options())
            ranked(store)
            assert store._lexical._current is built  # caught up in place, never rebuilt
        fresh = ingest(tmp_path / "fresh.db", transcript(len(EXCHANGES)))
        assert ranked(store) == ranked(fresh)
        assert contexts(path) == contexts(tmp_path / "fresh.db")
        fresh.close()
    finally:
        store.close()


def test_a_refreshed_drawer_keeps_its_writer_readers_importance_and_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    try:
        first = options(identity="alice", importance=4, readers=("ops",))
        ingestor.ingest_text(SOURCE, transcript(2), first)
        (before,) = [d for b in store.iter_live(100) for d in b if EXCHANGES[1][0] in d.content]
        # The same source sent again by someone else, naming no readers or importance
        ingestor.ingest_text(SOURCE, transcript(3), options(identity="bob"))
        (after,) = [d for b in store.iter_live(100) for d in b if EXCHANGES[1][0] in d.content]
        assert after.id == before.id and after.rowid != before.rowid
        assert EXCHANGES[2][0] in contexts(path)[after.id]
        assert (after.identity, after.readers, after.importance, after.created_at) == (
            before.identity,
            before.readers,
            before.importance,
            before.created_at,
        )
    finally:
        store.close()


def test_re_ingesting_refreshes_the_context_and_says_so_in_the_audit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path, transcript(5))
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    try:
        report = ingestor.ingest_text(SOURCE, transcript(6), options())
        # The fifth exchange is a duplicate whose context gained the sixth's words
        assert (report.status, report.chunks, report.duplicates) == ("ingested", 1, 5)
        assert store.audit()[0].detail["refreshed"] == 1
        # and the same file again writes nothing
        again = ingestor.ingest_text(SOURCE, transcript(6), options())
        assert (again.status, again.chunks, again.duplicates) == ("unchanged", 0, 6)
    finally:
        store.close()


def test_a_refreshed_drawer_keeps_its_room_and_its_vector(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path)
    locks = SourceLock(tmp_path / "locks")
    try:
        Ingestor(store, HashingEmbedder(), locks).ingest_text(
            SOURCE, transcript(2), options(room="alpha")
        )
        # Sent again grown, with no room given (the one inferred is another), by a start
        # whose embedder did not load
        Ingestor(store, None, locks).ingest_text(SOURCE, transcript(3), options())
        with sqlite3.connect(path) as connection:
            live = connection.execute(
                "SELECT d.id, d.room, v.rowid IS NOT NULL FROM drawers d "
                "LEFT JOIN vectors v ON v.rowid = d.rowid "
                "WHERE d.deleted_at IS NULL AND d.source_file = ? ORDER BY d.rowid",
                (SOURCE,),
            ).fetchall()
        # The two stored before keep their room (their ids name it) and their vectors;
        # the new exchange, stored with no embedder running, has none (and joins them)
        assert [(room, vector) for _id, room, vector in live] == [
            ("alpha", True),
            ("alpha", True),
            ("alpha", False),
        ]
        assert all(f"_{room}_" in drawer for drawer, room, _vector in live)
    finally:
        store.close()


def test_each_writers_own_drawer_of_a_shared_source_takes_the_new_context(
    tmp_path: Path,
) -> None:
    # Two writers who may not read each other's drawers each store the same transcript
    # (under ids of their own); when it grows, the first writer's own drawers are its
    # stored chunks, not the other's drawers at the same places.
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    alice = options(identity="alice", readers=("ops",), roles=frozenset({"ops"}))
    bob = options(identity="bob", roles=frozenset({"dev"}))
    try:
        ingestor.ingest_text(SOURCE, transcript(2), alice)
        ingestor.ingest_text(SOURCE, transcript(2), bob)
        grown = ingestor.ingest_text(SOURCE, transcript(3), alice)
        assert (grown.chunks, grown.replaced) == (1, 0)
        with sqlite3.connect(path) as connection:
            rows = connection.execute(
                "SELECT identity, coalesce(context, '') FROM drawers "
                "WHERE deleted_at IS NULL AND source_file = ? AND chunk_index = 1",
                (SOURCE,),
            ).fetchall()
        assert EXCHANGES[2][0] in dict(rows)["alice"]
    finally:
        store.close()


def live_rows(path: Path) -> list[tuple[str, str, str | None, int]]:
    """(room, content, readers, chunk index) of the source's live drawers, in source order."""
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "SELECT room, content, readers, chunk_index FROM drawers "
            "WHERE deleted_at IS NULL AND source_file = ? ORDER BY chunk_index",
            (SOURCE,),
        ).fetchall()


def test_a_room_given_again_moves_the_stored_chunks_of_the_source(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    try:
        ingestor.ingest_text(SOURCE, transcript(3), options(room="alpha"))
        before = live_rows(path)
        report = ingestor.ingest_text(SOURCE, transcript(3), options(room="beta"))
        assert (report.status, report.chunks, report.replaced) == ("ingested", 3, 3)
        after = live_rows(path)
        assert [row[0] for row in after] == ["beta"] * 3
        assert [row[1:] for row in after] == [row[1:] for row in before]
        # Found in the new room only, and the same command again writes nothing
        found = store.lexical(["kafka"], DrawerFilter(rooms=("alpha",)), 10)
        assert not found
        assert store.lexical(["kafka"], DrawerFilter(rooms=("beta",)), 10)
        again = ingestor.ingest_text(SOURCE, transcript(3), options(room="beta"))
        assert again.status == "unchanged"
        # An ingest that gives no room leaves them where they are
        inferred = ingestor.ingest_text(SOURCE, transcript(3), options())
        assert inferred.status == "unchanged"
        assert [row[0] for row in live_rows(path)] == ["beta"] * 3
        # Back to the first room: its retired drawers are stored again
        back = ingestor.ingest_text(SOURCE, transcript(3), options(room="alpha"))
        assert (back.chunks, back.replaced) == (3, 3)
        assert [row[0] for row in live_rows(path)] == ["alpha"] * 3
        assert fts_consistent(path)
    finally:
        store.close()


def test_a_chunk_new_in_a_source_joins_the_room_its_stored_chunks_are_in(
    tmp_path: Path,
) -> None:
    # Every chunk of a file shares one room: a re-ingest that names none (as the watcher's
    # always is) puts a new or changed chunk where the source's stored chunks are, not in
    # the room inferred now from its directory or an edited taxonomy.
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    try:
        ingestor.ingest_text(SOURCE, transcript(2), options(room="ops"))
        grown = ingestor.ingest_text(SOURCE, transcript(3), options())
        assert (grown.room, grown.chunks) == ("ops", 1)
        assert [row[0] for row in live_rows(path)] == ["ops"] * 3
        store.set_taxonomy(
            TaxonomyEntry("streaming", ("kafka",)), AuditEntry("tester", "test", "taxonomy")
        )
        again = ingestor.ingest_text(SOURCE, transcript(4), options())
        assert again.room == "ops" and [row[0] for row in live_rows(path)] == ["ops"] * 4
        # A dry run says the same room; a source stored nowhere yet takes the taxonomy's
        dry = ingestor.ingest_text(SOURCE, transcript(5), options(dry_run=True))
        other = ingestor.ingest_text("other/" + SOURCE, transcript(2), options())
        assert (dry.room, other.room) == ("ops", "streaming")
        # A room given moves the whole source, as before
        moved = ingestor.ingest_text(SOURCE, transcript(4), options(room="infra"))
        assert moved.room == "infra" and [row[0] for row in live_rows(path)] == ["infra"] * 4
    finally:
        store.close()


def test_readers_given_again_apply_to_the_stored_chunks_of_the_source(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    dev = DrawerFilter(roles=frozenset({"dev"}))
    try:
        ingestor.ingest_text(SOURCE, transcript(3), options())
        assert store.lexical(["kafka"], dev, 10)
        # Sent again, unchanged, to narrow who reads it: no chunk stays readable to all
        narrowed = ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",)))
        assert narrowed.status == "ingested"
        assert [json.loads(row[2]) for row in live_rows(path)] == [["lead"]] * 3
        assert not store.lexical(["kafka"], dev, 10)
        assert store.lexical(["kafka"], DrawerFilter(roles=frozenset({"lead"})), 10)
        assert store.audit()[0].detail["refreshed"] == 3
        # The same readers again write nothing; naming none leaves them as they are
        same = ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead",)))
        none = ingestor.ingest_text(SOURCE, transcript(3), options())
        assert (same.status, none.status) == ("unchanged", "unchanged")
        assert [json.loads(row[2]) for row in live_rows(path)] == [["lead"]] * 3
        # Widening is as explicit: given readers that include dev, dev reads it again
        ingestor.ingest_text(SOURCE, transcript(3), options(readers=("lead", "dev")))
        assert store.lexical(["kafka"], dev, 10)
        assert fts_consistent(path)
    finally:
        store.close()


def test_a_chunk_moved_to_a_given_room_keeps_its_readers_and_importance(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    dev = DrawerFilter(roles=frozenset({"dev"}))
    try:
        first = options(room="alpha", readers=("lead",), importance=4)
        ingestor.ingest_text(SOURCE, transcript(3), first)
        assert not store.lexical(["kafka"], dev, 10)
        # Only the room changes: nothing is widened by omission
        moved = ingestor.ingest_text(SOURCE, transcript(3), options(room="beta"))
        assert moved.status == "ingested"
        assert [(r[0], json.loads(r[2])) for r in live_rows(path)] == [("beta", ["lead"])] * 3
        assert not store.lexical(["kafka"], dev, 10)
        assert {d.importance for b in store.iter_live(100) for d in b if d.room == "beta"} == {4}
        # Readers given with the move are the ones it takes
        ingestor.ingest_text(SOURCE, transcript(3), options(room="gamma", readers=("dev",)))
        assert [(r[0], json.loads(r[2])) for r in live_rows(path)] == [("gamma", ["dev"])] * 3
    finally:
        store.close()


def test_importance_given_again_applies_to_the_stored_chunks_of_the_source(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))

    def importances() -> set[int]:
        return {d.importance for b in store.iter_live(100) for d in b if d.source_file == SOURCE}

    try:
        ingestor.ingest_text(SOURCE, transcript(3), options())
        assert importances() == {0}
        # Sent again, unchanged, to raise it: every stored chunk takes the importance
        raised = ingestor.ingest_text(SOURCE, transcript(3), options(importance=4))
        assert raised.status == "ingested"
        assert importances() == {4}
        assert store.audit()[0].detail["refreshed"] == 3
        # The same importance again, or none, writes nothing and keeps it
        same = ingestor.ingest_text(SOURCE, transcript(3), options(importance=4))
        none = ingestor.ingest_text(SOURCE, transcript(3), options())
        assert (same.status, none.status) == ("unchanged", "unchanged")
        assert importances() == {4}
        # A given 0 is given: it lowers them, and an appended exchange takes it too
        ingestor.ingest_text(SOURCE, transcript(4), options(importance=0))
        assert importances() == {0} and len(live_rows(path)) >= 4
        # A move to a given room with an importance takes that importance
        ingestor.ingest_text(SOURCE, transcript(4), options(room="beta", importance=2))
        assert importances() == {2}
        assert fts_consistent(path)
    finally:
        store.close()


def test_a_diary_entry_written_again_keeps_its_importance(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    store = ingest(path)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    try:
        ingestor.ingest_text(SOURCE, transcript(2), options(importance=3))
        again = ingestor.ingest_text(
            SOURCE, transcript(2), options(importance=5, keeps_importance=True)
        )
        assert again.status == "unchanged"
        stored = {d.importance for b in store.iter_live(100) for d in b if d.source_file == SOURCE}
        assert stored == {3}
    finally:
        store.close()
