"""The SQLite drawer store: one transaction per write, FTS and vectors kept with the
drawers, soft delete and purge, embedder records, schema versions, role hiding."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlite_contention import contended_connections, journal_mode

from memhubd.recall.ids import content_hash, drawer_id
from memhubd.recall.store import (
    CURRENT_VERSION,
    AuditEntry,
    DrawerFilter,
    DrawerStore,
    EmbedderRecord,
    NewDrawer,
    SchemaTooNew,
    VectorsUnavailable,
    open_store,
)
from memhubd.recall.store.sqlite import DELETED_OF_SOURCE, fts_query

EMBEDDER = EmbedderRecord("unit", 4)
AUDIT = AuditEntry("tester", "test", "ingest")


def drawer(content: str, index: int = 0, **changes: object) -> NewDrawer:
    values: dict[str, object] = {
        "id": drawer_id("ws", str(changes.get("room", "r")), content),
        "room": "r",
        "content": content,
        "source_file": "notes.txt",
        "source_kind": "text",
        "chunk_index": index,
        "content_hash": content_hash(content),
        "identity": "tester",
    }
    values.update(changes)
    return NewDrawer(**values)  # type: ignore[arg-type]


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def seed(store: DrawerStore) -> list[NewDrawer]:
    drawers = [
        drawer("the webhook worker retries with jittered backoff", 0),
        drawer("ledger amounts are integer cents", 1),
        drawer("vacuum settings for the invoices table", 2, room="db"),
    ]
    vectors = np.stack([unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0)])
    store.write(drawers, vectors, EMBEDDER, AUDIT)
    return drawers


def ids(store: DrawerStore, rows: list) -> list[str]:
    found = store.get([r.rowid for r in rows])
    return [found[r.rowid].id for r in rows]


def test_a_write_is_searchable_by_bm25_and_by_vector(store: DrawerStore) -> None:
    drawers = seed(store)
    assert ids(store, store.lexical(["cents"], DrawerFilter(), 10)) == [drawers[1].id]
    nearest = store.nearest(unit(0, 0.9, 0.1, 0), EMBEDDER, DrawerFilter(), 2)
    assert ids(store, nearest) == [drawers[1].id, drawers[2].id]


def test_user_text_is_never_read_as_fts_syntax(store: DrawerStore) -> None:
    seed(store)
    assert fts_query(['say "hi"', "NOT", "a*"]) == '"say ""hi""" OR "NOT" OR "a*"'
    # Operators, quotes and parentheses are just words: no FTS5 syntax error.
    assert store.lexical(['"', "OR", "(", "NEAR/2", "cents)"], DrawerFilter(), 10)


def test_soft_delete_hides_from_every_signal_and_purge_removes(store: DrawerStore) -> None:
    drawers = seed(store)
    assert store.soft_delete(drawers[1].id, AuditEntry("tester", "test", "delete"))
    assert store.lexical(["cents"], DrawerFilter(), 10) == []
    nearest = store.nearest(unit(0, 1, 0, 0), EMBEDDER, DrawerFilter(), 3)
    assert drawers[1].id not in ids(store, nearest)
    assert store.get_by_id(drawers[1].id) is None
    assert store.get_by_id(drawers[1].id, include_deleted=True) is not None
    assert store.soft_delete(drawers[1].id, AUDIT) is None  # already deleted
    assert store.purge(None, AuditEntry("admin", "test", "purge")) == 1
    assert store.get_by_id(drawers[1].id, include_deleted=True) is None
    assert store.status().deleted_count == 0


def test_purge_before_compares_times_not_text(store: DrawerStore) -> None:
    drawers = seed(store)
    store.soft_delete(drawers[0].id, AUDIT)
    deleted_at = store.get_by_id(drawers[0].id, include_deleted=True).deleted_at  # type: ignore[union-attr]
    assert store.purge(deleted_at, AUDIT) == 0  # deleted at, not before
    assert store.purge(deleted_at + 1, AUDIT) == 1


def test_every_write_is_audited_with_its_identity_and_door(store: DrawerStore) -> None:
    drawers = seed(store)
    store.soft_delete(drawers[0].id, AuditEntry("ana", "mcp", "delete", {"drawer_id": "x"}))
    entries = store.audit()
    assert [(e.identity, e.door, e.action) for e in entries] == [
        ("ana", "mcp", "delete"),
        ("tester", "test", "ingest"),
    ]


