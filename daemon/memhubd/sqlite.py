"""What every SQLite database of memhub does alike when it is opened: plain sqlite3,
so that the stores of recall and cowork (engine code, which imports no runtime) share it."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path


class UnusableDatabase(RuntimeError):
    """A database of the state dir that cannot be opened or used as it is on disk (not
    SQLite, cut short, written by a newer memhub). Its message names the file by its
    place in the state dir (`recall/team.db`), not the whole path, and says what to do:
    the doors answer it as the workspace's store being unavailable."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = Path(path)
        note = _full_disk_note(self.path)
        super().__init__(f"{self.path.parent.name}/{self.path.name}: {problem}{note}")


# Less free space than this where a database lives: SQLite's "disk I/O error" or
# "database or disk is full" then most likely means the disk, not a damaged file.
FULL_DISK_BYTES = 1024 * 1024


def _full_disk_note(path: Path) -> str:
    """A word on the disk when the one holding `path` is (nearly) full: the file may be
    intact, and should not be moved aside for the error SQLite gave."""
    try:
        info = os.statvfs(path.parent)
    except OSError:
        return ""
    if info.f_bavail * info.f_frsize >= FULL_DISK_BYTES:
        return ""
    return (
        " (the disk holding it is full, so the file may well be intact: free space and "
        "retry, no restart needed, before moving anything aside)"
    )


# A database and its -wal and -shm files: they hold the same data (the log holds the
# latest writes), so they are private alike.
_COMPANIONS = ("", "-wal", "-shm")


def private_database(path: str | Path, unusable: type[UnusableDatabase] = UnusableDatabase) -> None:
    """Make `path` a file only its owner reads, before SQLite opens it, and its -wal and
    -shm files too when they exist. SQLite creates those with the database file's mode,
    so a database created by SQLite itself (the umask's mode, 0644 for most) and made
    private afterwards kept a log readable by others. Its directory is created (owner
    only) when missing. A file that cannot be created or opened for writing (a read-only
    file system, a directory in its place) raises `unusable` naming it and the system's
    reason: the doors answer that the store is unavailable, not an internal error."""
    path = Path(path)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(descriptor)
        for suffix in _COMPANIONS:
            with contextlib.suppress(FileNotFoundError):
                os.chmod(f"{path}{suffix}", 0o600)
    except OSError as error:
        # mkdir's "file exists" is a file where a directory goes
        found = "not a directory" if isinstance(error, FileExistsError) else error.strerror
        reason = (found or type(error).__name__).lower()  # "read-only file system"
        failed = Path(error.filename) if error.filename else path
        if failed != path:  # a directory on the way: say which
            reason = f"{reason} ({failed.name})"
        raise unusable(path, f"cannot be opened for writing: {reason}") from error


def into_wal(connection: sqlite3.Connection, timeout_s: float) -> None:
    """Put the file in WAL mode, waiting up to `timeout_s` for another process opening
    it at the same moment: both read it, both want it to themselves to switch its
    journal mode, and SQLite answers one "database is locked" at once instead of
    calling the busy handler (which would wait on a process that waits on it)."""
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
