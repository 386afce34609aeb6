"""The in-memory BM25 index ranks exactly as FTS5's bm25() does: same drawers, same
order, scores within 1e-9, through writes, soft deletes, purges, filters and roles
(for a caller of limited roles, as FTS5 over the drawers it may read), and it hands
the query back to FTS5 whenever it cannot answer."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memhubd.recall.ids import content_hash
from memhubd.recall.lexical import COLUMN_BITS, LexicalIndex
from memhubd.recall.store import (
    CONTEXT_WEIGHT,
    AuditEntry,
    DrawerFilter,
    NewDrawer,
    RankedRow,
    bm25,
    open_store,
)
from memhubd.recall.store.sqlite import SQLiteStore

AUDIT = AuditEntry("tester", "test", "ingest")
# Stems, case, diacritics and numbers: the tokenizer's work must be FTS5's own.
WORDS = (
    "run running runs ran runner cafe café Café naïve naive ledger ledgers invoice "
    "invoices retry retried retrying webhook 42 x1 alpha beta gamma delta omega the a of "
    "zeta eta theta iota kappa"
).split()
SPEAKERS = (None, None, "Caroline", "Jon Snow", "Melanie")
ROOMS = ("r0", "r1", "r2")
KINDS = ("text", "markdown", "slack")
IDENTITIES = ("ann", "bob")
READERS = (None, None, None, ("ops",), ("ops", "dev"), ())
QUERIES = 12  # random queries per comparison, each under every filter


def text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def drawers(rng: random.Random, count: int, start: int) -> list[NewDrawer]:
    out = []
    for i in range(start, start + count):
        content = text(rng, 0, 14)
        out.append(
            NewDrawer(
                id=f"drawer_{i}",
                room=rng.choice(ROOMS),
                content=content,
                source_file=f"s{i % 4}.txt",
                source_kind=rng.choice(KINDS),
                chunk_index=i,
                content_hash=content_hash(content),
                identity=rng.choice(IDENTITIES),
                speaker=rng.choice(SPEAKERS),
                said_at=rng.choice((None, 1000 + i)),
                readers=rng.choice(READERS),
                context=text(rng, 0, 6) if rng.random() < 0.5 else "",
            )
        )
    return out


def query(rng: random.Random) -> list[str]:
    words = [rng.choice(WORDS).lower() for _ in range(rng.randint(1, 5))]
    if rng.random() < 0.2:
        words.append(rng.choice(("caroline", "snow", "jon", "melanie")))
    return list(dict.fromkeys(words))


FILTERS = (
    DrawerFilter(),
    DrawerFilter(roles=frozenset()),
    DrawerFilter(roles=frozenset({"ops"})),
    DrawerFilter(rooms=("r1", "r2"), roles=frozenset({"dev"})),
    DrawerFilter(source_kinds=("markdown",)),
    DrawerFilter(identities=("bob",)),
    DrawerFilter(since=1010, until=1040),
    DrawerFilter(rooms=("nowhere",)),
)


def from_fts(store: SQLiteStore, terms: list[str], where: DrawerFilter, limit: int) -> list:
    enabled, bm25.ENABLED = bm25.ENABLED, False
    try:
        return store.lexical(terms, where, limit)
    finally:
        bm25.ENABLED = enabled


def assert_same(memory: list[RankedRow], fts: list[RankedRow]) -> None:
    """Same rows in the same order; rows whose scores agree to 1e-9 may swap (a last
    bit of a logarithm may differ between SQLite's C library and numpy)."""
    assert len(memory) == len(fts)
    fts_score = {r.rowid: r.score for r in fts}
    for mine, theirs in zip(memory, fts, strict=True):
        assert mine.score == pytest.approx(theirs.score, rel=1e-9, abs=1e-12)
        if mine.rowid != theirs.rowid:
            assert fts_score.get(mine.rowid) == pytest.approx(theirs.score, rel=1e-9)


def visible_copy(store: SQLiteStore, roles: frozenset[str], path: Path) -> SQLiteStore:
    """A copy of `store` at `path` holding only the drawers a caller of `roles` may read."""
    with sqlite3.connect(store.path) as source, sqlite3.connect(path) as copy:
        source.backup(copy)
        rows = copy.execute("SELECT rowid, readers FROM drawers WHERE readers IS NOT NULL")
        hidden = [(r,) for r, names in rows.fetchall() if roles.isdisjoint(json.loads(names))]
        copy.executemany("DELETE FROM drawers WHERE rowid = ?", hidden)
    copy.close()
    opened = open_store(path)
    assert isinstance(opened, SQLiteStore)
    return opened


def compare(store: SQLiteStore, rng: random.Random, queries: int = QUERIES) -> int:
    """Compares both rankings on random queries; returns how many the index answered.

    A caller of limited roles is ranked as FTS5 ranks a store holding only the drawers
    it may read: hidden drawers never move its order or scores."""
    answered = 0
    copies: dict[frozenset[str], SQLiteStore] = {}
    scratch = Path(tempfile.mkdtemp(prefix="visible-"))
    try:
        for where in FILTERS:
            if where.roles is not None and where.roles not in copies:
                path = scratch / f"copy-{len(copies)}.db"
                copies[where.roles] = visible_copy(store, where.roles, path)
        for _ in range(queries):
            terms = query(rng)
            for where in FILTERS:
                limit = rng.choice((1, 3, 10, 500))
                cache_answer = store._lexical.ranked(terms, where, limit, (1.0, 0.5, 0.5))
                answered += cache_answer is not None
                if where.roles is None:
                    wanted = from_fts(store, terms, where, limit)
                else:
                    everyone = replace(where, roles=None)
                    wanted = from_fts(copies[where.roles], terms, everyone, limit)
                assert_same(store.lexical(terms, where, limit), wanted)
    finally:
        for copy in copies.values():
            copy.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return answered


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = open_store(tmp_path / "recall.db")
    assert isinstance(opened, SQLiteStore)
    yield opened
    opened.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ranking_equals_fts5_through_writes_deletes_and_purges(
    store: SQLiteStore, seed: int
) -> None:
    rng = random.Random(seed)
    written = drawers(rng, 120, 0)
    store.write(written, None, None, AUDIT)
    assert compare(store, rng) > 0

    # Given more writes (the index adds them as a segment) and soft deletes
    store.write(drawers(rng, 40, 120), None, None, AUDIT)
    for victim in rng.sample(written, 30):
        store.soft_delete(victim.id, AUDIT)
    assert compare(store, rng) > 0

    # When the deleted drawers are purged and more arrive in small writes
    store.purge(None, AUDIT)
    for start in range(160, 200, 5):
        store.write(drawers(rng, 5, start), None, None, AUDIT)
    # Then the ranking is still FTS5's, answered from memory
    assert compare(store, rng) == QUERIES * len(FILTERS)


def test_a_purge_right_after_deletes_is_followed_without_a_rebuild(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    written = drawers(rng, 60, 0)
    store.write(written, None, None, AUDIT)
    assert compare(store, rng, 3) > 0
    rebuilds: list[bool] = []
    original = type(store._lexical)._rebuild

    def counted(self: object, connection: object, *, serve: bool) -> None:
        rebuilds.append(serve)
        original(self, connection, serve=serve)

    monkeypatch.setattr(type(store._lexical), "_rebuild", counted)
    # Given drawers deleted, then purged before any search saw them deleted
    for victim in rng.sample(written, 10):
        store.soft_delete(victim.id, AUDIT)
    store.purge(None, AUDIT)
    # Then the index masks them and keeps answering as FTS5 does, without a rebuild
    assert compare(store, rng) == QUERIES * len(FILTERS)
    assert rebuilds == []


def test_writes_and_deletes_of_another_connection_are_followed(tmp_path: Path) -> None:
    rng = random.Random(9)
    reader = open_store(tmp_path / "recall.db")
    writer = open_store(tmp_path / "recall.db")
    assert isinstance(reader, SQLiteStore)
    try:
        batch = drawers(rng, 80, 0)
        writer.write(batch, None, None, AUDIT)
        compare(reader, rng, 5)
        writer.write(drawers(rng, 20, 80), None, None, AUDIT)
        for victim in batch[:25]:
            writer.soft_delete(victim.id, AUDIT)
        assert compare(reader, rng) == QUERIES * len(FILTERS)
    finally:
        writer.close()
        reader.close()


def test_a_phrase_of_several_tokens_is_ranked_by_fts5(store: SQLiteStore) -> None:
    rng = random.Random(4)
    store.write(drawers(rng, 50, 0), None, None, AUDIT)
    terms = ["alpha-beta", "ledger"]  # the hyphen splits the phrase in two tokens
    assert store._lexical.ranked(terms, DrawerFilter(), 10, (1.0, 0.5, 0.5)) is None
    assert store.lexical(terms, DrawerFilter(), 10) == from_fts(store, terms, DrawerFilter(), 10)


def test_a_store_above_the_inline_size_is_built_on_a_thread(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "INLINE_BELOW", 10)
    rng = random.Random(5)
    store.write(drawers(rng, 60, 0), None, None, AUDIT)
    terms = ["alpha", "runs"]
    # FTS5 answers while the index builds; once settled, memory answers the same.
    before = store.lexical(terms, DrawerFilter(), 20)
    assert store.settle_lexical(10)
    assert store._lexical.ranked(terms, DrawerFilter(), 20, (1.0, 0.5, 0.5)) is not None
    assert_same(store.lexical(terms, DrawerFilter(), 20), before)


def test_a_weight_of_zero_still_matches_the_column(store: SQLiteStore) -> None:
    rng = random.Random(6)
    store.write(drawers(rng, 60, 0), None, None, AUDIT)
    for terms in (["omega"], ["caroline", "zeta"]):
        memory = store.lexical(terms, DrawerFilter(), 100, context_weight=0.0)
        enabled, bm25.ENABLED = bm25.ENABLED, False
        try:
            fts = store.lexical(terms, DrawerFilter(), 100, context_weight=0.0)
        finally:
            bm25.ENABLED = enabled
        assert_same(memory, fts)


def test_the_default_column_weights_add_up_as_fts5_adds_them() -> None:
    # Given the weights search uses (content, speaker, context)
    weights = (1.0, 0.5, CONTEXT_WEIGHT)
    for weight in weights:
        # When a column holds a term many times, FTS5 adds its weight once per instance
        added = 0.0
        for count in range(1, 300):
            added += weight
            # Then that sum is the count times the weight, as the index computes it
            assert added == count * weight


def codes(rowid: int, column: int, count: int) -> np.ndarray:
    return np.full(count, (rowid << COLUMN_BITS) | column, np.int64)


def test_segments_merged_rank_as_one_built_at_once() -> None:
    rng = np.random.default_rng(3)
    rows = list(range(1, 301))
    postings = {
        f"t{t}": [(r, int(rng.integers(0, 3)), int(rng.integers(1, 4))) for r in rows[t::7]]
        for t in range(7)
    }

    def instances(chosen: set[int]) -> list[tuple[str, np.ndarray]]:
        out = []
        for term, found in postings.items():
            mine = [codes(r, c, n) for r, c, n in found if r in chosen]
            if mine:
                out.append((term, np.concatenate(mine)))
        return out

    whole = LexicalIndex()
    whole.add(np.asarray(rows), instances(set(rows)), chunk=50)
    pieces = LexicalIndex()
    for start in range(0, 300, 17):
        part = rows[start : start + 17]
        pieces.add(np.asarray(part), instances(set(part)))
    assert len(pieces.segments) < 300 // 17
    for index in (whole, pieces):
        index.delete([5, 6, 7, 250])
    for term in postings:
        a, b = whole.rank([term, "t1"], (1.0, 0.5)), pieces.rank([term, "t1"], (1.0, 0.5))
        assert np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1], rtol=1e-12)