def test_vectors_of_another_embedder_refuse_vector_search(store: DrawerStore) -> None:
    seed(store)
    other = EmbedderRecord("other-model", 4)
    with pytest.raises(VectorsUnavailable, match="reindex"):
        store.nearest(unit(1, 0, 0, 0), other, DrawerFilter(), 3)
    with pytest.raises(VectorsUnavailable):
        store.write([drawer("new text", 9)], np.stack([unit(1, 1, 0, 0)]), other, AUDIT)
    assert store.get_by_id(drawer("new text", 9).id) is None  # nothing half-written


def test_reindex_swaps_every_vector_at_once(store: DrawerStore) -> None:
    seed(store)
    other = EmbedderRecord("other-model", 2)
    live = [d for batch in store.iter_live(10) for d in batch]
    store.stage_vectors([d.rowid for d in live], np.tile(unit(1, 0), (len(live), 1)), first=True)
    assert store.embedder() == EMBEDDER  # staged vectors are not used yet
    assert store.commit_vectors(other, AuditEntry("admin", "test", "reindex")) == 3
    assert store.embedder() == other
    assert len(store.nearest(unit(1, 0), other, DrawerFilter(), 10)) == 3


def test_filters_and_reader_roles_apply_to_both_retrievers(store: DrawerStore) -> None:
    secret = drawer("cents secret plan", 5, readers=("finance",))
    store.write([secret], np.stack([unit(0, 1, 0, 0)]), EMBEDDER, AUDIT)
    seed(store)
    outsider = DrawerFilter(roles=frozenset({"support"}))
    insider = DrawerFilter(roles=frozenset({"finance"}))
    assert secret.id not in ids(store, store.lexical(["cents"], outsider, 10))
    assert secret.id in ids(store, store.lexical(["cents"], insider, 10))
    probe = unit(0, 1, 0, 0)
    assert secret.id not in ids(store, store.nearest(probe, EMBEDDER, outsider, 10))
    assert secret.id in ids(store, store.nearest(probe, EMBEDDER, insider, 10))
    rooms = DrawerFilter(rooms=("db",))
    assert ids(store, store.nearest(probe, EMBEDDER, rooms, 10)) == [
        drawer("vacuum settings for the invoices table", 2, room="db").id
    ]


def test_a_newer_schema_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    open_store(path).close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(f"PRAGMA user_version = {CURRENT_VERSION + 1}")
    # As a backup leaves it (rollback journal), so that a switch to WAL would show too.
    connection.execute("PRAGMA journal_mode = DELETE")
    connection.close()
    before = path.read_bytes()
    with pytest.raises(SchemaTooNew, match="newer memhub"):
        open_store(path)
    assert path.read_bytes() == before  # refused and never changed: a rollback keeps it


