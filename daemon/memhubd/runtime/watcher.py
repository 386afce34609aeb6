"""Watching one workspace directory: turns file-system events on its sources into
debounced `on_change` calls, and covers what events miss with a periodic re-scan.

`on_change(paths)` means "these sources changed", `on_change(None)` means
"re-read everything". Calls never overlap. It must not parse or load anything
itself, and an error in `on_change` never stops it.

The sources are what a start's walk reads (`memhubd.runtime.sources.walk_sources`, as
memdsl walks): every directory, hidden ones such as `.git` included. A source that is a
symbolic link changes when a file it leads through does: an event naming that file
counts as a change of the link; so does one naming another name (a hard link) of its file.
While no watch can be armed the sources are polled instead.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
import structlog
from watchfiles import Change, awatch

from memhubd.runtime.confine import StatKey, inside, shown_path, stat_tuple

log = structlog.get_logger(__name__)

MANIFEST_NAME = "memdsl.json"
SOURCE_SUFFIXES = (".mem", ".memschema.json")
# Directories that hold sources only by exception, and that tools fill with
# directories of their own (git makes `.git/objects/xx` on every commit). They are
# watched and re-scanned like any other; a directory made under one is only looked
# into for sources, instead of costing a full re-read as one made elsewhere does.
BUSY_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__"})
# How many links a source may lead through (the kernel's own limit, ELOOP, is 40).
MAX_LINK_HOPS = 40
# How often the event loop wakes without events to check the root is still the same
# directory, and how often a vanished root is looked for again.
ROOT_CHECK_S = 0.5
# While a watch is down, the pause between two polls is at least this many times the last
# poll's walk (at most a sixth of a core spent walking).
POLL_PAUSE_PER_WALK = 5
# The longest pause between tries of a watch that keeps failing (the sources are polled
# meanwhile, every ROOT_CHECK_S * 2). A watch that delivered a batch, or stayed up for
# ROOT_CHECK_S * 20, worked: the next failure starts the pauses over.
WATCH_RETRY_MAX_S = 60.0
# What the events library raises for an event on a name it cannot decode (not UTF-8).
UNDECODABLE_NAME_ERROR = "Unable to decode path"
# Quiet time that ends a batch (watchfiles' `step`); `debounce_ms` caps a batch's length.
# watchfiles hands a batch over one to two steps after its last change (28 ms median
# from an atomic save to the batch at 10 ms, 44 ms at 20); an idle wake-up every step
# costs well under 1% of a core.
BATCH_QUIET_MS = 10

OnChange = Callable[[set[Path] | None], Awaitable[None]]
Signature = tuple[tuple[str, StatKey], ...] | None
# A source that is a symbolic link -> the paths, as events name them, of what it leads
# through inside the workspace (`_link_hops`).
Links = dict[Path, tuple[Path, ...]]
# A source whose file has other names (hard links) -> (device, inode) of that file.
Twins = dict[Path, tuple[int, int]]


class _Walked(tuple[tuple[str, StatKey], ...]):
    """A signature (compared as the plain tuple it is) that also carries the `Links`
    and `Twins` its walk found, so that telling them apart costs no system call of its
    own, and the first name it met that is not UTF-8 (shown escaped), or None."""

    links: Links
    twins: Twins
    undecodable: str | None


def is_source_name(name: str) -> bool:
    """True for the file names that make up a workspace (editor lock files excluded)."""
    if name.startswith(".#"):  # emacs lock link for a file being edited
        return False
    return name == MANIFEST_NAME or name.endswith(SOURCE_SUFFIXES)


def is_source_path(path: Path, root: Path) -> bool:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    return bool(parts) and is_source_name(parts[-1])


def _busy(path: Path, root: Path) -> bool:
    return bool(BUSY_DIRS.intersection(path.relative_to(root).parts))


def workspace_signature(root: Path) -> Signature:
    """A cheap fingerprint of the sources: sorted (relative path, stat key), the stat
    key being what the build compares (`confine.stat_tuple`: mtime, size, inode and
    ctime, so that an edit in place that keeps the size and puts the mtime back shows).
    Walks what `os.walk(root)` walks, as the build does: every directory, hidden ones
    included, linked ones not descended.

    None when the root is not a directory.
    """
    if not root.is_dir():
        return None
    top = os.fspath(root)
    cut = len(top.rstrip(os.sep)) + 1  # a path below `top` without `top/`
    real_root = os.path.realpath(top)
    entries = []
    links: Links = {}
    twins: Twins = {}
    undecodable = None
    # By hand rather than os.walk: the file names are checked straight from the
    # directory entries (no list of every name, most of them never sources: a `.git`
    # holds thousands), and the entries tell links apart for free.
    stack = [top]
    while stack:
        try:
            listing = os.scandir(stack.pop())
        except OSError:
            continue  # gone or unreadable, as os.walk skips it
        with listing:
            for entry in listing:
                if undecodable is None and not entry.name.isascii():
                    shown = shown_path(entry.path)
                    undecodable = None if shown is entry.path else shown
                try:
                    is_dir = entry.is_dir()  # follows a link, as os.walk's does
                except OSError:
                    is_dir = False
                if is_dir:
                    if not entry.is_symlink():
                        stack.append(entry.path)
                    continue
                if not is_source_name(entry.name):
                    continue
                try:
                    info = os.stat(entry.path)
                except OSError:
                    continue  # removed while walking; the next scan sees the result
                entries.append((entry.path[cut:], stat_tuple(info)))
                if info.st_nlink > 1:
                    twins[Path(entry.path)] = (info.st_dev, info.st_ino)
                if entry.is_symlink():
                    links[Path(entry.path)] = _link_hops(entry.path, top, real_root)
    walked = _Walked(sorted(entries))
    walked.links, walked.twins, walked.undecodable = links, twins, undecodable
    return walked


def _link_hops(path: str, top: str, real_root: str) -> tuple[Path, ...]:
    """Where a source link leads: each link it goes through after itself and the file
    it ends at, each named as events name it (under `top`), inside the workspace's real
    path only (nothing outside is watched). At most MAX_LINK_HOPS, as the kernel."""
    hops = []
    current = path
    for _ in range(MAX_LINK_HOPS):
        try:
            target = os.readlink(current)
        except OSError:
            break  # not a link: the chain ends here (or dangles)
        current = os.path.join(os.path.dirname(current), target)
        # Where the next name really is: its directory resolved, the name itself kept
        # (it may be a link again).
        current = os.path.join(
            os.path.realpath(os.path.dirname(current)), os.path.basename(current)
        )
        if inside(current, real_root):
            hops.append(Path(top, os.path.relpath(current, real_root)))
    return tuple(hops)


def _sources_below(directories: list[Path]) -> set[Path]:
    """The sources in `directories` (new ones, under a busy directory) and below; none
    in a linked directory, which the build never descends."""
    found: set[Path] = set()
    for directory in directories:
        if os.path.islink(directory):
            continue
        for relpath, _ in workspace_signature(directory) or ():
            found.add(directory / relpath)
    return found


def _entries(signature: Signature) -> dict[str, StatKey] | None:
    if signature is None:
        return None
    return dict(signature)


def _differences(
    root: Path, before: dict[str, StatKey] | None, after: dict[str, StatKey] | None
) -> set[Path] | None:
    """The sources made, changed or removed between two walks; None (every file) when
    the root was missing at either."""
    if before is None or after is None:
        return None
    changed = {relpath for relpath, key in after.items() if before.get(relpath) != key}
    changed.update(before.keys() - after.keys())
    return {root / relpath for relpath in changed}


def _root_identity(root: Path) -> tuple[int, int] | None:
    try:
        info = root.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if os.path.isdir(root) else None


async def watch_workspace(
    root: Path,
    on_change: OnChange,
    *,
    stop_event: anyio.Event,
    debounce_ms: int = 200,
    rescan_interval_s: float = 30.0,
    force_polling: bool = False,
    events: bool = True,
    name: str | None = None,
) -> None:
    """Watch `root` until `stop_event` is set, calling `on_change` per batch of changes.

    The baseline is the state of the files when watching starts: start the watcher
    before the first load so that nothing between the two is missed.
    `rescan_interval_s=0` disables the periodic re-scan; `events=False` relies on it
    alone (for file systems that report nothing and are too big to poll).
    `name`: the workspace's, for the log (its root's path when not given).
    """
    watch = _WorkspaceWatch(Path(root).absolute(), on_change, stop_event, name)
    await watch.take_baseline()
    async with anyio.create_task_group() as tg:

        async def stop_when_asked() -> None:
            await stop_event.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(stop_when_asked)
        if events:
            tg.start_soon(watch.follow_events, debounce_ms, force_polling)
        if rescan_interval_s > 0:
            tg.start_soon(watch.rescan_periodically, rescan_interval_s)


class _WorkspaceWatch:
    """The state shared by the event follower and the re-scanner of one root."""

    def __init__(
        self, root: Path, on_change: OnChange, stop_event: anyio.Event, name: str | None = None
    ) -> None:
        self.root = root
        self.name = name or str(root)
        self.on_change = on_change
        self.stop_event = stop_event
        self.lock = anyio.Lock()  # one on_change at a time, in order
        # What the sources looked like at the last on_change: relative path -> stat key,
        # None while the root is missing. The re-scan compares a walk with it.
        self.entries: dict[str, StatKey] | None = None
        self.known_dirs: frozenset[Path] = frozenset()
        # The sources that are links (`Links`), and the other way round: a path a link
        # leads through (or a directory on its way) -> the links it is a change of.
        self.links: Links = {}
        self.linked: dict[Path, frozenset[Path]] = {}
        # The sources that have other names (`Twins`), and each such file's source names
        # by (device, inode): an event on any name of it, a source or not, is a change of
        # each (inotify names only the one written through).
        self.twins: Twins = {}
        self.named: dict[tuple[int, int], frozenset[Path]] = {}
        self.failed = False  # the last on_change raised: the next re-scan retries
        self.watched_identity: tuple[int, int] | None = None
        # Watches in a row that failed before they worked (see WATCH_RETRY_MAX_S).
        self.watch_failures = 0
        self.last_failure: str | None = None  # the error of the last watch that failed
        self.failure_said = False  # this run of failures was said above debug level

    async def take_baseline(self) -> None:
        self.watched_identity = _root_identity(self.root)
        self._remember(await anyio.to_thread.run_sync(workspace_signature, self.root))

    def _remember(self, signature: Signature) -> None:
        self.entries = _entries(signature)
        self._set_links(getattr(signature, "links", {}), getattr(signature, "twins", {}))
        # The root and every directory between it and a source. On strings: Path.parents
        # of each source cost a start at 100k declarations 60 ms of CPU beside its build.
        names = {""}
        for relpath, _ in signature or ():
            parent = os.path.dirname(relpath)
            while parent not in names:
                names.add(parent)
                parent = os.path.dirname(parent)
        self.known_dirs = frozenset(self.root / name for name in names)

    def _update(self, paths: set[Path]) -> bool:
        """Take the current stat of `paths` into `entries`, so that a batch costs its
        files rather than a walk; False when only a walk will do (root was missing)."""
        if self.entries is None or not self.root.is_dir():
            return False
        dirs = set(self.known_dirs)
        links = dict(self.links)
        twins = dict(self.twins)
        for path in paths:
            relpath = os.path.relpath(path, self.root)
            links.pop(path, None)
            if os.path.islink(path):
                # Dangling too: its target may come back, and must be seen when it does.
                top = os.fspath(self.root)
                links[path] = _link_hops(os.fspath(path), top, os.path.realpath(top))
            try:
                info = os.stat(path)
            except OSError:
                self.entries.pop(relpath, None)
                twins.pop(path, None)
                continue
            self.entries[relpath] = stat_tuple(info)
            twin = (info.st_dev, info.st_ino) if info.st_nlink > 1 else None
            if twins.get(path) != twin:
                twins.pop(path, None)
                if twin is not None:
                    # A new name of a file (a hard link made), or a name that has just
                    # been given another: its other source names, if any, are among the
                    # known ones. Looked for in them only then, never per edit.
                    twins[path] = twin
                    twins.update(self._other_names(path, twin))
            # A directory that held sources is never forgotten here: its deletion then
            # costs a full re-read, which is always correct.
            dirs.update(d for d in path.parents if d.is_relative_to(self.root))
        self.known_dirs = frozenset(dirs)
        if links != self.links or twins != self.twins:
            self._set_links(links, twins)
        return True

    def _other_names(self, path: Path, file: tuple[int, int]) -> Twins:
        """The known sources other than `path` that are names of the file `file`."""
        found: Twins = {}
        for relpath, key in (self.entries or {}).items():
            other = self.root / relpath
            if key[2] != file[1] or other == path:  # StatKey: (mtime, size, inode, ctime)
                continue
            try:
                info = os.stat(other)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) == file:
                found[other] = file
        return found

    def _set_links(self, links: Links, twins: Twins) -> None:
        self.links = links
        self.twins = twins
        linked: dict[Path, set[Path]] = {}
        for link, hops in links.items():
            for hop in hops:
                linked.setdefault(hop, set()).add(link)
                # A directory on the way moved (inotify names the directory alone).
                for directory in hop.parents:
                    if directory == self.root or not directory.is_relative_to(self.root):
                        break
                    linked.setdefault(directory, set()).add(link)
        named: dict[tuple[int, int], set[Path]] = {}
        for path, file in twins.items():
            named.setdefault(file, set()).add(path)
        self.named = {file: frozenset(paths) for file, paths in named.items()}
        for paths in self.named.values():
            if len(paths) > 1:
                for path in paths:
                    linked.setdefault(path, set()).update(paths - {path})
        self.linked = {path: frozenset(sources) for path, sources in linked.items()}

    async def deliver(self, paths: set[Path] | None, received: float | None = None) -> None:
        """Call on_change for `paths`; `received`: when their batch came (monotonic)."""
        async with self.lock:
            # The sources' state is taken before the call: a change made while on_change
            # runs differs from it, so the next re-scan catches what the events might miss.
            if paths is None or not self._update(paths):
                self._remember(await anyio.to_thread.run_sync(workspace_signature, self.root))
            if received is not None:
                # Where a reload's latency goes, read by bench/restart.py (debug level).
                log.debug(
                    "workspace_batch",
                    root=str(self.root),
                    paths=len(paths) if paths is not None else None,
                    received=received,
                    delivered=time.monotonic(),
                )
            await self._call(paths)

    async def _call(self, paths: set[Path] | None) -> None:
        try:
            await self.on_change(paths)
            self.failed = False
        except Exception:
            self.failed = True
            log.exception("workspace_change_handler_failed", root=str(self.root))

    # ----------------------------------------------------------------- re-scan

    async def rescan_periodically(self, interval_s: float) -> None:
        while True:
            await anyio.sleep(interval_s)
            await self.rescan()

    async def rescan(self, *, polled: bool = False) -> Signature:
        """Walk the sources and compare them with what the last on_change saw; on any
        difference (or after an on_change that raised) call on_change with every file.
        `polled`: standing in for events, it calls on_change with the paths that differ
        only, and leaves an on_change that raised to the periodic re-scan. Returns the
        walk."""
        signature = await anyio.to_thread.run_sync(workspace_signature, self.root)
        async with self.lock:
            after = _entries(signature)
            if after != self.entries or (self.failed and not polled):
                paths = None
                if polled and not self.failed:
                    paths = _differences(self.root, self.entries, after)
                    log.debug("workspace_poll_found_changes", root=str(self.root))
                else:
                    log.info("workspace_rescan_found_changes", root=str(self.root))
                self._remember(signature)
                await self._call(paths)
        return signature

    # ----------------------------------------------------------------- events

    async def follow_events(self, debounce_ms: int, force_polling: bool) -> None:
        while True:
            identity = await self._wait_for_root()
            # A root that appeared or came back: events were lost, re-read all of it.
            reread = identity != self.watched_identity
            self.watched_identity = identity
            try:
                await self._watch_root(identity, debounce_ms, force_polling, reread)
            except FileNotFoundError:
                pass  # the root vanished as watching started
            except Exception as error:
                # e.g. the inotify watch limit, or an event on a file whose name is not
                # UTF-8 (which the events library cannot decode): the root is polled
                # instead, and a watch tried again later, less often while it keeps
                # failing. The other workspaces' watches go on.
                if await self._poll(identity, self._watch_failed(error)):
                    continue  # the same root: arm a new watch on it
            else:
                self.watch_failures = 0
            if self.stop_event.is_set():
                return
            # The root went away or was replaced (its inode number may even be reused):
            # re-read now, and again once a new watch is in place.
            log.warning("workspace_watch_lost", root=str(self.root))
            self.watched_identity = None
            await self.deliver(None)

    def _watch_failed(self, error: Exception) -> float:
        """Count and log a watch that failed; the pause before the next one. Said above
        debug level once for each new error, not at each failure of a run of them."""
        self.watch_failures += 1
        pause = min(ROOT_CHECK_S * 4 * 2 ** (self.watch_failures - 1), WATCH_RETRY_MAX_S)
        text = first_error(error)
        fields: dict[str, Any] = {
            "workspace": self.name,
            "root": str(self.root),
            "error": text,
            "failures": self.watch_failures,
            "retry_in_s": pause,
            "polled_every_s": ROOT_CHECK_S * 2,
        }
        if text == self.last_failure:
            log.debug("workspace_watch_failed", **fields)
        elif UNDECODABLE_NAME_ERROR in text:
            log.warning(
                "workspace_watch_failed",
                reason="a file name under the workspace is not UTF-8: file events cannot "
                "name it, so the workspace is polled until a watch works again (renaming "
                "or removing that file ends this)",
                **fields,
            )
        else:
            log.error("workspace_watch_failed", **fields)
        if text != self.last_failure:
            self.last_failure, self.failure_said = text, True
        return pause

    def _watch_worked(self) -> None:
        """A watch armed after failures worked: the next failure starts the pauses over."""
        level = log.info if self.failure_said else log.debug
        level(
            "workspace_watch_restored",
            workspace=self.name,
            root=str(self.root),
            failures=self.watch_failures,
        )
        self.watch_failures, self.failure_said = 0, False

    async def _poll(self, identity: tuple[int, int], seconds: float) -> bool:
        """Stand in for a watch that failed: re-scan every ROOT_CHECK_S * 2 for `seconds`
        (the first at once, for the batch the failure lost). A failure for a name that
        is not UTF-8 is tried again sooner once the walk finds no such name. False when
        the root went away or was replaced meanwhile."""
        started = time.monotonic()
        undecodable = UNDECODABLE_NAME_ERROR in (self.last_failure or "")
        while True:
            if _root_identity(self.root) != identity:
                return False
            began = time.monotonic()
            walked = await self.rescan(polled=True)
            waited = time.monotonic() - started
            if waited >= seconds:
                return True
            gone = walked is not None and getattr(walked, "undecodable", None) is None
            if undecodable and gone and waited >= ROOT_CHECK_S * 4:
                return True  # the odd name is gone: no need to wait out the pause
            # A large workspace's walk takes a while: a pause of a few walks between two
            # keeps polling to a small share of a core, however many files it holds.
            pause = max(ROOT_CHECK_S * 2, POLL_PAUSE_PER_WALK * (time.monotonic() - began))
            await anyio.sleep(min(pause, seconds - waited))

    async def _wait_for_root(self) -> tuple[int, int]:
        while (identity := _root_identity(self.root)) is None:
            await anyio.sleep(ROOT_CHECK_S)
        return identity

    async def _watch_root(
        self, identity: tuple[int, int], debounce_ms: int, force_polling: bool, rescan_first: bool
    ) -> None:
        """Deliver batches until the root is deleted or replaced (events then go deaf).

        `rescan_first`: the first batch (or quiet timeout) becomes a full re-scan, once
        the new watch is in place, to cover whatever happened while nothing watched.
        After failed watches it becomes a comparison with a walk instead (the sources
        were polled meanwhile), then the count of failures starts over once this watch
        delivered a batch or stayed up for ROOT_CHECK_S * 20.
        """
        catch_up = not rescan_first and self.watch_failures > 0
        armed = time.monotonic()
        changes_iter = awatch(
            self.root,
            watch_filter=None,  # sorted out per batch: directories matter too
            stop_event=self.stop_event,  # ends the blocking wait within `step` ms
            debounce=debounce_ms,
            step=min(BATCH_QUIET_MS, debounce_ms),
            rust_timeout=int(ROOT_CHECK_S * 1000),
            yield_on_timeout=True,
            # None (not False) leaves watchfiles its own choice: polling on WSL drives
            # and when WATCHFILES_FORCE_POLLING is set.
            force_polling=True if force_polling else None,
            recursive=True,
        )
        async with contextlib.aclosing(changes_iter):
            async for changes in changes_iter:
                received = time.monotonic()
                root_deleted = (Change.deleted, str(self.root)) in changes
                if root_deleted or _root_identity(self.root) != identity:
                    return
                if self.watch_failures and (changes or received - armed >= ROOT_CHECK_S * 20):
                    self._watch_worked()
                if catch_up:
                    catch_up = False
                    await self.rescan(polled=True)  # covers this batch too
                    continue
                paths, full, made = self._sort_batch(changes)
                if rescan_first:
                    full, rescan_first = True, False
                if made and not full:
                    # Its files may have been written before the directory was watched.
                    paths |= await anyio.to_thread.run_sync(_sources_below, made)
                if full:
                    await self.deliver(None, received)
                elif paths:
                    await self.deliver(paths, received)

    def _sort_batch(
        self, changes: Iterable[tuple[Change, str]]
    ) -> tuple[set[Path], bool, list[Path]]:
        """The source paths in a batch (a source link's among them when a file it leads
        through changed, and every source name of a file changed through one of its
        names), whether it needs a full re-scan instead (a directory moved in or out,
        which inotify reports as one entry), and the directories made under a busy
        directory, to look into for sources instead."""
        paths: set[Path] = set()
        full = False
        made: list[Path] = []
        linked = self.linked
        named = self.named
        for change, raw in changes:
            path = Path(raw)
            if is_source_path(path, self.root):
                paths.add(path)
            elif change == Change.deleted:
                full = full or path in self.known_dirs
            elif change == Change.added and path.is_dir():
                if _busy(path, self.root):
                    made.append(path)
                else:
                    full = True
            elif named and not _busy(path, self.root):
                # Another name (not a source) of a file that has source names: a stat
                # per such event only while the workspace has hard-linked sources.
                paths.update(self._source_names(path))
            if linked and path in linked:
                paths.update(linked[path])
        return paths, full, made

    def _source_names(self, path: Path) -> frozenset[Path]:
        try:
            info = os.stat(path)
        except OSError:
            return frozenset()
        return self.named.get((info.st_dev, info.st_ino), frozenset())


def first_error(error: BaseException) -> str:
    """One line for a failed watch: the first error of a group (the events library runs
    in a task group of its own), its type and message."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"[:500]
