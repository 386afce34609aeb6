"""Who may see what: scope and grant checks, and each caller's view of a snapshot.

The one place where access policies turn a snapshot into what a caller sees, and where
per-caller answers (counts, problems, events) are computed over that view. Caches here
are bounded and never keep a snapshot alive.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio

from memhub_protocol import (
    ErrorCode,
    ProtocolError,
)
from memhubd.auth.access import is_readable, policy_readable, readers_in, redact_problem
from memhubd.auth.identity import ANY, Identity
from memhubd.model import Workspace
from memhubd.model.workspace import Declarations, left_out
from memhubd.runtime.hub import Hub, WorkspaceHost
from memhubd.runtime.saved_views import restored_view_index
from memhubd.runtime.snapshot import Snapshot

STARTED_AT = time.time()
# Reads and lint: CPU work, bounded daemon-wide.
_ENGINE = anyio.CapacityLimiter(4)
# Review writes wait on a workspace's `review.lock`, which another process may hold for
# as long as it likes: they get slots of their own, per workspace, so a held lock stalls
# that workspace's writes only, never reads or other workspaces.
REVIEW_SLOTS = 2
_REVIEW: dict[str, anyio.CapacityLimiter] = {}
# Past this many workspaces' review slots, the idle ones are forgotten (made again on use).
REVIEW_LIMITERS_KEPT = 64
# The threads those slots run in, apart from anyio's default pool, which other work needs.
_REVIEW_THREADS = anyio.CapacityLimiter(math.inf)
# The serving daemon's event set as its shutdown begins (`stopping_with`): review work that
# has not taken its lock by then gives up. A context variable, not a module global: each
# daemon of a process (tests start several) has its own.
_STOPPING: ContextVar[threading.Event | None] = ContextVar("memhubd_stopping", default=None)


UNRESOLVED = "unresolved_symbol"


def _same_finding(diagnostic: Any) -> tuple[Any, ...]:
    return (diagnostic.decl_id, diagnostic.file, diagnostic.line, diagnostic.message)


@dataclass(frozen=True, slots=True)
class View:
    """What one caller may see of one snapshot.

    Built per call and never cached: only `_Cut`, which holds no snapshot, is kept.
    """

    snapshot: Snapshot
    workspace: Workspace  # the snapshot's workspace minus declarations hidden from the caller
    hidden: frozenset[str]  # ids of hidden declarations (never sent to the caller)
    complete: bool  # the caller sees everything (role `*`): nothing is redacted
    cut: _Cut

    def is_hidden(self, declaration: Any) -> bool:
        """Whether `declaration` (of the whole workspace) is hidden from the caller."""
        return not self.complete and not is_readable(declaration, self.cut.roles)

    def diagnostics(self) -> list[Any]:
        """Lint over what the caller may read (the snapshot's own when nothing is hidden).

        A subject or relation naming a hidden declaration resolves: the view's lint would
        call it unknown, an error the workspace does not have (and one that "fixing"
        would undo a supersede for everyone). Such an `unresolved_symbol` is kept only
        when the whole workspace's lint (made once per snapshot) reports it too."""
        if not self.hidden:
            return self.snapshot.diagnostics()
        found = self.cut.diagnostics()
        if not any(d.code == UNRESOLVED for d in found):
            return found
        whole = {_same_finding(d) for d in self.snapshot.diagnostics() if d.code == UNRESOLVED}
        return [d for d in found if d.code != UNRESOLVED or _same_finding(d) in whole]

    def problems(self) -> list[dict[str, Any]]:
        """The snapshot's source problems, redacted unless the caller sees everything."""
        return problem_dicts(self.snapshot.problems, self.complete)

    def hidden_must_rules(self) -> int:
        """How many active MUST rules of the whole workspace the caller may not read."""
        if not self.hidden:
            return 0
        return self.cut.hidden_must_rules(self.snapshot.workspace)

    def ready(self) -> bool:
        """Whether a query over this view needs nothing built first: its index and, when
        something is hidden, the count of hidden MUST rules (made once per view)."""
        from memhubd.index.workspace import is_indexed

        if self.hidden and self.cut.hidden_must is None:
            return False
        return is_indexed(self.workspace)


class _Cut:
    """What one role set may read of one snapshot, and what is computed over it once.

    It must never reference the snapshot: cuts are cached under the snapshot in a
    WeakKeyDictionary, and a value holding its key would keep every snapshot alive.
    """

    def __init__(
        self,
        roles: frozenset[str],
        workspace: Workspace,
        hidden: frozenset[str],
        earlier: tuple[str, frozenset[str]] | None = None,
        signable: bool = False,
        twin: _Cut | None = None,
    ):
        self.roles = roles
        self.workspace = workspace
        self.hidden = hidden
        # The `readers` lists the role set cannot read (`_unread_readers`), when known: a
        # role set that cannot read the same ones leaves out the same declarations.
        self.hides: frozenset[frozenset[str]] | None = None
        self.earlier = earlier  # the `_EARLIER` key its lint reuses and leaves its results
        # Whether the view's left-out runs are the whole workspace's own objects, so that
        # `signature` (which declarations it leaves out exactly) tells twins apart.
        self.signable = signable
        self._signature: frozenset[Any] | None = None
        # The cut of another role set whose view this one shares (same signature): the
        # view's lint is that cut's, computed once for both.
        self.twin = twin
        self._lock = threading.Lock()
        self._diagnostics: list[Any] | None = None
        self._lint_day: Any = None  # the day `_diagnostics` judged staleness on
        self._lint_reuse: Any = None  # what its lint leaves a lint of another day
        self.hidden_must: int | None = None  # `hidden_must_rules`, once counted
        # (run of the whole workspace, positions in it left out) for each run with any.
        self.left: list[tuple[Any, tuple[int, ...]]] = []

    @property
    def signature(self) -> frozenset[Any] | None:
        """Which declarations the view leaves out, by run and position: two cuts of one
        snapshot made the same view exactly when these are equal (ids would not tell
        twins with one id apart); None when its runs cannot name them. Made when first
        compared: a snapshot's only cut never needs it (29 ms a snapshot at 1M
        declarations)."""
        if self._signature is None and self.signable:
            self._signature = frozenset((id(run), at) for run, at in self.left)
        return self._signature

    def diagnostics(self) -> list[Any]:
        """Lint of the view, reusing the role set's previous view's per-file results for
        the runs it kept (`lint_files`): a reload costs the edited files here too."""
        from memhubd.lint import lint_files, lint_today
        from memhubd.model.workspace import file_runs

        if self.twin is not None:
            return self.twin.diagnostics()
        today = lint_today()
        with self._lock:
            if self._diagnostics is None or self._lint_day != today:
                key = self.earlier
                before = self._lint_reuse  # a lint of this view on another day
                if before is None:
                    with _EARLIER_LOCK:
                        entry = _EARLIER.get(key) if key is not None else None
                        before = entry.lint if entry is not None else None
                runs = file_runs(self.workspace.declarations)
                self._diagnostics, reuse = lint_files(
                    self.workspace, runs, today=today, previous=before
                )
                self._lint_day, self._lint_reuse = today, reuse
                if key is not None:
                    with _EARLIER_LOCK:
                        _remember_earlier(key).lint = reuse
            return self._diagnostics

    def hidden_must_rules(self, whole: Workspace) -> int:
        from memhubd.index.workspace import index_for

        if self.twin is not None:  # the same declarations are hidden, so the same rules
            self.hidden_must = self.twin.hidden_must_rules(whole)
            return self.hidden_must
        with self._lock:
            if self.hidden_must is None:
                index = index_for(whole)
                counted = _left_among(index, index.constraints, self.left)
                if counted is None:  # the index's segments are not the runs cut
                    counted = sum(
                        1
                        for slot in index.space.members(index.constraints)
                        if not is_readable(index.declarations[slot], self.roles)
                    )
                self.hidden_must = counted
            return self.hidden_must


def _left_among(index: Any, bits: int, left: list[tuple[Any, tuple[int, ...]]]) -> int | None:
    """How many members of `bits` (slots of `index`, the whole workspace's) a cut left
    out, from its left-out positions per run (`_Cut.left`): the cost of what is hidden,
    where reading every MUST rule's policy cost about 0.7 s a snapshot at 1M declarations.
    None when a run left out from is not one of the index's segments' own."""
    import numpy as np

    at_of = {id(run): at for run, at in left}
    slots: list[int] = []
    for segment, base in zip(index.segments, index.bases, strict=False):
        at = at_of.get(id(segment.declarations))
        if at is not None:
            slots.extend(base + o for o in at)
    if len(slots) != sum(len(at) for _, at in left):
        return None
    if not slots:
        return 0
    members = np.unpackbits(np.frombuffer(bits.to_bytes(index.space.nbytes, "big"), np.uint8))
    return int(members[np.asarray(slots, dtype=np.intp)].sum())


# --- access -----------------------------------------------------------------------------


def require_scope(identity: Identity, scope: str) -> None:
    if not identity.has_scope(scope):
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"scope '{scope}' is required",
            {"required_scope": scope, "token": identity.name},
        )