def test_reopening_keeps_drawers_and_runs_no_migration_twice(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    first = open_store(path)
    seed(first)
    first.close()
    again = open_store(path)
    assert again.schema_version == CURRENT_VERSION
    assert again.status().drawer_count == 3
    again.close()


def test_a_second_connection_sees_writes_of_another_process(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    reader, writer = open_store(path), open_store(path)
    seed(reader)
    assert len(reader.nearest(unit(1, 1, 1, 0), EMBEDDER, DrawerFilter(), 10)) == 3
    writer.write([drawer("fresh words", 7)], np.stack([unit(0, 0, 0, 1)]), EMBEDDER, AUDIT)
    nearest = reader.nearest(unit(0, 0, 0, 1), EMBEDDER, DrawerFilter(), 1)
    assert ids(reader, nearest) == [drawer("fresh words", 7).id]
    writer.soft_delete(drawer("fresh words", 7).id, AUDIT)
    nearest = reader.nearest(unit(0, 0, 0, 1), EMBEDDER, DrawerFilter(), 10)
    assert drawer("fresh words", 7).id not in ids(reader, nearest)
    reader.close()
    writer.close()


def test_a_version_1_store_is_migrated_with_its_index_rebuilt(tmp_path: Path) -> None:
    from memhubd.recall.store import schema

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        for statement in schema.MIGRATIONS[0]:
            connection.execute(statement)
        connection.execute("PRAGMA user_version = 1")
        for rowid, text, deleted in ((1, "kept ledger cents", None), (2, "gone ledger", 5)):
            connection.execute(
                "INSERT INTO drawers (rowid, id, room, content, source_file, source_kind, "
                "chunk_index, content_hash, created_at, updated_at, deleted_at, identity) "
                "VALUES (?, ?, 'r', ?, 'f', 'text', 0, 'h', 1, 1, ?, 't')",
                (rowid, f"d{rowid}", text, deleted),
            )
    store = open_store(path)
    assert store.schema_version == CURRENT_VERSION == 9
    assert [r.rowid for r in store.lexical(["ledger"], DrawerFilter(), 10)] == [1]
    store.write([drawer("plain words", 3, context="the neighbouring zebra")], None, None, AUDIT)
    (hit,) = store.lexical(["zebra"], DrawerFilter(), 10)
    assert store.get([hit.rowid])[hit.rowid].content == "plain words"  # context is not content
    store.close()


def test_context_words_count_less_than_content_words(store: DrawerStore) -> None:
    store.write(
        [
            drawer("the walrus ate", 0),
            drawer("something else entirely", 1, context="the walrus ate"),
        ],
        None,
        None,
        AUDIT,
    )
    ranked = ids(store, store.lexical(["walrus"], DrawerFilter(), 10))
    assert ranked == [drawer("the walrus ate", 0).id, drawer("something else entirely", 1).id]


def fts_consistent(path: Path) -> list[int]:
    """The rowids the FTS index holds (after FTS5's own check of its structure), which
    must be exactly the live drawers'."""
    with sqlite3.connect(path) as connection:
        connection.execute("INSERT INTO drawers_fts (drawers_fts) VALUES ('integrity-check')")
        connection.execute(
            "CREATE VIRTUAL TABLE temp.postings USING fts5vocab(main, drawers_fts, instance)"
        )
        indexed = connection.execute("SELECT DISTINCT doc FROM postings ORDER BY doc").fetchall()
        live = connection.execute(
            "SELECT rowid FROM drawers WHERE deleted_at IS NULL ORDER BY rowid"
        ).fetchall()
    assert [r[0] for r in indexed] == [r[0] for r in live]
    return [r[0] for r in indexed]


def test_the_index_holds_exactly_the_live_drawers_after_writes_replaces_and_duplicates(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.db"
    store = open_store(path)
    seed(store)
    # Given a write that repeats a stored drawer, repeats one of its own, and replaces one
    again = drawer("ledger amounts are integer cents", 1)
    fresh = drawer("the zebra crossing is repainted", 3, speaker="Ann", context="said on Monday")
    (stale,) = [r.rowid for r in store.lexical(["webhook"], DrawerFilter(), 10)]
    outcome = store.write([again, fresh, fresh], None, None, AUDIT, replace=[stale])
    # Then only the new drawer was indexed, the replaced one left the index
    assert outcome.inserted == (fresh.id,)
    assert len(fts_consistent(path)) == 3
    assert store.lexical(["webhook"], DrawerFilter(), 10) == []
    assert len(store.lexical(["zebra"], DrawerFilter(), 10)) == 1
    assert len(store.lexical(["monday"], DrawerFilter(), 10)) == 1  # context is indexed
    assert len(store.lexical(["ann"], DrawerFilter(), 10)) == 1  # and the speaker
    store.soft_delete(fresh.id, AUDIT)
    assert len(fts_consistent(path)) == 2
    store.close()


def store_at(path: Path, version: int) -> sqlite3.Connection:
    """A connection to a new store at `path` as schema `version` wrote it (commits on
    leaving its `with`)."""
    from memhubd.recall.store import schema

    connection = sqlite3.connect(path)
    for migration in schema.MIGRATIONS[:version]:
        for statement in migration:
            connection.execute(statement)
    connection.execute(f"PRAGMA user_version = {version}")
    return connection


def test_a_version_3_store_keeps_its_index_and_indexes_new_writes(tmp_path: Path) -> None:

    # Given a store written by version 3, whose insert trigger indexed its drawers
    path = tmp_path / "v3.db"
    with store_at(path, 3) as connection:
        connection.execute(
            "INSERT INTO drawers (id, room, content, source_file, source_kind, chunk_index, "
            "content_hash, created_at, updated_at, identity, context) "
            "VALUES ('d1', 'r', 'old ledger cents', 'f', 'text', 0, 'h', 1, 1, 't', 'walrus')"
        )
    # When the current version opens it and writes
    store = open_store(path)
    assert store.schema_version == CURRENT_VERSION
    store.write([drawer("new ledger lines", 5)], None, None, AUDIT)
    # Then old and new drawers are found, each once, and the index matches the drawers
    assert len(store.lexical(["ledger"], DrawerFilter(), 10)) == 2
    assert len(store.lexical(["walrus"], DrawerFilter(), 10)) == 1
    assert len(fts_consistent(path)) == 2
    store.close()
    with sqlite3.connect(path) as connection:
        triggers = [
            r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='trigger'")
        ]
    assert sorted(triggers) == ["drawers_fts_delete", "drawers_fts_soft_delete"]


def test_copies_recorded_by_a_version_8_store_are_kept_with_their_readers_unknown(
    tmp_path: Path,
) -> None:
    # Given a store written by version 8: a note's two drawers, one held also by a file
    # with a chunk of the writer's own, the other by a file holding nothing else
    path = tmp_path / "v8.db"
    with store_at(path, 8) as connection:
        for rowid, source, index in ((1, "note.md", 0), (2, "note.md", 1), (3, "mixed.md", 0)):
            connection.execute(
                "INSERT INTO drawers (rowid, id, room, content, source_file, source_kind, "
                "chunk_index, content_hash, created_at, updated_at, identity) "
                "VALUES (?, ?, 'r', ?, ?, 'text', ?, 'h', 1, 1, 'alice')",
                (rowid, f"d{rowid}", f"words of drawer {rowid}", source, index),
            )
        connection.execute(
            "INSERT INTO drawers_fts (rowid, content, speaker, context) "
            "SELECT rowid, content, '', '' FROM drawers"
        )
        connection.execute(
            "INSERT INTO drawer_copies (source_file, identity, drawer, chunk_index, locator, "
            "source_kind) VALUES ('mixed.md', 'alice', 1, 1, '', 'text'), "
            "('aside.md', 'alice', 2, 0, '', 'text')"
        )
    # When the current version opens it
    store = open_store(path)
    assert store.schema_version == CURRENT_VERSION == 9
    # Then the copies are kept, with no readers known
    kept = store.copies_of_source("mixed.md") | store.copies_of_source("aside.md")
    assert {(c.drawer, c.readers, c.readers_known) for c in kept} == {
        (1, None, False),
        (2, None, False),
    }
    # and when the note drops both drawers, the file with a chunk of the writer's own
    # takes its drawer by its chunk's readers, while the file of copies only takes none
    assert store.copy_sources([1, 2]) == {1: {"mixed.md"}}
    outcome = store.write([], None, None, AUDIT, replace=[1, 2])
    assert (outcome.handed, outcome.replaced) == (("d1",), ("d2",))
    # and a copy written back as it was read stays unknown
    store.set_copies("aside.md", store.copies_of_source("aside.md"))
    assert [c.readers_known for c in store.copies_of_source("aside.md")] == [False]
    store.close()


def test_a_store_opened_as_another_process_switches_it_to_wal_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = contended_connections(monkeypatch, refusals=2)

    store = open_store(tmp_path / "ws.db")

    assert len(refused) == 2
    assert store.schema_version == CURRENT_VERSION
    store.close()
    assert journal_mode(monkeypatch, tmp_path / "ws.db") == "wal"


def test_a_store_locked_past_the_busy_timeout_is_refused_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.recall.store import StoreError
    from memhubd.recall.store import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 50)
    contended_connections(monkeypatch, refusals=10**9)

    with pytest.raises(StoreError, match="not a usable recall store: database is locked"):
        open_store(tmp_path / "ws.db")


def test_drawers_retired_before_v5_are_told_from_drawers_deleted_on_purpose(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before v5 both were only soft-deleted: the audit names the ones deleted on purpose,
    and every other one was retired by its source (and may come back with it)."""

    path = tmp_path / "v4.db"
    with store_at(path, 4) as connection:
        for rowid, name in ((1, "live"), (2, "retired"), (3, "deleted")):
            connection.execute(
                "INSERT INTO drawers (rowid, id, room, content, source_file, source_kind, "
                "chunk_index, content_hash, created_at, updated_at, deleted_at, identity) "
                "VALUES (?, ?, 'r', ?, 'f', 'text', ?, 'h', 1, 1, ?, 't')",
                (rowid, name, f"{name} words", rowid, None if name == "live" else 5),
            )
        connection.execute(
            "INSERT INTO audit (at, identity, door, action, detail) "
            "VALUES (5, 'ann', 'api', 'delete', ?)",
            (json.dumps({"drawer_id": "deleted", "source": "f"}),),
        )
    store = open_store(path)
    assert store.schema_version == CURRENT_VERSION
    store.close()
    with sqlite3.connect(path) as connection:
        retired = dict(connection.execute("SELECT id, retired FROM drawers").fetchall())
    assert retired == {"live": 0, "retired": 1, "deleted": 0}


def test_a_store_too_new_is_said_in_one_sentence_with_where_to_look(tmp_path: Path) -> None:
    from memhubd.service.access import state_database_failure

    path = tmp_path / "ws.db"
    open_store(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {CURRENT_VERSION + 1}")
    with pytest.raises(SchemaTooNew) as refused:
        open_store(path)
    said = state_database_failure(refused.value)
    assert said is not None and ".;" not in said.message
    assert said.message.endswith("to start an empty store; see the daemon log")


@pytest.mark.parametrize(
    ("blocker", "reason"),
    [("ws.db", "is a directory"), ("recall", "not a directory (recall)")],
    ids=["a directory in its place", "a file in its directory's place"],
)
def test_a_store_that_cannot_be_opened_for_writing_is_unusable_with_the_reason(
    tmp_path: Path, blocker: str, reason: str
) -> None:
    """As on a read-only file system (which tests cannot mount): the system refuses the
    file, for root too, and the doors answer that the workspace's store is unavailable."""
    from memhub_protocol import ErrorCode
    from memhubd.recall.store import StoreError
    from memhubd.service.access import state_database_failure

    # Given something in the way of the store's file
    if blocker == "ws.db":
        (tmp_path / "recall" / "ws.db").mkdir(parents=True)
    else:
        (tmp_path / "recall").write_text("a file where the recall directory goes")
    # When the store is opened
    with pytest.raises(StoreError) as refused:
        open_store(tmp_path / "recall" / "ws.db")
    # Then it is refused as unusable, naming the file in the state dir and the reason
    said = state_database_failure(refused.value)
    assert said is not None and said.code == ErrorCode.WORKSPACE_UNAVAILABLE
    assert f"cannot be opened for writing: {reason}" in said.message
    assert str(tmp_path) not in said.message


def _fill_delete_and_purge(path: Path) -> tuple[int, int, list[str]]:
    """A store at `path` given 8 MB of drawers and a few to keep, all but those deleted
    and purged: its file size before and after the purge, and the kept ones' ids."""
    store = open_store(path)
    try:
        bulky = [drawer(f"bulk {i} " + "ledger line " * 1700, i) for i in range(400)]
        kept = [drawer("keep the webhook notes", 1000), drawer("keep the ledger cents", 1001)]
        store.write(bulky + kept, None, None, AUDIT)
        for item in bulky:
            store.soft_delete(item.id, AUDIT)
        before = path.stat().st_size
        assert store.purge(None, AuditEntry("admin", "test", "purge")) == len(bulky)
        assert store.reclaim() > 8_000_000
        assert store.reclaim() == 0  # nothing more worth giving back
        assert [store.get_by_id(k.id).id for k in kept] == [k.id for k in kept]  # type: ignore[union-attr]
        assert len(store.lexical(["keep"], DrawerFilter(), 10)) == 2
        # A write after it lands as any other
        store.write([drawer("after the purge", 2000)], None, None, AUDIT)
        assert len(store.lexical(["purge"], DrawerFilter(), 10)) == 1
    finally:
        store.close()
    assert len(fts_consistent(path)) == 3
    return before, path.stat().st_size, [k.id for k in kept]


def test_a_purge_gives_the_freed_space_back_to_the_file_system(tmp_path: Path) -> None:
    before, after, _ = _fill_delete_and_purge(tmp_path / "ws.db")
    assert before > 8_000_000 and after < 2_500_000


def test_a_store_made_without_incremental_vacuum_is_compacted_at_its_purge(
    tmp_path: Path,
) -> None:
    # Given a store whose file was made before stores were made for incremental vacuum
    path = tmp_path / "old.db"
    with store_at(path, CURRENT_VERSION) as connection:
        assert connection.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    before, after, _ = _fill_delete_and_purge(path)
    assert before > 8_000_000 and after < 2_500_000
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # switched


def test_status_counts_are_read_at_one_moment_while_writes_go_on(tmp_path: Path) -> None:
    import threading

    store = open_store(tmp_path / "ws.db")
    stop = threading.Event()

    def write() -> None:
        number = 0
        while not stop.is_set():
            batch = [drawer(f"note {number} {i}", number * 10 + i) for i in range(5)]
            store.write(batch, None, None, AUDIT)
            number += 1

    writer = threading.Thread(target=write)
    writer.start()
    dev = DrawerFilter(roles=frozenset({"dev"}))
    try:
        for _ in range(300):
            whole = store.status()
            assert sum(count for _room, count in whole.rooms) == whole.drawer_count
        for _ in range(100):
            mine = store.status(dev)
            assert sum(count for _room, count in mine.rooms) <= mine.drawer_count
            assert mine.vector_count == 0 and mine.deleted_count == 0
    finally:
        stop.set()
        writer.join()
        store.close()


def test_rooms_with_says_which_rooms_a_caller_finds_anything_in(store: DrawerStore) -> None:
    store.write(
        [
            drawer("open notes", 0, room="alpha"),
            drawer("ops only", 1, room="beta", readers=("ops",)),
            drawer("gone soon", 2, room="gamma"),
        ],
        None,
        None,
        AUDIT,
    )
    store.soft_delete(drawer("gone soon", 2, room="gamma").id, AUDIT)
    asked = ("alpha", "beta", "gamma", "delta")
    assert store.rooms_with(DrawerFilter(rooms=asked)) == {"alpha", "beta"}
    assert store.rooms_with(DrawerFilter(rooms=asked, roles=frozenset({"dev"}))) == {"alpha"}
    assert store.rooms_with(DrawerFilter(rooms=asked, roles=frozenset({"ops"}))) == {
        "alpha",
        "beta",
    }


def test_a_sources_deleted_drawers_are_found_through_an_index_not_a_scan(tmp_path: Path) -> None:
    # A watched source read again at each append asks for them: never a scan of the table
    store = open_store(tmp_path / "ws.db")
    store.close()
    with sqlite3.connect(tmp_path / "ws.db") as connection:
        plan = connection.execute(
            f"EXPLAIN QUERY PLAN {DELETED_OF_SOURCE}", ("claude/s.jsonl",)
        ).fetchall()
    assert any("USING INDEX drawers_deleted_source" in row[3] for row in plan), plan


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_state_file_the_machine_refuses_is_an_unavailable_store_naming_it(code: int) -> None:
    from memhub_protocol import ErrorCode
    from memhubd.service.access import state_database_failure

    # Given an ingest lock file the system will not make (a full or read-only disk)
    refused = OSError(code, os.strerror(code), "/srv/state/recall/locks/team/629ad8eda750.lock")
    said = state_database_failure(refused)
    # Then the doors answer the workspace unavailable, naming the file and the reason
    assert said is not None and said.code == ErrorCode.WORKSPACE_UNAVAILABLE
    assert said.message.startswith(f"team/629ad8eda750.lock: {os.strerror(code)}")
    # And an error of the request's own is not taken for the machine's
    assert state_database_failure(FileNotFoundError(errno.ENOENT, "gone", "x")) is None


def test_a_store_refused_on_a_full_disk_says_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd import sqlite as state_sqlite
    from memhubd.recall.store.base import UnusableStore

    class Full:
        f_bavail, f_frsize = 3, 4096

    # Given the disk holding an intact store is full
    monkeypatch.setattr(state_sqlite.os, "statvfs", lambda _path: Full())
    said = str(UnusableStore(tmp_path / "recall" / "team.db", "not a usable recall store: x"))
    # Then the store is not called unusable without a word on the disk
    assert said.startswith("recall/team.db: not a usable recall store: x (the disk")
    assert "may well be intact" in said and "before moving anything aside" in said
    # And with room on the disk the message is as it was
    monkeypatch.undo()
    assert str(UnusableStore(tmp_path / "team.db", "p")) == f"{tmp_path.name}/team.db: p"
