"""`memhubd backup DEST`: a consistent copy of a state directory, the daemon running.

Copying the directory file by file while the daemon writes is not a backup: a SQLite
store in write-ahead-log mode is its main file *and* its `-wal` file, read at two
moments, so a copy can mix pages from before and after a checkpoint and come back
corrupt. Here each SQLite database is copied through SQLite's online backup (one read
transaction: what was committed when it began, never half a write) and checked; the
other files are copied as they are (each is replaced whole by its writer, and an
append-only log is copied up to its last complete line). What can be rebuilt (the
parse cache) and what belongs to a running daemon (its lock, sockets, `-wal`/`-shm`
files) is left out. The copy is made in a private directory named as partial beside
the destination and takes the destination's name only once every file is in it: a
backup that fails leaves nothing under the destination.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import structlog

from memhubd.sqlite import FULL_DISK_BYTES

log = structlog.get_logger("memhubd.backup")

SQLITE_MAGIC = b"SQLite format 3\x00"
# Rebuilt at start from the workspaces' files: saving it would only make backups large.
REBUILT = frozenset({"parse-cache"})
# A running daemon's own: its lock file and the SQLite files that belong to an open
# database, whose content the online backup carries.
DAEMON_OWN_SUFFIXES = ("-wal", "-shm", "-journal")
DAEMON_OWN_NAMES = frozenset({"daemon.lock"})
_CHUNK = 1 << 20
# What SQLite answers when writing the copy failed; any other failure of an online
# backup comes from reading the store.
_WRITE_ERRORS = frozenset(
    {
        "SQLITE_FULL",
        "SQLITE_READONLY",
        "SQLITE_IOERR_WRITE",
        "SQLITE_IOERR_FSYNC",
        "SQLITE_IOERR_DIR_FSYNC",
        "SQLITE_IOERR_TRUNCATE",
        "SQLITE_IOERR_DELETE",
    }
)
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class BackupError(Exception):
    """The backup cannot be made (destination in use or full, a store unreadable)."""


class _Unwritable(Exception):
    """Writing the copy failed; `full` when the destination's disk is."""

    def __init__(self, reason: str, full: bool) -> None:
        super().__init__(reason)
        self.full = full


class _Unreadable(Exception):
    """Reading the state directory failed."""


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


@dataclass(frozen=True, slots=True)
class _Partial:
    """Where the copy is made until it is whole: a directory beside the destination,
    renamed to it at the end; or, when the destination is an existing empty directory
    (perhaps a mount point, or one the user may write and its parent not), a directory
    inside it whose entries are moved up at the end."""

    path: Path
    inside: bool


def back_up(
    state_dir: Path, destination: Path, progress: Callable[[Copied], None] | None = None
) -> Report:
    """Copy `state_dir` into `destination` (made here, mode 0700; it must not exist or
    be an empty directory). The copy takes the destination's place only once every
    file is in it; a failure removes what was copied, leaving nothing under
    `destination`, and raises `BackupError` naming the side that failed (the state
    directory read, the destination written) and what is left. Interrupted (Ctrl-C, or
    an exception raised by a signal handler), it removes the copy as well."""
    state_dir = state_dir.resolve()
    if not state_dir.is_dir():
        raise BackupError(f"{state_dir}: no such state directory")
    destination = destination.absolute()
    if destination.resolve() == state_dir or state_dir in destination.resolve().parents:
        raise BackupError(f"{destination}: the destination is inside the state directory")
    # A dangling link counts: the finished copy would take the link's place.
    if os.path.lexists(destination) and (not destination.is_dir() or any(destination.iterdir())):
        raise BackupError(f"{destination}: exists and is not an empty directory")
    partial = _make_partial(destination)
    moved: list[Path] = []
    try:
        report = _copy_into(state_dir, partial, destination, progress)
        _complete(partial, destination, moved)
    except _Unwritable as error:
        problem = f"the destination's disk is full ({error})" if error.full else str(error)
        raise BackupError(f"{destination}: {problem}; {_discard(partial, moved)}") from None
    except _Unreadable as error:
        raise BackupError(f"{error}; {_discard(partial, moved)}") from None
    except BackupError as error:
        raise BackupError(f"{error}; {_discard(partial, moved)}") from None
    except BaseException as error:  # interrupted, or a fault of this code: no copy stays
        error.add_note(_discard(partial, moved))
        raise
    return report


def _make_partial(destination: Path) -> _Partial:
    """A new private directory for the copy, its name saying it is partial."""
    try:
        if destination.is_dir():
            os.chmod(destination, 0o700)
            place = tempfile.mkdtemp(prefix=".memhub-backup.partial-", dir=destination)
            return _Partial(Path(place), inside=True)
        destination.parent.mkdir(parents=True, exist_ok=True)
        place = tempfile.mkdtemp(prefix=f".{destination.name}.partial-", dir=destination.parent)
    except OSError as error:
        raise BackupError(f"{destination}: cannot be made: {_reason(error)}") from None
    return _Partial(Path(place), inside=False)


