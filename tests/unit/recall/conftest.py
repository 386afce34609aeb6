"""Fixtures of the recall unit tests: a store in a temp dir, an embedder, an ingestor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from recall_fakes import HashingEmbedder

from memhubd.recall.ingest import Ingestor, SourceLock
from memhubd.recall.store import DrawerStore, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DrawerStore]:
    opened = open_store(tmp_path / "ws.db")
    yield opened
    opened.close()


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def ingestor(store: DrawerStore, embedder: HashingEmbedder, tmp_path: Path) -> Ingestor:
    return Ingestor(store, embedder, SourceLock(tmp_path / "locks"))
