"""Fixtures of the recall unit tests: a store in a temp dir, an embedder, an ingestor."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Callable[[], tuple[DrawerStore, Ingestor]]]:
    """A new store and ingestor per call (a dry run and a real run each get one)."""
    opened: list[DrawerStore] = []

    def make() -> tuple[DrawerStore, Ingestor]:
        store = open_store(tmp_path / f"{len(opened)}.db")
        opened.append(store)
        return store, Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / f"{len(opened)}"))

    yield make
    for store in opened:
        store.close()


class _Recorder:
    """Stands for a module's structlog logger and keeps what it is given: structlog's
    `capture_logs` misses a logger that an earlier test of the process bound and cached."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def _keep(self, level: str, event: str, **fields: Any) -> None:
        self.entries.append({"event": event, "log_level": level, **fields})

    def debug(self, event: str, **fields: Any) -> None:
        self._keep("debug", event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self._keep("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._keep("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self._keep("error", event, **fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._keep("error", event, exc_info=True, **fields)


@pytest.fixture
def shelf_logs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What `memhubd.recall.shelf` logs during the test."""
    import memhubd.recall.shelf as shelf_module

    recorder = _Recorder()
    monkeypatch.setattr(shelf_module, "log", recorder)
    return recorder.entries
