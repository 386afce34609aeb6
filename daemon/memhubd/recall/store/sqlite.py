"""The SQLite drawer store: one WAL database per workspace.

One writer connection behind a lock (SQLite's own lock and busy timeout serialise
writers of other processes); readers use a small pool of their own connections and
never wait for a writer. Vectors are float32 blobs, searched with numpy over an
in-memory index (`recall.vectors`: exact below 20,000 vectors, IVF above) that follows
other connections' commits via `PRAGMA data_version`; BM25 is ranked from memory too
(`store.bm25`), exactly as FTS5 ranks it, with FTS5 answering whenever that index cannot.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from memhubd.recall.context import leave_out
from memhubd.recall.store import schema
from memhubd.recall.store.base import (
    CONTEXT_WEIGHT,
    AuditEntry,
    Copy,
    Drawer,
    DrawerFilter,
    DrawerStore,
    EmbedderRecord,
    Existing,
    Facets,
    IndexWarming,
    NewDrawer,
    NewTriple,
    PeriodsOverlap,
    RankedRow,
    SchemaTooNew,
    StoreStatus,
    TaxonomyEntry,
    Triple,
    TripleFilter,
    TripleStats,
    UnusableStore,
    VectorsUnavailable,
    WriteOutcome,
)
from memhubd.recall.store.bm25 import Column as _Column
from memhubd.recall.store.bm25 import LexicalCache
from memhubd.recall.store.readers import ReaderGroups
from memhubd.recall.vectors import VectorIndex
from memhubd.sqlite import into_wal, private_database

log = structlog.get_logger("memhubd.recall.store")

BUSY_TIMEOUT_MS = 30_000
# How long a search by a caller of limited roles waits, in its search slot, for the
# in-memory BM25 index being built (the service waits longer before taking the slot).
SETTLE_FOR_ROLES_S = 2.0
READERS = 4
# The WAL file is cut back to this size when a checkpoint lets it start again: without
# a limit it keeps the size of the largest write ever made (a bulk ingest: hundreds of MB).
WAL_KEPT_BYTES = 64 * 1024 * 1024
# A purge gives the file's free pages back to the file system once they are at least
# this many bytes and a quarter of the file: a store is no bigger than what it holds.
RECLAIM_MIN_BYTES = 4 * 1024 * 1024
_INCREMENTAL = 2  # PRAGMA auto_vacuum's value for INCREMENTAL
_COLUMNS = (
    "rowid, id, room, content, source_file, source_kind, chunk_index, importance, "
    "content_hash, locator, speaker, said_at, created_at, updated_at, deleted_at, "
    "identity, readers"
)
_TRIPLE_COLUMNS = (
    "rowid, id, subject, predicate, object, valid_from, valid_to, confidence, source_drawer, "
    "identity, created_at"
)
_EMBEDDER_NAME = "embedder_name"
_EMBEDDER_DIMENSION = "embedder_dimension"
_VECTOR_EPOCH = "vector_epoch"  # bumped when vectors vanish other than by soft delete
_LOAD_BATCH = 50_000  # vectors read per step, bounding the bytes held twice while loading


def _triple(row: Any) -> Triple:
    """A `triples` row as a Triple. A REAL column's value comes back from `RETURNING`
    before its affinity is applied (1.0 as the integer 1): made a float here."""
    values = list(row)
    values[7] = float(values[7])
    return Triple(*values)


def _now() -> int:
    return int(time.time())


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # WAL + NORMAL: a killed process loses nothing committed (the WAL is in the OS
    # cache); only a power cut may lose the last transactions, never consistency.
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute(f"PRAGMA journal_size_limit = {WAL_KEPT_BYTES}")
    return connection


def _drawer(row: Sequence[Any]) -> Drawer:
    readers = json.loads(row[16]) if row[16] is not None else None
    return Drawer(
        rowid=row[0],
        id=row[1],
        room=row[2],
        content=row[3],
        source_file=row[4],
        source_kind=row[5],
        chunk_index=row[6],
        importance=row[7],
        content_hash=row[8],
        locator=row[9],
        speaker=row[10],
        said_at=row[11],
        created_at=row[12],
        updated_at=row[13],
        deleted_at=row[14],
        identity=row[15],
        readers=tuple(readers) if readers is not None else None,
    )


# A copy's readers when not known (a copy recorded before schema v9): any JSON that is
# no list of roles reads so; this is the migration's default.
_UNKNOWN_READERS = '"unknown"'


def _copy(row: Sequence[Any]) -> Copy:
    """A `drawer_copies` row (drawer, chunk index, locator, kind, writer, readers)."""
    *place, readers = row
    if readers is None:
        return Copy(*place, readers=None, readers_known=True)
    names = json.loads(readers)
    if not isinstance(names, list):
        return Copy(*place, readers=None, readers_known=False)
    return Copy(*place, readers=tuple(names), readers_known=True)


def _copy_readers(copy: Copy) -> str | None:
    """The `readers` column of `copy`, as `_copy` reads it back."""
    if not copy.readers_known:
        return _UNKNOWN_READERS
    return json.dumps(list(copy.readers)) if copy.readers is not None else None


def fts_query(terms: Sequence[str]) -> str:
    """The MATCH expression for `terms`: each a quoted string (inner quotes doubled),
    joined by OR, so no user text is ever read as FTS5 syntax."""
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms if term.strip()]
    return " OR ".join(quoted)


def _where(
    where: DrawerFilter, alias: str = "d", *, deleted: bool = False
) -> tuple[str, list[Any]]:
    """SQL conditions (ANDed, always including liveness, or with `deleted` its
    opposite) and their parameters."""
    clauses = [f"{alias}.deleted_at IS {'NOT ' if deleted else ''}NULL"]
    params: list[Any] = []

    def one_of(column: str, values: Sequence[Any]) -> None:
        clauses.append(f"{alias}.{column} IN ({','.join('?' * len(values))})")
        params.extend(values)

    if where.rooms is not None:
        one_of("room", where.rooms)
    if where.source_kinds is not None:
        one_of("source_kind", where.source_kinds)
    if where.identities is not None:
        one_of("identity", where.identities)
    if where.since is not None:
        clauses.append(f"coalesce({alias}.said_at, {alias}.created_at) >= ?")
        params.append(where.since)
    if where.until is not None:
        clauses.append(f"coalesce({alias}.said_at, {alias}.created_at) < ?")
        params.append(where.until)
    if where.roles is not None:
        roles = sorted(where.roles)
        if roles:
            marks = ",".join("?" * len(roles))
            clauses.append(
                f"({alias}.readers IS NULL OR EXISTS "
                f"(SELECT 1 FROM json_each({alias}.readers) WHERE value IN ({marks})))"
            )
            params.extend(roles)
        else:
            clauses.append(f"{alias}.readers IS NULL")
    return " AND ".join(clauses), params


class _Readers:
    """A bounded pool of read connections (WAL readers never wait for the writer)."""

    def __init__(self, path: Path, size: int) -> None:
        self._path = path
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        self._slots.acquire()
        try:
            with self._lock:
                if self._closed:
                    raise sqlite3.ProgrammingError("the recall store was closed")
                try:
                    connection = self._idle.get_nowait()
                except queue.Empty:
                    connection = None
            if connection is None:
                connection = _connect(self._path)
                connection.execute("PRAGMA query_only = ON")
            try:
                yield connection
            finally:
                with self._lock:
                    # A connection is closed only by the thread that used it, once done:
                    # closing it while another thread runs a statement on it crashes.
                    if self._closed:
                        connection.close()
                    else:
                        self._idle.put(connection)
        finally:
            self._slots.release()

    def close(self) -> None:
        """Close the idle connections now, those in use as their users finish."""
        with self._lock:
            self._closed = True
            while True:
                try:
                    self._idle.get_nowait().close()
                except queue.Empty:
                    break


# Soft-deleted rows stay in the vector cache, masked, until this many are held and they
# are this share of its rows: then it keeps the live rows only. Drawers replaced by a
# re-ingest are soft-deleted, so a watched, edited source adds dead rows for as long as
# the daemon runs (the lexical index is rebuilt by the same rule).
COMPACT_SHARE = 0.25
MIN_COMPACT = 10_000


class _VectorCache:
    """Live drawers' vectors and the columns filters need, as numpy arrays.

    Refreshed lazily: new rows are appended, soft-deleted rows masked (and dropped once
    they are many: `MIN_COMPACT`), and a full reload happens only when the vector epoch
    moved (purge, reindex).
    """

    def __init__(self, path: Path) -> None:
        self._connection = _connect(path)
        self._connection.execute("PRAGMA query_only = ON")
        self.lock = threading.Lock()
        self._data_version: int | None = None
        self._epoch: str | None = None
        self._max_rowid = 0
        self._checked_at = 0
        self.dimension = 0
        self._reset(0)

    def _reset(self, dimension: int) -> None:
        if hasattr(self, "index"):
            self.index.close()
        self.dimension = dimension
        self.rowids = np.zeros(0, dtype=np.int64)
        self.index = VectorIndex(dimension)
        self.rooms = _Column()
        self.kinds = _Column()
        self.identities = _Column()
        # Search's boosts read each candidate's source file and speaker here, not in SQL.
        self.sources_of = _Column()
        self.speakers = _Column()
        self.when = np.zeros(0, dtype=np.int64)
        self.readers = ReaderGroups()  # by position, drawers naming readers
        self.alive = np.zeros(0, dtype=bool)
        self._max_rowid = 0

    def refresh(self, dimension: int) -> None:
        """Bring the arrays up to date with every committed write (call under `lock`)."""
        connection = self._connection
        version = connection.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version and dimension == self.dimension:
            return
        started = _now()
        row = connection.execute(
            "SELECT value FROM meta WHERE key = ?", (_VECTOR_EPOCH,)
        ).fetchone()
        epoch = row[0] if row else "0"
        if epoch != self._epoch or dimension != self.dimension:
            self._reset(dimension)
            self._epoch = epoch
        else:
            self._mask_deleted()
            self._compact_if_due()
        self._append_new()
        self.index.maybe_build()
        self._data_version = version
        self._checked_at = started

    def _mask_deleted(self) -> None:
        # Two seconds of slack: a delete committed in the same second as the last
        # refresh must not be missed (timestamps are whole seconds).
        rows = self._connection.execute(
            "SELECT rowid FROM drawers WHERE deleted_at IS NOT NULL AND deleted_at >= ?",
            (self._checked_at - 2,),
        ).fetchall()
        if rows and len(self.rowids):
            gone = np.fromiter((r[0] for r in rows), dtype=np.int64)
            self.alive &= ~np.isin(self.rowids, gone)

    def _compact_if_due(self) -> None:
        """Keep only the live rows once the dead ones are many. Every array is replaced,
        not changed in place: a caller holding the old ones (`most_similar` reads them
        outside the lock) still has a consistent set."""
        held = len(self.alive)
        live = int(np.count_nonzero(self.alive))
        if held - live <= max(MIN_COMPACT, COMPACT_SHARE * held):
            return
        keep = np.flatnonzero(self.alive)
        renumbered = np.full(held, -1, np.int64)
        renumbered[keep] = np.arange(len(keep))
        index = self.index.compacted(keep)
        self.index.close()
        self.index = index
        self.rowids = self.rowids[keep]
        self.when = self.when[keep]
        self.alive = np.ones(len(keep), dtype=bool)
        for name in ("rooms", "kinds", "identities", "sources_of", "speakers"):
            setattr(self, name, getattr(self, name).taken(keep))
        self.readers = self.readers.renumbered(renumbered)
        log.info("recall vectors compacted", dropped=held - live, kept=live)

    def _append_new(self) -> None:
        cursor = self._connection.execute(
            "SELECT d.rowid, v.vector, d.room, d.source_kind, d.identity, "
            "coalesce(d.said_at, d.created_at), d.readers, d.source_file, d.speaker "
            "FROM drawers d JOIN vectors v ON v.rowid = d.rowid "
            "WHERE d.rowid > ? AND d.deleted_at IS NULL ORDER BY d.rowid",
            (self._max_rowid,),
        )
        while rows := cursor.fetchmany(_LOAD_BATCH):
            self._append(rows)

    def _append(self, rows: list[tuple[Any, ...]]) -> None:
        width = self.dimension * 4
        # A vector of another width cannot be compared; reindex fixes it.
        rows = [row for row in rows if len(row[1]) == width]
        if not rows:
            return
        first = len(self.rowids)
        rowids, blobs, rooms, kinds, identities, when, readers, sources, speakers = zip(
            *rows, strict=True
        )
        for offset, names in enumerate(readers):
            if names is not None:
                self.readers.add(first + offset, json.loads(names))
        self.rooms.extend(list(rooms))
        self.kinds.extend(list(kinds))
        self.identities.extend(list(identities))
        self.sources_of.extend(list(sources))
        self.speakers.extend(list(speakers))
        fresh = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(rows), self.dimension)
        self.rowids = np.concatenate([self.rowids, np.asarray(rowids, dtype=np.int64)])
        self.index.add(fresh)
        self.when = np.concatenate([self.when, np.asarray(when, dtype=np.int64)])
        self.alive = np.concatenate([self.alive, np.ones(len(rows), dtype=bool)])
        self._max_rowid = rowids[-1]

    def fill_facets(self, rowids: Sequence[int], facets: Facets) -> None:
        """Fill in `facets` for those `rowids` this cache holds (call under `lock`). A
        stale cache is still right: facets never change and rowids are never reused;
        rows it lacks are left as they are."""
        if not len(self.rowids) or not len(rowids):
            return
        wanted = np.asarray(rowids, dtype=np.int64)
        at = np.searchsorted(self.rowids, wanted)  # rowids are appended in ascending order
        at[at >= len(self.rowids)] = 0
        found = np.flatnonzero(self.rowids[at] == wanted)
        at = at[found]
        positions = found.tolist()

        def put(out: list[Any], values: Iterable[Any]) -> None:
            if len(positions) == len(out):
                out[:] = values  # the usual case: every candidate has a vector
            else:
                for i, value in zip(positions, values, strict=True):
                    out[i] = value

        for out, column in (
            (facets.rooms, self.rooms),
            (facets.sources, self.sources_of),
            (facets.speakers, self.speakers),
        ):
            put(out, list(map(column.names.__getitem__, column.codes[at].tolist())))
        put(facets.stored, [True] * len(positions))

    def mask(self, where: DrawerFilter) -> np.ndarray:
        mask = self.alive.copy()
        if where.rooms is not None:
            mask &= self.rooms.isin(list(where.rooms))
        if where.source_kinds is not None:
            mask &= self.kinds.isin(list(where.source_kinds))
        if where.identities is not None:
            mask &= self.identities.isin(list(where.identities))
        if where.since is not None:
            mask &= self.when >= where.since
        if where.until is not None:
            mask &= self.when < where.until
        if where.roles is not None and self.readers:
            mask &= self.readers.visible(where.roles, len(mask))
        return mask

    def close(self) -> None:
        with self.lock:  # its connection is used under the lock: never closed mid-statement
            self.index.close()
            self._connection.close()


# A file is a home for a drawer (`d`) its copy (`c`) names only while every chunk of
# the file stored by the drawer's writer may be read by every reader of the drawer (NULL
# readers: every caller): decided when the drawer is handed over, as the file's and the
# drawer's readers stand then, not when the copy was recorded (either may have changed).
# A file the writer stored no chunk of has the readers of the ingest that recorded the
# copy to go by (schema v9), likewise against the drawer's readers now; a copy recorded
# before v9 has none known (no JSON list) and makes no such file a home.
_HOME_READABLE = (
    "CASE WHEN EXISTS (SELECT 1 FROM drawers f WHERE f.source_file = c.source_file "
    "AND f.identity = d.identity AND f.deleted_at IS NULL) "
    "THEN NOT EXISTS (SELECT 1 FROM drawers f WHERE f.source_file = c.source_file "
    "AND f.identity = d.identity AND f.deleted_at IS NULL AND f.readers IS NOT NULL "
    "AND (d.readers IS NULL OR EXISTS (SELECT 1 FROM json_each(d.readers) r "
    "WHERE r.value NOT IN (SELECT value FROM json_each(f.readers))))) "
    "ELSE c.readers IS NULL OR (json_type(c.readers) = 'array' AND d.readers IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM json_each(d.readers) r "
    "WHERE r.value NOT IN (SELECT value FROM json_each(c.readers)))) END"
)

# A source's drawers deleted on purpose, through the index made for it (schema v7).
DELETED_OF_SOURCE = (
    "SELECT chunk_index, rowid, id, content_hash, identity, room, readers, content "
    "FROM drawers WHERE source_file = ? AND deleted_at IS NOT NULL AND retired = 0 "
    "ORDER BY rowid"
)


class SQLiteStore(DrawerStore):
    """A `DrawerStore` in one SQLite file (plus its `-wal` and `-shm`)."""

    def __init__(self, path: str | os.PathLike[str], *, readers: int = READERS) -> None:
        self.path = Path(path)
        private_database(self.path, UnusableStore)
        self._write_lock = threading.Lock()
        try:
            self._writer = _connect(self.path)
        except sqlite3.DatabaseError as error:
            raise UnusableStore(self.path, f"not a usable recall store: {error}") from error
        try:
            # A store of a newer memhub is refused before anything here writes to it
            # (both pragmas below rewrite the file's header): a rollback keeps it whole.
            self._refuse_newer(self._writer.execute("PRAGMA user_version").fetchone()[0])
            if not self._writer.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
                # Set while the file holds no table yet (a new store), so that a purge can
                # give pages back without rewriting the whole file; older stores switch at
                # the first purge that frees enough (`reclaim`).
                self._writer.execute("PRAGMA auto_vacuum = INCREMENTAL")
            into_wal(self._writer, BUSY_TIMEOUT_MS / 1000)
            self.schema_version = self._migrate()
        except sqlite3.DatabaseError as error:
            self._writer.close()
            raise UnusableStore(self.path, f"not a usable recall store: {error}") from error
        except BaseException:
            self._writer.close()
            raise
        self._readers = _Readers(self.path, readers)
        self._vectors = _VectorCache(self.path)
        self._lexical = LexicalCache(lambda: _connect(self.path))

    # -- schema -----------------------------------------------------------------------

    def _refuse_newer(self, version: int) -> None:
        if version > schema.CURRENT_VERSION:
            raise SchemaTooNew(
                self.path,
                f"recall store schema {version} was written by a newer memhub; this "
                f"one supports up to {schema.CURRENT_VERSION}. Upgrade memhub, or move "
                "the file aside to start an empty store.",
            )

    def _migrate(self) -> int:
        with self._write_lock:
            self._writer.execute("BEGIN IMMEDIATE")
            try:
                version = self._writer.execute("PRAGMA user_version").fetchone()[0]
                self._refuse_newer(version)  # a newer memhub may have opened it meanwhile
                for number in range(version, schema.CURRENT_VERSION):
                    for statement in schema.MIGRATIONS[number]:
                        self._writer.execute(statement)
                self._writer.execute(f"PRAGMA user_version = {schema.CURRENT_VERSION}")
                self._writer.execute("COMMIT")
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
        if 0 < version < schema.CURRENT_VERSION:  # a new store is no news
            log.info(
                "recall store migrated",
                path=str(self.path),
                from_version=version,
                to_version=schema.CURRENT_VERSION,
            )
        return schema.CURRENT_VERSION

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            connection = self._writer
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @staticmethod
    def _audit(connection: sqlite3.Connection, entry: AuditEntry) -> None:
        connection.execute(
            "INSERT INTO audit (at, identity, door, action, detail) VALUES (?, ?, ?, ?, ?)",
            (
                entry.at or _now(),
                entry.identity,
                entry.door,
                entry.action,
                json.dumps(dict(entry.detail), ensure_ascii=False, sort_keys=True),
            ),
        )

    @staticmethod
    def _bump_epoch(connection: sqlite3.Connection) -> None:
        connection.execute(
            "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
            (_VECTOR_EPOCH,),
        )

    # -- reads ------------------------------------------------------------------------

    def find(self, ids: Sequence[str]) -> dict[str, Existing]:
        found: dict[str, Existing] = {}
        with self._readers.connection() as connection:
            for start in range(0, len(ids), 500):
                part = list(ids[start : start + 500])
                rows = connection.execute(
                    "SELECT rowid, id, content_hash, deleted_at, retired, room, identity, "
                    f"source_file, readers FROM drawers WHERE id IN ({','.join('?' * len(part))})",
                    part,
                ).fetchall()
                for rowid, drawer_id, digest, deleted, retired, room, who, source, readers in rows:
                    found[drawer_id] = Existing(
                        rowid,
                        drawer_id,
                        digest,
                        deleted is not None,
                        bool(retired),
                        identity=who,
                        room=room,
                        readers=tuple(json.loads(readers)) if readers is not None else None,
                        source_file=source,
                    )
        return found

    def chunks_of_source(self, source_file: str) -> list[tuple[int, Existing]]:
        with self._readers.connection() as connection:
            rows = connection.execute(
                "SELECT chunk_index, rowid, id, content_hash, coalesce(context, ''), identity, "
                "room, readers, importance, coalesce(locator, '') FROM drawers "
                "WHERE source_file = ? AND deleted_at IS NULL "
                "ORDER BY rowid",
                (source_file,),
            ).fetchall()
        return [
            (
                index,
                Existing(
                    rowid,
                    i,
                    digest,
                    False,
                    context=context,
                    identity=who,
                    room=room,
                    readers=tuple(json.loads(readers)) if readers is not None else None,
                    importance=importance,
                    locator=locator,
                ),
            )
            for index, rowid, i, digest, context, who, room, readers, importance, locator in rows
        ]

    def rooms_of_source(self, source_file: str) -> list[tuple[str, str, tuple[str, ...] | None]]:
        with self._readers.connection() as connection:
            rows = connection.execute(
                "SELECT room, identity, readers FROM drawers "
                "WHERE source_file = ? AND deleted_at IS NULL ORDER BY chunk_index, rowid",
                (source_file,),
            ).fetchall()
        return [
            (room, who, tuple(json.loads(readers)) if readers is not None else None)
            for room, who, readers in rows
        ]

    def copies_of_source(self, source_file: str) -> frozenset[Copy]:
        with self._readers.connection() as connection:
            rows = connection.execute(
                "SELECT drawer, chunk_index, coalesce(locator, ''), source_kind, identity, "
                "readers FROM drawer_copies WHERE source_file = ?",
                (source_file,),
            ).fetchall()
        return frozenset(_copy(row) for row in rows)

    def copy_sources(self, rowids: Sequence[int]) -> dict[int, set[str]]:
        found: dict[int, set[str]] = {}
        with self._readers.connection() as connection:
            for start in range(0, len(rowids), 500):
                part = list(rowids[start : start + 500])
                for rowid, source in connection.execute(
                    "SELECT c.drawer, c.source_file FROM drawer_copies c "
                    "JOIN drawers d ON d.rowid = c.drawer "
                    f"WHERE c.drawer IN ({','.join('?' * len(part))}) "
                    "AND d.deleted_at IS NULL AND c.identity = d.identity "
                    f"AND c.source_file != d.source_file AND {_HOME_READABLE}",
                    part,
                ):
                    found.setdefault(rowid, set()).add(source)
        return found

    def writers_copies(self, rowids: Sequence[int]) -> dict[int, dict[str, Copy]]:
        found: dict[int, dict[str, Copy]] = {}
        with self._readers.connection() as connection:
            for start in range(0, len(rowids), 500):
                part = list(rowids[start : start + 500])
                for source, *copy in connection.execute(
                    "SELECT c.source_file, c.drawer, c.chunk_index, coalesce(c.locator, ''), "
                    "c.source_kind, c.identity, c.readers FROM drawer_copies c "
                    "JOIN drawers d ON d.rowid = c.drawer "
                    f"WHERE c.drawer IN ({','.join('?' * len(part))}) "
                    "AND d.deleted_at IS NULL AND c.identity = d.identity "
                    "AND c.source_file != d.source_file",
                    part,
                ):
                    found.setdefault(copy[0], {})[source] = _copy(copy)
        return found

    def set_copies(self, source_file: str, copies: Iterable[Copy]) -> None:
        with self._transaction() as connection:
            self._set_copies(connection, source_file, copies)

    @staticmethod
    def _set_copies(
        connection: sqlite3.Connection, source_file: str, copies: Iterable[Copy]
    ) -> None:
        connection.execute("DELETE FROM drawer_copies WHERE source_file = ?", (source_file,))
        connection.executemany(
            "INSERT OR REPLACE INTO drawer_copies (source_file, identity, drawer, chunk_index, "
            "locator, source_kind, readers) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    source_file,
                    c.identity,
                    c.drawer,
                    c.chunk_index,
                    c.locator,
                    c.source_kind,
                    _copy_readers(c),
                )
                for c in copies
            ],
        )

    def deleted_of_source(self, source_file: str) -> list[tuple[int, Existing, str]]:
        with self._readers.connection() as connection:
            rows = connection.execute(DELETED_OF_SOURCE, (source_file,)).fetchall()
        return [
            (
                index,
                Existing(
                    rowid,
                    i,
                    digest,
                    True,
                    identity=who,
                    room=room,
                    readers=tuple(json.loads(readers)) if readers is not None else None,
                ),
                content,
            )
            for index, rowid, i, digest, who, room, readers, content in rows
        ]

    def sources(self) -> set[str]:
        # Two queries, each on a partial index: `drawers_source` (in source order) for
        # the live rows, `drawers_deleted` for the others.
        with self._readers.connection() as connection:
            rows = connection.execute(
                "SELECT DISTINCT source_file FROM drawers WHERE deleted_at IS NULL"
            ).fetchall()
            rows += connection.execute(
                "SELECT DISTINCT source_file FROM drawers WHERE deleted_at IS NOT NULL"
            ).fetchall()
        return {source for (source,) in rows}

    def get(self, rowids: Sequence[int]) -> dict[int, Drawer]:
        out: dict[int, Drawer] = {}
        with self._readers.connection() as connection:
            for start in range(0, len(rowids), 500):
                part = list(rowids[start : start + 500])
                rows = connection.execute(
                    f"SELECT {_COLUMNS} FROM drawers WHERE rowid IN ({','.join('?' * len(part))})",
                    part,
                ).fetchall()
                for row in rows:
                    out[row[0]] = _drawer(row)
        return out

    def facets(self, rowids: Sequence[int]) -> Facets:
        count = len(rowids)
        facets = Facets([False] * count, [""] * count, [""] * count, [None] * count)
        with self._vectors.lock:
            self._vectors.fill_facets(rowids, facets)
        # Drawers without a vector: one narrow query.
        missing = {rowids[i]: i for i, stored in enumerate(facets.stored) if not stored}
        if not missing:
            return facets
        rest = list(missing)
        with self._readers.connection() as connection:
            for start in range(0, len(rest), 500):
                part = rest[start : start + 500]
                marks = ",".join("?" * len(part))
                for rowid, room, source, speaker in connection.execute(
                    f"SELECT rowid, room, source_file, speaker FROM drawers WHERE rowid IN ({marks})",
                    part,
                ):
                    i = missing[rowid]
                    facets.stored[i] = True
                    facets.rooms[i], facets.sources[i], facets.speakers[i] = room, source, speaker
        return facets

    def get_by_id(self, drawer_id: str, *, include_deleted: bool = False) -> Drawer | None:
        live = "" if include_deleted else " AND deleted_at IS NULL"
        with self._readers.connection() as connection:
            row = connection.execute(
                f"SELECT {_COLUMNS} FROM drawers WHERE id = ?{live}", (drawer_id,)
            ).fetchone()
        return _drawer(row) if row else None

    def lexical(
        self,
        terms: Sequence[str],
        where: DrawerFilter,
        limit: int,
        *,
        context_weight: float = CONTEXT_WEIGHT,
    ) -> list[RankedRow]:
        match = fts_query(terms)
        if not match or limit <= 0:
            return []
        # The in-memory index answers when it can, exactly as the SQL below would.
        phrases = [term for term in terms if term.strip()]
        weights = (1.0, 0.5, context_weight)
        ranked = self._lexical.ranked(phrases, where, limit, weights)
        # FTS5's statistics count every drawer, those hidden from this caller too: its
        # order would tell whether hidden drawers use a word. The index counts only what
        # the caller may read, so such a caller waits a little for an index being built
        # (the service waits longer before it takes a search slot), and is refused
        # rather than ranked by FTS5 when it is still not there.
        if ranked is None and not self.lexical_ready(where.roles):
            self._lexical.settle(SETTLE_FOR_ROLES_S)
            if not self.lexical_ready(where.roles):
                raise IndexWarming(
                    self.path,
                    "its search index is being built; retry in a few seconds",
                )
            ranked = self._lexical.ranked(phrases, where, limit, weights)
        if ranked is not None:
            return [RankedRow(rowid, score) for rowid, score in ranked]
        return self._fts_lexical(match, where, limit, context_weight)

    def lexical_ready(self, roles: frozenset[str] | None) -> bool:
        """Whether a caller of `roles` can be ranked by BM25 now without FTS5's
        whole-store statistics: always for a caller hidden nothing, or a store where
        no drawer names readers; else once the in-memory index answers."""
        if roles is None or self._lexical.ready():
            return True
        return not self._holds_reader_limited()

    def _holds_reader_limited(self) -> bool:
        with self._readers.connection() as connection:
            found = connection.execute(
                "SELECT 1 FROM drawers WHERE readers IS NOT NULL AND deleted_at IS NULL LIMIT 1"
            ).fetchone()
        return found is not None

    def _fts_lexical(
        self, match: str, where: DrawerFilter, limit: int, context_weight: float
    ) -> list[RankedRow]:
        # bm25() is lower-is-better; the speaker column counts half as much as the text.
        if not where.narrows and where.roles is None:
            # Only live drawers are indexed: without filters the join is not needed, and
            # skipping it saves a third of the time when a term matches most drawers.
            sql = (
                "SELECT rowid, bm25(drawers_fts, 1.0, 0.5, ?) AS score FROM drawers_fts "
                "WHERE drawers_fts MATCH ? ORDER BY score, rowid LIMIT ?"
            )
            params: list[Any] = []
        else:
            conditions, params = _where(where)
            sql = (
                "SELECT d.rowid, bm25(drawers_fts, 1.0, 0.5, ?) AS score "
                "FROM drawers_fts JOIN drawers d ON d.rowid = drawers_fts.rowid "
                f"WHERE drawers_fts MATCH ? AND {conditions} ORDER BY score, d.rowid LIMIT ?"
            )
        with self._readers.connection() as connection:
            rows = connection.execute(sql, [context_weight, match, *params, limit]).fetchall()
        return [RankedRow(rowid, -float(score)) for rowid, score in rows]

    def _check_embedder(self, embedder: EmbedderRecord) -> bool:
        """True when vectors of `embedder` may be compared with the stored ones."""
        stored = self.embedder()
        if stored is None:
            return False
        if stored != embedder:
            raise VectorsUnavailable(
                f"the stored vectors were made by {stored.name} ({stored.dimension}-d) but the "
                f"daemon runs {embedder.name} ({embedder.dimension}-d); vector search is off "
                "until `memctl recall reindex` re-embeds the drawers"
            )
        return True

    def nearest(
        self, vector: np.ndarray, embedder: EmbedderRecord, where: DrawerFilter, limit: int
    ) -> list[RankedRow]:
        if limit <= 0 or not self._check_embedder(embedder):
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._vectors.lock:
            cache = self._vectors
            cache.refresh(embedder.dimension)
            if not len(cache.rowids):
                return []
            restricted = where.roles is not None and bool(cache.readers)
            masked = where.narrows or restricted or not cache.alive.all()
            allowed = cache.mask(where) if masked else None
            positions, scores = cache.index.search(query, allowed, limit)
            rowids = cache.rowids
        return [RankedRow(int(rowids[p]), float(s)) for p, s in zip(positions, scores, strict=True)]

    def settle_lexical(self, timeout: float | None = None) -> bool:
        """Build (or catch up) the in-memory BM25 index now; True when it answers
        (benchmarks time the index, not FTS5 serving while it builds)."""
        return self._lexical.settle(timeout)

    def settle_vectors(self, timeout: float | None = None) -> bool:
        """Load every committed vector and wait for the index build this starts, if any
        (benchmarks measure the built index, not the exact scan that serves meanwhile)."""
        embedder = self.embedder()
        if embedder is None:
            return True
        with self._vectors.lock:
            self._vectors.refresh(embedder.dimension)
            index = self._vectors.index
        return index.wait_built(timeout)

    def most_similar(
        self, vectors: np.ndarray, embedder: EmbedderRecord, where: DrawerFilter | None = None
    ) -> list[tuple[int, float] | None]:
        rows = np.asarray(vectors, dtype=np.float32)
        if not len(rows) or not self._check_embedder(embedder):
            return [None] * len(rows)
        with self._vectors.lock:
            cache = self._vectors
            cache.refresh(embedder.dimension)
            alive = cache.mask(where) if where is not None else cache.alive
            if not alive.any():
                return [None] * len(rows)
            index, rowids = cache.index, cache.rowids
        out: list[tuple[int, float] | None] = []
        for start in range(0, len(rows), 256):
            for match in index.best_matches(rows[start : start + 256], alive):
                out.append((int(rowids[match[0]]), match[1]) if match is not None else None)
        return out

    def top(self, where: DrawerFilter, limit: int) -> list[Drawer]:
        conditions, params = _where(where)
        sql = (
            f"SELECT {', '.join('d.' + c for c in _COLUMNS.split(', '))} FROM drawers d "
            f"WHERE {conditions} ORDER BY d.importance DESC, d.created_at DESC, d.rowid DESC LIMIT ?"
        )
        with self._readers.connection() as connection:
            return [_drawer(row) for row in connection.execute(sql, [*params, limit])]

    def recent(self, where: DrawerFilter, limit: int) -> list[Drawer]:
        conditions, params = _where(where)
        sql = (
            f"SELECT {', '.join('d.' + c for c in _COLUMNS.split(', '))} FROM drawers d "
            f"WHERE {conditions} ORDER BY coalesce(d.said_at, d.created_at) DESC, d.rowid DESC "
            "LIMIT ?"
        )
        with self._readers.connection() as connection:
            return [_drawer(row) for row in connection.execute(sql, [*params, limit])]

    def recent_from_source(
        self, where: DrawerFilter, source_file: str, prefixes: Sequence[str], limit: int
    ) -> list[Drawer]:
        if not prefixes:
            return []
        conditions, params = _where(where)
        starts = " OR ".join("substr(d.content, 1, ?) = ?" for _ in prefixes)
        sql = (
            f"SELECT {', '.join('d.' + c for c in _COLUMNS.split(', '))} FROM drawers d "
            f"WHERE {conditions} AND d.source_file = ? AND ({starts}) "
            "ORDER BY coalesce(d.said_at, d.created_at) DESC, d.rowid DESC LIMIT ?"
        )
        params.append(source_file)
        for prefix in prefixes:
            params += [len(prefix), prefix]
        with self._readers.connection() as connection:
            return [_drawer(row) for row in connection.execute(sql, [*params, limit])]

    def rooms(self, where: DrawerFilter) -> dict[str, int]:
        conditions, params = _where(where)
        sql = f"SELECT d.room, count(*) FROM drawers d WHERE {conditions} GROUP BY d.room"
        with self._readers.connection() as connection:
            return dict(connection.execute(sql, params).fetchall())

    @staticmethod
    def _visible_counts(connection: sqlite3.Connection, where: DrawerFilter) -> tuple[int, int]:
        """(soft-deleted drawers, live drawers holding a vector) among those `where`
        lets through."""
        gone, gone_params = _where(where, deleted=True)
        live, live_params = _where(where)
        deleted = connection.execute(
            f"SELECT count(*) FROM drawers d WHERE {gone}", gone_params
        ).fetchone()[0]
        vectors = connection.execute(
            f"SELECT count(*) FROM vectors v JOIN drawers d ON d.rowid = v.rowid WHERE {live}",
            live_params,
        ).fetchone()[0]
        return deleted, vectors

    def rooms_with(self, where: DrawerFilter) -> set[str]:
        # One indexed lookup per room asked for, stopping at its first drawer `where`
        # lets through: a room's size does not matter.
        conditions, params = _where(replace(where, rooms=None))
        found = set()
        with self._readers.connection() as connection:
            for room in where.rooms or ():
                row = connection.execute(
                    f"SELECT 1 FROM drawers d WHERE d.room = ? AND {conditions} LIMIT 1",
                    (room, *params),
                ).fetchone()
                if row is not None:
                    found.add(room)
        return found

    def taxonomy(self) -> list[TaxonomyEntry]:
        with self._readers.connection() as connection:
            rows = connection.execute(
                "SELECT room, display_name, keywords FROM taxonomy ORDER BY room"
            ).fetchall()
        return [TaxonomyEntry(room, tuple(json.loads(words)), name) for room, name, words in rows]

    def embedder(self) -> EmbedderRecord | None:
        with self._readers.connection() as connection:
            meta = dict(
                connection.execute(
                    "SELECT key, value FROM meta WHERE key IN (?, ?)",
                    (_EMBEDDER_NAME, _EMBEDDER_DIMENSION),
                ).fetchall()
            )
        if _EMBEDDER_NAME not in meta:
            return None
        return EmbedderRecord(meta[_EMBEDDER_NAME], int(meta[_EMBEDDER_DIMENSION]))

    def status(self, where: DrawerFilter | None = None) -> StoreStatus:
        # One read transaction: counts read apart would straddle a write committed
        # between them (a room count above the drawer count it is part of).
        with self._readers.connection() as connection:
            connection.execute("BEGIN")
            try:
                live, deleted = connection.execute(
                    "SELECT count(*) FILTER (WHERE deleted_at IS NULL), "
                    "count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM drawers"
                ).fetchone()
                if where is None:
                    vectors = connection.execute(
                        "SELECT count(*) FROM vectors v JOIN drawers d ON d.rowid = v.rowid "
                        "WHERE d.deleted_at IS NULL"
                    ).fetchone()[0]
                    rooms = connection.execute(
                        "SELECT room, count(*) FROM drawers WHERE deleted_at IS NULL "
                        "GROUP BY room ORDER BY room"
                    ).fetchall()
                else:
                    conditions, params = _where(where)
                    rooms = connection.execute(
                        f"SELECT d.room, count(*) FROM drawers d WHERE {conditions} "
                        "GROUP BY d.room ORDER BY d.room",
                        params,
                    ).fetchall()
                    deleted, vectors = self._visible_counts(connection, where)
                taxonomy = connection.execute("SELECT count(*) FROM taxonomy").fetchone()[0]
            finally:
                connection.execute("COMMIT")
        wal = Path(str(self.path) + "-wal")
        return StoreStatus(
            schema_version=self.schema_version,
            drawer_count=live,
            deleted_count=deleted,
            vector_count=vectors,
            rooms=tuple((room, count) for room, count in rooms),
            taxonomy_count=taxonomy,
            embedder=self.embedder(),
            db_size_bytes=self.path.stat().st_size,
            wal_size_bytes=wal.stat().st_size if wal.exists() else 0,
        )

    def audit(self, limit: int = 100) -> list[AuditEntry]:
        with self._readers.connection() as connection:
            rows = connection.execute(
                "SELECT seq, at, identity, door, action, detail FROM audit "
                "ORDER BY seq DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [
            AuditEntry(identity, door, action, json.loads(detail), at, seq)
            for seq, at, identity, door, action, detail in rows
        ]

    def iter_live(self, batch: int, after: int = 0) -> Iterator[list[Drawer]]:
        last = after
        while True:
            with self._readers.connection() as connection:
                rows = connection.execute(
                    f"SELECT {_COLUMNS} FROM drawers WHERE rowid > ? AND deleted_at IS NULL "
                    "ORDER BY rowid LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [_drawer(row) for row in rows]

    # -- writes -----------------------------------------------------------------------

    def write(
        self,
        drawers: Sequence[NewDrawer],
        vectors: np.ndarray | None,
        embedder: EmbedderRecord | None,
        audit: AuditEntry,
        *,
        replace: Sequence[int] = (),
        revive: Sequence[int] = (),
        moved: Sequence[tuple[int, int, str]] = (),
        copies: tuple[str, Iterable[Copy]] | None = None,
    ) -> WriteOutcome:
        if vectors is not None and (embedder is None or len(vectors) != len(drawers)):
            raise ValueError("one vector per drawer, and the embedder that made them")
        now = _now()
        inserted: list[str] = []
        replaced: list[str] = []
        with self._transaction() as connection:
            if vectors is not None and embedder is not None:
                self._claim_embedder(connection, embedder)
            if copies is not None:
                self._set_copies(connection, *copies)
            reviving = set(revive)
            handing: list[tuple[int, str, tuple[Any, ...]]] = []
            for rowid in replace:
                copy = (
                    None
                    if rowid in reviving
                    else connection.execute(
                        "SELECT c.source_file, c.chunk_index, c.locator, c.source_kind "
                        "FROM drawer_copies c JOIN drawers d ON d.rowid = c.drawer "
                        "WHERE c.drawer = ? AND c.identity = d.identity "
                        f"AND c.source_file != d.source_file AND {_HOME_READABLE} "
                        "ORDER BY c.source_file LIMIT 1",
                        (rowid,),
                    ).fetchone()
                )
                row = connection.execute(
                    "UPDATE drawers SET deleted_at = ?, updated_at = ?, retired = 1 "
                    "WHERE rowid = ? AND deleted_at IS NULL RETURNING id",
                    (now, now, rowid),
                ).fetchone()
                if row and copy is not None:
                    handing.append((rowid, row[0], copy))
                elif row:
                    replaced.append(row[0])
            given_up: dict[str, int] = {}  # id -> the retired row that held it
            for rowid in revive:
                # The retired row gives its id up and stays what it is, a soft-deleted
                # row (out of FTS5, masked by both caches) that a purge removes: deleting
                # it would make the vector cache reload every vector.
                row = connection.execute(
                    "SELECT id FROM drawers WHERE rowid = ? AND retired = 1", (rowid,)
                ).fetchone()
                if row is None:
                    continue
                given_up[row[0]] = rowid
                connection.execute(
                    "UPDATE drawers SET id = id || ':retired:' || rowid WHERE rowid = ?",
                    (rowid,),
                )
            # A place is neither content nor indexed text: FTS5 and the caches keep the row.
            connection.executemany(
                "UPDATE drawers SET chunk_index = ?, locator = ? "
                "WHERE rowid = ? AND deleted_at IS NULL",
                [(index, locator, rowid) for rowid, index, locator in moved],
            )
            # One statement for all rows (executemany keeps the loop in C). AUTOINCREMENT
            # and the held write lock make the rows above the current maximum exactly
            # the ones this statement inserted; an id already stored (written meanwhile
            # by another source) is skipped: one drawer per id.
            before = connection.execute("SELECT coalesce(max(rowid), 0) FROM drawers").fetchone()[0]
            connection.executemany(
                "INSERT INTO drawers (id, room, content, source_file, source_kind, "
                "chunk_index, importance, content_hash, locator, speaker, said_at, "
                "created_at, updated_at, identity, readers, context) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                [
                    (
                        drawer.id,
                        drawer.room,
                        drawer.content,
                        drawer.source_file,
                        drawer.source_kind,
                        drawer.chunk_index,
                        drawer.importance,
                        drawer.content_hash,
                        drawer.locator,
                        drawer.speaker,
                        drawer.said_at,
                        drawer.created_at or now,
                        now,
                        drawer.identity,
                        json.dumps(list(drawer.readers)) if drawer.readers is not None else None,
                        drawer.context or None,
                    )
                    for drawer in drawers
                ],
            )
            written = connection.execute(
                "SELECT rowid, id FROM drawers WHERE rowid > ? ORDER BY rowid", (before,)
            ).fetchall()
            if written:
                # One statement for the whole write (see schema v4): a new drawer is live.
                connection.execute(
                    "INSERT INTO drawers_fts (rowid, content, speaker, context) "
                    "SELECT rowid, content, coalesce(speaker, ''), coalesce(context, '') "
                    "FROM drawers WHERE rowid > ?",
                    (before,),
                )
            inserted = [drawer_id for _rowid, drawer_id in written]
            if vectors is not None and written:
                position: dict[str, int] = {}
                for index, drawer in enumerate(drawers):
                    position.setdefault(drawer.id, index)  # a repeated id: the first was kept
                blobs = np.asarray(vectors, dtype="<f4")
                connection.executemany(
                    "INSERT INTO vectors (rowid, vector) VALUES (?, ?)",
                    [(rowid, blobs[position[i]].tobytes()) for rowid, i in written],
                )
            # A drawer stored again under the id a retired row gave up has that row's
            # content, so its vector: carried over when this write brings none (vectors
            # off, or the running embedder not the one that wrote the store's).
            carried = [(rowid, given_up[i]) for rowid, i in written if i in given_up]
            connection.executemany(
                "INSERT OR IGNORE INTO vectors (rowid, vector) "
                "SELECT ?, vector FROM vectors WHERE rowid = ?",
                carried,
            )
            # and where other files hold its text
            connection.executemany("UPDATE drawer_copies SET drawer = ? WHERE drawer = ?", carried)
            handed = [self._hand_over(connection, *item, now) for item in handing]
            self._audit(connection, audit)
        return WriteOutcome(tuple(inserted), tuple(replaced), tuple(handed))

    @staticmethod
    def _hand_over(
        connection: sqlite3.Connection, rowid: int, drawer_id: str, copy: tuple[Any, ...], now: int
    ) -> str:
        """Store the drawer of retired row `rowid` again, cited from the file of `copy`
        (source, chunk index, locator, kind): a new row under its id, with its text,
        vector, writer, readers, importance and times, which every index and cache
        takes in as a new row. Returns its id."""
        source, index, locator, kind = copy
        connection.execute(
            "UPDATE drawers SET id = id || ':retired:' || rowid WHERE rowid = ?", (rowid,)
        )
        added = connection.execute(
            "INSERT INTO drawers (id, room, content, source_file, source_kind, chunk_index, "
            "importance, content_hash, locator, speaker, said_at, created_at, updated_at, "
            "identity, readers, context) "
            "SELECT ?, room, content, ?, ?, ?, importance, content_hash, ?, speaker, said_at, "
            "created_at, ?, identity, readers, context FROM drawers WHERE rowid = ? "
            "ON CONFLICT (id) DO NOTHING RETURNING rowid",
            (drawer_id, source, kind, index, locator, now, rowid),
        ).fetchone()
        if added is None:  # the write stored that id itself: the text is live
            return drawer_id
        new = added[0]
        connection.execute(
            "INSERT INTO drawers_fts (rowid, content, speaker, context) "
            "SELECT rowid, content, coalesce(speaker, ''), coalesce(context, '') "
            "FROM drawers WHERE rowid = ?",
            (new,),
        )
        connection.execute(
            "INSERT INTO vectors (rowid, vector) SELECT ?, vector FROM vectors WHERE rowid = ?",
            (new, rowid),
        )
        # The file it is now cited from holds it no longer as a copy; others still do.
        connection.execute(
            "DELETE FROM drawer_copies WHERE drawer = ? AND source_file = ?", (rowid, source)
        )
        connection.execute("UPDATE drawer_copies SET drawer = ? WHERE drawer = ?", (new, rowid))
        return drawer_id

    def _claim_embedder(self, connection: sqlite3.Connection, embedder: EmbedderRecord) -> None:
        meta = dict(
            connection.execute(
                "SELECT key, value FROM meta WHERE key IN (?, ?)",
                (_EMBEDDER_NAME, _EMBEDDER_DIMENSION),
            ).fetchall()
        )
        if _EMBEDDER_NAME not in meta:
            connection.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [(_EMBEDDER_NAME, embedder.name), (_EMBEDDER_DIMENSION, str(embedder.dimension))],
            )
            return
        stored = EmbedderRecord(meta[_EMBEDDER_NAME], int(meta[_EMBEDDER_DIMENSION]))
        if stored != embedder:
            raise VectorsUnavailable(
                f"this store's vectors come from {stored.name} ({stored.dimension}-d), not "
                f"{embedder.name} ({embedder.dimension}-d); run `memctl recall reindex`"
            )

    def soft_delete(self, drawer_id: str, audit: AuditEntry) -> Drawer | None:
        deleted = self.soft_delete_many([drawer_id], audit)
        return deleted[0] if deleted else None

    def soft_delete_many(self, drawer_ids: Sequence[str], audit: AuditEntry) -> list[Drawer]:
        now = _now()
        deleted: list[Drawer] = []
        with self._transaction() as connection:
            for drawer_id in drawer_ids:
                row = connection.execute(
                    f"UPDATE drawers SET deleted_at = ?, updated_at = ? "
                    f"WHERE id = ? AND deleted_at IS NULL RETURNING {_COLUMNS}",
                    (now, now, drawer_id),
                ).fetchone()
                if row is None:
                    continue
                deleted.append(_drawer(row))
                detail = {**dict(audit.detail), "drawer_id": drawer_id}
                self._audit(
                    connection, AuditEntry(audit.identity, audit.door, audit.action, detail)
                )
            # After them all: a neighbour deleted too is no longer live to be stored again.
            self._leave_out(connection, deleted, now)
        return deleted

    def purge(self, before: int | None, audit: AuditEntry) -> int:
        with self._transaction() as connection:
            # `before=0` purges what was deleted before 1970 (nothing), never everything.
            limited = before is not None
            condition = "deleted_at IS NOT NULL" + (" AND deleted_at < ?" if limited else "")
            params = (before,) if limited else ()
            # Drawers deleted before a delete took their text out of their neighbours'
            # context (`_leave_out`) hold it there still: it goes now, with them.
            on_purpose = connection.execute(
                f"SELECT {_COLUMNS} FROM drawers WHERE {condition} AND retired = 0", params
            ).fetchall()
            connection.execute(
                f"DELETE FROM vectors WHERE rowid IN (SELECT rowid FROM drawers WHERE {condition})",
                params,
            )
            purged = connection.execute(f"DELETE FROM drawers WHERE {condition}", params).rowcount
            connection.execute(
                "DELETE FROM drawer_copies WHERE NOT EXISTS "
                "(SELECT 1 FROM drawers WHERE drawers.rowid = drawer_copies.drawer)"
            )
            # The rows those neighbours leave hold the text too: removed as purged ones are.
            replaced = self._leave_out(connection, [_drawer(r) for r in on_purpose], _now())
            for start in range(0, len(replaced), 500):
                part = replaced[start : start + 500]
                marks = ",".join("?" * len(part))
                connection.execute(f"DELETE FROM vectors WHERE rowid IN ({marks})", part)
                connection.execute(f"DELETE FROM drawers WHERE rowid IN ({marks})", part)
            self._bump_epoch(connection)
            detail = {**dict(audit.detail), "purged": purged}
            self._audit(connection, AuditEntry(audit.identity, audit.door, audit.action, detail))
        return purged

    @staticmethod
    def _leave_out(
        connection: sqlite3.Connection, deleted: Sequence[Drawer], now: int
    ) -> list[int]:
        """Take each deleted drawer's text out of the context of the live drawers next to
        it in its source, where ingest put it (`recall.context`); returns the rowids that
        held it. Such a drawer is stored again as a re-ingest refreshes one: its row retired
        (giving up its id) and a copy added with the new context and the row's vector, so
        that FTS5 and both caches follow a row deleted and one added."""
        retired: list[int] = []
        for gone in deleted:
            # Its neighbours of the same writer, who keeps one copy of the source. Another
            # writer's copy (which the deleting caller may not read) keeps its own copy of
            # the exchange, and its context with it.
            rows = connection.execute(
                "SELECT rowid, said_at, context FROM drawers WHERE source_file = ? "
                "AND chunk_index IN (?, ?) AND deleted_at IS NULL AND context IS NOT NULL "
                "AND identity = ?",
                (gone.source_file, gone.chunk_index - 1, gone.chunk_index + 1, gone.identity),
            ).fetchall()
            for rowid, said_at, context in rows:
                left = leave_out(context, said_at, gone.content)
                if left != context:
                    SQLiteStore._store_context(connection, rowid, left, now)
                    retired.append(rowid)
        return retired

    @staticmethod
    def _store_context(connection: sqlite3.Connection, rowid: int, context: str, now: int) -> None:
        """Store live row `rowid` again with `context` (see `_leave_out`)."""
        (identifier,) = connection.execute(
            "SELECT id FROM drawers WHERE rowid = ?", (rowid,)
        ).fetchone()
        connection.execute(
            "UPDATE drawers SET deleted_at = ?, updated_at = ?, retired = 1, "
            "id = id || ':retired:' || rowid WHERE rowid = ?",
            (now, now, rowid),
        )
        (copy,) = connection.execute(
            "INSERT INTO drawers (id, room, content, source_file, source_kind, chunk_index, "
            "importance, content_hash, locator, speaker, said_at, created_at, updated_at, "
            "identity, readers, context) SELECT ?, room, content, source_file, source_kind, "
            "chunk_index, importance, content_hash, locator, speaker, said_at, created_at, ?, "
            "identity, readers, ? FROM drawers WHERE rowid = ? RETURNING rowid",
            (identifier, now, context or None, rowid),
        ).fetchone()
        connection.execute(
            "INSERT INTO drawers_fts (rowid, content, speaker, context) "
            "SELECT rowid, content, coalesce(speaker, ''), coalesce(context, '') "
            "FROM drawers WHERE rowid = ?",
            (copy,),
        )
        connection.execute("UPDATE drawer_copies SET drawer = ? WHERE drawer = ?", (copy, rowid))
        # A reindex under way has staged the row's new vector, maybe: the copy keeps it.
        for table in ("vectors", "vectors_next"):
            connection.execute(
                f"INSERT INTO {table} (rowid, vector) SELECT ?, vector FROM {table} WHERE rowid = ?",
                (copy, rowid),
            )

    def reclaim(self) -> int:
        """Give the file's free pages back when they are many (see RECLAIM_MIN_BYTES):
        by an incremental vacuum, or, for a store made before stores were created for
        it, by one VACUUM that also switches it to incremental. Readers go on reading
        (WAL); writers to this store wait. A failure (a full disk: VACUUM needs room for
        a copy) leaves the store as it was, and is logged."""
        with self._write_lock:
            connection = self._writer
            try:
                size = connection.execute("PRAGMA page_size").fetchone()[0]
                pages = connection.execute("PRAGMA page_count").fetchone()[0]
                free = connection.execute("PRAGMA freelist_count").fetchone()[0]
                if free * size < RECLAIM_MIN_BYTES or 4 * free < pages:
                    return 0
                if connection.execute("PRAGMA auto_vacuum").fetchone()[0] == _INCREMENTAL:
                    # Stepped to the end (`execute` would free one page, one step).
                    connection.executescript("PRAGMA incremental_vacuum")
                else:
                    connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
                    connection.execute("VACUUM")
                # The file shrinks when the WAL is written back; readers may hold part
                # of it for now (the next checkpoint finishes the job).
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                after = connection.execute("PRAGMA page_count").fetchone()[0]
            except sqlite3.Error as error:
                log.warning(
                    "recall store space not reclaimed", path=str(self.path), error=str(error)
                )
                return 0
        freed = (pages - after) * size
        log.info("recall store space reclaimed", path=str(self.path), freed_bytes=freed)
        return freed

    def prune_audit(self, before: int, audit: AuditEntry) -> int:
        with self._transaction() as connection:
            removed = connection.execute("DELETE FROM audit WHERE at < ?", (before,)).rowcount
            # The pruning itself is the first entry of what is left.
            detail = {**dict(audit.detail), "audit_removed": removed}
            self._audit(connection, AuditEntry(audit.identity, audit.door, audit.action, detail))
        return int(removed)

    def set_taxonomy(self, entry: TaxonomyEntry, audit: AuditEntry) -> None:
        with self._transaction() as connection:
            connection.execute(
                "INSERT INTO taxonomy (room, display_name, keywords) VALUES (?, ?, ?) "
                "ON CONFLICT (room) DO UPDATE SET display_name = excluded.display_name, "
                "keywords = excluded.keywords",
                (entry.room, entry.display_name, json.dumps(list(entry.keywords))),
            )
            self._audit(connection, audit)

    def remove_taxonomy(self, room: str, audit: AuditEntry) -> bool:
        with self._transaction() as connection:
            removed = connection.execute("DELETE FROM taxonomy WHERE room = ?", (room,)).rowcount
            if removed:
                self._audit(connection, audit)
        return bool(removed)

    def iter_unstaged(self, batch: int, dimension: int) -> Iterator[list[Drawer]]:
        last = 0
        columns = ", ".join(f"d.{c.strip()}" for c in _COLUMNS.split(","))
        while True:
            with self._readers.connection() as connection:
                rows = connection.execute(
                    f"SELECT {columns} FROM drawers d LEFT JOIN vectors_next n "
                    "ON n.rowid = d.rowid WHERE d.rowid > ? AND d.deleted_at IS NULL "
                    "AND (n.rowid IS NULL OR length(n.vector) != ?) ORDER BY d.rowid LIMIT ?",
                    (last, 4 * dimension, batch),
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [_drawer(row) for row in rows]

    def stage_vectors(self, rowids: Sequence[int], vectors: np.ndarray, *, first: bool) -> None:
        blobs = np.asarray(vectors, dtype="<f4")
        with self._transaction() as connection:
            if first:
                connection.execute("DELETE FROM vectors_next")
            connection.executemany(
                "INSERT OR REPLACE INTO vectors_next (rowid, vector) VALUES (?, ?)",
                [(int(rowid), blobs[i].tobytes()) for i, rowid in enumerate(rowids)],
            )

    def commit_vectors(self, embedder: EmbedderRecord, audit: AuditEntry) -> int:
        with self._transaction() as connection:
            connection.execute("DELETE FROM vectors")
            # Drawers deleted while the reindex ran are left out.
            connection.execute(
                "INSERT INTO vectors (rowid, vector) SELECT n.rowid, n.vector FROM vectors_next n "
                "JOIN drawers d ON d.rowid = n.rowid WHERE d.deleted_at IS NULL"
            )
            connection.execute("DELETE FROM vectors_next")
            connection.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [(_EMBEDDER_NAME, embedder.name), (_EMBEDDER_DIMENSION, str(embedder.dimension))],
            )
            self._bump_epoch(connection)
            count = connection.execute("SELECT count(*) FROM vectors").fetchone()[0]
            detail = {**dict(audit.detail), "vectors": count}
            self._audit(connection, AuditEntry(audit.identity, audit.door, audit.action, detail))
        return int(count)

    # -- knowledge graph ----------------------------------------------------------------

    @staticmethod
    def _triple_where(where: TripleFilter) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column in ("id", "subject", "predicate", "object"):
            value = getattr(where, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if where.entity is not None:
            clauses.append("(subject = ? OR object = ?)")
            params += [where.entity, where.entity]
        if where.at is not None:
            # valid_from inclusive, valid_to exclusive
            clauses.append("(valid_from IS NULL OR valid_from <= ?)")
            clauses.append("(valid_to IS NULL OR valid_to > ?)")
            params += [where.at, where.at]
        return " AND ".join(clauses) or "1", params

    def triples(self, where: TripleFilter, limit: int) -> list[Triple]:
        # A period with no start first (before any start, even one before 1970).
        order = "valid_from IS NOT NULL, coalesce(valid_from, 0), id, rowid"
        return self._triples_ordered(where, order, limit)

    def strongest_triples(self, where: TripleFilter, limit: int) -> list[Triple]:
        order = "confidence DESC, id, coalesce(valid_from, 0), rowid"
        return self._triples_ordered(where, order, limit)

    def _triples_ordered(self, where: TripleFilter, order: str, limit: int) -> list[Triple]:
        condition, params = self._triple_where(where)
        sql = f"SELECT {_TRIPLE_COLUMNS} FROM triples WHERE {condition} ORDER BY {order} LIMIT ?"
        with self._readers.connection() as connection:
            return [_triple(row) for row in connection.execute(sql, [*params, limit])]

    def triple_batches(self, batch: int) -> Iterator[list[Triple]]:
        with self._readers.connection() as connection:
            cursor = connection.execute(f"SELECT {_TRIPLE_COLUMNS} FROM triples ORDER BY rowid")
            try:
                while rows := cursor.fetchmany(batch):
                    yield [_triple(row) for row in rows]
            finally:
                cursor.close()

    def triple_stats(self, now: int) -> TripleStats:
        with self._readers.connection() as connection:
            total, active, upcoming = connection.execute(
                "SELECT count(*), count(*) FILTER (WHERE (valid_from IS NULL OR valid_from <= ?) "
                "AND (valid_to IS NULL OR valid_to > ?)), "
                "count(*) FILTER (WHERE valid_from > ? AND (valid_to IS NULL OR valid_to > "
                "valid_from)) FROM triples",
                (now, now, now),
            ).fetchone()
            entities = connection.execute(
                "SELECT subject FROM triples UNION SELECT object FROM triples"
            ).fetchall()
            predicates = connection.execute(
                "SELECT predicate, count(*) FROM triples GROUP BY predicate"
            ).fetchall()
        entity_names = frozenset(row[0] for row in entities)
        return TripleStats(total, active, entity_names, dict(predicates), upcoming)

    def add_triple(self, triple: NewTriple, audit: AuditEntry) -> tuple[Triple, bool]:
        now = _now()
        with self._transaction() as connection:
            fact = (triple.subject, triple.predicate, triple.object)
            for ident in (triple.id, triple.long_id):
                held = connection.execute(
                    "SELECT subject, predicate, object FROM triples WHERE id = ? LIMIT 1",
                    (ident,),
                ).fetchone()
                if ident and (held is None or tuple(held) == fact):
                    break
            else:
                raise ValueError(f"both ids of ({', '.join(fact)}) hold other facts")
            if ident != triple.id:
                # Another fact holds the short id: this one is stored under the long.
                triple = replace(triple, id=ident)
                audit = replace(audit, detail={**audit.detail, "triple_id": ident})
            row = connection.execute(
                f"SELECT {_TRIPLE_COLUMNS} FROM triples WHERE id = ? AND valid_to IS NULL",
                (triple.id,),
            ).fetchone()
            if row is not None:
                return _triple(row), False
            start = triple.valid_from if triple.valid_from is not None else now
            # A period withdrawn before it began (ending where it starts) was never
            # valid: it overlaps nothing.
            ended = connection.execute(
                f"SELECT {_TRIPLE_COLUMNS} FROM triples WHERE id = ? AND valid_to > ? "
                "AND (valid_from IS NULL OR valid_to > valid_from) "
                "ORDER BY valid_to DESC, rowid",
                (triple.id, start),
            ).fetchall()
            if ended:
                raise PeriodsOverlap([_triple(r) for r in ended])
            row = connection.execute(
                "INSERT INTO triples (id, subject, predicate, object, valid_from, valid_to, "
                "confidence, source_drawer, identity, created_at) "
                f"VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?) RETURNING {_TRIPLE_COLUMNS}",
                (
                    triple.id,
                    triple.subject,
                    triple.predicate,
                    triple.object,
                    start,
                    triple.confidence,
                    triple.source_drawer,
                    triple.identity,
                    now,
                ),
            ).fetchone()
            self._audit(connection, audit)
        return _triple(row), True

    def invalidate_triple(self, triple_id: str, at: int, audit: AuditEntry) -> Triple | None:
        with self._transaction() as connection:
            row = connection.execute(
                "UPDATE triples SET valid_to = ? WHERE id = ? AND valid_to IS NULL "
                f"RETURNING {_TRIPLE_COLUMNS}",
                (at, triple_id),
            ).fetchone()
            if row is None:
                return None
            self._audit(connection, audit)
        return _triple(row)

    def close(self) -> None:
        with self._write_lock:
            with contextlib.suppress(sqlite3.Error):
                self._writer.execute("PRAGMA optimize")
            self._writer.close()
        self._readers.close()
        self._vectors.close()
        self._lexical.close()
