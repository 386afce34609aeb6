"""The daemon's state directory: its layout, private permissions, and the list of
workspaces added at run time (kept across restarts).

Files here are replaced atomically and read-modify-write cycles hold a file lock,
so two processes never lose each other's update. It must not know what tokens,
audit records or recall stores contain; their owners only get their paths here.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import structlog

from memhubd.runtime.config import WORKSPACE_NAME_RULE, is_workspace_name

log = structlog.get_logger(__name__)

WORKSPACES_FORMAT = "memhub.workspaces.v1"


class StateFileError(ValueError):
    """A state file exists but cannot be used as it is; the message names it."""


class WorkspaceConflict(ValueError):
    """The workspace name is already taken by a different directory."""


def write_file_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace `path` with `data` so that readers see the old or the new bytes, never a mix,
    and the new bytes survive a crash once this returns."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)  # makes the rename itself durable
    finally:
        os.close(directory)


@contextlib.contextmanager
def file_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold an advisory `flock` on `path` (created if missing) for the block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# (path, mode) of state directories already warned about: every token write opens the
# state directory again, and one warning per mode is enough (a few entries at most).
_WARNED: set[tuple[str, int]] = set()
WARNED_KEPT = 64


def _ensure_private_dir(path: Path) -> None:
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "is not a directory", str(path)) from None
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077 and (str(path), mode) not in _WARNED:
            # An operator may have widened it on purpose (a backup group, say): warn
            # only, once for each mode it is found with.
            if len(_WARNED) >= WARNED_KEPT:
                _WARNED.clear()
            _WARNED.add((str(path), mode))
            log.warning("state_dir_not_private", path=str(path), mode=oct(mode))
        return
    path.chmod(0o700)  # mkdir's mode is filtered by the umask


# The parse cache's folder in the state directory (`memhubd.runtime.cache.ParseCache`).
PARSE_CACHE_DIR = "parse-cache"


def state_path(path: str | os.PathLike[str]) -> Path:
    """The state directory `path` names, as `StateDir` resolves it."""
    return Path(path).expanduser().absolute()


class StateDir:
    """The state directory and the well-known paths inside it.

    Creating one creates the directory (mode 0700) and its `audit/` and `recall/`
    subdirectories if they are missing.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = state_path(path)
        _ensure_private_dir(self.path)
        _ensure_private_dir(self.audit_dir)
        _ensure_private_dir(self.recall_dir)

    @property
    def tokens_file(self) -> Path:
        return self.path / "tokens.json"

    @property
    def workspaces_file(self) -> Path:
        return self.path / "workspaces.json"

    @property
    def audit_dir(self) -> Path:
        return self.path / "audit"

    @property
    def recall_dir(self) -> Path:
        return self.path / "recall"

    def lock_file_for(self, path: Path) -> Path:
        """The lock file that serializes writers of `path` (beside it, `.lock` appended)."""
        return path.with_name(path.name + ".lock")

    def workspace_list(self) -> WorkspaceList:
        return WorkspaceList(self.workspaces_file, self.lock_file_for(self.workspaces_file))

    def __repr__(self) -> str:
        return f"StateDir({str(self.path)!r})"


DAEMON_LOCK = "daemon.lock"
# State directories this process serves: real path -> the open lock file it holds.
_HELD: dict[str, int] = {}


