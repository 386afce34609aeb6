"""The vector index: exact below its size threshold, IVF above it; filters, deletes and
rows added after a build are respected exactly; the store serves searches through it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_store import AUDIT, drawer

from memhubd.recall import vectors
from memhubd.recall.store import AuditEntry, DrawerFilter, EmbedderRecord, open_store
from memhubd.recall.vectors import VectorIndex

DIMENSION = 16


def clustered(count: int, seed: int = 3) -> np.ndarray:
    """Unit rows around 12 random directions, so lists mean something."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, DIMENSION))
    rows = centres[rng.integers(0, 12, count)] + 0.4 * rng.standard_normal((count, DIMENSION))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def exact(rows: np.ndarray, query: np.ndarray, allowed: np.ndarray | None, limit: int) -> list:
    scores = rows @ query
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    order = np.lexsort((np.arange(len(rows)), -scores))
    return [int(i) for i in order[:limit] if np.isfinite(scores[i])]


def built(rows: np.ndarray, exact_below: int = 200) -> VectorIndex:
    index = VectorIndex(DIMENSION, exact_below=exact_below, background=False)
    index.add(rows)
    index.maybe_build()
    return index


def test_below_the_threshold_every_answer_is_exact() -> None:
    rows = clustered(150)
    index = built(rows)
    assert index.listed == 0
    for query in clustered(20, seed=9):
        positions, scores = index.search(query, None, 30)
        assert positions.tolist() == exact(rows, query, None, 30)
        assert np.allclose(scores, rows[positions] @ query)


def test_above_the_threshold_lists_are_built_and_probing_them_all_is_exact() -> None:
    rows = clustered(3000)
    index = built(rows)
    assert index.listed == 3000
    overlap = []
    for query in clustered(20, seed=9):
        everything = index.search(query, None, 50, probe=10_000)[0]
        assert everything.tolist() == exact(rows, query, None, 50)
        probed = index.search(query, None, 50)[0]
        assert probed[0] == everything[0]
        overlap.append(len(set(probed.tolist()) & set(everything.tolist())) / 50)
    assert np.mean(overlap) >= 0.7


def test_a_refused_position_is_never_returned_and_a_small_allowed_set_is_exact() -> None:
    rows = clustered(3000)
    index = built(rows)
    rng = np.random.default_rng(5)
    wide = rng.random(3000) < 0.5  # above the threshold: probed, and masked
    narrow = rng.random(3000) < 0.03  # below it: an exact scan of the allowed rows
    for query in clustered(20, seed=9):
        positions = index.search(query, wide, 50)[0]
        assert len(positions) == 50 and wide[positions].all()
        assert index.search(query, narrow, 50)[0].tolist() == exact(rows, query, narrow, 50)


def test_probing_widens_until_enough_allowed_rows_were_seen() -> None:
    rows = clustered(3000)
    index = built(rows, exact_below=10)
    allowed = np.zeros(3000, dtype=bool)
    allowed[::100] = True  # 30 rows, scattered over every list
    positions = index.search(rows[0], allowed, 30)[0]
    assert sorted(positions.tolist()) == list(range(0, 3000, 100))


def test_rows_added_after_a_build_are_found_and_later_listed() -> None:
    rows = clustered(3000)
    index = built(rows)
    fresh = clustered(10, seed=11)
    index.add(fresh)
    for offset, row in enumerate(fresh):
        assert index.search(row, None, 1)[0].tolist() == [3000 + offset]
    index.add(clustered(vectors.MIN_TAIL, seed=12))
    index.maybe_build()  # the tail passed its bound: re-packed into the lists
    assert index.listed == len(index)
    for offset, row in enumerate(fresh):
        assert index.search(row, None, 1)[0].tolist() == [3000 + offset]


def test_best_matches_is_exact_over_allowed_rows() -> None:
    rows = clustered(3000)
    index = built(rows)
    allowed = np.ones(3000, dtype=bool)
    allowed[7] = False
    found = index.best_matches(rows[[7, 8]], allowed)
    assert found[1] == (8, pytest.approx(1.0, abs=1e-5))
    assert found[0] is not None and found[0][0] == exact(rows, rows[7], allowed, 1)[0]
    assert index.best_matches(rows[:1], np.zeros(3000, dtype=bool)) == [None]


def test_the_store_searches_through_the_index_with_deletes_and_rooms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "EXACT_BELOW", 100)
    record = EmbedderRecord("unit", DIMENSION)
    rows = clustered(400)
    drawers = [drawer(f"text {n}", n, room=f"r{n % 4}") for n in range(400)]
    store = open_store(tmp_path / "ws.db")
    try:
        store.write(drawers, rows, record, AUDIT)
        assert store.settle_vectors(timeout=60)
        store.soft_delete(drawers[5].id, AuditEntry("tester", "test", "delete"))
        hits = store.nearest(rows[5], record, DrawerFilter(), 400)
        found = store.get([h.rowid for h in hits])
        assert drawers[5].id not in {d.id for d in found.values()}
        in_room = store.nearest(rows[6], record, DrawerFilter(rooms=("r2",)), 400)
        rooms = {d.room for d in store.get([h.rowid for h in in_room]).values()}
        assert rooms == {"r2"} and len(in_room) == 100
        assert store.get([in_room[0].rowid])[in_room[0].rowid].id == drawers[6].id
    finally:
        store.close()
