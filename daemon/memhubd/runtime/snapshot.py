"""Snapshots: the immutable, parsed, typed and indexed state of one workspace at
one generation, and the builder that derives the next one from the previous.

The builder re-parses only files whose bytes changed (and, told which paths changed,
looks at no other file) and rebuilds the type registry only when the manifest or a
schema changed (`memhubd.runtime.registry`). A file that stops parsing
keeps its last good declarations (the workspace is then `degraded`); so does a
broken schema keep the last good registry. Editor saves are not served half-way:
a file that goes missing or empty keeps its declarations for a grace period, and
new bytes are served once they have stopped changing (`memhubd.runtime.saves`).
Nothing is read from outside the workspace's real path, whatever symbolic links say
(`memhubd.runtime.sources`).
Nothing here touches the network or the event loop: building runs in a worker
thread, and waiting for a file to settle is the caller's job (`recheck_at`).
The index of the next snapshot is updated from the previous one's, and a first build
may restore files from the persisted parse cache (`memhubd.runtime.cache`), unread
when their stat is the one its consolidated snapshot recorded; lint
reuses the previous snapshot's per-file results (`Snapshot.diagnostics`).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import attrgetter, is_
from typing import Any

from memhubd.model import Workspace
from memhubd.model.workspace import Declarations, cyclic_gc_paused
from memhubd.runtime.confine import Refused, StatKey, observe, shown_path
from memhubd.runtime.parse_pool import pooled
from memhubd.runtime.registry import (
    RegistryState,
    load_registry,
    registry_fingerprint,
    vanished_parts,
)
from memhubd.runtime.saves import Pending, SavePolicy, SaveRules, serve_file
from memhubd.runtime.sources import (
    NEVER_SEEN,
    REFUSED_DIGEST,
    Saved,
    SourceFile,
    SourceProblem,
    content_digest,
    is_source_under,
    walk_sources,
)
from memhubd.schema import TypeRegistry

# The names the rest of the daemon and the tests import from here; the data classes of
# a snapshot's parts live beside the rules that make them.
__all__ = [
    "Pending",
    "RegistryState",
    "SavePolicy",
    "Snapshot",
    "SourceFile",
    "SourceProblem",
    "WorkspaceUnavailable",
    "build_snapshot",
    "persist",
    "unchanged",
]

# The problem of a workspace whose directory is gone: its files stay served (each
# reported stale) until it is back.
ROOT_MISSING = "workspace directory is missing; its last good version is served until it is back"


@dataclass(frozen=True, eq=False)  # identity semantics: snapshots key per-caller caches
class Snapshot:
    """Everything a read needs, frozen. Readers keep using it while the next one is built."""

    name: str
    root: str
    generation: int
    workspace: Workspace
    files: tuple[SourceFile, ...]
    registry_state: RegistryState
    built_at: float
    build_seconds: float
    reparsed: int
    root_problem: SourceProblem | None = None
    # Sources that are not read at all: links leading outside the workspace, FIFOs, ...
    refused: tuple[SourceProblem, ...] = ()
    # Paths whose disk state is not served yet, and when to look at them again
    # (`time.monotonic()`); the next build takes `pending` back in.
    pending: Mapping[str, Pending] = field(default_factory=dict)
    recheck_at: float | None = None
    # Whether a walk found a symbolic link among the sources: which of them are served
    # then depends on the others, so every change is settled by a walk.
    has_links: bool = False
    _lint_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _lint_cache: list[Any] = field(default_factory=list, repr=False, compare=False)
    # Per-file lint results to reuse: the previous snapshot's (`lint_from`, dropped once
    # this one is linted) and this one's, for the next (never a snapshot reference).
    _lint_from: list[Any] = field(default_factory=list, repr=False, compare=False)
    _lint_reuse: list[Any] = field(default_factory=list, repr=False, compare=False)
    # path -> position in `files`, made on first use and handed to the next snapshot
    # when it lists the same paths (a one-file edit): never a pass over every file.
    _positions: list[dict[str, int]] = field(default_factory=list, repr=False, compare=False)
    # The role-limited views' indexes the consolidated snapshot held, by sorted roles (a
    # first build's alone; `memhubd.runtime.cache.SavedView`), until its warm step.
    _saved_views: dict[tuple[str, ...], Any] = field(
        default_factory=dict, repr=False, compare=False
    )

    def saved_views(self, roles: Iterable[str]) -> list[Any]:
        """The saved indexes of views that `roles` may find its own: the one saved for
        `roles` (handed out once) alone, or else every one saved for another role set
        (a role set reading what another reads shares its view, saved once)."""
        own = self._saved_views.pop(tuple(sorted(roles)), None)
        return [own] if own is not None else list(self._saved_views.values())

    def drop_saved_views(self) -> None:
        """Let go of the saved views no one asked for (their role sets' tokens gone)."""
        self._saved_views.clear()

    def position_of(self) -> dict[str, int]:
        """Each served path's position in `files` (read-only)."""
        if not self._positions:
            self._positions.append({f.path: n for n, f in enumerate(self.files)})
        return self._positions[0]

    @property
    def problems(self) -> list[SourceProblem]:
        found = [f.problem for f in self.files if f.problem is not None]
        found.extend(self.refused)
        if self.registry_state.problem is not None:
            found.insert(0, self.registry_state.problem)
        if self.root_problem is not None:
            found.insert(0, self.root_problem)
        return found

    @property
    def degraded(self) -> bool:
        return bool(self.problems)

    @property
    def health(self) -> str:
        return "degraded" if self.degraded else "healthy"

    def diagnostics(self) -> list[Any]:
        """Lint diagnostics of the served sources, computed once per snapshot and day:
        staleness is judged on the day it is asked, as memdsl's lint judges it, so a
        snapshot served past midnight is linted again (its per-file facts reused)."""
        from memhubd.lint import lint_today

        today = lint_today()
        kept = self._lint_cache[0] if self._lint_cache else None
        if kept is not None and kept[0] == today:
            return kept[1]  # type: ignore[no-any-return]
        with self._lint_lock:
            kept = self._lint_cache[0] if self._lint_cache else None
            if kept is None or kept[0] != today:
                from memhubd.lint import lint_files

                runs = [f.typed for f in self.files if f.typed]
                before = self.lint_reuse()
                found, reuse = lint_files(self.workspace, runs, today=today, previous=before)
                self._lint_reuse[:] = [reuse]
                self._lint_from.clear()
                kept = (today, found)
                self._lint_cache[:] = [kept]
        return kept[1]  # type: ignore[no-any-return]

    def lint_reuse(self) -> Any:
        """What the next snapshot's lint may reuse: this one's results, or (not linted
        yet) what this one would have reused."""
        if self._lint_reuse:
            return self._lint_reuse[0]
        return self._lint_from[0] if self._lint_from else None


class WorkspaceUnavailable(Exception):
    """The workspace has never loaded successfully (e.g. its schema was broken from the start)."""

    def __init__(self, problem: SourceProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def build_snapshot(
    name: str,
    root: str,
    previous: Snapshot | None,
    *,
    policy: SavePolicy | None = None,
    pending: Mapping[str, Pending] | None = None,
    trusted: bool | Collection[str] = False,
    cache: Any = None,
    changed: Iterable[str] | None = None,
) -> Snapshot:
    """The next snapshot of `root`, reusing whatever did not change since `previous`.

    `pending` is what the last build held back (default `previous.pending`): pass the
    last *built* snapshot's when `previous` is an older one kept because nothing
    changed. `trusted`: the paths the caller wrote itself, whole (True: every change),
    so they are served without waiting for them to settle; other files follow the save
    rules, and missing files still get their grace period.
    `cache`: a `memhubd.runtime.cache.ParseCache` that files not known to `previous`
    are restored from when it holds their exact bytes (same types).
    `changed`: the only source paths that may differ from `previous` (a watcher's
    events); with it, only those and the held-back ones are looked at instead of
    walking the workspace, unless something only a walk settles turns up (a new
    directory, a link, a refused source). None walks everything.
    Raises WorkspaceUnavailable when there is no usable registry at all.
    """
    started = time.perf_counter()
    root = os.path.abspath(root)
    real_root = os.path.realpath(root)
    held = pending if pending is not None else (previous.pending if previous else {})
    rules = SaveRules(policy or SavePolicy(), held, enforce=previous is not None, trusted=trusted)
    previous_registry = previous.registry_state if previous else None
    fingerprint, refused_schema = registry_fingerprint(root, real_root)
    vanished = vanished_parts(previous_registry, fingerprint) if refused_schema is None else []
    holds = [rules.hold_vanished(path, None) for path in vanished]
    if previous_registry is not None and ((holds and all(holds)) or not os.path.isdir(root)):
        # A type pack mid-save, or the whole directory gone for now: keep the types.
        registry_state = previous_registry
    else:
        rules.forget(vanished)
        registry_state = load_registry(
            root, real_root, fingerprint, refused_schema, previous_registry
        )
    if registry_state.registry is None:
        assert registry_state.problem is not None
        raise WorkspaceUnavailable(registry_state.problem)
    saved = Saved(cache, root, registry_state) if cache is not None else None
    files: list[SourceFile] = []
    refused: list[SourceProblem] = []
    root_problem = None
    if not os.path.isdir(root):
        # A vanished root is far more often a checkout or sync in progress than a
        # decision to forget everything: keep serving what was there.
        root_problem = SourceProblem("read_error", root, 0, 0, ROOT_MISSING)
        files = list(previous.files) if previous is not None else []
        rules.pending.update(held)
    served = None
    has_links = previous is not None and previous.has_links
    if (
        changed is not None
        and previous is not None
        and previous.root_problem is None
        and root_problem is None
        and not has_links
    ):
        with cyclic_gc_paused():
            served = _serve_changed(changed, held, previous, rules, root, real_root)
    touched: list[int] | None = None  # positions that may differ from `previous.files`
    if served is not None:
        files, refused, reparsed, touched = served
    else:
        known = (
            {f.path: f for f in previous.files}
            if previous is not None and root_problem is None
            else {}
        )
        unlisted: list[str] = []
        walked = walk_sources(root, unlisted) if root_problem is None else []
        # A first build parses what it cannot restore in worker processes (parse_pool).
        first = previous is None
        with (
            cyclic_gc_paused(),  # parsing or restoring allocates millions of objects that stay
            pooled(walked, saved, real_root, registry_state.registry, first=first) as source,
        ):
            files, reparsed, walked_links = _serve_walked(
                walked, known, files, refused, rules, root, real_root, source
            )
        has_links = walked_links if root_problem is None else has_links
        # Under a directory the walk could not list: there, not deleted (their rules go
        # on applying), served as last read with the problem, as an unreadable file is.
        held = _unlisted(unlisted, known, saved if first else None)
        # Served last time, not found by this walk, still held through their grace.
        held += [
            before
            for path, before in known.items()
            if serve_file(path, before, None, rules, real_root) is not None
        ]
        if held:
            files = _put_back(files, held, previous.files if previous else ())
    registry = registry_state.registry
    if previous is None or registry is not previous.workspace.registry:
        touched = None  # every file is typed again
    with cyclic_gc_paused():
        if touched is None:
            files = [
                f if f.typed_with is registry and f.segment is not None else _typed(f, registry)
                for f in files
            ]
        else:  # the others were typed with this registry by the build before
            for at in touched:
                files[at] = _typed(files[at], registry)
    if previous is not None and _same_declarations(previous, files, registry, touched):
        # Nothing to compose again: a build that only held a save back, or found no
        # change, costs a walk rather than a whole index (seconds at 100k declarations).
        workspace = previous.workspace
    else:
        workspace = Workspace(
            # The files' runs read through: O(files), and restored declarations are
            # made only when read.
            declarations=_declarations(previous, files, touched),
            files=_parsed_paths(previous, files, touched),
            registry=registry,
        )
        _index_from_segments(workspace, files, previous, saved, touched)
    inherited = previous.lint_reuse() if previous is not None else None
    return Snapshot(
        name=name,
        root=root,
        generation=(previous.generation + 1) if previous is not None else 1,
        workspace=workspace,
        files=tuple(files),
        registry_state=registry_state,
        built_at=time.time(),
        build_seconds=time.perf_counter() - started,
        reparsed=reparsed,
        root_problem=root_problem,
        refused=tuple(refused),
        pending=rules.pending,
        recheck_at=rules.recheck_at,
        has_links=has_links,
        _lint_from=[inherited] if inherited is not None else [],
        # The same paths in the same order: the previous snapshot's positions hold.
        _positions=previous._positions if touched is not None and previous is not None else [],
        _saved_views={view[0]: view for view in saved.views} if saved is not None else {},
    )


def _typed(source: SourceFile, registry: TypeRegistry) -> SourceFile:
    return source.with_types(registry).with_segment()


def persist(
    snapshot: Snapshot,
    cache: Any,
    views: Callable[[Snapshot], list[Any]] | None = None,
    *,
    now: bool = False,
) -> int:
    """Save the parsed state of every file `snapshot` serves as on disk into `cache`
    (the last good parse kept for bytes that do not load goes into the consolidated
    snapshot only, see below); prune what it no longer uses. The
    consolidated snapshot is rewritten too when due (see `memhubd.runtime.cache`), with
    the indexes of the role-limited views `views` gives (`memhubd.runtime.saved_views`);
    `now` writes it whenever it differs (the daemon stops: what it served last is what a
    start finds, the last good parse of a file that breaks meanwhile included)."""
    from memhubd.runtime.cache import registry_key
    from memhubd.runtime.saved_views import saved_views, within_budget

    types = registry_key(snapshot.registry_state.fingerprint)
    sound = [
        f
        for f in snapshot.files
        if f.problem is None
        and f.document is not None
        and f.segment is not None
        and f.typed_with is snapshot.workspace.registry
    ]
    # A file whose bytes do not load is served from its last good parse: that is saved
    # too, under the digest of its own text and a stat no file has, so that a start
    # reads the file again and, if it still does not load, serves the last good parse
    # (`Saved.last_good`) rather than nothing of it. Its entry is kept beside the others
    # (the mark that it is the version served last) and the snapshot file is written
    # at once when such a file appears or goes (`ParseCache.save_snapshot`).
    kept = [
        (f.path, NEVER_SEEN, content_digest(f.text.encode("utf-8")), f.text, f.document, f.segment)
        for f in snapshot.files
        if f.problem is not None
        and f.document is not None
        and f.segment is not None
        and f.typed_with is snapshot.workspace.registry
    ]
    files = [(f.path, f.digest, f.document, f.segment) for f in sound]
    files += [(path, digest, document, segment) for path, _s, digest, _t, document, segment in kept]
    written = int(cache.put_many(snapshot.root, types, files))
    made = within_budget(views(snapshot) if views is not None else [])
    cache.save_snapshot(
        snapshot.root,
        types,
        [(f.path, f.stat, f.digest, f.text, f.document, f.segment) for f in sound] + kept,
        index=lambda: _saved_index(snapshot, sound),
        views=lambda: saved_views(snapshot, sound, made),
        view_roles=frozenset(roles for roles, _left, _index in made),
        now=now,
    )
    return written


def _saved_index(snapshot: Snapshot, sound: list[SourceFile]) -> Any:
    """(paths of its segments' files, data) of the snapshot's composed index, for the
    consolidated snapshot; None when some segment is not a saved file's (a last good
    parse kept for broken bytes) or the index is not one `memhubd.index.persist` saves."""
    from memhubd.index.persist import index_data
    from memhubd.index.workspace import cached_index

    index = cached_index(snapshot.workspace)
    if index is None:
        return None
    path_of = {id(f.segment): f.path for f in sound}
    paths = tuple(path_of.get(id(segment)) for segment in index.segments)
    if None in paths:
        return None
    data = index_data(index)
    return None if data is None else (paths, data)


def _unlisted(
    directories: list[str], known: dict[str, SourceFile], saved: Saved | None
) -> list[SourceFile]:
    """The sources served before (`known`, popped from it; on a first build, what the
    last run saved) under `directories`, which the walk could not list, each with a
    `read_error` problem."""
    if not directories:
        return []
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in directories)
    held = [(p, known.pop(p)) for p in [p for p in known if p.startswith(prefixes)]]
    if saved is not None:
        held += [(p, saved.unlisted(p)) for p in list(saved.consolidated) if p.startswith(prefixes)]
    kept = []
    for path, before in held:
        if before is None or before.document is None:
            continue
        problem = SourceProblem(
            "read_error", path, 0, 0, "cannot read: its directory cannot be listed"
        )
        # A stat no file has: listed again, it is read again.
        kept.append(
            dataclasses.replace(before, digest=REFUSED_DIGEST, problem=problem, stat=NEVER_SEEN)
        )
    return kept


def _serve_walked(
    walked: list[str],
    known: dict[str, SourceFile],
    files: list[SourceFile],
    refused: list[SourceProblem],
    rules: SaveRules,
    root: str,
    real_root: str,
    saved: Saved | None,
) -> tuple[list[SourceFile], int, bool]:
    """What to serve for each walked path (popping it from `known`), how many files
    were parsed or restored anew, and whether any path was a symbolic link."""
    reparsed = 0
    has_links = False
    walked_real: set[str] | None = None
    for path in walked:
        before = known.pop(path, None)
        try:
            stat, link_target = observe(path, real_root)
            if link_target is not None:
                has_links = True
                # A link to another source of this workspace would serve it twice.
                if walked_real is None:
                    walked_real = {
                        os.path.join(real_root, os.path.relpath(p, root)) for p in walked
                    }
                if link_target in walked_real:
                    continue
            loaded = serve_file(path, before, stat, rules, real_root, saved)
        except Refused as refusal:
            refused.append(SourceProblem(refusal.kind, shown_path(path), 0, 0, refusal.message))
            continue
        if loaded is None:
            continue
        if before is None or loaded.digest != before.digest:
            reparsed += 1
        files.append(loaded)
    return files, reparsed, has_links


def _serve_changed(
    changed: Iterable[str],
    held: Mapping[str, Pending],
    previous: Snapshot,
    rules: SaveRules,
    root: str,
    real_root: str,
) -> tuple[list[SourceFile], list[SourceProblem], int, list[int] | None] | None:
    """`previous.files` with only `changed` and held-back paths looked at again: what
    to serve, what is refused, how many files were parsed anew, and the positions of
    the files served anew when every other file kept its position (else None). None
    when only a walk can tell (a new directory, a link, a source refused now or
    before); `rules` are then as they were."""
    position = previous.position_of()
    refused_paths = {p.file for p in previous.refused}
    looks: list[tuple[str, SourceFile | None, StatKey | None]] = []
    for path in sorted({os.fspath(p) for p in changed}.union(held)):
        if path in refused_paths:
            return None
        if not is_source_under(path, root):
            continue
        try:
            stat, link_target = observe(path, real_root)
        except Refused:  # a directory or FIFO under a source's name, a link leading out
            return None
        if link_target is not None:
            return None
        at = position.get(path)
        looks.append((path, previous.files[at] if at is not None else None, stat))
    kept = (dict(rules.pending), list(rules.deadlines))
    served: dict[str, SourceFile | None] = {}
    reparsed = 0
    for path, before, stat in looks:
        try:
            loaded = serve_file(path, before, stat, rules, real_root)
        except Refused:
            rules.pending, rules.deadlines = kept
            return None
        served[path] = loaded
        if loaded is not None and (before is None or loaded.digest != before.digest):
            reparsed += 1
    added = sorted(p for p, f in served.items() if f is not None and p not in position)
    if not added and all(served[p] is not None for p in served if p in position):
        # The usual edit: files replaced in place, found by position.
        files = list(previous.files)
        touched = sorted(position[p] for p in served if p in position)
        for at in touched:
            files[at] = served[files[at].path]  # type: ignore[assignment]
        return files, list(previous.refused), reparsed, touched
    spliced = _spliced(previous.files, served, added)
    if spliced is None:
        rules.pending, rules.deadlines = kept
        return None
    return spliced, list(previous.refused), reparsed, None


def _spliced(
    before: tuple[SourceFile, ...], served: dict[str, SourceFile | None], added: list[str]
) -> list[SourceFile] | None:
    """`before` with the files in `served` replaced (None: dropped) and `added` put
    where a walk lists them: among the files of their directory, by name (a walk lists
    one directory's files together, sorted). None for a file in a directory that
    serves nothing yet, whose place only a walk knows."""
    after: dict[str, list[str]] = {}  # anchor path -> new paths listed right after it
    first: dict[str, list[str]] = {}  # anchor path -> new paths listed right before it
    if added:
        siblings: dict[str, list[str]] = {}
        for source in before:
            siblings.setdefault(os.path.dirname(source.path), []).append(source.path)
        for path in added:
            same = siblings.get(os.path.dirname(path))
            if not same:
                return None
            name = os.path.basename(path)
            lower = [p for p in same if os.path.basename(p) < name]
            if lower:
                after.setdefault(lower[-1], []).append(path)
            else:
                first.setdefault(same[0], []).append(path)
    if not added:  # the usual edit: one pass of lookups
        kept = (served.get(source.path, source) for source in before)
        return [source for source in kept if source is not None]
    files: list[SourceFile] = []
    for source in before:
        path = source.path
        files.extend(served[p] for p in first.get(path, ()))  # type: ignore[misc]
        replacement = served.get(path, source)
        if replacement is not None:
            files.append(replacement)
        files.extend(served[p] for p in after.get(path, ()))  # type: ignore[misc]
    return files


def _same_declarations(
    previous: Snapshot, files: list[SourceFile], registry: Any, touched: list[int] | None = None
) -> bool:
    before = previous.files
    if touched is not None and any(files[at].typed is not before[at].typed for at in touched):
        return False  # an edited file's new declarations: no pass over the others
    return (
        previous.workspace.registry is registry
        and len(before) == len(files)
        # Passes in C (20,000 files at 1M declarations); an edited file's new run of
        # declarations ends the first one there.
        and all(map(is_, map(_TYPED, before), map(_TYPED, files)))
        and all(map(is_, map(_DOCUMENT, before), map(_DOCUMENT, files)))
        and list(map(_PATH, before)) == list(map(_PATH, files))
    )


_TYPED, _DOCUMENT, _PATH = attrgetter("typed"), attrgetter("document"), attrgetter("path")


def _declarations(
    previous: Snapshot | None, files: list[SourceFile], touched: list[int] | None
) -> Declarations:
    """The files' runs as the workspace's declarations: the previous view with the
    `touched` files' runs replaced when it can (no len() of every other run)."""
    found = previous.workspace.declarations if previous is not None else None
    if touched is not None and isinstance(found, Declarations):
        before = previous.files  # type: ignore[union-attr]
        for at in touched:
            if before[at].typed is not files[at].typed:
                found = found.replaced(before[at].typed, files[at].typed)
                if found is None:
                    break
        else:
            return found  # type: ignore[return-value]
    return Declarations(f.typed for f in files)


def _segments(before: Any, previous: Snapshot, files: list[SourceFile], touched: list[int]) -> Any:
    """The previous index's segments with the `touched` files' replaced (found by
    identity, in C), or None when a file gained or lost its segment."""
    segments = list(before.segments)
    for at in touched:
        old, new = previous.files[at].segment, files[at].segment
        if old is new:
            continue
        if old is None or new is None:
            return None
        where = next(compress(count(), map(is_, segments, repeat(old))), None)
        if where is None:
            return None
        segments[where] = new
    return segments


def _parsed_paths(
    previous: Snapshot | None, files: list[SourceFile], touched: list[int] | None
) -> list[str]:
    """The paths of the files that parsed at some point, in order: the previous
    workspace's list again (a copy in C) when only `touched` files changed and each of
    them parsed exactly when its predecessor did."""
    if previous is not None and touched is not None:
        before = previous.files
        if all((files[at].document is None) == (before[at].document is None) for at in touched):
            return list(previous.workspace.files)
    return [f.path for f in files if f.document is not None]


def _put_back(
    files: list[SourceFile], held: list[SourceFile], order: tuple[SourceFile, ...]
) -> list[SourceFile]:
    """`files` (as a walk lists them) with each of `held` put back in turn as
    `_insert_in_order` puts it, in time linear in the files and directories rather than
    in their product: a branch switch that deletes thousands of files holds them all.

    The walk lists each directory's files together, by name: they are kept as one run
    per directory, so a held file beside others is placed by a bisection of its run,
    and only a directory with no run yet is looked for among the runs. Where the
    listing is not so (a directory in two runs, names out of order, a place inside
    another directory's run), each file is put back one at a time as before."""
    runs: list[_Run] = []
    by_folder: dict[str, _Run] = {}
    for source in files:
        folder, name = os.path.split(source.path)
        run = by_folder.get(folder)
        if run is None:
            run = by_folder[folder] = _Run(folder)
            runs.append(run)
        elif run is not runs[-1] or name < run.names[-1]:
            return _one_at_a_time(files, held, order)
        run.names.append(name)
        run.sources.append(source)
    position: dict[str, int] | None = None
    for kept in held:
        folder, name = os.path.split(kept.path)
        run = by_folder.get(folder)
        if run is not None:  # among the files of its directory, by name
            at = bisect_right(run.names, name)
            run.names.insert(at, name)
            run.sources.insert(at, kept)
            continue
        below = folder + os.sep
        at = next((i for i, r in enumerate(runs) if r.folder.startswith(below)), None)
        if at is None:  # where it was served before, among the files served then
            if position is None:
                position = {f.path: i for i, f in enumerate(order)}
            mine = position.get(kept.path, len(order))
            at = len(runs)
            for i, other in enumerate(runs):
                later = [position.get(f.path, -1) > mine for f in other.sources]
                if any(later):
                    if not later[0]:  # inside another directory's run
                        return _one_at_a_time(files, held, order)
                    at = i
                    break
        run = by_folder[folder] = _Run(folder)
        run.names.append(name)
        run.sources.append(kept)
        runs.insert(at, run)
    return [source for run in runs for source in run.sources]


class _Run:
    """One directory's files, consecutive in a walk's listing, sorted by name."""

    __slots__ = ("folder", "names", "sources")

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.names: list[str] = []
        self.sources: list[SourceFile] = []


def _one_at_a_time(
    files: list[SourceFile], held: list[SourceFile], order: tuple[SourceFile, ...]
) -> list[SourceFile]:
    files = list(files)
    for kept in held:
        _insert_in_order(files, kept, order)
    return files


def _insert_in_order(
    files: list[SourceFile], kept: SourceFile, order: tuple[SourceFile, ...]
) -> None:
    """Put a file held through its grace period back where a walk lists it once it is
    there again, so that builds told the changed paths keep that place: among the files
    of its directory by name, else before the first file below its directory (a walk
    lists a directory's own files before its subdirectories'). Only where its directory
    has neither is its place unknown, and it goes back where it was served before."""
    folder, name = os.path.split(kept.path)
    below = folder + os.sep
    first_below = None
    last_beside = None
    for i, source in enumerate(files):
        where, other = os.path.split(source.path)
        if where == folder:
            if other > name:
                files.insert(i, kept)
                return
            last_beside = i
        elif first_below is None and where.startswith(below):
            first_below = i
    if last_beside is not None:
        files.insert(last_beside + 1, kept)
        return
    if first_below is not None:
        files.insert(first_below, kept)
        return
    position = {f.path: i for i, f in enumerate(order)}
    mine = position.get(kept.path, len(order))
    at = len(files)
    for i, source in enumerate(files):
        if position.get(source.path, -1) > mine:
            at = i
            break
    files.insert(at, kept)


def _index_from_segments(
    workspace: Workspace,
    files: list[SourceFile],
    previous: Snapshot | None,
    saved: Any = None,
    touched: list[int] | None = None,
) -> None:
    """Compose the workspace index from per-file segments, updating the previous
    snapshot's index when there is one, so an edit costs its segment, not the workspace;
    a first build restores the index saved with the consolidated snapshot instead
    (`saved`: the build's `Saved`), updated for the files changed since."""
    from memhubd.index.workspace import WorkspaceIndex, adopt_index, cached_index

    before = cached_index(previous.workspace) if previous is not None else None
    segments = None
    if before is not None and touched is not None:
        segments = _segments(before, previous, files, touched)  # type: ignore[arg-type]
    if segments is None:
        segments = [f.segment for f in files if f.segment is not None]
    with cyclic_gc_paused():
        index = saved.index_for(segments) if before is None and saved is not None else None
        if index is None:
            index = WorkspaceIndex(segments, previous=before)
        adopt_index(workspace, index)


def unchanged(previous: Snapshot, candidate: Snapshot) -> bool:
    """True when a rebuild found nothing new (same files, same bytes, same registry)."""
    return (
        previous.registry_state is candidate.registry_state
        and previous.root_problem == candidate.root_problem
        and previous.refused == candidate.refused
        and len(previous.files) == len(candidate.files)
        and all(
            a.path == b.path and a.digest == b.digest and a.problem == b.problem
            for a, b in zip(previous.files, candidate.files, strict=True)
        )
    )