def _copy_into(
    state_dir: Path,
    partial: _Partial,
    destination: Path,
    progress: Callable[[Copied], None] | None,
) -> Report:
    """Copy every file of `state_dir` into `partial.path`, reported under `destination`."""
    report = Report(state_dir, destination)
    root = partial.path
    made = root.stat()
    itself = {(made.st_dev, made.st_ino): destination.name}
    if partial.inside:
        itself = {_identity(destination): destination.name, **itself}
    for relative, why in _walk(state_dir, report, itself):
        source, target = state_dir / relative, root / relative
        _private_directories(root, relative.parent)
        try:
            mode = source.stat().st_mode
            if why == "sqlite":
                copied = Copied(relative.as_posix(), "sqlite", _copy_database(source, target))
            else:
                copied = Copied(relative.as_posix(), "file", _copy_file(source, target))
        except FileNotFoundError:
            # Gone while the backup ran (a workspace removed meanwhile, its store moved
            # under removed/, which is copied when the walk reaches it).
            _unlink(target)
            report.skipped.append((relative.as_posix(), "gone during the backup"))
            continue
        except _Unwritable as error:
            raise _Unwritable(f"cannot write {relative.as_posix()}: {error}", error.full) from None
        except _Unreadable as error:
            raise _Unreadable(f"{source}: cannot be read: {error}") from None
        except OSError as error:  # the store's own stat
            raise _Unreadable(f"{source}: cannot be read: {_reason(error)}") from None
        _chmod(target, stat.S_IMODE(mode) & 0o700 or 0o600)
        report.copied.append(copied)
        if progress is not None:
            progress(copied)
    return report


def _complete(partial: _Partial, destination: Path, moved: list[Path]) -> None:
    """Give the whole copy the destination's name; `moved` collects what was moved
    into an existing destination, to be taken back out if this fails halfway."""
    try:
        if not partial.inside:
            # Replaces an empty directory made meanwhile, refuses one holding files.
            os.rename(partial.path, destination)
            _sync_directory(destination.parent)
            return
        for entry in sorted(partial.path.iterdir()):
            os.rename(entry, destination / entry.name)
            moved.append(destination / entry.name)
        partial.path.rmdir()
        _sync_directory(destination)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            raise BackupError(f"{destination}: was filled while the backup ran") from None
        raise _Unwritable(f"cannot be completed: {_reason(error)}", False) from None


def _discard(partial: _Partial, moved: list[Path]) -> str:
    """Remove a failed copy, best effort; what is left, as a clause for the message."""
    left: list[str] = []
    for path in [partial.path, *moved]:
        try:
            _remove_tree(path)
        except OSError as error:
            log.warning("backup_partial_left", path=str(path), error=_reason(error))
            left.append(f"{path} ({_reason(error)})")
    if left:
        return f"cannot remove the partial copy, delete it: {', '.join(left)}"
    return "the partial copy is removed, nothing is left under the destination"


def _remove_tree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _identity(path: Path) -> tuple[int, int]:
    found = path.stat()
    return found.st_dev, found.st_ino


def _private_directories(root: Path, relative: Path) -> None:
    """Make `root / relative` and the directories between, each mode 0700."""
    place = root
    for part in relative.parts:
        place = place / part
        if not place.is_dir():
            try:
                place.mkdir(mode=0o700)
                os.chmod(place, 0o700)  # whatever the umask
            except OSError as error:
                raise _Unwritable(
                    f"cannot make {place.relative_to(root)}/: {_reason(error)}",
                    error.errno in _FULL_ERRNOS,
                ) from None