def visible_workspaces(hub: Hub, identity: Identity) -> list[str]:
    return [name for name in hub.names() if identity.can_use(name)]


def host_for(hub: Hub, identity: Identity, name: str) -> WorkspaceHost:
    host = hub.get(name)
    allowed = visible_workspaces(hub, identity)
    if host is None or not identity.can_use(name):
        # A workspace the token has no grant for answers as one that does not exist, so
        # its name is never confirmed to a caller who may not use it; `available` lists
        # the caller's own.
        shown = _echoed(name)
        raise ProtocolError(
            ErrorCode.WORKSPACE_NOT_FOUND,
            f"unknown workspace '{shown}'",
            {"workspace": shown, "available": allowed},
        )
    return host


# Workspace names are at most 64 characters: a longer one is echoed cut (a name of
# 200,000 characters made a 400 KB refusal).
ECHOED_CHARS = 100


def _echoed(name: str) -> str:
    return name if len(name) <= ECHOED_CHARS else name[:ECHOED_CHARS] + "…"


def snapshot_of(host: WorkspaceHost, identity: Identity | None = None) -> Snapshot:
    """The host's snapshot; the error names the load problem as `identity` may see it."""
    snapshot = host.snapshot
    if snapshot is None:
        complete = identity is None or identity.sees_everything
        problems = problem_dicts([host.unavailable] if host.unavailable else [], complete)
        problem = problems[0] if problems else None
        raise ProtocolError(
            ErrorCode.WORKSPACE_UNAVAILABLE,
            f"workspace '{host.name}' has not loaded: "
            + (problem["message"] if problem else "still loading"),
            {"workspace": host.name, "problem": problem},
        )
    return snapshot


