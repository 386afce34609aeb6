"""`memhubd backup DEST`: a consistent copy of a state directory, the daemon running.

Copying the directory file by file while the daemon writes is not a backup: a SQLite
store in write-ahead-log mode is its main file *and* its `-wal` file, read at two
moments, so a copy can mix pages from before and after a checkpoint and come back
corrupt. Here each SQLite database is copied through SQLite's online backup (one read
transaction: what was committed when it began, never half a write) and checked; the
other files are copied as they are (each is replaced whole by its writer, and an
append-only log is copied up to its last complete line). What can be rebuilt (the
parse cache) and what belongs to a running daemon (its lock, sockets, `-wal`/`-shm`
files) is left out.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"
# Rebuilt at start from the workspaces' files: saving it would only make backups large.
REBUILT = frozenset({"parse-cache"})
# A running daemon's own: its lock file and the SQLite files that belong to an open
# database, whose content the online backup carries.
DAEMON_OWN_SUFFIXES = ("-wal", "-shm", "-journal")
DAEMON_OWN_NAMES = frozenset({"daemon.lock"})
_CHUNK = 1 << 20


class BackupError(Exception):
    """The backup cannot be made (destination in use, a store unreadable)."""


@dataclass(slots=True)
class Copied:
    path: str  # relative to the state directory
    kind: str  # "sqlite" or "file"
    bytes: int


@dataclass(slots=True)
class Report:
    source: Path
    destination: Path
    copied: list[Copied] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.copied)

    def as_dict(self) -> dict[str, object]:
        return {
            "state_dir": str(self.source),
            "destination": str(self.destination),
            "databases": sum(c.kind == "sqlite" for c in self.copied),
            "files": sum(c.kind == "file" for c in self.copied),
            "bytes": self.total_bytes,
            "copied": [{"path": c.path, "kind": c.kind, "bytes": c.bytes} for c in self.copied],
            "skipped": [{"path": p, "reason": why} for p, why in self.skipped],
        }


def back_up(
    state_dir: Path, destination: Path, progress: Callable[[Copied], None] | None = None
) -> Report:
    """Copy `state_dir` into `destination` (made here, mode 0700; it must not exist or
    be an empty directory). A failure leaves what was copied so far in `destination`
    and raises `BackupError`."""
    state_dir = state_dir.resolve()
    if not state_dir.is_dir():
        raise BackupError(f"{state_dir}: no such state directory")
    destination = destination.absolute()
    if destination.resolve() == state_dir or state_dir in destination.resolve().parents:
        raise BackupError(f"{destination}: the destination is inside the state directory")
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise BackupError(f"{destination}: exists and is not an empty directory")
    destination.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(destination, 0o700)
    report = Report(state_dir, destination)
    made = destination.stat()
    for relative, why in _walk(state_dir, report, (made.st_dev, made.st_ino)):
        source, target = state_dir / relative, destination / relative
        _private_directories(destination, relative.parent)
        try:
            mode = source.stat().st_mode
            if why == "sqlite":
                copied = Copied(relative.as_posix(), "sqlite", _copy_database(source, target))
            else:
                copied = Copied(relative.as_posix(), "file", _copy_file(source, target))
        except FileNotFoundError:
            # Gone while the backup ran (a workspace removed meanwhile, its store moved
            # under removed/, which is copied when the walk reaches it).
            target.unlink(missing_ok=True)
            report.skipped.append((relative.as_posix(), "gone during the backup"))
            continue
        os.chmod(target, stat.S_IMODE(mode) & 0o700 or 0o600)
        report.copied.append(copied)
        if progress is not None:
            progress(copied)
    return report


def _private_directories(root: Path, relative: Path) -> None:
    """Make `root / relative` and the directories between, each mode 0700."""
    place = root
    for part in relative.parts:
        place = place / part
        if not place.is_dir():
            place.mkdir(mode=0o700)
            os.chmod(place, 0o700)  # whatever the umask


def _walk(root: Path, report: Report, skip: tuple[int, int]) -> Iterator[tuple[Path, str]]:
    """(path relative to `root`, "sqlite" or "file") of what to copy, in name order;
    what is left out goes to `report.skipped`. Links are followed, as the daemon
    follows them (a `recall/` on another disk), each directory once; never into `skip`
    (the copy itself, when a link leads to where it is made)."""
    seen: set[tuple[int, int]] = {skip}
    for directory, names, files in os.walk(root, followlinks=True):
        here = Path(directory)
        try:
            found = here.stat()
        except OSError:
            continue
        if (found.st_dev, found.st_ino) in seen:  # a link back to where the walk has been
            why = "the backup itself" if (found.st_dev, found.st_ino) == skip else "a loop"
            report.skipped.append((here.relative_to(root).as_posix() + "/", why))
            names.clear()
            continue
        seen.add((found.st_dev, found.st_ino))
        names.sort()
        if here == root:
            for name in [n for n in names if n in REBUILT]:
                report.skipped.append((name + "/", "rebuilt at start"))
                names.remove(name)
        for name in sorted(files):
            path = here / name
            relative = path.relative_to(root)
            if name in DAEMON_OWN_NAMES or name.endswith(DAEMON_OWN_SUFFIXES):
                continue  # the daemon's lock, an open database's own files
            try:
                mode = path.stat().st_mode
            except OSError as error:  # a dangling link, or gone meanwhile
                report.skipped.append((relative.as_posix(), error.strerror or "unreadable"))
                continue
            if not stat.S_ISREG(mode):
                report.skipped.append((relative.as_posix(), "not a regular file"))
                continue
            yield relative, "sqlite" if _is_sqlite(path) else "file"


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _copy_database(source: Path, target: Path) -> int:
    """SQLite's online backup of `source` into `target`, then a quick check of the copy.
    The source is opened read-only; a writer of it goes on meanwhile."""
    if not source.exists():
        raise FileNotFoundError(source)
    try:
        reader = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            writer = sqlite3.connect(target)
            try:
                reader.backup(writer)
                # A copy is a file of its own: no write-ahead log beside it.
                writer.execute("PRAGMA journal_mode = DELETE").fetchall()
                verdict = writer.execute("PRAGMA quick_check").fetchone()[0]
            finally:
                writer.close()
        finally:
            reader.close()
    except sqlite3.Error as error:
        if not source.exists():  # moved away while it was read
            raise FileNotFoundError(source) from None
        raise BackupError(f"{source}: cannot be backed up: {error}") from None
    if verdict != "ok":
        raise BackupError(f"{source}: its copy fails SQLite's check: {verdict}")
    return target.stat().st_size


def _copy_file(source: Path, target: Path) -> int:
    """Copy `source`; an append-only log (`.jsonl`) up to its last complete line, so a
    line being written is not cut in two."""
    if source.suffix != ".jsonl":
        shutil.copyfile(source, target)
        return target.stat().st_size
    written = 0
    pending = b""
    with source.open("rb") as reader, target.open("wb") as writer:
        while chunk := reader.read(_CHUNK):
            pending += chunk
            end = pending.rfind(b"\n") + 1
            writer.write(pending[:end])
            written += end
            pending = pending[end:]
    return written
