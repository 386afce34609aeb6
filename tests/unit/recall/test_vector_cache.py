"""The in-memory vector matrix of a store follows writes, deletes, purges and other
connections' commits; the facets search's boosts read from it agree with the database."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_store import AUDIT, EMBEDDER, drawer, unit

from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, Facets, open_store

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
