"""Durable file operations for review: the cross-process lock and atomic, checked replacement.

Bytes and paths only; nothing here knows about proposals. Callers hold `exclusive_lock`
around every write, which is also what makes sweeping orphaned temp files safe.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

# memdsl's temp-file names, so a sweep also clears what a killed memdsl left behind.
TEMP_PREFIX = ".memdsl-"
TEMP_SUFFIX = ".tmp"
ORPHAN_AGE_SECONDS = 60.0
# How long a caller waits for `review.lock`, and how often it looks. memdsl, a hook or a
# hung process may hold it for ever; a waiter that gave up is told so, never left hanging.
LOCK_TIMEOUT_S = 10.0
LOCK_POLL_S = 0.02
# When set, called before each attempt at the lock; it raises to give the wait up (a
# stopping daemon ends the waits of its review work). A context variable, so that it is
# the taker's own and never one switch for a whole process.
LOCK_WAIT_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("lock_wait_check", default=None)


class LockHeld(TimeoutError):
    """The lock at `path` stayed held by another holder for `waited_s` seconds."""

    def __init__(self, path: str, waited_s: float) -> None:
        super().__init__(f"{path} is held by another process (waited {waited_s:g} s)")
        self.path = path
        self.waited_s = waited_s


def sha256_hex(data: bytes | None) -> str | None:
    """Hex digest of `data`; None stands for "the file does not exist"."""
    return None if data is None else hashlib.sha256(data).hexdigest()


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist.

    A path that no file can have (a name too long, or a parent that is a file) does not
    exist either: such a path comes from a caller, and is no fault of the disk's.
    """
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno in (errno.ENAMETOOLONG, errno.ENOTDIR):
            return None
        raise


def file_mode(path: str) -> int | None:
    """Permission bits of an existing file, so a rewrite keeps them; None when absent."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None


def ensure_dir(path: str) -> None:
    """Make directory `path` unless it exists, never its parents: the staging directory
    of a workspace whose own directory is gone (moved away, not restored yet) must not
    bring that directory back as an empty stub, where the restore would land inside."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path)


@contextlib.contextmanager
def exclusive_lock(path: str, timeout_s: float | None = None) -> Iterator[None]:
    """Hold memdsl's `review.lock` exclusively: excludes other threads, processes and memdsl.

    Waits at most `timeout_s` (default `LOCK_TIMEOUT_S`), then raises `LockHeld`; gives
    up sooner with whatever `LOCK_WAIT_CHECK`, asked before each attempt, raises.
    `flock` locks belong to the open file description, so each caller opens its own
    handle; two threads of one process then exclude each other as two processes do.
    """
    ensure_dir(os.path.dirname(path) or ".")
    with open(path, "a+b") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            handle.write(b"\0")  # memdsl's convention: never lock an empty file
            handle.flush()
        timeout = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
        _acquire(handle.fileno(), path, timeout, LOCK_WAIT_CHECK.get())
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _acquire(fd: int, path: str, timeout_s: float, check: Callable[[], None] | None) -> None:
    """`flock` polled without blocking: a blocking one cannot be given up, and would keep
    the caller's thread (and whatever slot it holds) for as long as the holder likes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if check is not None:
            check()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise
        left = deadline - time.monotonic()
        if left <= 0:
            raise LockHeld(path, timeout_s)
        time.sleep(min(LOCK_POLL_S, left))


def fsync_directory(directory: str) -> None:
    """Make a rename in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: str, data: bytes, mode: int | None) -> str:
    fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
    except BaseException:
        _discard(temp)
        raise
    return temp


def _discard(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def atomic_write(path: str, data: bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data`: temp file in the same directory, fsync, rename, fsync dir.

    New files get mkstemp's 0600 unless `mode` says otherwise.
    """
    replace_if_unchanged(path, data, expected=None, mode=mode, check=False)


def replace_if_unchanged(
    path: str,
    data: bytes,
    expected: str | None,
    *,
    mode: int | None = None,
    check: bool = True,
) -> bool:
    """Atomically replace `path` with `data` if its content still hashes to `expected`.

    `expected` None means the file must still be absent. The hash is compared after
    the new content is durable on disk and right before the rename, which keeps the
    window in which an unlocked edit could still be lost as small as it can be.
    Returns False, leaving everything as it was, when the content changed.
    """
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    temp = _write_temp(directory, data, mode)
    try:
        if check and sha256_hex(read_bytes(path)) != expected:
            _discard(temp)
            return False
        os.replace(temp, path)
    except BaseException:
        _discard(temp)
        raise
    fsync_directory(directory)
    return True


def sweep_orphans(directory: str, *, older_than: float = ORPHAN_AGE_SECONDS) -> list[str]:
    """Delete temp files a killed writer left in `directory`; returns the names removed.

    Only call this under the lock: every writer of such files holds it while they
    exist, so an old one belongs to nobody. The age threshold is a second safeguard.
    """
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return removed
    limit = time.time() - older_than
    for name in names:
        if not (name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(path).st_mtime <= limit:
                os.unlink(path)
                removed.append(name)
    return removed
