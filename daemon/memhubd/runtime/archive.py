"""Archiving a removed workspace's state: its files moved, once closed, to a folder of
`<state dir>/removed/`, each at its place in the state directory so that moving it
back restores it. Paths only: it knows nothing of what the files hold, and deletes
nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import structlog

log = structlog.get_logger("memhubd.hub")

# Where a workspace removed at run time leaves its state, in the state directory; the
# daemon never deletes anything there (the operator restores or deletes it).
REMOVED_DIR = "removed"
# How long a removal waits for the files it moves to be closed (a recall statement that
# was running closes its connection when it ends) before it gives up.
CLOSE_WAIT_S = 10.0


class StateNotArchived(OSError):
    """A removed workspace's state could not be moved under `removed/`. The message
    names no path (it may reach the caller); the log has them."""

    def __init__(self, name: str, error: Exception) -> None:
        found = getattr(error, "strerror", None)
        reason = found.lower() if found else type(error).__name__
        super().__init__(
            f"the recall and cowork state of workspace '{name}' could not be moved to "
            f"removed/ in the state directory ({reason}); see the daemon log"
        )
        log.error("removed workspace state not archived", workspace=name, error=str(error))


def archive(
    state: Path,
    name: str,
    kept: Callable[[], list[Path]],
    reclose: Callable[[str], None] | None = None,
) -> Path | None:
    """Move what `kept()` lists (files and folders of `state` holding workspace `name`'s
    state), once this process holds none of it open, to `state/removed/<name>-<UTC
    time>/`, each at its place under `state`. None when there was nothing to move.
    Raises `StateNotArchived` when a file stays open or cannot be moved, what was moved
    by then moved back. `reclose(name)` then closes what a request that began before
    the removal may have opened again meanwhile; what that left is moved too."""
    found = kept()
    if not found:
        return None
    try:
        wait_closed(found, CLOSE_WAIT_S)
        # Listed again once closed: the last connection to a store checkpoints it and
        # deletes its -wal and -shm files as it closes.
        found = kept()
        if not found:
            return None
        folder = new_folder(state / REMOVED_DIR, name)
    except OSError as error:
        raise StateNotArchived(name, error) from error
    try:
        move_under(found, state, folder)
    except (OSError, ValueError) as error:
        _remove_empty(folder)
        raise StateNotArchived(name, error) from error
    if reclose is not None:
        reclose(name)
        late = kept()
        if late:
            try:
                move_under(late, state, new_folder(state / REMOVED_DIR, name))
            except OSError:
                log.exception("state made during a removal not archived", workspace=name)
    return folder


# A removal under way leaves a marker here, named for the workspace, from before the
# workspace list forgets the name until its state is archived: a removal cut short (a
# crash, a kill) is finished at the next start, before any store is opened, so that a
# store is never left under a name no longer served.
REMOVING_DIR = "removing"


def mark_removing(state: Path, name: str) -> None:
    """Record, durably, that `name`'s removal has begun."""
    folder = state / REMOVING_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    descriptor = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    _sync_folder(folder)


def unmark_removing(state: Path, name: str) -> None:
    """`name`'s removal is over (done, or undone: the workspace served again)."""
    try:
        os.unlink(state / REMOVING_DIR / name)
    except FileNotFoundError:
        return
    _sync_folder(state / REMOVING_DIR)


def pending_removals(state: Path) -> list[str]:
    """The names whose removal began and never ended, in name order."""
    try:
        return sorted(entry.name for entry in os.scandir(state / REMOVING_DIR) if entry.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def held_open(paths: Iterable[Path]) -> list[str]:
    """Which of `paths` (files, or folders and what is in them) this process holds
    open; empty where `/proc/self/fd` cannot tell."""
    exact = {os.path.realpath(path) for path in paths}
    folders = tuple(path + os.sep for path in exact)
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return []
    held = []
    for descriptor in descriptors:
        try:
            target = os.readlink(f"/proc/self/fd/{descriptor}")
        except OSError:
            continue
        if target in exact or target.startswith(folders):
            held.append(target)
    return held


def wait_closed(paths: list[Path], timeout_s: float) -> None:
    """Return once this process holds none of `paths` open. A moved SQLite file whose
    last connection closes later deletes its -wal and -shm by their old names: those of
    a store made there since."""
    give_up = time.monotonic() + timeout_s
    while held := held_open(paths):
        if time.monotonic() > give_up:
            raise TimeoutError(f"still open after {timeout_s:g} s: {', '.join(sorted(held))}")
        time.sleep(0.02)


def new_folder(removed: Path, name: str) -> Path:
    """A new, empty folder `<name>-<UTC time>` of `removed` (a number after it when
    that is taken)."""
    removed.mkdir(mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in range(100):
        folder = removed / (f"{name}-{stamp}" if attempt == 0 else f"{name}-{stamp}-{attempt}")
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"{removed}: no free folder for {name}-{stamp}")


def move_under(paths: list[Path], state: Path, folder: Path) -> None:
    """Move each of `paths` (all under `state`, else ValueError before any move) to its
    place under `folder`; on a failure, move back what was moved and raise the OSError."""
    targets = [(path, folder / path.relative_to(state)) for path in paths]  # ValueError first
    moved: list[tuple[Path, Path]] = []
    try:
        for path, target in targets:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.rename(path, target)  # same file system: never half a file
            moved.append((path, target))
    except OSError:
        for path, target in reversed(moved):
            try:
                os.rename(target, path)
            except OSError:
                log.exception("archived state not moved back", path=str(path), at=str(target))
        raise


def _remove_empty(folder: Path) -> None:
    """Remove `folder` and the folders in it when they hold no file (a failed move)."""
    for inner in sorted(folder.rglob("*"), key=lambda path: len(path.parts), reverse=True):
        try:
            inner.rmdir()
        except OSError:
            return
    try:
        folder.rmdir()
    except OSError:
        log.warning("an empty archive folder was left", folder=str(folder))