def problem_dicts(problems: list[Any], complete: bool) -> list[dict[str, Any]]:
    """Source problems as a caller may see them: redacted unless it sees everything.

    A parse error quotes the text on disk, which may belong to a declaration hidden
    from the caller (or one being written), so only a caller who sees everything
    gets the engine's message.
    """
    items = [p.as_dict() for p in problems]
    return items if complete else [redact_problem(item) for item in items]


# Views a snapshot keeps of its own (each holds its workspace, index and lint): role
# sets that leave out the same declarations share one, and a role set that leaves out
# nothing has the whole workspace, so these count the views, not the role sets. Past it
# the least recently used view goes, with every role set sharing it (made again when
# asked for).
MAX_CUTS_PER_SNAPSHOT = 8
# Role sets a snapshot keeps cuts for, shared views and the whole workspace included:
# such a cut holds no view of its own, only its role set and references.
MAX_ROLE_SETS_PER_SNAPSHOT = 256
_EVERYTHING = frozenset({ANY})
_CUTS: weakref.WeakKeyDictionary[Snapshot, OrderedDict[frozenset[str], _Cut]] = (
    weakref.WeakKeyDictionary()
)
_CUTS_LOCK = threading.Lock()


def _unread_readers(
    named: frozenset[frozenset[str]], roles: frozenset[str]
) -> frozenset[frozenset[str]]:
    """Which of the `readers` lists `named` hide a declaration from `roles`
    (`policy_readable`: a list naming none of them). Two role sets for which these are
    the same leave out the same declarations of a snapshot whose lists are `named`."""
    if ANY in roles:
        return frozenset()
    return frozenset(readers for readers in named if readers.isdisjoint(roles))


