"""The per-source ingest lock: one `flock`ed file per source key, across processes.

Serialises "what is already stored → write the rest" for one source, so that two
agents ingesting the same transcript at once store each chunk once. Retries every
50 ms plus jitter up to a timeout, and reports how long it waited (`lock_wait_ms`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

from memhubd.recall.ids import source_key

RETRY_S = 0.05
JITTER_S = 0.03
DEFAULT_TIMEOUT_S = 5.0


class LockTimeout(TimeoutError):
    """Another process held the source's lock for longer than the timeout."""


class SourceLock:
    """Where a workspace's source locks live (`<dir>/<key>.lock`, never cleaned up:
    removing a lock file another process holds would break the exclusion)."""

    def __init__(self, directory: str | os.PathLike[str], timeout_s: float = DEFAULT_TIMEOUT_S):
        self.directory = Path(directory)
        self.timeout_s = timeout_s

    @contextlib.contextmanager
    def hold(self, source: str) -> Iterator[int]:
        """Hold the lock of `source` for the block; yields the milliseconds waited."""
        # The parent too: `mode` is only the last directory's.
        self.directory.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.directory.mkdir(exist_ok=True, mode=0o700)
        path = self.directory / f"{source_key(source)}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            started = time.monotonic()
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as error:
                    if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                        raise
                if time.monotonic() - started > self.timeout_s:
                    raise LockTimeout(
                        f"ingest lock for {source!r} is held elsewhere (waited {self.timeout_s:g} s)"
                    )
                time.sleep(RETRY_S + random.random() * JITTER_S)
            yield int((time.monotonic() - started) * 1000)
        finally:
            os.close(fd)  # closing the descriptor releases the flock
