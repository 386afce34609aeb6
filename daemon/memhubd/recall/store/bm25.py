"""BM25 ranking of a SQLite store from memory: a `LexicalIndex` kept in step with the
store's FTS5 table, which stays the source of truth on disk.

The index is read from FTS5's own token instances (fts5vocab), and rows added since
are tokenized by the same tokenizer in a scratch table; it ranks only while its live
rows and token total equal FTS5's own statistics, and filters are applied from columns
cached here exactly as the store's SQL applies them. When it cannot answer (not built
yet, a phrase of several tokens, disabled) it says so and the store asks FTS5.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import structlog

from memhubd.recall.lexical import COLUMN_BITS, COLUMNS, LexicalIndex, top
from memhubd.recall.store.base import DrawerFilter
from memhubd.recall.store.readers import ReaderGroups

log = structlog.get_logger("memhubd.recall.store.bm25")

ENABLED = True  # False: every query goes to FTS5 (benchmarks compare the two)
INLINE_BELOW = 10_000  # live drawers: built at once below this, on a thread above
REBUILD_SHARE = 0.25  # of the rows held: rebuild when this many are dead or new at once
MIN_REBUILD = 10_000
_BATCH = 20_000  # rows fetched per step
_TOKEN_CACHE = 4096  # query terms whose tokens are remembered
# ... and the bytes they may hold: a term may be a whole query's 65,536 characters.
_TOKEN_CACHE_BYTES = 4 * 1024 * 1024
_FTS = "drawers_fts"
_ROW_COLUMNS_LIST = (
    "rowid",
    "room",
    "source_kind",
    "identity",
    "coalesce(said_at, created_at)",
    "readers",
)
_ROW_COLUMNS = ", ".join(_ROW_COLUMNS_LIST)


class Column:
    """One text column of cached rows as small integer codes, one string per distinct
    value: a million rows cost 4 MB, not a million string objects."""

    def __init__(self) -> None:
        self.names: list[str | None] = []  # None: a NULL (a drawer without a speaker)
        self._code: dict[str | None, int] = {}
        self._parts: list[np.ndarray] = []
        self._codes: np.ndarray | None = np.zeros(0, np.int32)

    def extend(self, values: Sequence[str | None]) -> None:
        codes = np.empty(len(values), np.int32)
        for i, value in enumerate(values):
            code = self._code.get(value)
            if code is None:
                code = self._code[value] = len(self.names)
                self.names.append(value)
            codes[i] = code
        self._parts.append(codes)
        self._codes = None

    @property
    def codes(self) -> np.ndarray:
        if self._codes is None:
            self._codes = np.concatenate(self._parts) if self._parts else np.zeros(0, np.int32)
            self._parts = [self._codes]
        return self._codes

    def taken(self, positions: np.ndarray) -> Column:
        """A new column of the rows at `positions`, in that order (names and codes kept)."""
        other = Column()
        other.names = list(self.names)
        other._code = dict(self._code)
        other._codes = self.codes[positions]
        other._parts = [other._codes]
        return other

    def isin(self, values: Sequence[str]) -> np.ndarray:
        wanted = [self._code[v] for v in values if v in self._code]
        return np.isin(self.codes, np.asarray(wanted, np.int32))

    def codes_of(self, values: Sequence[str]) -> np.ndarray:
        return np.asarray([self._code[v] for v in values if v in self._code], np.int32)


class _Attributes:
    """What filters read, for each row of the index (by position)."""

    def __init__(self) -> None:
        self.rooms = Column()
        self.kinds = Column()
        self.identities = Column()
        self.when = np.zeros(0, np.int64)
        self.readers = ReaderGroups()
        self.size = 0

    def extend(self, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        _rowids, rooms, kinds, identities, when, readers = zip(*rows, strict=True)
        for offset, names in enumerate(readers):
            if names is not None:
                self.readers.add(self.size + offset, json.loads(names))
        self.rooms.extend(list(rooms))
        self.kinds.extend(list(kinds))
        self.identities.extend(list(identities))
        self.when = np.concatenate([self.when, np.asarray(when, np.int64)])
        self.size += len(rows)

    def allows(self, positions: np.ndarray, where: DrawerFilter) -> np.ndarray:
        """Which of `positions` `where` lets through (the store's `_where`, minus liveness)."""
        keep = np.ones(len(positions), dtype=bool)
        for values, column in (
            (where.rooms, self.rooms),
            (where.source_kinds, self.kinds),
            (where.identities, self.identities),
        ):
            if values is not None:
                keep &= np.isin(column.codes[positions], column.codes_of(values))
        if where.since is not None:
            keep &= self.when[positions] >= where.since
        if where.until is not None:
            keep &= self.when[positions] < where.until
        if where.roles is not None and self.readers:
            keep &= self.visible(where.roles)[positions]
        return keep

    def visible(self, roles: frozenset[str]) -> np.ndarray:
        """Which positions a caller of these roles may read; the same array until rows
        are added, so the index keeps its totals per role set."""
        return self.readers.visible(roles, self.size)


def _varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, one after another."""
    out, at = [], 0
    while at < len(blob):
        value = 0
        for i in range(9):
            byte = blob[at]
            at += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


def fts_totals(connection: sqlite3.Connection) -> tuple[int, int]:
    """FTS5's own row count and token total (its averages record): what bm25() uses."""
    row = connection.execute(f"SELECT block FROM {_FTS}_data WHERE id = 1").fetchone()
    numbers = _varints(row[0]) if row and row[0] else []
    return (numbers[0], sum(numbers[1:])) if numbers else (0, 0)


def _term_bytes(term: str) -> int:
    """What remembering a term's tokens holds, roughly: the term, its tokens about as
    long again, their tuple and the entry."""
    return 2 * sys.getsizeof(term) + 120


class _Schema:
    """The FTS table's columns and tokenizer, read from the store itself."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        row = connection.execute("SELECT sql FROM sqlite_master WHERE name = ?", (_FTS,)).fetchone()
        self.columns = [r[1] for r in connection.execute(f"PRAGMA table_info({_FTS})")]
        if row is None or not self.columns or len(self.columns) > COLUMNS:
            raise ValueError(f"{_FTS}: not an FTS5 table this index can follow")
        found = re.search(r"tokenize\s*=\s*(['\"])(.*?)\1", row[0])
        self.tokenize = found.group(2) if found else "unicode61"
        # One code per token instance: rowid << COLUMN_BITS | column.
        case = " ".join(f"WHEN '{name}' THEN {i}" for i, name in enumerate(self.columns))
        self.code = f"(doc << {COLUMN_BITS}) | CASE col {case} END"


class _Scratch:
    """In-memory FTS5 tables with the store's tokenizer: they tokenize query terms and
    rows added since the index was built, exactly as the store's table did. Each use is
    rolled back, so the tables stay empty and cost nothing to reuse."""

    def __init__(self, schema: _Schema) -> None:
        self._schema = schema
        self.columns = schema.columns
        self._connection = sqlite3.connect(
            ":memory:", check_same_thread=False, isolation_level=None
        )
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._token_bytes = 0
        quoted = schema.tokenize.replace("'", "''")
        for name, columns in (("q", ["t"]), ("r", schema.columns)):
            self._connection.execute(
                f"CREATE VIRTUAL TABLE {name} USING fts5({', '.join(columns)}, tokenize='{quoted}')"
            )
            self._connection.execute(
                f"CREATE VIRTUAL TABLE {name}_v USING fts5vocab({name}, instance)"
            )

    @contextlib.contextmanager
    def _rolled_back(self) -> Iterator[sqlite3.Connection]:
        self._connection.execute("BEGIN")
        try:
            yield self._connection
        finally:
            self._connection.execute("ROLLBACK")

    def tokens(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """Each term's tokens in order, as FTS5 reads a quoted query phrase."""
        missing = [t for t in dict.fromkeys(terms) if t not in self._tokens]
        if missing:
            adding = sum(map(_term_bytes, missing))
            if (
                len(self._tokens) + len(missing) > _TOKEN_CACHE
                or self._token_bytes + adding > _TOKEN_CACHE_BYTES
            ):
                # Every term asked is tokenized again: a cached one would be lost here.
                self._tokens.clear()
                missing = list(dict.fromkeys(terms))
                self._token_bytes, adding = 0, sum(map(_term_bytes, missing))
            self._token_bytes += adding
            found: dict[int, list[tuple[int, str]]] = {}
            with self._rolled_back() as connection:
                connection.executemany(
                    "INSERT INTO q (rowid, t) VALUES (?, ?)", list(enumerate(missing, 1))
                )
                for doc, offset, term in connection.execute("SELECT doc, offset, term FROM q_v"):
                    found.setdefault(doc, []).append((offset, term))
            for i, term in enumerate(missing, 1):
                self._tokens[term] = tuple(t for _o, t in sorted(found.get(i, [])))
        return [self._tokens[t] for t in terms]

    def instances(self, rows: Sequence[tuple[Any, ...]]) -> list[tuple[str, np.ndarray]]:
        """Token instances of rows (rowid and one text per FTS column), per term."""
        columns = self._schema.columns
        marks = ", ".join("?" * (len(columns) + 1))
        with self._rolled_back() as connection:
            connection.executemany(
                f"INSERT INTO r (rowid, {', '.join(columns)}) VALUES ({marks})", rows
            )
            return list(read_instances(connection, "r_v", self._schema.code))


def read_instances(
    connection: sqlite3.Connection, vocab: str, code: str
) -> Iterator[tuple[str, np.ndarray]]:
    """Per term, its instance codes, from an fts5vocab instance table."""
    cursor = connection.execute(
        f"SELECT term, group_concat({code}, ' ') FROM {vocab} GROUP BY term"
    )
    while rows := cursor.fetchmany(256):
        for term, codes in rows:
            yield term, np.fromstring(codes, dtype=np.int64, sep=" ")


def _instances_table(connection: sqlite3.Connection) -> sqlite3.Connection:
    """`connection` with FTS5's token instances as a temporary table (created before
    the connection turns query-only, which forbids even temporary tables)."""
    connection.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_FTS}_instances "
        f"USING fts5vocab(main, {_FTS}, instance)"
    )
    return connection


