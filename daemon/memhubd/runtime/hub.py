"""The workspace hub: every served workspace, its current snapshot, its watcher.

Reads take `host.snapshot` (a plain attribute: swapping it is atomic) and never
wait; reloads are serialized per workspace and build the next snapshot in a
worker thread beside the current one. Events and metrics report every change.
A save still in progress is held back by the builder; the host then reloads again
when the builder says the held files are due (`Snapshot.recheck_at`). A workspace
removed at run time leaves what agents said in it (recall store, cowork inbox) under
`<state dir>/removed/`, never to a later workspace of its name.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from memhubd.runtime.archive import (
    StateNotArchived,
    archive,
    mark_removing,
    pending_removals,
    unmark_removing,
)
from memhubd.runtime.events import EventBus
from memhubd.runtime.heap import settle_long_lived, settled
from memhubd.runtime.metrics import Metrics
from memhubd.runtime.saves import Pending, SavePolicy
from memhubd.runtime.snapshot import (
    Snapshot,
    WorkspaceUnavailable,
    build_snapshot,
    persist,
    unchanged,
)
from memhubd.runtime.sources import SourceProblem

log = structlog.get_logger("memhubd.hub")

# Saving the parse cache and linting wait until no reload has run for this long (and no
# longer than the second figure): they are passes over the whole workspace (the lint alone
# 1.1 s of CPU at 100k), and a reload that ran beside them shared the GIL with them (a
# 36 ms build took 240 ms). In a burst of edits only the last snapshot is saved and
# linted; 2 s spans the pauses of an agent editing file after file.
WARM_QUIET_S = 2.0
# The longest a stop waits for the workspaces' snapshot files to be written once more.
STOP_SAVE_AT_MOST_S = 10.0
# How often `Hub.wait_warmed` looks whether the warm steps are done.
WARM_POLL_S = 0.05
WARM_WAIT_AT_MOST_S = 30.0


class ReloadActivity:
    """Whether reloads are running, and since when none has, for background work that
    should not compete with a reload someone is waiting on."""

    def __init__(self) -> None:
        self.running = 0
        self.quiet_since = time.monotonic()
        self._changed: anyio.Event | None = None

    @contextmanager
    def reloading(self) -> Iterator[None]:
        self.running += 1
        self._signal()
        try:
            yield
        finally:
            self.running -= 1
            self.quiet_since = time.monotonic()
            self._signal()

    def _signal(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_quiet(self, quiet_s: float, at_most_s: float) -> None:
        """Return once no reload has run for `quiet_s`, or after `at_most_s` regardless."""
        give_up = time.monotonic() + at_most_s
        while (now := time.monotonic()) < give_up:
            if not self.running and now - self.quiet_since >= quiet_s:
                return
            wake = give_up if self.running else min(give_up, self.quiet_since + quiet_s)
            if self._changed is None:
                self._changed = anyio.Event()
            with anyio.move_on_after(wake - now):
                await self._changed.wait()


@dataclass(frozen=True, slots=True)
class WatchSettings:
    debounce_ms: int = 200
    rescan_interval_s: float = 30.0
    force_polling: bool = False
    enabled: bool = True
    vanish_grace_ms: int = 1000
    settle_ms: int = 100

    @property
    def save_policy(self) -> SavePolicy:
        return SavePolicy(self.vanish_grace_ms / 1000, self.settle_ms / 1000)


class WorkspaceHost:
    """One served workspace: its snapshot, its reload lock, its watcher's stop switch."""

    def __init__(self, name: str, root: str, hub: Hub) -> None:
        self.name = name
        self.root = os.path.abspath(root)
        self.snapshot: Snapshot | None = None
        self.unavailable: SourceProblem | None = None
        self.last_reload_at: float = 0.0
        self._hub = hub
        self._reload_lock = anyio.Lock()
        self.stop_event = anyio.Event()
        # The host serving this workspace again after a removal that failed (the same
        # workspace, with its state), for whatever follows this one (a transcript watch).
        self.succeeded_by: WorkspaceHost | None = None
        # What the last build held back (kept even when its snapshot was not swapped
        # in, so grace periods run from the first sighting), and when to look again.
        self._pending: Mapping[str, Pending] = {}
        self._recheck_at: float | None = None
        self._recheck_changed = anyio.Event()
        # A build that failed may have been told of changes it never served: the next
        # one walks the whole workspace rather than trust a list of changed paths.
        self._walk_next = True
        # The generation last saved to the parse cache and linted in the background (a
        # number: holding the snapshot would keep it alive), and since when a newer one
        # has been served (None: none since), so that edits that never pause still get
        # one within `WARM_WAIT_AT_MOST_S`.
        self.warmed_generation = 0
        self.unwarmed_since: float | None = None
        # The real directory the last good build read (the root may be a link): one
        # repointed onto another served workspace's directory must not be served.
        self.served_real_root: str | None = None

    @property
    def review_root(self) -> str:
        """The real directory review reads and writes: the one served, also while the
        root leads elsewhere unserved (`_moved_onto_another`)."""
        return self.served_real_root or os.path.realpath(self.root)

    def _moved_onto_another(self, real: str) -> SourceProblem | None:
        """The problem when the root now leads to another real directory (`real`) that
        is, holds or lies in another served workspace's: its files would be served (and
        approved into) through both, to tokens of either. Run in the build's thread."""
        if real == self.served_real_root:
            return None  # the start and the admin API check a workspace as it is added
        from memhubd.runtime.state import overlapping

        others = {n: h.served_real_root or h.root for n, h in self._hub.hosts.items()}
        others[self.name] = real
        clash = overlapping(others, only=self.name)
        if clash is None:
            return None
        (one, _one_root), (other, _other_root) = clash
        # The operator's log names the other workspace; the problem, which callers of
        # this one see, does not (they may have no grant for it).
        log.warning(
            "workspace_root_overlaps",
            workspace=self.name,
            leads_to=real,
            overlaps=other if one == self.name else one,
            served_from=self.served_real_root,
        )
        kept = "what was served before stays served" if self.served_real_root else "nothing is served"
        return SourceProblem(
            "read_error",
            self.root,
            0,
            0,
            "the workspace directory now leads into (or above) another served workspace's "
            f"directory: {kept} until it leads back or elsewhere (the daemon's log says which)",
        )

    async def reload(self, changed: Iterable[str] | None = None) -> Snapshot | None:
        """Build and swap in the next snapshot if anything changed; return what is served.

        `changed`: the only source paths that changed since the last reload (besides
        those held back); None looks at every file.
        """
        entered = time.monotonic()
        with self._hub.activity.reloading():
            async with self._reload_lock:
                return await self._reload_locked(changed=changed, entered=entered)

    def reloads_held(self) -> anyio.Lock:
        """Hold off every other reload, e.g. across a write to the sources and its reload."""
        return self._reload_lock

    @property
    def held_back(self) -> Mapping[str, Any]:
        """The files the last build held back while their saves settle (their served
        text is the one before the save), by path."""
        return self._pending

    async def reload_held(self, written: Iterable[str] = ()) -> Snapshot | None:
        """`reload()` of every file, for a caller that already holds `reloads_held()`.

        `written`: the files that caller wrote itself, whole and atomically, and must see
        served at once: they are not made to settle first. Every other file follows the
        save rules, as in any reload: one caught half-way through a save is held back.
        """
        with self._hub.activity.reloading():
            return await self._reload_locked(written=frozenset(written))

    async def _reload_locked(
        self,
        *,
        written: frozenset[str] = frozenset(),
        changed: Iterable[str] | None = None,
        entered: float | None = None,
    ) -> Snapshot | None:
        hub = self._hub
        previous = self.snapshot
        started = time.perf_counter()
        # Monotonic times of the reload's steps, logged at debug level (bench/restart.py).
        marks = {"entered": entered or time.monotonic(), "locked": time.monotonic()}
        if self._walk_next:
            changed = None
        self._walk_next = True  # until this build has succeeded
        real_root: list[str | None] = [None]  # the real directory the build reads

        def build() -> Snapshot:
            marks["build_started"] = time.monotonic()
            real_root[0] = os.path.realpath(self.root)
            moved = self._moved_onto_another(real_root[0])
            if moved is not None:
                raise WorkspaceUnavailable(moved)
            cpu = time.thread_time()
            built = build_snapshot(
                self.name,
                self.root,
                previous,
                policy=hub.watch_settings.save_policy,
                pending=self._pending,
                trusted=written,
                # A start restores what an earlier run saved; later builds reuse `previous`.
                cache=hub.cache if previous is None else None,
                changed=changed,
            )
            marks["built"] = time.monotonic()
            marks["build_cpu"] = time.thread_time() - cpu
            return built

        try:
            # No full collection here: the warm-up after the swap decides on one.
            candidate = await anyio.to_thread.run_sync(
                settled(build, collect=False), limiter=hub.build_limiter
            )
        except WorkspaceUnavailable as error:
            hub.metrics.reloads.inc(self.name, "unavailable")
            if self.unavailable != error.problem:
                self.unavailable = error.problem
                hub.events.publish(
                    "unavailable", workspace=self.name, problem=error.problem.as_dict()
                )
            log.warning("workspace unavailable", workspace=self.name, error=error.problem.message)
            return previous
        except Exception:
            hub.metrics.reloads.inc(self.name, "error")
            log.exception("reload failed", workspace=self.name)
            return previous
        finally:
            self.last_reload_at = time.time()
        self._walk_next = False
        self.served_real_root = real_root[0]
        marks["returned"] = time.monotonic()
        hub.metrics.reload_seconds.observe(self.name, value=time.perf_counter() - started)
        self._pending = candidate.pending
        self._schedule_recheck(candidate.recheck_at)
        # A build that read new bytes changed something: no need to compare every file.
        if previous is not None and not candidate.reparsed and unchanged(previous, candidate):
            hub.metrics.reloads.inc(self.name, "unchanged")
            self.unavailable = None  # it built: what kept it from building has passed
            return previous
        self.snapshot = candidate
        self.unavailable = None
        if self.unwarmed_since is None:
            self.unwarmed_since = time.monotonic()
        marks["swapped"] = time.monotonic()
        self._report(previous, candidate)
        marks["reported"] = time.monotonic()
        hub.warm(candidate)
        log.debug("reload_trace", workspace=self.name, generation=candidate.generation, **marks)
        return candidate

    def _schedule_recheck(self, at: float | None) -> None:
        self._recheck_at = at
        self._recheck_changed.set()

    async def run_rechecks(self) -> None:
        """Reload whenever held-back files are due, until the host is stopped."""
        while not self.stop_event.is_set():
            changed = self._recheck_changed = anyio.Event()
            at = self._recheck_at
            delay = None if at is None else at - time.monotonic()
            if delay is None or delay > 0:
                with anyio.move_on_after(delay if delay is not None else float("inf")):
                    await changed.wait()  # a newer build set another time, or stop()
                continue
            self._recheck_at = None
            await self.reload(changed=())  # the held-back paths, which every build looks at

    def stop(self) -> None:
        self.stop_event.set()
        self._recheck_changed.set()

    def _report(self, previous: Snapshot | None, current: Snapshot) -> None:
        hub = self._hub
        # Each `problems` looks at every file (20,000 at 1M declarations): once a snapshot.
        found = current.problems
        degraded = bool(found)
        hub.metrics.reloads.inc(self.name, "degraded" if degraded else "ok")
        hub.metrics.generation.set(self.name, value=current.generation)
        hub.metrics.declarations.set(self.name, value=len(current.workspace.declarations))
        hub.metrics.degraded.set(self.name, value=1.0 if degraded else 0.0)
        hub.events.publish(
            "reloaded",
            workspace=self.name,
            generation=current.generation,
            declarations=len(current.workspace.declarations),
            files=len(current.files),
            reparsed=current.reparsed,
            build_ms=round(current.build_seconds * 1000, 2),
        )
        problems = [p.as_dict() for p in found]
        before = previous.problems if previous is not None else []
        was_degraded = bool(before)
        if degraded and (not was_degraded or before != found):
            hub.events.publish(
                "degraded", workspace=self.name, generation=current.generation, problems=problems
            )
            log.warning("workspace degraded", workspace=self.name, problems=problems)
        elif was_degraded and not degraded:
            hub.events.publish("recovered", workspace=self.name, generation=current.generation)
            log.info("workspace recovered", workspace=self.name, generation=current.generation)
        log.info(
            "workspace reloaded",
            workspace=self.name,
            generation=current.generation,
            declarations=len(current.workspace.declarations),
            reparsed=current.reparsed,
            build_ms=round(current.build_seconds * 1000, 2),
        )