def hold_state_dir(state: StateDir) -> None:
    """Take `state` for this process until `release_state_dir`: a second daemon on the
    same state directory is refused, whatever port and socket it was given, before it
    changes anything (`run-examples --reset` replaces the copies the first one serves;
    both would write the same caches, stores and audit). The kernel drops the lock when
    the process ends, however it ends. Idempotent within a process."""
    real = os.path.realpath(state.path)
    if real in _HELD:
        return
    path = os.path.join(real, DAEMON_LOCK)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise StateFileError(f"cannot open {path}: {error.strerror or error}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise StateFileError(
            f"another memhubd (pid {holder}) is using the state directory {real}; stop it "
            "first, or give this daemon its own --state-dir (MEMHUB_STATE_DIR)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[real] = fd


def release_state_dir(state: StateDir) -> None:
    """Give `state` back (the lock file stays: removing it would race a new holder)."""
    fd = _HELD.pop(os.path.realpath(state.path), None)
    if fd is not None:
        os.close(fd)


class WorkspaceList:
    """Workspaces added at run time (admin API), persisted in `workspaces.json`.

    Each change is a locked read-modify-write followed by an atomic replace, so
    concurrent writers (two daemons, a daemon and an admin command) never lose
    an entry.
    """

    def __init__(self, file: Path, lock_file: Path) -> None:
        self.file = file
        self.lock_file = lock_file

    def load(self) -> dict[str, str]:
        """Name -> absolute path; empty when nothing was ever added."""
        with file_lock(self.lock_file, shared=True):
            return self._read()

    def add(self, name: str, path: str | os.PathLike[str]) -> bool:
        """Record a workspace. Returns False if the same name and path were already there
        (a retried request changes nothing); raises WorkspaceConflict if the name
        belongs to a different path, ValueError for a bad name or relative path."""
        if not is_workspace_name(name):
            raise ValueError(f"invalid workspace name {name!r} ({WORKSPACE_NAME_RULE})")
        if not os.path.isabs(path):
            raise ValueError(f"workspace path must be absolute, got {str(path)!r}")
        target = os.path.normpath(path)
        with file_lock(self.lock_file):
            entries = self._read()
            if entries.get(name) == target:
                return False
            if name in entries:
                raise WorkspaceConflict(
                    f"workspace {name!r} is already registered for {entries[name]}"
                )
            entries[name] = target
            self._write(entries)
        return True

    def remove(self, name: str) -> bool:
        """Forget a workspace; returns False if it was not registered."""
        with file_lock(self.lock_file):
            entries = self._read()
            if entries.pop(name, None) is None:
                return False
            self._write(entries)
        return True

    def _read(self) -> dict[str, str]:
        try:
            text = self.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            payload = json.loads(text)
            found = payload.get("format")
            entries = payload["workspaces"]
            valid = isinstance(entries, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in entries.items()
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise StateFileError(f"{self.file}: not a workspace list: {error}") from None
        if found != WORKSPACES_FORMAT:
            # Another format (a newer memhub's): read as this one, it would be rewritten
            # without what this one does not know.
            raise StateFileError(
                f"{self.file}: format is {found!r}, not {WORKSPACES_FORMAT!r}; "
                "run the memhub that wrote it, or move the file aside"
            )
        if not valid:
            raise StateFileError(f"{self.file}: 'workspaces' must map names to paths")
        return dict(entries)

    def _write(self, entries: Mapping[str, str]) -> None:
        payload = {"format": WORKSPACES_FORMAT, "workspaces": dict(sorted(entries.items()))}
        data = (json.dumps(payload, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        write_file_atomic(self.file, data)


def within(path: str, directory: str) -> bool:
    """Whether real path `path` lies inside `directory`, by whole components (/x/ab is
    not inside /x/a)."""
    return path != directory and os.path.commonpath([path, directory]) == directory


def overlapping(
    workspaces: Mapping[str, str], *, only: str | None = None
) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """Two workspaces (name, real path) of which the first is, or holds, the second's
    directory; with `only`, a pair with that workspace in it. None when none overlap:
    each workspace has its own review lock and audit, so one declaration could be
    approved through each of two that overlap."""
    real = {name: os.path.realpath(path) for name, path in sorted(workspaces.items())}
    for one, one_root in real.items():
        for other, other_root in real.items():
            if one == other or (only is not None and only not in (one, other)):
                continue
            if (one_root == other_root and one < other) or within(other_root, one_root):
                return (one, one_root), (other, other_root)
    return None


def merge_workspaces(
    configured: Mapping[str, str], added: Mapping[str, str], at_most: int | None = None
) -> dict[str, str]:
    """The workspaces to serve: the configured ones, plus those added at run time, at
    most `at_most` in all (`[limits] max_workspaces`).

    On a name clash the configuration wins: the file is what the operator wrote and
    reviews, and a run-time entry must never silently redirect a configured name
    to another directory. The shadowed entry is logged and otherwise kept as is.
    Run-time entries past the limit (it was lowered, or the file gained workspaces)
    are left out with a warning naming them, and kept in the list: raising the limit
    serves them again, as a start refused over them would serve none.
    """
    merged = dict(configured)
    left_out: list[str] = []
    for name, path in added.items():
        if name not in merged:
            # Against every workspace kept so far, run-time ones too: a list written by
            # an older version may hold two that overlap.
            clash = overlapping({**merged, name: path}, only=name)
            if clash is None:
                if at_most is not None and len(merged) >= at_most:
                    left_out.append(name)
                else:
                    merged[name] = path
            else:  # the configuration changed since it was added: the file wins again
                other_name, other_path = clash[0] if clash[0][0] != name else clash[1]
                log.warning(
                    "runtime_workspace_overlaps",
                    workspace=name,
                    path=path,
                    served=other_name,
                    served_path=other_path,
                    configured=other_name in configured,
                    fix=f"memctl workspaces remove {name} forgets it",
                )
        elif os.path.normpath(merged[name]) != os.path.normpath(path):
            log.warning(
                "runtime_workspace_shadowed",
                workspace=name,
                configured_path=merged[name],
                ignored_path=path,
            )
    if left_out:
        log.warning(
            "runtime_workspaces_over_limit",
            not_served=left_out,
            max_workspaces=at_most,
            fix="raise [limits] max_workspaces, or memctl workspaces remove NAME "
            "for one no longer wanted",
        )
    return merged
