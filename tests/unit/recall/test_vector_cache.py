"""The in-memory vector matrix of a store follows writes, deletes, purges and other
connections' commits; the facets search's boosts read from it agree with the database."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_store import AUDIT, EMBEDDER, drawer, unit

from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, Facets, open_store
from memhubd.recall.store import sqlite as sqlite_store

EVERYTHING = DrawerFilter()


def nearest_ids(store: DrawerStore, vector: np.ndarray, limit: int = 10) -> list[str]:
    rows = store.nearest(vector, EMBEDDER, EVERYTHING, limit)
    found = store.get([r.rowid for r in rows])
    return [found[r.rowid].id for r in rows]


def test_the_matrix_follows_writes_deletes_and_purges(store: DrawerStore) -> None:
    first = drawer("alpha", 0, source_file="a.txt")
    store.write([first], np.stack([unit(1, 0, 0, 0)]), EMBEDDER, AUDIT)
    assert nearest_ids(store, unit(1, 0, 0, 0)) == [first.id]
    second = drawer("beta", 1, source_file="b.txt")
    store.write([second], np.stack([unit(0.9, 0.1, 0, 0)]), EMBEDDER, AUDIT)
    assert nearest_ids(store, unit(1, 0, 0, 0)) == [first.id, second.id]
    store.soft_delete(first.id, AuditEntry("tester", "test", "delete"))
    assert nearest_ids(store, unit(1, 0, 0, 0)) == [second.id]
    store.purge(None, AuditEntry("tester", "test", "purge"))
    third = drawer("gamma", 2, source_file="c.txt")
    store.write([third], np.stack([unit(1, 0, 0, 0)]), EMBEDDER, AUDIT)
    assert nearest_ids(store, unit(1, 0, 0, 0)) == [third.id, second.id]


def test_a_batch_keeps_each_vector_with_its_drawer_and_skips_stored_ids(
    store: DrawerStore,
) -> None:
    drawers = [drawer(f"text {n}", n) for n in range(4)]
    basis = np.eye(4, dtype=np.float32)
    outcome = store.write(drawers[:2], basis[:2], EMBEDDER, AUDIT)
    assert outcome.inserted == (drawers[0].id, drawers[1].id)
    # Two already stored, one repeated inside the batch: the first copy is kept.
    again = [drawers[1], drawers[2], drawers[2], drawers[3]]
    vectors = np.stack([basis[1], basis[2], basis[0], basis[3]])
    outcome = store.write(again, vectors, EMBEDDER, AUDIT)
    assert outcome.inserted == (drawers[2].id, drawers[3].id)
    for n in range(4):
        assert nearest_ids(store, basis[n], 1) == [drawers[n].id]


def test_another_connections_writes_and_facets_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    reader, writer = open_store(path), open_store(path)
    try:
        one = drawer("one", 0, source_file="one.txt", room="chat", speaker="Caroline")
        writer.write([one], np.stack([unit(0, 0, 1, 0)]), EMBEDDER, AUDIT)
        assert nearest_ids(reader, unit(0, 0, 1, 0)) == [one.id]
        plain = drawer("no vector here", 1, source_file="plain.txt", speaker="Melanie")
        writer.write([plain], None, None, AUDIT)
        rows = {d.id: d.rowid for batch in reader.iter_live(10) for d in batch}
        # One from the matrix, one (a drawer without a vector) from the database.
        assert reader.facets([rows[one.id], rows[plain.id], 10_000]) == Facets(
            [True, True, False],
            ["chat", "r", ""],
            ["one.txt", "plain.txt", ""],
            ["Caroline", "Melanie", None],
        )
        # A deleted drawer keeps its facets; one without a speaker has None.
        quiet = drawer("no speaker", 2, source_file="one.txt")
        writer.write([quiet], np.stack([unit(0, 1, 0, 0)]), EMBEDDER, AUDIT)
        writer.soft_delete(one.id, AUDIT)
        assert nearest_ids(reader, unit(0, 1, 0, 0), 1) == [quiet.id]
        found = {d.id: d.rowid for batch in reader.iter_live(10) for d in batch}
        assert reader.facets([found[quiet.id], rows[one.id]]) == Facets(
            [True, True], ["r", "chat"], ["one.txt", "one.txt"], [None, "Caroline"]
        )
    finally:
        reader.close()
        writer.close()


def test_dead_rows_are_dropped_once_many_and_searches_stay_the_same(
    store: DrawerStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store whose vector cache drops soft-deleted rows once more than
    # max(4, a quarter of its rows) are dead: here more than 6 of 24
    monkeypatch.setattr(sqlite_store, "MIN_COMPACT", 4)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(24, 4)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    drawers = [
        drawer(
            f"row {n}",
            n,
            source_file=f"f{n % 5}.txt",
            room=f"room{n % 3}",
            speaker=None if n % 4 else f"S{n}",
            readers=("lead",) if n % 3 == 0 else None,
        )
        for n in range(24)
    ]
    store.write(drawers, vectors, EMBEDDER, AUDIT)
    rows = {d.id: d.rowid for batch in store.iter_live(100) for d in batch}
    filters = (EVERYTHING, DrawerFilter(roles=frozenset()), DrawerFilter(rooms=("room1",)))
    queries = rng.normal(size=(6, 4)).astype(np.float32)
    deleted: set[str] = set()

    def delete(chosen: list) -> None:  # noqa: ANN001
        for d in chosen:
            store.soft_delete(d.id, AuditEntry("tester", "test", "delete"))
            deleted.add(d.id)

    def check_answers() -> None:
        # As a scan of the live rows: roles, rooms and scores
        for q in queries:
            for where in filters:
                got = [r.rowid for r in store.nearest(q, EMBEDDER, where, 24)]
                scan = [
                    (-float(v @ q), rows[d.id])
                    for d, v in zip(drawers, vectors, strict=True)
                    if d.id not in deleted
                    and (where.roles is None or d.readers is None)
                    and (where.rooms is None or d.room in where.rooms)
                ]
                assert got == [rowid for _, rowid in sorted(scan)]

    check_answers()
    facets = store.facets(list(rows.values()))
    cache = store._vectors
    # When 6 are deleted, they stay masked
    delete(drawers[1:12:2])
    check_answers()
    assert len(cache.rowids) == 24 and int(cache.alive.sum()) == 18
    # When 4 more are, the cache holds the 14 live rows only
    delete(drawers[0:8:2])
    check_answers()
    assert len(cache.rowids) == len(cache.index) == 14 and cache.alive.all()
    # and the facets of live and deleted rows alike are what they were
    assert store.facets(list(rows.values())) == facets
    # and a later write is found
    extra = drawer("after", 99, source_file="late.txt")
    store.write([extra], np.stack([queries[0] / np.linalg.norm(queries[0])]), EMBEDDER, AUDIT)
    assert nearest_ids(store, queries[0], 1) == [extra.id]


def test_a_compacted_index_keeps_the_rows_it_is_given_in_order() -> None:
    from memhubd.recall.vectors import VectorIndex

    rng = np.random.default_rng(5)
    rows = rng.normal(size=(300, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    index = VectorIndex(8, exact_below=64, background=False)
    index.add(rows[:200])
    index.maybe_build()  # lists built: positions and slots differ
    index.add(rows[200:])  # and a tail outside them
    assert index.listed
    keep = np.flatnonzero(rng.random(300) < 0.6)
    compact = index.compacted(keep)
    query = rng.normal(size=8).astype(np.float32)
    everything = np.ones(len(keep), dtype=bool)
    positions, scores = compact.search(query, everything, len(keep))
    expected = rows[keep] @ query
    assert np.allclose(scores, expected[positions], atol=1e-5)
    assert sorted(positions.tolist()) == list(range(len(keep)))