class _Built:
    """An index and its attributes as of one snapshot of the store."""

    def __init__(self, index: LexicalIndex, attributes: _Attributes, started: int) -> None:
        self.index = index
        self.attributes = attributes
        self.started = started


class LexicalCache:
    """One store's in-memory BM25 ranking. `ranked` returns None whenever FTS5 must
    answer instead; every other answer equals FTS5's (ids and scores)."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self.lock = threading.Lock()
        self._connection = _instances_table(connect())
        self._connection.execute("PRAGMA query_only = ON")
        self._schema: _Schema | None = None
        self._scratch: _Scratch | None = None
        self._current: _Built | None = None
        self._ready: _Built | None = None  # built on the thread, not yet installed
        self._builder: threading.Thread | None = None
        self._builder_connection: sqlite3.Connection | None = None
        self._version: int | None = None
        self._checked_at = 0
        self._disabled = False
        self._closed = False

    # -- answering ----------------------------------------------------------------------

    def ranked(
        self, terms: Sequence[str], where: DrawerFilter, limit: int, weights: Sequence[float]
    ) -> list[tuple[int, float]] | None:
        """The `limit` best live rows `where` allows for the OR of `terms` (each one
        phrase) by FTS5's bm25 with these column weights, best first; None: ask FTS5."""
        if not ENABLED:
            return None
        with self.lock:
            if self._disabled or self._closed:
                return None
            try:
                self._refresh()
                if self._current is None or self._scratch is None:
                    return None
                phrases = self._scratch.tokens(terms)
            except Exception as error:  # the store still answers through FTS5
                self._turn_off(error)
                return None
            index, attributes = self._current.index, self._current.attributes
            # A caller's ranking counts only the drawers it may read: the statistics of
            # hidden ones (how many use a word, how long they are) never move its order.
            limited = where.roles is not None and bool(attributes.readers)
            if any(len(tokens) != 1 for tokens in phrases):
                if not limited:
                    return None  # a phrase of several tokens needs positions: FTS5 has them
                # FTS5 would rank the phrase with every drawer's statistics: for a caller
                # hidden some, each of its tokens is a term of its own instead.
                phrases = _tokens_apart(phrases)
                if not phrases:
                    return []
            visible = None
            if where.roles is not None and attributes.readers:
                visible = attributes.visible(where.roles)
            positions, scores = index.rank([t[0] for t in phrases], weights, visible)
            if where.narrows or (where.roles is not None and attributes.readers):
                keep = attributes.allows(positions, where)
                positions, scores = positions[keep], scores[keep]
            positions, scores = top(positions, scores, limit)
            rowids = index.rowids[positions]
        return [(int(r), float(s)) for r, s in zip(rowids, scores, strict=True)]

    def ready(self) -> bool:
        """Whether `ranked` answers from memory now (a build starts if none runs); True
        too when it never will (off, closed, failed), since FTS5 answers then."""
        if not ENABLED:
            return True
        with self.lock:
            if self._disabled or self._closed:
                return True
            try:
                self._refresh()
            except Exception as error:  # the store still answers through FTS5
                self._turn_off(error)
                return True
            return self._current is not None or self._disabled

    def _turn_off(self, error: Exception) -> None:
        """Off for this store's lifetime (under `lock`): a failure that repeats must not
        cost a rebuild per search."""
        log.warning("lexical index refresh failed; FTS5 answers", error=str(error))
        self._current = None
        self._disabled = True

    def settle(self, timeout: float | None = None) -> bool:
        """Build or catch up now, waiting for a background build; True when ready."""
        with self.lock:
            if self._disabled or self._closed:
                return False
            self._refresh()
            builder = self._builder
        if builder is not None:
            builder.join(timeout)
        with self.lock:
            self._refresh()
            return self._current is not None

    @property
    def nbytes(self) -> int:
        current = self._current
        return current.index.nbytes if current is not None else 0

    # -- keeping up ---------------------------------------------------------------------

    def _refresh(self) -> None:
        connection = self._connection
        if self._schema is None:
            try:
                self._schema = _Schema(connection)
            except ValueError as error:
                log.warning("lexical index off; FTS5 answers", error=str(error))
                self._disabled = True
                return
            self._scratch = _Scratch(self._schema)
        if self._ready is not None:
            self._current, self._ready = self._ready, None
            self._checked_at = self._current.started
            self._version = None
        version = connection.execute("PRAGMA data_version").fetchone()[0]
        if self._current is None:
            if self._builder is None:
                self._start_build(connection)
                if self._current is not None:
                    self._version = version
            return
        if version == self._version:
            return
        started = int(time.time())
        connection.execute("BEGIN")
        try:
            self._catch_up(connection)
        finally:
            connection.execute("COMMIT")
        self._version = version
        self._checked_at = started

    def _start_build(self, connection: sqlite3.Connection) -> None:
        live = connection.execute("SELECT count(*) FROM drawers WHERE deleted_at IS NULL")
        if live.fetchone()[0] < INLINE_BELOW:
            self._current = self._build(connection)
            self._version = None
            self._checked_at = self._current.started
            return
        self._builder = threading.Thread(
            target=self._build_in_background, name="lexical-index", daemon=True
        )
        self._builder.start()

    def _catch_up(self, connection: sqlite3.Connection) -> None:
        assert self._current is not None and self._scratch is not None
        index, attributes = self._current.index, self._current.attributes
        last = index.max_rowid
        new = connection.execute(
            "SELECT count(*) FROM drawers WHERE rowid > ? AND deleted_at IS NULL", (last,)
        ).fetchone()[0]
        if new > max(MIN_REBUILD, REBUILD_SHARE * len(index)):
            self._rebuild(connection, serve=False)
            return
        # Two seconds of slack: deletes stamped in the second of the last check.
        gone = connection.execute(
            "SELECT rowid FROM drawers WHERE deleted_at IS NOT NULL AND deleted_at >= ? "
            "AND rowid <= ?",
            (self._checked_at - 2, last),
        ).fetchall()
        index.delete([r[0] for r in gone])
        if new:
            texts = ", ".join(f"coalesce({name}, '')" for name in self._scratch.columns)
            cursor = connection.execute(
                f"SELECT {_ROW_COLUMNS}, {texts} FROM drawers "
                "WHERE rowid > ? AND deleted_at IS NULL ORDER BY rowid",
                (last,),
            )
            rows = cursor.fetchall()
            texts = [(r[0], *r[len(_ROW_COLUMNS_LIST) :]) for r in rows]
            index.add(np.asarray([r[0] for r in rows], np.int64), self._scratch.instances(texts))
            attributes.extend([r[: len(_ROW_COLUMNS_LIST)] for r in rows])
        if (index.live, index.live_tokens) != fts_totals(connection):
            # A delete the time window missed (a writer's clock, a long transaction):
            # mask every deleted row once, then the statistics must agree.
            gone = connection.execute(
                "SELECT rowid FROM drawers WHERE deleted_at IS NOT NULL AND rowid <= ?", (last,)
            ).fetchall()
            index.delete([r[0] for r in gone])
            if (index.live, index.live_tokens) != fts_totals(connection):
                # A purge removed rows the index still holds: mask those that are gone.
                index.delete(_purged(connection, index.rowids[index.alive], last))
            if (index.live, index.live_tokens) != fts_totals(connection):
                log.warning("lexical index disagrees with FTS5; rebuilding it")
                self._rebuild(connection, serve=False)
                return
        if index.dead > max(MIN_REBUILD, REBUILD_SHARE * len(index)):
            self._rebuild(connection, serve=True)

    def _rebuild(self, connection: sqlite3.Connection, *, serve: bool) -> None:
        """Start a fresh build; the current index answers meanwhile only if `serve`
        (it is still exact: dead rows are masked, new ones added as they come)."""
        if not serve:
            self._current = None
        if self._builder is None or not self._builder.is_alive():
            self._builder = None
            self._start_build(connection)

    def _build_in_background(self) -> None:
        connection = _instances_table(self._connect())
        self._builder_connection = connection
        try:
            built = self._build(connection)
        except Exception as error:  # the store still answers through FTS5
            if not self._closed:
                log.warning("lexical index build failed; FTS5 answers", error=str(error))
                self._disabled = True
            return
        finally:
            self._builder_connection = None
            connection.close()
        with self.lock:
            self._ready = built
            self._builder = None

    def _build(self, connection: sqlite3.Connection) -> _Built:
        """The index of every live row, read in one snapshot of the store."""
        assert self._schema is not None
        started = int(time.time())
        index, attributes = LexicalIndex(), _Attributes()
        began = not connection.in_transaction
        if began:
            connection.execute("BEGIN")
        try:
            cursor = connection.execute(
                f"SELECT {_ROW_COLUMNS} FROM drawers WHERE deleted_at IS NULL ORDER BY rowid"
            )
            rowids: list[int] = []
            while rows := cursor.fetchmany(_BATCH):
                attributes.extend(rows)
                rowids.extend(r[0] for r in rows)
            instances = read_instances(connection, f"temp.{_FTS}_instances", self._schema.code)
            index.add(np.asarray(rowids, np.int64), instances)
            totals = fts_totals(connection)
        finally:
            if began:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("COMMIT")
        if (index.live, index.live_tokens) != totals:
            raise ValueError(
                f"FTS5 holds {totals[0]} rows of {totals[1]} tokens, the drawers "
                f"{index.live} of {index.live_tokens}"
            )
        return _Built(index, attributes, started)

    def close(self) -> None:
        with self.lock:
            self._closed = True
            builder, connection = self._builder, self._builder_connection
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.interrupt()
        if builder is not None:
            builder.join(10)
        with self.lock:  # used under the lock: never closed while a refresh reads it
            self._connection.close()


def _purged(connection: sqlite3.Connection, held: np.ndarray, last: int) -> np.ndarray:
    """The rowids up to `last` among `held` (live in the index, ascending) that no live
    drawer has any more: purged, or deleted unseen. Rows after `last` were added by this
    catch-up, from the drawers as they are now."""
    held = held[held <= last]
    live = np.fromiter(
        (
            r[0]
            for r in connection.execute(
                "SELECT rowid FROM drawers WHERE deleted_at IS NULL AND rowid <= ? ORDER BY rowid",
                (last,),
            )
        ),
        np.int64,
    )
    return held[~np.isin(held, live, assume_unique=True)]


def _tokens_apart(phrases: Sequence[Sequence[str]]) -> list[tuple[str]]:
    """Each token of `phrases` as a phrase of its own, in order; a token a phrase of
    several repeats (or one already there) once."""
    out: list[tuple[str]] = []
    seen: set[str] = set()
    for tokens in phrases:
        for token in tokens:
            if len(tokens) == 1 or token not in seen:
                out.append((token,))
            seen.add(token)
    return out
