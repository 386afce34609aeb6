"""Recall's files are the owner's alone whatever the umask: a store's database and its
-wal and -shm logs (which hold the latest drawers), and the directories of its locks."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_store import AUDIT, EMBEDDER, drawer, unit

from memhubd.cowork.inbox import InboxStore
from memhubd.recall.ingest.lock import SourceLock
from memhubd.recall.store import open_store


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common umask, under which new files are readable by everyone."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def database_files(path: Path) -> list[Path]:
    return [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]


@pytest.mark.usefixtures("open_umask")
def test_a_new_store_and_its_logs_are_private(tmp_path: Path) -> None:
    path = tmp_path / "recall" / "ws.db"
    store = open_store(path)
    try:
        store.write([drawer("private words", 0)], np.stack([unit(1, 0, 0, 0)]), EMBEDDER, AUDIT)
        files = database_files(path)
        assert all(f.exists() for f in files)  # WAL mode, the connection open
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
        assert mode(path.parent) == 0o700
    finally:
        store.close()


@pytest.mark.usefixtures("open_umask")
def test_logs_left_readable_by_an_older_version_are_made_private(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    open_store(path).close()
    for f in database_files(path):
        f.touch()
        f.chmod(0o644)
    store = open_store(path)
    try:
        assert all(mode(f) == 0o600 for f in database_files(path))
    finally:
        store.close()


@pytest.mark.usefixtures("open_umask")
def test_a_new_inbox_and_its_logs_are_private(tmp_path: Path) -> None:
    path = tmp_path / "cowork" / "team.sqlite"
    inbox = InboxStore(path)
    try:
        inbox.push("alice", "bob", "private words")
        files = database_files(path)
        assert all(f.exists() for f in files)
        assert all(mode(f) == 0o600 for f in files)
    finally:
        inbox.close()


@pytest.mark.usefixtures("open_umask")
def test_the_lock_directories_are_private(tmp_path: Path) -> None:
    locks = SourceLock(tmp_path / "recall" / "locks" / "ws")
    with locks.hold("notes.md"):
        pass
    assert mode(tmp_path / "recall" / "locks") == 0o700
    assert mode(tmp_path / "recall" / "locks" / "ws") == 0o700