WatchFunction = Callable[..., Any]


class Hub:
    """All served workspaces. `running()` owns the watchers' task group."""

    def __init__(
        self,
        *,
        metrics: Metrics | None = None,
        events: EventBus | None = None,
        watch: WatchSettings | None = None,
        membership: Any = None,
        limits: Any = None,
    ) -> None:
        self.metrics = metrics or Metrics()
        self.events = events or EventBus()
        self.watch_settings = watch or WatchSettings()
        if limits is None:
            from memhubd.runtime.config import Limits

            limits = Limits()
        self.limits = limits  # memhubd.runtime.config.Limits
        self.hosts: dict[str, WorkspaceHost] = {}
        self.build_limiter = anyio.CapacityLimiter(1)
        # Lazily built index parts, and the cache save and lint, are computed on limiters
        # of their own: a reload never queues behind them, the next snapshot's index never
        # behind a lint, and a snapshot already replaced is not saved or linted.
        self.warm_limiter = anyio.CapacityLimiter(1)
        self.lint_limiter = anyio.CapacityLimiter(1)
        self.activity = ReloadActivity()
        self.recall: Any = None  # memhubd.recall.shelf.RecallShelf, opened by the server
        # memhubd.runtime.cache.ParseCache in the state dir, opened by the server; None: off.
        self.cache: Any = None
        self.cowork: Any = None  # memhubd.service.cowork.CoworkDesk, opened by the server
        # Called with each new snapshot once its index is warm, in the same worker thread
        # (e.g. the service layer making the views its callers will ask for).
        self.warmers: list[Callable[[Snapshot], None]] = []
        # The role-limited views of a snapshot to save with it in the parse cache
        # (`memhubd.runtime.snapshot.persist`); None saves none.
        self.views_to_save: Callable[[Snapshot], list[Any]] | None = None
        # Warm steps (index and warmers) under way; see `wait_warmed`.
        self.warming = 0
        self._tg: TaskGroup | None = None
        # Where workspaces added or removed at run time are remembered
        # (memhubd.runtime.state.WorkspaceList); None keeps them in memory only.
        self._membership = membership
        # The state directory (the workspace list sits at its top), where a removed
        # workspace's state is archived; None keeps nothing on disk to archive.
        listed = getattr(membership, "file", None)
        self.state_dir: Path | None = Path(listed).parent if listed is not None else None
        # Names being added or removed: a removal's archive must not take the files of
        # a workspace added under the same name meanwhile.
        self._changing: set[str] = set()

    # --- lifecycle --------------------------------------------------------------------

    @asynccontextmanager
    async def running(self, workspaces: dict[str, str]) -> AsyncIterator[Hub]:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if self.state_dir is not None:
                await anyio.to_thread.run_sync(self._finish_removals, self.state_dir, workspaces)
            for name, root in workspaces.items():
                await self._start(name, root)
            tg.start_soon(self._sweep_cache, [host.root for host in self.hosts.values()])
            tg.start_soon(self._lint_each_day)
            try:
                yield self
            finally:
                for host in self.hosts.values():
                    host.stop()
                tg.cancel_scope.cancel()
                self._tg = None
                await self._save_on_stop()

    async def _save_on_stop(self) -> None:
        """Write each workspace's snapshot file once more if what it served last is not
        in it (edits within `SNAPSHOT_INTERVAL_S`), so that a start after a file broke
        while the daemon was down serves that file's last good parse. Bounded: a stop
        never waits on it for long (the write is atomic; one cut short is not used)."""
        cache = self.cache
        if cache is None:
            return
        served = [host.snapshot for host in self.hosts.values() if host.snapshot is not None]
        if not served:
            return

        def save() -> None:
            for snapshot in served:
                try:
                    persist(snapshot, cache, self.views_to_save, now=True)
                except Exception as error:  # a stop goes on whatever a save meets
                    log.warning("parse cache not saved", workspace=snapshot.name, error=str(error))

        with anyio.move_on_after(STOP_SAVE_AT_MOST_S, shield=True):
            async with self.lint_limiter:  # never beside a save of the warm step
                await anyio.to_thread.run_sync(save, abandon_on_cancel=True)

    async def _start(self, name: str, root: str, *, announce: bool = False) -> WorkspaceHost:
        """Serve `name` from `root`. `announce`: a workspace added at run time, told on the
        event stream before its first load is (a `reloaded` or `unavailable` naming a
        workspace a listener has not heard of would come first otherwise)."""
        host = WorkspaceHost(name, root, self)
        self.hosts[name] = host
        if announce:
            self.events.publish("workspace_added", workspace=name, root=host.root)
        # The watcher starts first so that an edit made during the initial build
        # is seen as an event rather than at the next periodic re-scan.
        if self._tg is not None and self.watch_settings.enabled:
            self._tg.start_soon(self._watch, host, name=f"watch:{name}")
        if self._tg is not None:
            self._tg.start_soon(host.run_rechecks, name=f"recheck:{name}")
        await host.reload()
        return host

    async def _watch(self, host: WorkspaceHost) -> None:
        from memhubd.runtime.watcher import watch_workspace

        settings = self.watch_settings

        async def on_change(changed: set[Path] | None) -> None:
            await host.reload(None if changed is None else [str(path) for path in changed])

        await watch_workspace(
            Path(host.root),
            on_change,
            stop_event=host.stop_event,
            debounce_ms=settings.debounce_ms,
            rescan_interval_s=settings.rescan_interval_s,
            force_polling=settings.force_polling,
            name=host.name,
        )

    def warm(self, snapshot: Snapshot) -> None:
        """Compute the index's lazy parts right after a swap, then save the parse cache,
        lint and settle the heap once reloads have been quiet for `WARM_QUIET_S`, all off
        the request path.

        Runs beside reloads, not before the next one. The quiet step takes the snapshot
        served by then: in a burst of edits only the last one is saved and linted, and
        edits that never pause get one within `WARM_WAIT_AT_MOST_S` of the first.
        """
        host = self.hosts.get(snapshot.name)
        tg = self._tg
        if tg is None or host is None:
            return

        def index() -> None:
            from memhubd.index.workspace import index_for

            if host.snapshot is snapshot:
                # Collecting waits for the quiet step: it holds the GIL throughout.
                settled(index_for(snapshot.workspace).warm, collect=False)()
            for warmer in self.warmers:
                if host.snapshot is snapshot:
                    settled(lambda w=warmer: w(snapshot), collect=False)()
            snapshot.drop_saved_views()

        async def run() -> None:
            self.warming += 1
            try:
                await anyio.to_thread.run_sync(index, limiter=self.warm_limiter)
            except Exception:
                log.exception("warming failed", workspace=host.name)
            finally:
                self.warming -= 1
            # A task of its own, which holds no snapshot while it waits: a replaced one
            # is freed at once.
            tg.start_soon(self._save_and_lint_when_quiet, host)

        tg.start_soon(run)

    async def wait_warmed(self, at_most_s: float) -> None:
        """Return once no warm step is under way (the served snapshots indexed, the
        views of the stored tokens' role sets made), or after `at_most_s` regardless.
        What a start defers waits for this: a role-limited token's first answer waits
        for its view, and an import beside it shared the GIL with it (3.4 s instead of
        2.2 s at 100k when the MCP SDK was imported meanwhile)."""
        with anyio.move_on_after(at_most_s):
            while self.warming:
                await anyio.sleep(WARM_POLL_S)

    async def _save_and_lint_when_quiet(self, host: WorkspaceHost) -> None:
        try:
            since = host.unwarmed_since or time.monotonic()
            longest = since + WARM_WAIT_AT_MOST_S - time.monotonic()
            # A removed workspace's wait ends with it: the wait holds its host, and so
            # its snapshot (up to 30 s of them, under add/remove churn).
            async with anyio.create_task_group() as waiting:

                async def end_with_the_host() -> None:
                    await host.stop_event.wait()
                    waiting.cancel_scope.cancel()

                waiting.start_soon(end_with_the_host)
                await self.activity.wait_quiet(WARM_QUIET_S, max(longest, 0.0))
                waiting.cancel_scope.cancel()
            if host.stop_event.is_set():
                return
            async with self.lint_limiter:
                target = host.snapshot
                if (
                    target is None
                    or target.generation <= host.warmed_generation
                    or self.hosts.get(host.name) is not host
                ):
                    return
                host.warmed_generation, host.unwarmed_since = target.generation, None
                await anyio.to_thread.run_sync(self._save_and_lint, host, target)
        except Exception:
            log.exception("warming failed", workspace=host.name)

    def _save_and_lint(self, host: WorkspaceHost, snapshot: Snapshot) -> None:
        """Save `snapshot` to the parse cache, lint it unless it has been replaced
        meanwhile, and settle the heap (a full collection when memory has grown)."""
        marks = {"quiet": time.monotonic()}
        if self.cache is not None:
            try:
                persist(snapshot, self.cache, self.views_to_save)
            except OSError as error:  # a full disk costs the next start a parse, no more
                log.warning("parse cache not saved", workspace=snapshot.name, error=str(error))
        marks["persisted"] = time.monotonic()
        if host.snapshot is snapshot:
            snapshot.diagnostics()
            marks["linted"] = time.monotonic()
        settle_long_lived()
        marks["ended"] = time.monotonic()
        log.debug("warm_trace", workspace=snapshot.name, generation=snapshot.generation, **marks)

    async def _sweep_cache(self, roots: list[str]) -> None:
        """Delete the parse cache's folders of workspaces not served for a long time."""
        cache = self.cache
        if cache is None:
            return
        try:
            async with self.lint_limiter:  # never beside a save
                await anyio.to_thread.run_sync(cache.sweep, roots)
        except Exception:
            log.exception("parse cache sweep failed")

    async def _lint_each_day(self) -> None:
        """Lint each served snapshot again just after local midnight: lint judges
        staleness on the day it is asked (`Snapshot.diagnostics`), and the first status
        or lint of a new day should not wait for it."""
        while True:
            now = datetime.datetime.now()
            midnight = datetime.datetime.combine(
                now.date() + datetime.timedelta(days=1), datetime.time()
            )
            # Woken each hour at most: a clock set back or forward is followed.
            await anyio.sleep(min((midnight - now).total_seconds() + 1.0, 3600.0))
            if datetime.date.today() == now.date():
                continue
            for host in list(self.hosts.values()):
                snapshot = host.snapshot
                if snapshot is None:
                    continue
                try:
                    async with self.lint_limiter:
                        await anyio.to_thread.run_sync(snapshot.diagnostics)
                except Exception:
                    log.exception("lint of a new day failed", workspace=host.name)

    # --- membership -------------------------------------------------------------------

    def get(self, name: str) -> WorkspaceHost | None:
        return self.hosts.get(name)

    def names(self) -> list[str]:
        return sorted(self.hosts)

    async def add(self, name: str, root: str) -> WorkspaceHost:
        if name in self.hosts:
            raise ValueError(f"workspace '{name}' already exists")
        if name in self._changing:
            raise ValueError(f"workspace '{name}' is being added or removed; retry")
        if not os.path.isdir(root):
            raise FileNotFoundError(f"workspace path is not a directory: {root}")
        self._changing.add(name)
        try:
            if self._membership is not None:
                await anyio.to_thread.run_sync(self._membership.add, name, os.path.abspath(root))
            await self._call(self.recall, "admit", name)
            await self._call(self.cowork, "admit", name)
            host = await self._start(name, root, announce=True)
        finally:
            self._changing.discard(name)
        return host

    async def forget_unserved(self, name: str) -> bool:
        """Drop `name` from the run-time workspace list when it is there but not served
        (left out at start for overlapping a configured workspace, or over
        `max_workspaces`); False otherwise. Its recall and cowork state, kept from when
        it was served, is archived as `remove` archives it: a workspace added later
        under the name starts empty. A state that cannot be archived raises
        `StateNotArchived`, the name listed again as it was."""
        if name in self.hosts or name in self._changing or self._membership is None:
            return False
        root = (await anyio.to_thread.run_sync(self._membership.load)).get(name)
        if root is None:
            return False
        state = self.state_dir
        self._changing.add(name)
        try:
            if state is not None:
                # Before the list forgets the name: cut short, the next start finishes it.
                await anyio.to_thread.run_sync(mark_removing, state, name)
            if not await anyio.to_thread.run_sync(self._membership.remove, name):
                return False
            await self._release(name)
            try:
                folder = await anyio.to_thread.run_sync(self.archive, name)
            except Exception:
                await self._call(self.recall, "admit", name)
                await self._call(self.cowork, "admit", name)
                await anyio.to_thread.run_sync(self._membership.add, name, root)
                raise
        finally:
            self._changing.discard(name)
            if state is not None:
                await anyio.to_thread.run_sync(unmark_removing, state, name)
        if folder is not None:
            log.info("removed workspace state archived", workspace=name, folder=str(folder))
        return True

    async def remove(self, name: str) -> bool:
        """Stop serving `name` and archive its state (`archive`). A state that cannot be
        archived raises `StateNotArchived`, the workspace served again as it was: its
        store must never be left where a later workspace of that name would open it."""
        if name not in self.hosts or name in self._changing:
            return False
        state = self.state_dir
        if state is not None:
            # Before the list forgets the name: a removal cut short is finished at the
            # next start (`_finish_removals`).
            await anyio.to_thread.run_sync(mark_removing, state, name)
        listed = False
        if self._membership is not None:
            # Saved first, as `add` does: a list that cannot be written leaves the
            # workspace served, not gone until a restart brings it back.
            try:
                listed = await anyio.to_thread.run_sync(self._membership.remove, name)
            except BaseException:
                if state is not None:
                    await anyio.to_thread.run_sync(unmark_removing, state, name)
                raise
        host = self.hosts.pop(name, None)
        if host is None:  # removed by a concurrent request meanwhile
            return False
        self._changing.add(name)
        try:
            host.stop()
            self.metrics.forget_workspace(name)
            await self._release(name)
            try:
                folder = await anyio.to_thread.run_sync(self.archive, name)
            except Exception:  # StateNotArchived, or what is kept could not be listed
                host.succeeded_by = await self._serve_again(name, host.root, bool(listed))
                raise
            await self._forget_parse_cache(host.root)
        finally:
            self._changing.discard(name)
            if state is not None:
                await anyio.to_thread.run_sync(unmark_removing, state, name)
        if folder is not None:
            log.info("removed workspace state archived", workspace=name, folder=str(folder))
        # Its snapshot's cycles were frozen with it; a full collection takes them back
        # once enough has piled up (no edit elsewhere may come to run one).
        await anyio.to_thread.run_sync(settle_long_lived)
        self.events.publish("workspace_removed", workspace=name)
        return True

    def _finish_removals(self, state: Path, served: dict[str, str]) -> None:
        """Archive the state of each workspace whose removal was cut short (the daemon
        stopped between forgetting its name and moving its state), before any store is
        opened: a workspace given the name later must start empty. A state that cannot
        be moved keeps its marker, to be tried again at the next start.

        A removal cut short before the list forgot the name never happened: the
        workspace is still listed (or configured), so its state stays and is served."""
        listed = set(served)
        if self._membership is not None:
            listed.update(self._membership.load())
        for name in pending_removals(state):
            if name in listed:
                unmark_removing(state, name)
                log.warning(
                    "interrupted removal abandoned: the workspace is still listed", workspace=name
                )
                continue
            try:
                folder = self.archive(name)
            except (StateNotArchived, OSError):
                log.error("interrupted removal not finished: state not archived", workspace=name)
                continue
            unmark_removing(state, name)
            log.warning(
                "interrupted removal finished: workspace state archived",
                workspace=name,
                folder=str(folder) if folder is not None else None,
            )

    async def _release(self, name: str) -> None:
        """Close what the daemon holds open for `name` beside its snapshot: its recall
        store (not opened again until it is added anew) and cowork inbox, and drop its
        partner-peek activity."""
        await self._call(self.recall, "retire", name)
        await self._call(self.cowork, "retire", name)

    async def _call(self, part: Any, method: str, name: str) -> None:
        """`part.method(name)` in a worker thread, if `part` has it (looked up there too:
        the recall shelf is opened, and recall imported, by its first attribute)."""
        if part is None:
            return

        def call() -> None:
            found = getattr(part, method, None)
            if found is not None:
                found(name)

        try:
            await anyio.to_thread.run_sync(call)
        except Exception:
            log.exception("releasing a removed workspace failed", workspace=name, step=method)

    async def _serve_again(self, name: str, root: str, listed: bool) -> WorkspaceHost:
        log.error("workspace served again: its state was not archived", workspace=name)
        await self._call(self.recall, "admit", name)
        await self._call(self.cowork, "admit", name)
        if listed and self._membership is not None:
            try:
                await anyio.to_thread.run_sync(self._membership.add, name, root)
            except Exception:
                log.exception(
                    "workspace list not saved: served until the next stop", workspace=name
                )
        return await self._start(name, root)

    async def _forget_parse_cache(self, root: str) -> None:
        """Delete the parse cache's folder of a removed workspace, after any save of it
        in progress (saves run under `lint_limiter`; none starts for a removed host)."""
        cache = self.cache
        if cache is None:
            return
        try:
            async with self.lint_limiter:
                await anyio.to_thread.run_sync(cache.forget, root)
        except Exception:
            log.exception("parse cache of a removed workspace not deleted", root=root)

    def kept_for(self, name: str) -> list[Path]:
        """The files and folders of the state directory that hold `name`'s recall and
        cowork state (those that exist)."""
        kept: list[Path] = []
        recall = self.recall
        if recall is not None and hasattr(recall, "files_of"):
            kept += recall.files_of(name)
        inboxes = getattr(self.cowork, "shelf", None)
        if inboxes is not None:
            from memhubd.cowork.inbox import inbox_files

            kept += inbox_files(inboxes.path_of(name))
        if self.state_dir is not None:
            from memhubd.review.keys import key_file

            keys = key_file(self.state_dir, name)
            if keys.exists():
                kept.append(keys)
        return kept

    def archive(self, name: str) -> Path | None:
        """Move `name`'s recall and cowork state, once closed, under `removed/` in the
        state directory (`memhubd.runtime.archive.archive`); None when there was none."""
        if self.state_dir is None:
            return None
        # An inbox reopened by a request that began before the removal is closed, and
        # moved too (the recall store is never reopened: `retire`).
        reclose = getattr(self.cowork, "forget", None)
        return archive(self.state_dir, name, lambda: self.kept_for(name), reclose)
