"""The per-source ingest lock: one `flock`ed file per source key, across processes.

Serialises "what is already stored → write the rest" for one source, so that two
agents ingesting the same transcript at once store each chunk once. Retries every
50 ms plus jitter up to a timeout, and reports how long it waited (`lock_wait_ms`).

A lock file may be removed (`SourceLock.prune`) by whoever holds its flock: a locker
checks, once it holds the flock, that the path still names the file it locked, and
opens the path again when it does not. So a locker that opened a file just before it
was unlinked never holds a lock nobody else can see.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from memhubd.recall.ids import source_key

RETRY_S = 0.05
JITTER_S = 0.03
DEFAULT_TIMEOUT_S = 5.0

_BUSY = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES)


class LockTimeout(TimeoutError):
    """Another process held the source's lock for longer than the timeout."""


class SourceLock:
    """Where a workspace's source locks live (`<dir>/<key>.lock`). A file no source
    needs is removed by `prune`, which only removes a file whose flock it holds."""

    def __init__(self, directory: str | os.PathLike[str], timeout_s: float = DEFAULT_TIMEOUT_S):
        self.directory = Path(directory)
        self.timeout_s = timeout_s

    def path_of(self, source: str) -> Path:
        return self.directory / f"{source_key(source)}.lock"

    @contextlib.contextmanager
    def hold(self, source: str) -> Iterator[int]:
        """Hold the lock of `source` for the block; yields the milliseconds waited."""
        # The parent too: `mode` is only the last directory's.
        self.directory.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.directory.mkdir(exist_ok=True, mode=0o700)
        path = self.path_of(source)
        started = time.monotonic()
        fd = self._acquire(source, path, started)
        try:
            yield int((time.monotonic() - started) * 1000)
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _acquire(self, source: str, path: Path, started: float) -> int:
        """A descriptor of the file `path` names, flocked; the wait counts from `started`."""
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                while not _try_lock(fd):
                    if time.monotonic() - started > self.timeout_s:
                        raise LockTimeout(
                            f"ingest lock for {source!r} is held elsewhere "
                            f"(waited {self.timeout_s:g} s)"
                        )
                    time.sleep(RETRY_S + random.random() * JITTER_S)
                if _still_named(path, fd):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            # Pruned while this waited: the lock is the file now at `path`.
            os.close(fd)

    def prune(self, keep: Iterable[str]) -> int:
        """Remove the lock files of sources not in `keep` (source names, as `hold`
        takes them) that nobody holds; returns how many were removed.

        Each file is flocked first and unlinked while held, and only if the path still
        names it: a file held elsewhere, or replaced meanwhile, is left alone."""
        kept = set()
        for source in keep:
            with contextlib.suppress(ValueError):  # a blank name has no lock
                kept.add(source_key(source))
        try:
            paths = sorted(self.directory.glob("*.lock"))
        except FileNotFoundError:
            return 0
        removed = 0
        for path in paths:
            if path.stem in kept:
                continue
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue  # removed meanwhile
            try:
                if _try_lock(fd) and _still_named(path, fd):
                    path.unlink()
                    removed += 1
            finally:
                os.close(fd)
        return removed


def _try_lock(fd: int) -> bool:
    """Take the exclusive flock of `fd` if free; False when someone else holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno not in _BUSY:
            raise
        return False
    return True


def _still_named(path: Path, fd: int) -> bool:
    """Whether `path` names the file open as `fd` (not removed, nor replaced)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)