# The `readers` lists named in each snapshot (`_readers_named`), and the last ones found
# per file run of each workspace, so that a reload reads the edited files only. Runs of
# at most this many workspaces are kept (a removed one's go in time).
READERS_KEPT_WORKSPACES = 16
_READERS: weakref.WeakKeyDictionary[Snapshot, frozenset[frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
_RUN_READERS: OrderedDict[str, dict[int, tuple[Any, frozenset[frozenset[str]]]]] = OrderedDict()
_READERS_LOCK = threading.Lock()


def _readers_named(snapshot: Snapshot) -> frozenset[frozenset[str]]:
    """Every non-empty `readers` list the snapshot's declarations may have (their own
    policies and their types' defaults; a list named by none of them may be among them):
    a role set's view follows from which of these it cannot read (`_unread_readers`),
    found without a pass over the declarations for each role set. One pass a snapshot,
    over the files changed since the last one; off the event loop."""
    from memhubd.model.declaration import default_policy
    from memhubd.model.workspace import file_runs

    with _READERS_LOCK:
        found = _READERS.get(snapshot)
        if found is not None:
            return found
        before = _RUN_READERS.get(snapshot.name, {})
    whole = snapshot.workspace
    named = {readers_in(default_policy(d)) for d in whole.registry.descriptors()}
    runs: dict[int, tuple[Any, frozenset[frozenset[str]]]] = {}
    for run in file_runs(whole.declarations):
        entry = before.get(id(run))
        if entry is None or entry[0] is not run:
            entry = (run, _run_readers(run))
        runs[id(run)] = entry
        named.update(entry[1])
    named.discard(frozenset())
    found = frozenset(named)
    with _READERS_LOCK:
        found = _READERS.setdefault(snapshot, found)
        _RUN_READERS[snapshot.name] = runs
        _RUN_READERS.move_to_end(snapshot.name)
        while len(_RUN_READERS) > READERS_KEPT_WORKSPACES:
            _RUN_READERS.popitem(last=False)
    return found


def _run_readers(run: Sequence[Any]) -> frozenset[frozenset[str]]:
    """The `readers` lists one file's run of declarations names, its types' defaults
    apart. A restored file is read as `Workspace.restricted_by_run` reads it: only the
    declarations whose policy may not be their type's default, none of them made."""
    from memhubd.model.declaration import RestoredDeclarations

    file = run.file if isinstance(run, RestoredDeclarations) else None
    unsure = file.unsure_policies() if file is not None else None
    if file is None or unsure is None:
        return frozenset(readers_in(d.access_policy) for d in run)
    found = set()
    for at in unsure:
        policy = file.policy_unmade(at)
        found.add(readers_in(policy if policy is not None else run[at].access_policy))
    return frozenset(found)


def _cut_for(snapshot: Snapshot, identity: Identity) -> _Cut:
    return _cut_of(snapshot, _EVERYTHING if identity.sees_everything else identity.roles)


# A cut being made, by snapshot and role set: a second caller waits for it instead of
# making another. Two made at once (a request and the warm step) left the role set's
# earlier results (`_EARLIER`) naming one cut's runs and the other's index, and the next
# snapshot's view then matched none of its runs to a segment: 7.6 s at 100k.
_MAKING: weakref.WeakKeyDictionary[Snapshot, dict[frozenset[str], threading.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _cut_of(snapshot: Snapshot, key: frozenset[str]) -> _Cut:
    with _CUTS_LOCK:
        cuts = _CUTS.setdefault(snapshot, OrderedDict())
        cut = cuts.get(key)
        if cut is not None:
            _used(cuts, key, cut)
            return cut
        making = _MAKING.setdefault(snapshot, {}).setdefault(key, threading.Lock())
    with making:
        with _CUTS_LOCK:
            cut = _CUTS.setdefault(snapshot, OrderedDict()).get(key)
        if cut is None:
            named = None if ANY in key else _readers_named(snapshot)
            hides = None if named is None else _unread_readers(named, key)
            with _CUTS_LOCK:
                siblings = list(_CUTS[snapshot].values())
            cut = _shared_cut(snapshot.workspace, key, hides, siblings)
            if cut is None:
                cut = _build_cut(
                    snapshot.workspace,
                    key,
                    snapshot.name,
                    siblings,
                    snapshot.saved_views(key),
                    snapshot,
                    named,
                )
        with _CUTS_LOCK:
            cuts = _CUTS.setdefault(snapshot, OrderedDict())
            cut = cuts.setdefault(key, cut)
            _used(cuts, key, cut)
            _trim(cuts)
            _MAKING.get(snapshot, {}).pop(key, None)
    return cut


def _used(cuts: OrderedDict[frozenset[str], _Cut], key: frozenset[str], cut: _Cut) -> None:
    """`key`'s cut, and the view it shares, made the most recently used (under
    `_CUTS_LOCK`): a view in use by any of its role sets is not the one dropped."""
    cuts.move_to_end(key)
    if cut.twin is not None and cuts.get(cut.twin.roles) is cut.twin:
        cuts.move_to_end(cut.twin.roles)


def _trim(cuts: OrderedDict[frozenset[str], _Cut]) -> None:
    """At most `MAX_CUTS_PER_SNAPSHOT` views and `MAX_ROLE_SETS_PER_SNAPSHOT` role sets
    kept, the least recently used going first (under `_CUTS_LOCK`). A view goes with
    every role set sharing it: one left behind would keep it alive, uncounted."""
    while True:
        views: dict[int, _Cut] = {}  # by recency: a view's is its latest role set's
        for cut in cuts.values():
            if cut.hidden:
                view = cut.twin or cut
                views.pop(id(view), None)
                views[id(view)] = view
        if len(views) <= MAX_CUTS_PER_SNAPSHOT:
            break
        oldest = next(iter(views.values()))
        for key in [key for key, cut in cuts.items() if (cut.twin or cut) is oldest]:
            del cuts[key]
    while len(cuts) > MAX_ROLE_SETS_PER_SNAPSHOT:
        cuts.popitem(last=False)


def _shared_cut(
    whole: Workspace,
    roles: frozenset[str],
    hides: frozenset[frozenset[str]] | None,
    siblings: Iterable[_Cut],
) -> _Cut | None:
    """The cut of `roles` made without a pass over the declarations, when `hides` (the
    `readers` lists it cannot read) tells which they are: none (the whole workspace), or
    those a sibling cut that cannot read the same lists leaves out (that cut's view).
    None when it must be built."""
    if hides is None:
        return None
    if not hides:
        cut = _Cut(roles, whole, frozenset())
        cut.hides = hides
        return cut
    found = next((c for c in siblings if c.hides == hides and c.hidden), None)
    if found is None:
        return None
    twin = found.twin or found
    cut = _Cut(roles, twin.workspace, twin.hidden, None, twin.signable, twin)
    cut.hidden_must = twin.hidden_must  # the same rules are hidden from both
    cut.left, cut._signature, cut.hides = twin.left, twin._signature, hides
    return cut


def _build_cut(
    whole: Workspace,
    roles: frozenset[str],
    name: str = "",
    siblings: Iterable[_Cut] = (),
    saved: list[Any] | None = None,
    snapshot: Snapshot | None = None,
    named: frozenset[frozenset[str]] | None = None,
) -> _Cut:
    """The cut of `roles`. A role set that leaves out exactly what another role set's
    cut of the same snapshot (`siblings`) leaves out shares that cut's view, index and
    lint: tokens with different roles often read the same declarations, and each view
    holds its own index (`bench/views.py`). `saved`: views' indexes the parse cache
    saved with `snapshot` that may be this one's (`memhubd.runtime.saved_views`).
    `named`: the `readers` lists of `whole` (`_readers_named`), when known: the last
    view of a role set that cannot read the same of them is then reused as this role
    set's own would be."""
    from memhubd.index.workspace import cached_index

    if ANY in roles:  # reads everything: no declaration needs looking at (or making)
        return _Cut(roles, whole, frozenset())
    key = (name, roles)
    hides = _unread_readers(named, roles) if named is not None else None
    with _EARLIER_LOCK:
        earlier = _EARLIER.get(key)
        if earlier is None and named is not None and hides is not None:
            earlier = _borrowed_earlier(key, named, hides)
    view, runs = whole.restricted_by_run(
        lambda d: is_readable(d, roles),
        earlier.runs if earlier is not None else None,
        lambda policy: policy_readable(policy, roles),
    )
    with _EARLIER_LOCK:
        _remember_earlier(key).runs = runs
    hidden = left_out(runs)
    if not hidden:
        cut = _Cut(roles, whole, hidden)
        cut.hides = hides
        return cut
    # Run ids name runs only while they are the whole workspace's own objects.
    signable = isinstance(whole.declarations, Declarations)
    left = [(entry[0], entry[4]) for entry in runs.values() if entry[4]]
    others = [c for c in siblings if c.signable] if signable else []
    signature = frozenset((id(run), at) for run, at in left) if others else None
    twin = next((c for c in others if c.signature == signature), None)
    if twin is not None:
        twin = twin.twin or twin
        made = cached_index(twin.workspace)
        with _EARLIER_LOCK:
            shared = _EARLIER.get(twin.earlier) if twin.earlier is not None else None
            if made is None and shared is not None:
                made = shared.index  # the twin's view is still being indexed
            if made is not None:  # the next snapshot's view is composed over it
                _remember_earlier(key).index = made
        cut = _Cut(roles, twin.workspace, twin.hidden, key, signable, twin)
        cut.hidden_must = twin.hidden_must  # the same rules are hidden from both
    else:
        if earlier is None or earlier.index is None:
            restored = restored_view_index(snapshot, view, runs, saved or [])
            if restored is not None:
                with _EARLIER_LOCK:
                    _remember_earlier(key).index = restored
        _index_over_earlier(view, key)  # nothing to do when restored
        cut = _Cut(roles, view, hidden, key, signable)
    cut.left, cut._signature, cut.hides = left, signature, hides
    return cut


def views_to_save(snapshot: Snapshot) -> list[tuple[tuple[str, ...], Any, Any]]:
    """The role-limited views of `snapshot` made and indexed so far, the most recently
    used first, as `memhubd.runtime.snapshot.persist` saves them (a hub's
    `views_to_save`): a view shared with another role set is that one's."""
    from memhubd.index.workspace import cached_index

    with _CUTS_LOCK:
        cuts = list(reversed(_CUTS.get(snapshot, {}).values()))
    saved = []
    for cut in cuts:
        index = cached_index(cut.workspace) if cut.hidden and cut.twin is None else None
        if index is not None:
            saved.append((tuple(sorted(cut.roles)), list(cut.left), index))
    return saved


class _Earlier:
    """What the last view of one (workspace, role set) was made with: its per-file
    reading results (`Workspace.restricted_by_run`), the index it was given and its
    lint's per-file results (`memhubd.lint.LintReuse`)."""

    __slots__ = ("runs", "index", "lint")

    def __init__(self) -> None:
        self.runs: dict[int, Any] | None = None
        self.index: Any = None
        self.lint: Any = None


# The last view of each (workspace, role set), for the next snapshot's view to be made
# and indexed over: a reload then costs a role-limited caller the edited files, not a
# pass over every declaration (0.4 s at 100k, on the event loop) and a new index over
# the whole view (0.45 s at 10k). Bounded: the least recently used role set goes first.
MAX_EARLIER_VIEWS = 8
_EARLIER: OrderedDict[tuple[str, frozenset[str]], _Earlier] = OrderedDict()
_EARLIER_LOCK = threading.Lock()


def _remember_earlier(key: tuple[str, frozenset[str]]) -> _Earlier:
    """The entry of `key`, made the most recently used (under `_EARLIER_LOCK`)."""
    entry = _EARLIER.get(key)
    if entry is None:
        entry = _EARLIER[key] = _Earlier()
    _EARLIER.move_to_end(key)
    while len(_EARLIER) > MAX_EARLIER_VIEWS:
        _EARLIER.popitem(last=False)
    return entry


def _borrowed_earlier(
    key: tuple[str, frozenset[str]],
    named: frozenset[frozenset[str]],
    hides: frozenset[frozenset[str]],
) -> _Earlier | None:
    """For a role set with no last view of its own, the last view of another role set of
    the same workspace that cannot read the same of this snapshot's `readers` lists
    (`named`), copied under `key` (under `_EARLIER_LOCK`). Its per-file results hold for
    this role set: a file kept from that snapshot names only lists of this one, and both
    role sets read the same of those. Of many role sets sharing a view, only one makes
    it (`_shared_cut`): after a reload, the next to ask then costs the edited files."""
    for (other, roles), entry in reversed(_EARLIER.items()):
        if other != key[0] or entry.runs is None or ANY in roles:
            continue
        if _unread_readers(named, roles) == hides:
            borrowed = _remember_earlier(key)
            borrowed.runs, borrowed.index, borrowed.lint = entry.runs, entry.index, entry.lint
            return borrowed
    return None


def _index_over_earlier(view: Workspace, key: tuple[str, frozenset[str]]) -> None:
    from memhubd.index.workspace import build_with, cached_index, compose_index

    def build(ws: Workspace) -> Any:
        with _EARLIER_LOCK:
            entry = _EARLIER.get(key)
            earlier = entry.index if entry is not None else None
        index = compose_index(ws, earlier, cached_index(ws.whole))
        with _EARLIER_LOCK:
            _remember_earlier(key).index = index
        return index

    build_with(view, build)


def warm_views(snapshot: Snapshot, identities: Iterable[Identity] = ()) -> None:
    """Make and index the views of `snapshot` its callers will ask for, off the request
    path (a hub warmer): those of the role sets last served for its workspace, then
    those of `identities` (the stored tokens) that may read it, at most
    `MAX_CUTS_PER_SNAPSHOT` views, each with every role set of those that shares it."""
    from memhubd.index.workspace import index_for

    with _EARLIER_LOCK:
        role_sets = dict.fromkeys(roles for name, roles in _EARLIER if name == snapshot.name)
    for identity in identities:
        if not identity.sees_everything and identity.can_use(snapshot.name):
            role_sets.setdefault(identity.roles)
    named = _readers_named(snapshot)
    views: set[frozenset[frozenset[str]]] = set()
    for roles in list(role_sets)[:MAX_ROLE_SETS_PER_SNAPSHOT]:
        hides = _unread_readers(named, roles)
        if hides and hides not in views:
            if len(views) >= MAX_CUTS_PER_SNAPSHOT:
                continue  # it would push out a view made just now
            views.add(hides)
        cut = _cut_of(snapshot, roles)
        if cut.workspace is not snapshot.workspace:
            index_for(cut.workspace)
            cut.hidden_must_rules(snapshot.workspace)


def view_of(snapshot: Snapshot, identity: Identity) -> View:
    """The caller's view of a snapshot (no scope or grant checks: see `view_for`)."""
    cut = _cut_for(snapshot, identity)
    return View(snapshot, cut.workspace, cut.hidden, identity.sees_everything, cut)


def view_for(hub: Hub, identity: Identity, name: str, scope: str) -> View:
    """The caller's view of a workspace, after the scope and grant checks. It may make
    the view (a pass over every declaration): on the event loop, use `awaited_view_for`."""
    require_scope(identity, scope)
    return view_of(snapshot_of(host_for(hub, identity, name), identity), identity)


def _kept_view(snapshot: Snapshot, identity: Identity) -> View | None:
    """The caller's view of `snapshot` when its cut is kept already, else None: a look
    at the cache that never makes (or waits for) a cut."""
    key = _EVERYTHING if identity.sees_everything else identity.roles
    with _CUTS_LOCK:
        cuts = _CUTS.get(snapshot)
        cut = cuts.get(key) if cuts is not None else None
        if cut is None:
            return None
        cuts.move_to_end(key)
    return View(snapshot, cut.workspace, cut.hidden, identity.sees_everything, cut)


async def awaited_view_of(snapshot: Snapshot, identity: Identity) -> View:
    """`view_of` for the event loop: a kept view at once, else made (or waited for, while
    another thread makes it) in a worker thread. Making one is a pass over every
    declaration (0.3 s at 100k): on the loop it stalled every other caller, /healthz too."""
    view = _kept_view(snapshot, identity)
    if view is not None:
        return view
    return await run_engine(view_of, snapshot, identity)  # type: ignore[no-any-return]


async def awaited_view_for(hub: Hub, identity: Identity, name: str, scope: str) -> View:
    """`view_for` for the event loop: the checks here, the view made off it
    (`awaited_view_of`)."""
    require_scope(identity, scope)
    snapshot = snapshot_of(host_for(hub, identity, name), identity)
    return await awaited_view_of(snapshot, identity)


async def awaited_event_for(
    hub: Hub, identity: Identity, name: str, data: dict[str, Any]
) -> dict[str, Any] | None:
    """`event_for` for the event loop: what needs neither a view nor a file answered on
    it, the rest (a reload's count of what the caller reads, a proposal's readers) in a
    worker thread. One reload reaches every role-limited stream at once: made inline,
    their views blocked the loop for seconds."""
    workspace = data.get("workspace")
    if workspace is None or identity.sees_everything or not identity.can_use(str(workspace)):
        return event_for(hub, identity, name, data)
    return await run_engine(event_for, hub, identity, name, data)  # type: ignore[no-any-return]


# The readers of the drawers a `recall_ingested` event counts, as [readers, count]
# pairs (None: every caller): never sent, read by `event_for` to count per subscriber.
CHUNK_READERS = "_chunk_readers"


def event_for(
    hub: Hub, identity: Identity, name: str, data: dict[str, Any]
) -> dict[str, Any] | None:
    """What one subscriber may see of a change event: None to skip it, else its data.

    Events of workspaces the caller has no grant for are never delivered. For a
    caller who does not see everything, events of proposals hidden from it are not
    delivered, a reload's declaration count is its own (None when the event's
    generation is no longer served and cannot be recounted) and load problems are
    redacted, and a recall ingest counts only the drawers it may read (not delivered
    when it may read none of them).
    """
    shares = data.get(CHUNK_READERS)
    if shares is not None:
        data = {key: value for key, value in data.items() if key != CHUNK_READERS}
    workspace = data.get("workspace")
    if workspace is None:
        return data
    if not identity.can_use(str(workspace)):
        return None
    if identity.sees_everything:
        return data
    if shares is not None:
        roles = identity.roles or frozenset()
        seen = sum(n for readers, n in shares if readers is None or not roles.isdisjoint(readers))
        if not seen:
            return None
        data = {**data, "chunks": seen}
    if name.startswith("proposal_") and _proposal_hidden(hub, identity, str(workspace), data):
        return None
    out = dict(data)
    if "declarations" in out:
        host = hub.get(str(workspace))
        snapshot = host.snapshot if host is not None else None
        served = snapshot is not None and snapshot.generation == out.get("generation")
        out["declarations"] = (
            len(view_of(snapshot, identity).workspace.declarations)
            if served and snapshot is not None
            else None
        )
    if isinstance(out.get("problems"), list):
        out["problems"] = [redact_problem(p) for p in out["problems"]]
    if isinstance(out.get("problem"), dict):
        out["problem"] = redact_problem(out["problem"])
    return out


def _proposal_hidden(hub: Hub, identity: Identity, workspace: str, data: dict[str, Any]) -> bool:
    """Whether an event's proposal would be hidden from the caller once served.

    Proposals hidden from a caller are left out of its lists; their events must not
    announce them either. One small file read; an unreadable proposal counts as hidden.
    """
    from memhubd.lang import ParseError, parse_text
    from memhubd.model import Declaration
    from memhubd.review import PROPOSAL_SUFFIX, ReviewStore, is_proposal_id
    from memhubd.review.proposal import PROPOSAL_LABEL, read_proposal

    host = hub.get(workspace)
    proposal_id = data.get("proposal_id")
    if host is None or host.snapshot is None or not is_proposal_id(proposal_id):
        return True
    proposals = ReviewStore(host.review_root).proposals_dir
    path = os.path.join(proposals, f"{proposal_id}{PROPOSAL_SUFFIX}")
    proposal = read_proposal(path)
    if proposal is None:
        return True
    try:
        document = parse_text(proposal.source, file=PROPOSAL_LABEL)
    except ParseError:
        return False  # as the proposal lists read it: no declaration, nothing hidden
    resolve = host.snapshot.workspace.registry.resolve
    return any(
        not is_readable(Declaration.from_raw(raw, resolve(raw.kind)), identity.roles)
        for raw in document.declarations
    )


def check_length(hub: Hub, field: str, text: str) -> None:
    limit = hub.limits.max_query_chars
    if len(text) > limit:
        raise ProtocolError(
            ErrorCode.TOO_LARGE, f"'{field}' is longer than {limit} characters", {"field": field}
        )


async def run_engine(function: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(function, *args, limiter=_ENGINE)


async def run_review(name: str, function: Any, *args: Any, budget_s: float | None = None) -> Any:
    """Run review work of workspace `name` that takes its `review.lock`, in one of the
    workspace's own slots. The wait for a slot and the wait for the lock share one bound
    (`memhubd.review.durable.LOCK_TIMEOUT_S`); running out is a `conflict` saying the
    lock is held, so the caller retries instead of hanging. `budget_s` replaces that bound
    (what is left of it after an earlier wait of the same request); a free slot and a
    free lock are taken however little is left. Once
    the daemon is stopping (`stopping_with`), work that has not taken the lock gives up
    at its next look at it, as `workspace_unavailable`: its thread cannot be cancelled,
    and would otherwise write after the daemon said it stopped."""
    from memhubd.review import durable

    stopping = _STOPPING.get()
    limiter = _REVIEW.get(name)
    if limiter is None:
        if len(_REVIEW) >= REVIEW_LIMITERS_KEPT:
            # Workspaces come and go over a daemon's life: forget the idle ones' slots.
            for idle in [n for n, held in _REVIEW.items() if _idle(held)]:
                del _REVIEW[idle]
        limiter = _REVIEW[name] = anyio.CapacityLimiter(REVIEW_SLOTS)
    # One deadline for the wait for a slot and the wait for the lock together.
    budget = durable.LOCK_TIMEOUT_S if budget_s is None else max(0.0, budget_s)
    ends = time.monotonic() + budget
    try:
        limiter.acquire_nowait()  # a free slot is taken even with no time left to wait
    except anyio.WouldBlock:
        with anyio.move_on_after(budget) as waiting:
            await limiter.acquire()
        if waiting.cancelled_caught:  # the slots are all taken by work waiting on the lock
            raise review_lock_held(name, durable.LOCK_TIMEOUT_S) from None
    try:
        if stopping is not None and stopping.is_set():
            raise _review_given_up(name)
        return await anyio.to_thread.run_sync(
            _review_work, name, stopping, ends, function, *args, limiter=_REVIEW_THREADS
        )
    except durable.LockHeld as error:
        raise review_lock_held(name, error.waited_s) from error
    except OSError as error:
        raise _review_unwritable(name, error) from error
    finally:
        limiter.release()


def _review_unwritable(name: str, error: OSError) -> ProtocolError:
    """What a caller is told of review work of `name` that could not write its files (a
    full disk, a read-only or missing workspace directory): the workspace is unavailable
    for review until that is fixed. Each review file is written whole or not at all; an
    approval stopped between its files is finished by approving it again."""
    import structlog

    reason = error.strerror or type(error).__name__
    where = os.path.basename(str(error.filename or "")) or "a review file"
    structlog.get_logger("memhubd.service").warning(
        "review files cannot be written", workspace=name, path=error.filename, reason=reason
    )
    return ProtocolError(
        ErrorCode.WORKSPACE_UNAVAILABLE,
        f"review files cannot be written ({where}: {reason}); retry once the workspace "
        "directory is there and writable (an approval cut short is finished by approving "
        "it again)",
        {"workspace": name, "status": "unwritable", "reason": reason},
    )


def _review_work(
    name: str, stopping: threading.Event | None, ends: float, function: Any, *args: Any
) -> Any:
    """`function(*args)` in a review thread, its lock waits ending once `stopping` is set
    or at `ends` (the request's deadline, its wait for a slot included)."""
    from memhubd.review import durable

    attempts = 0

    def check() -> None:
        nonlocal attempts
        if stopping is not None and stopping.is_set():
            raise _review_given_up(name)
        attempts += 1
        # The first attempt is always made: a free lock is taken with no time left.
        if attempts > 1 and time.monotonic() >= ends:
            raise durable.LockHeld(f"the review lock of {name}", durable.LOCK_TIMEOUT_S)

    durable.LOCK_WAIT_CHECK.set(check)  # in this call's own copy of the context
    return function(*args)


@contextlib.contextmanager
def stopping_with(event: threading.Event) -> Iterator[None]:
    """Within the block, and in the tasks started from it (a daemon's requests), review
    work gives up waiting for a review lock once `event` is set (`run_review`)."""
    token = _STOPPING.set(event)
    try:
        yield
    finally:
        _STOPPING.reset(token)


def _review_given_up(name: str) -> ProtocolError:
    """What a caller is told of review work of `name` given up because the daemon stops."""
    import structlog

    structlog.get_logger("memhubd.service").info(
        "review work given up: the daemon is stopping", workspace=name
    )
    return ProtocolError(
        ErrorCode.WORKSPACE_UNAVAILABLE,
        "the daemon is stopping; retry",
        {"workspace": name, "status": "stopping"},
    )


def _idle(limiter: anyio.CapacityLimiter) -> bool:
    """No review work holds or waits for one of these slots."""
    return limiter.borrowed_tokens == 0 and limiter.statistics().tasks_waiting == 0


def review_lock_held(name: str, waited_s: float) -> ProtocolError:
    """What a caller is told when workspace `name`'s review lock stayed held too long."""
    return ProtocolError(
        ErrorCode.CONFLICT,
        f"the review lock of workspace '{name}' is held by another process "
        f"(waited {waited_s:g} s); retry",
        {"workspace": name, "status": "lock_held"},
    )


_ENVIRONMENT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EMFILE, errno.EIO}
)
# A state path taken by something else: a file where a directory belongs, or the reverse.
_PATH_TAKEN_ERRNOS = frozenset({errno.EEXIST, errno.ENOTDIR, errno.EISDIR})


# What SQLite, and a recall store's pool of readers, raise for a connection closed.
_CLOSED = frozenset({"Cannot operate on a closed database.", "the recall store was closed"})


def state_database_failure(error: BaseException) -> ProtocolError | None:
    """What a caller is told of a state-dir database that failed under its request (a
    recall store or cowork inbox not SQLite, cut short, from a newer memhub, or a
    full disk): that the workspace's store is unavailable, with the file as it sits in
    the state dir and SQLite's reason, instead of a bare internal error. None for any
    other error. Logged in full for the operator."""
    import sqlite3

    from memhubd.sqlite import UnusableDatabase

    detail: dict[str, Any] = {}
    if isinstance(error, UnusableDatabase):
        message, path = f"{str(error).rstrip('.')}; see the daemon log", str(error.path)
    elif isinstance(error, sqlite3.ProgrammingError) and str(error) in _CLOSED:
        # Closed under the request: its workspace removed (a request's statement under
        # way is let finish, the rest of the request is not), or the daemon stopping.
        message = (
            "the workspace's state was closed while this request ran (the workspace was "
            "removed, or the daemon is stopping); what had not been stored was not"
        )
        path, detail = None, {"status": "closed"}
    elif isinstance(error, sqlite3.DatabaseError):
        message, path = f"a state database failed: {error}; see the daemon log", None
    elif isinstance(error, OSError) and error.errno in _ENVIRONMENT_ERRNOS | _PATH_TAKEN_ERRNOS:
        # A state file that cannot be made or written (an ingest lock, a full disk, a
        # read-only state dir, a file where its directory belongs): the machine's doing,
        # not the request's.
        path = str(error.filename) if error.filename else None
        named = os.sep.join(path.split(os.sep)[-2:]) if path else "a state file"
        check = (
            "something else is in its place in the state directory (a file where a "
            "directory belongs, or the reverse): move it away"
            if error.errno in _PATH_TAKEN_ERRNOS
            else "check the permissions and free space of the directory holding it"
        )
        message = f"{named}: {error.strerror}; {check}; see the daemon log"
    else:
        return None
    import structlog

    structlog.get_logger("memhubd.service").warning(
        "state database unusable", error=str(error), kind=type(error).__name__, path=path
    )
    return ProtocolError(ErrorCode.WORKSPACE_UNAVAILABLE, message, detail)
