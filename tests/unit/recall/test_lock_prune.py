"""Ingest lock files are removed when no source needs them, without breaking the
exclusion: a file is only removed by whoever holds its flock, and a locker checks,
once it holds the flock, that the path still names the file it locked."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import memhubd.recall.ingest.lock as lock_module
from memhubd.recall.ids import source_key
from memhubd.recall.ingest import SourceLock

REAL_FLOCK = fcntl.flock


def lock_path(locks: SourceLock, source: str) -> Path:
    return locks.directory / f"{source_key(source)}.lock"


def held_elsewhere(path: Path) -> bool:
    """Whether another opener of the file `path` names is refused its flock."""
    fd = os.open(path, os.O_RDWR)
    try:
        REAL_FLOCK(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def before_first_flock(monkeypatch: pytest.MonkeyPatch, step: Any) -> list[Any]:
    """Run `step()` once, just before the lock module's next flock; returns where its
    result goes. The flocks `step` itself takes run as usual."""
    results: list[Any] = []
    state = {"armed": True}

    def flock(fd: int, operation: int) -> None:
        if state["armed"]:
            state["armed"] = False
            results.append(step())
        REAL_FLOCK(fd, operation)

    fake = SimpleNamespace(flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB)
    monkeypatch.setattr(lock_module, "fcntl", fake)
    return results


def test_a_held_lock_is_left_and_removed_once_released(tmp_path: Path) -> None:
    locks = SourceLock(tmp_path / "locks")
    path = lock_path(locks, "sessions/one.jsonl")
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with locks.hold("sessions/one.jsonl"):
            holding.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert holding.wait(5)
        assert locks.prune(set()) == 0
        assert path.exists() and held_elsewhere(path)
    finally:
        release.set()
        thread.join(5)
    assert locks.prune(set()) == 1
    assert not path.exists()


def test_prune_keeps_the_files_of_the_sources_it_is_told_to_keep(tmp_path: Path) -> None:
    locks = SourceLock(tmp_path / "locks")
    for source in ("kept.md", "gone.md", "manual-content:0a"):
        with locks.hold(source):
            pass
    (locks.directory / "notes.txt").write_text("not a lock")
    assert locks.prune({"kept.md", "manual-content:0a", ""}) == 1
    assert sorted(p.name for p in locks.directory.iterdir()) == sorted(
        [lock_path(locks, "kept.md").name, lock_path(locks, "manual-content:0a").name, "notes.txt"]
    )
    assert SourceLock(tmp_path / "never made").prune(set()) == 0


def test_a_locker_that_opened_the_file_before_it_was_removed_locks_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locks = SourceLock(tmp_path / "locks", timeout_s=1)
    path = lock_path(locks, "s.md")
    # The locker has opened (created) the file; before it takes the flock, a prune
    # locks and removes that file.
    pruned = before_first_flock(monkeypatch, lambda: locks.prune(set()))
    with locks.hold("s.md"):
        assert pruned == [1]
        # What it holds is the file now at the path: another locker is refused.
        assert path.exists() and held_elsewhere(path)
        assert locks.prune(set()) == 0
    assert locks.prune(set()) == 1


def test_a_pruner_leaves_a_file_that_replaced_the_one_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locks = SourceLock(tmp_path / "locks", timeout_s=1)
    with locks.hold("s.md"):
        pass
    path = lock_path(locks, "s.md")
    with ExitStack() as stack:

        def meanwhile() -> int:
            # Another pruner removes the file this one opened, and a locker makes a
            # new one and holds it.
            removed = SourceLock(locks.directory).prune(set())
            stack.enter_context(locks.hold("s.md"))
            return removed

        done = before_first_flock(monkeypatch, meanwhile)
        assert locks.prune(set()) == 0
        assert done == [1]
        assert path.exists() and held_elsewhere(path)
    assert not held_elsewhere(path)


def test_lockers_keep_their_exclusion_while_a_pruner_runs(tmp_path: Path) -> None:
    locks = SourceLock(tmp_path / "locks", timeout_s=10)
    inside, overlaps, finished = [0], [], threading.Event()
    guard = threading.Lock()

    def locker() -> None:
        for _ in range(150):
            with locks.hold("busy.md"):
                with guard:
                    inside[0] += 1
                    if inside[0] > 1:
                        overlaps.append(inside[0])
                time.sleep(0.0005)
                with guard:
                    inside[0] -= 1

    removed: list[int] = []

    def pruner() -> None:
        while not finished.is_set():
            removed.append(locks.prune(set()))

    threads = [threading.Thread(target=locker) for _ in range(3)]
    cleaner = threading.Thread(target=pruner)
    cleaner.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    finished.set()
    cleaner.join(10)
    assert overlaps == []
    assert sum(removed) > 0  # the file was removed between holds, and made again
