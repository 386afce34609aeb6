"""A recall store's WAL file does not keep the size of its largest write: once a
checkpoint lets the log start again, the file is cut back to `WAL_KEPT_BYTES`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from recall_fakes import HashingEmbedder, options

import memhubd.recall.store.sqlite as sqlite_store
from memhubd.recall.ingest import Ingestor, SourceLock
from memhubd.recall.store import open_store


def test_the_wal_is_cut_back_after_a_bulk_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "WAL_KEPT_BYTES", 64 * 1024)
    path = tmp_path / "w.db"
    store = open_store(path)
    try:
        ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
        bulk = "\n\n".join(f"# Part {n}\n\n" + f"word{n} " * 300 for n in range(600))
        ingestor.ingest_text("bulk.md", bulk, options())
        wal = Path(f"{path}-wal")
        assert wal.stat().st_size > 1024 * 1024  # the bulk write went through the log
        with sqlite3.connect(path) as other:
            other.execute("PRAGMA wal_checkpoint(PASSIVE)")
        ingestor.ingest_text("note.md", "a small note after the bulk", options())
        assert wal.stat().st_size <= 64 * 1024
    finally:
        store.close()