def _walk(
    root: Path, report: Report, itself: dict[tuple[int, int], str]
) -> Iterator[tuple[Path, str]]:
    """(path relative to `root`, "sqlite" or "file") of what to copy, in name order;
    what is left out goes to `report.skipped`. Links are followed, as the daemon
    follows them (a `recall/` on another disk), each directory once; never into
    `itself` (the copy, when a link leads to where it is made; reported under the
    destination's name it maps to)."""
    seen: set[tuple[int, int]] = set(itself)
    for directory, names, files in os.walk(root, followlinks=True):
        here = Path(directory)
        try:
            found = here.stat()
        except OSError:
            continue
        if (found.st_dev, found.st_ino) in seen:  # a link back to where the walk has been
            relative = here.relative_to(root)
            if (shown := itself.get((found.st_dev, found.st_ino))) is not None:
                relative = relative.parent / shown
            why = "the backup itself" if shown is not None else "a loop"
            report.skipped.append((relative.as_posix() + "/", why))
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
    The source is opened read-only; a writer of it goes on meanwhile. Raises
    `_Unreadable` or `_Unwritable` by the side that failed."""
    if not source.exists():
        raise FileNotFoundError(source)
    try:
        reader = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as error:
        raise _unreadable_store(source, error) from None
    try:
        # Made private before SQLite opens it: SQLite gives its journal the same mode.
        _close(_create_private(target))
        try:
            writer = sqlite3.connect(target)
        except sqlite3.Error as error:
            raise _Unwritable(str(error), _full(error, target)) from None
        try:
            try:
                reader.backup(writer)
            except sqlite3.Error as error:
                if error.sqlite_errorname in _WRITE_ERRORS or _full(error, target):
                    raise _Unwritable(str(error), _full(error, target)) from None
                raise _unreadable_store(source, error) from None
            try:
                # A copy is a file of its own: no write-ahead log beside it.
                writer.execute("PRAGMA journal_mode = DELETE").fetchall()
                verdict = writer.execute("PRAGMA quick_check").fetchone()[0]
            except sqlite3.Error as error:
                raise _Unwritable(str(error), _full(error, target)) from None
        finally:
            writer.close()
    finally:
        reader.close()
    if verdict != "ok":
        raise BackupError(f"{source}: its copy fails SQLite's check: {verdict}")
    return target.stat().st_size


def _unreadable_store(source: Path, error: sqlite3.Error) -> Exception:
    if not source.exists():  # moved away while it was read
        return FileNotFoundError(source)
    return _Unreadable(str(error))


def _full(error: sqlite3.Error, target: Path) -> bool:
    """Whether SQLite's `error` means the disk holding `target` is full: SQLite says so,
    or answers an I/O error (or cannot open a file) where almost no space is left."""
    name = error.sqlite_errorname
    if name == "SQLITE_FULL":
        return True
    if not name.startswith("SQLITE_IOERR") and name != "SQLITE_CANTOPEN":
        return False  # a damaged or busy store, whatever the space
    try:
        info = os.statvfs(target.parent)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < FULL_DISK_BYTES


def _copy_file(source: Path, target: Path) -> int:
    """Copy `source`; an append-only log (`.jsonl`) up to its last complete line, so a
    line being written is not cut in two. The copy is on disk when this returns."""
    try:
        reader = source.open("rb")
    except FileNotFoundError:
        raise
    except OSError as error:
        raise _Unreadable(_reason(error)) from None
    with reader:
        descriptor = _create_private(target)
        try:
            written = 0
            pending = b""
            while chunk := _read(reader):
                pending += chunk
                end = pending.rfind(b"\n") + 1 if source.suffix == ".jsonl" else len(pending)
                _write(descriptor, pending[:end])
                written += end
                pending = pending[end:]
            _sync(descriptor)
        finally:
            _close(descriptor)
    return written


def _read(reader: BinaryIO) -> bytes:
    try:
        return reader.read(_CHUNK)
    except OSError as error:
        raise _Unreadable(_reason(error)) from None


def _create_private(target: Path) -> int:
    """A new file only its owner may read (whatever the umask), open for writing."""
    try:
        return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as error:
        raise _Unwritable(_reason(error), error.errno in _FULL_ERRNOS) from None


def _write(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(descriptor, view) :]
        except OSError as error:
            raise _Unwritable(_reason(error), error.errno in _FULL_ERRNOS) from None


def _sync(descriptor: int) -> None:
    try:
        os.fsync(descriptor)
    except OSError as error:
        raise _Unwritable(_reason(error), error.errno in _FULL_ERRNOS) from None


def _close(descriptor: int) -> None:
    try:
        os.close(descriptor)
    except OSError as error:  # NFS reports a failed write at close
        raise _Unwritable(_reason(error), error.errno in _FULL_ERRNOS) from None


def _sync_directory(path: Path) -> None:
    """Make a rename in `path` durable; a file system that cannot is left as it is."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        log.warning("backup_directory_not_synced", path=str(path), error=_reason(error))
        return
    try:
        os.fsync(descriptor)
    except OSError as error:
        log.warning("backup_directory_not_synced", path=str(path), error=_reason(error))
    finally:
        os.close(descriptor)


def _chmod(target: Path, mode: int) -> None:
    try:
        os.chmod(target, mode)
    except OSError as error:
        raise _Unwritable(_reason(error), False) from None


def _unlink(target: Path) -> None:
    try:
        target.unlink(missing_ok=True)
    except OSError as error:
        raise _Unwritable(_reason(error), False) from None


def _reason(error: OSError) -> str:
    return (error.strerror or type(error).__name__).lower()