def test_a_token_of_a_row_not_added_is_refused() -> None:
    index = LexicalIndex()
    with pytest.raises(ValueError):
        index.add(np.asarray([1, 2]), [("a", codes(3, 0, 1))])
    assert len(index) == 0 and not index.vocabulary


def test_an_index_that_fails_to_keep_up_hands_every_query_to_fts5(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(8)
    store.write(drawers(rng, 40, 0), None, None, AUDIT)
    assert store._lexical.ranked(["alpha"], DrawerFilter(), 5, (1.0, 0.5, 0.5)) is not None

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("disk says no")

    monkeypatch.setattr(LexicalIndex, "add", broken)
    store.write(drawers(rng, 5, 40), None, None, AUDIT)
    answer = store.lexical(["alpha", "omega"], DrawerFilter(), 50)
    assert store._lexical.ranked(["alpha"], DrawerFilter(), 5, (1.0, 0.5, 0.5)) is None
    assert answer == from_fts(store, ["alpha", "omega"], DrawerFilter(), 50)


def test_a_full_token_cache_keeps_answering_from_memory(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a token cache of three terms, two of them remembered from a first query
    monkeypatch.setattr(bm25, "_TOKEN_CACHE", 3)
    store.write(drawers(random.Random(9), 60, 0), None, None, AUDIT)
    assert store._lexical.ranked(["alpha", "beta"], DrawerFilter(), 10, (1.0, 0.5, 0.5))
    # When a query mixes a remembered term with two new ones (the cache overflows)
    terms = ["alpha", "gamma", "delta"]
    memory = store._lexical.ranked(terms, DrawerFilter(), 10, (1.0, 0.5, CONTEXT_WEIGHT))
    # Then the index still answers, as FTS5 does, and stays on for the next query
    assert memory is not None
    assert_same([RankedRow(r, s) for r, s in memory], from_fts(store, terms, DrawerFilter(), 10))
    assert store._lexical.ranked(["omega"], DrawerFilter(), 10, (1.0, 0.5, 0.5)) is not None


def test_the_token_cache_stays_within_its_bytes_with_long_terms(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A term may be a whole query's 65,536 characters: the cache counts what it holds.
    monkeypatch.setattr(bm25, "_TOKEN_CACHE_BYTES", 50_000)
    store.write(drawers(random.Random(9), 60, 0), None, None, AUDIT)
    for n in range(12):
        terms = ["alpha", f"{'x' * 10_000}{n}"]
        memory = store._lexical.ranked(terms, DrawerFilter(), 10, (1.0, 0.5, CONTEXT_WEIGHT))
        assert memory is not None
        assert_same(
            [RankedRow(r, s) for r, s in memory], from_fts(store, terms, DrawerFilter(), 10)
        )
        scratch = store._lexical._scratch
        assert scratch._token_bytes == sum(map(bm25._term_bytes, scratch._tokens))
        assert scratch._token_bytes <= 50_000


def _alike_but_one_word(store: SQLiteStore, *, hidden: int) -> None:
    """Two readable drawers alike but for one word, and `hidden` drawers only `ops`
    may read that use one of the two words many times."""
    pair = ["alpha ledger note", "alpha invoice note"]
    secret = ["ledger ledger ledger ledger kappa"] * hidden
    rows = [*pair, *(f"{text} {i}" for i, text in enumerate(secret))]
    written = [
        NewDrawer(
            id=f"d{i}",
            room="r0",
            content=content,
            source_file="s.txt",
            source_kind="text",
            chunk_index=i,
            content_hash=content_hash(content),
            identity="ann",
            readers=("ops",) if i >= len(pair) else None,
        )
        for i, content in enumerate(rows)
    ]
    store.write(written, None, None, AUDIT)


def test_drawers_hidden_from_a_caller_never_move_its_ranking(tmp_path: Path) -> None:
    dev = DrawerFilter(roles=frozenset({"dev"}))
    answers = []
    for hidden in (0, 40):
        store = open_store(tmp_path / f"h{hidden}.db")
        assert isinstance(store, SQLiteStore)
        try:
            _alike_but_one_word(store, hidden=hidden)
            answers.append(store.lexical(["ledger", "invoice"], dev, 10))
            if hidden:
                # FTS5 over the whole store would rank the two the other way round
                whole = from_fts(store, ["ledger", "invoice"], dev, 10)
                assert [r.rowid for r in whole] != [r.rowid for r in answers[-1]]
        finally:
            store.close()
    alone, beside_hidden = answers
    assert [r.rowid for r in beside_hidden] == [r.rowid for r in alone]
    assert_same(beside_hidden, alone)


def test_a_word_fts5_splits_never_lets_hidden_drawers_move_a_callers_ranking(
    tmp_path: Path,
) -> None:
    """FTS5 ranks a word its tokenizer splits as a phrase, with every drawer's
    statistics; for a caller hidden some, each of its tokens is a term of its own."""
    dev = DrawerFilter(roles=frozenset({"dev"}))
    split = "omega-z\u19b0eta"  # a New Tai Lue vowel sign splits a word for FTS5
    answers = []
    for hidden in (0, 40):
        store = open_store(tmp_path / f"h{hidden}.db")
        assert isinstance(store, SQLiteStore)
        try:
            _alike_but_one_word(store, hidden=hidden)
            answers.append(store.lexical(["ledger", "invoice", split], dev, 10))
            apart = store.lexical(["ledger", "invoice", "omega", "z", "eta"], dev, 10)
            assert answers[-1] == apart
        finally:
            store.close()
    alone, beside_hidden = answers
    assert [r.rowid for r in beside_hidden] == [r.rowid for r in alone]
    assert_same(beside_hidden, alone)


def test_a_caller_of_limited_roles_waits_for_the_index_being_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store whose index is built on a thread (as above INLINE_BELOW drawers)
    monkeypatch.setattr(bm25, "INLINE_BELOW", 0)
    path = tmp_path / "recall.db"
    writer = open_store(path)
    _alike_but_one_word(writer, hidden=40)
    writer.close()
    alone = open_store(tmp_path / "alone.db")
    _alike_but_one_word(alone, hidden=0)
    dev = DrawerFilter(roles=frozenset({"dev"}))
    wanted = alone.lexical(["ledger", "invoice"], dev, 10)
    alone.close()
    store = open_store(path)
    try:
        # When a caller of limited roles searches before the index is ready
        answer = store.lexical(["ledger", "invoice"], dev, 10)
        # Then it is ranked over what it may read, as if the hidden drawers were not there
        assert_same(answer, wanted)
    finally:
        store.close()


def test_an_index_with_no_live_row_answers_nothing_for_everyone() -> None:
    index = LexicalIndex()
    index.add(np.asarray([1], np.int64), [("ledger", np.asarray([1 << COLUMN_BITS]))])
    index.delete([1])
    for visible in (None, np.ones(1, dtype=bool), np.zeros(1, dtype=bool)):
        positions, scores = index.rank(["ledger"], (1.0,), visible)
        assert len(positions) == len(scores) == 0


def stall_index_builds(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Index builds run on a thread and wait for the event returned (a large store's
    first seconds); set it to let them finish."""
    monkeypatch.setattr(bm25, "INLINE_BELOW", 0)
    release = threading.Event()
    build = bm25.LexicalCache._build

    def stalled(self: bm25.LexicalCache, connection: object) -> object:
        release.wait(10)
        return build(self, connection)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25.LexicalCache, "_build", stalled)
    return release


def test_a_caller_of_limited_roles_is_refused_rather_than_ranked_by_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.recall.store import IndexWarming
    from memhubd.recall.store import sqlite as sqlite_store

    # Given a store whose index build does not finish (a large store's first seconds)
    monkeypatch.setattr(sqlite_store, "SETTLE_FOR_ROLES_S", 0.2)
    path = tmp_path / "recall.db"
    writer = open_store(path)
    _alike_but_one_word(writer, hidden=40)
    writer.close()
    release = stall_index_builds(monkeypatch)
    store = open_store(path)
    assert isinstance(store, SQLiteStore)
    dev = DrawerFilter(roles=frozenset({"dev"}))
    try:
        # Then a caller hidden nothing is answered by FTS5 meanwhile, one of limited
        # roles is refused, and is ranked over what it may read once the index is there
        assert store.lexical(["ledger", "invoice"], DrawerFilter(), 10)
        assert not store.lexical_ready(dev.roles)
        with pytest.raises(IndexWarming):
            store.lexical(["ledger", "invoice"], dev, 10)
        release.set()
        assert store.settle_lexical(10)
        assert store.lexical_ready(dev.roles)
        assert [r.rowid for r in store.lexical(["ledger", "invoice"], dev, 10)] == [1, 2]
    finally:
        release.set()
        store.close()
