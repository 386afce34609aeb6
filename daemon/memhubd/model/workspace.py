"""Workspace: the declarations of a set of `.mem` sources and the lookups over them (§1.6).

Lookups are computed once and reused until declarations are added;
returned sets are frozen and returned lists are copies, so callers cannot corrupt
the cache. Loading walks the file system exactly like memdsl; nothing here lints.
A workspace may be a restriction of another (what one reader may see): it keeps the
whole workspace's supersession, and nothing here decides who may read what.
"""

from __future__ import annotations

import gc
import os
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import accumulate, chain, compress, count, repeat
from operator import add, is_
from typing import Any, TypeVar

from memhubd.lang import Document, parse_file
from memhubd.model.declaration import Declaration, RestoredDeclarations, RestoredSubset
from memhubd.schema import TypeRegistry, registry_for_paths

ACTIVE_STATUSES: frozenset[str] = frozenset({"active"})
EXCLUDED_STATUSES: frozenset[str] = frozenset({"superseded", "retracted", "archived"})

_T = TypeVar("_T")


class Workspace:
    """Declarations in load order, the file labels they came from, and the type registry."""

    def __init__(
        self,
        declarations: list[Declaration] | Declarations | None = None,
        files: list[str] | None = None,
        registry: TypeRegistry | None = None,
        *,
        superseded_elsewhere: frozenset[str] = frozenset(),
        cut_from: Workspace | None = None,
    ) -> None:
        # A list, or (a snapshot's) the files' runs read through (`Declarations`).
        self.declarations: Any = declarations if declarations is not None else []
        self.files: list[str] = files if files is not None else []
        self.registry: TypeRegistry = registry if registry is not None else TypeRegistry.standard()
        # `supersedes` targets of declarations left out of this workspace by `restricted`:
        # what they supersede stays superseded here (see `superseded_ids`).
        self.superseded_elsewhere: frozenset[str] = superseded_elsewhere
        # The whole workspace this one was restricted from; None for a whole workspace
        # (not `self`, which would make every workspace a reference cycle).
        self.cut_from: Workspace | None = cut_from
        self._cache: dict[str, Any] = {}
        self._cache_size = -1

    # ---- construction ---------------------------------------------------

    @classmethod
    def load(cls, paths: Iterable[str], *, registry: TypeRegistry | None = None) -> Workspace:
        """Parse files and directories (recursively, `*.mem` only) in the order given.

        Without a registry, one is built from the manifests next to `paths`.
        Raises SchemaError, ParseError or OSError (e.g. for a missing path).
        """
        path_list = [str(path) for path in paths]
        if registry is None:
            registry = registry_for_paths(path_list)
        workspace = cls(registry=registry)
        with cyclic_gc_paused():
            for path in path_list:
                for file in source_files(path):
                    workspace.add_document(parse_file(file))
        return workspace

    @classmethod
    def from_documents(cls, documents: Iterable[Document], registry: TypeRegistry) -> Workspace:
        """A workspace over already-parsed documents, in the order given; no disk access."""
        workspace = cls(registry=registry)
        with cyclic_gc_paused():
            for document in documents:
                workspace.add_document(document)
        return workspace

    def restricted(self, keep: Callable[[Declaration], bool]) -> Workspace:
        """The declarations `keep` accepts, in order, over the same files and registry.

        Supersession stays the whole workspace's: a left-out declaration that supersedes
        a kept one keeps it superseded, so hiding the newer declaration never revives
        the older one. The result remembers the whole workspace (`whole`).
        """
        return self.restricted_by_run(keep)[0]

    def restricted_by_run(
        self,
        keep: Callable[[Declaration], bool],
        earlier: dict[int, Any] | None = None,
        keep_policy: Callable[[dict[str, Any]], bool] | None = None,
    ) -> tuple[Workspace, dict[int, Any]]:
        """`restricted(keep)` worked out one file's run at a time, with what an earlier
        call gave as its second value (`earlier`) reused for runs that are the very same
        objects: a snapshot after a one-file edit costs that file's run, not a pass over
        every declaration. Returns the workspace and the per-run results for next time;
        the left-out declarations' ids are `left_out(results)`, and which ones they are
        exactly each result's last item (their positions in its run).

        `keep_policy`, when `keep` decides from a declaration's access policy alone,
        decides from the policy: a file restored from the parse cache then keeps the
        declarations it can tell without making them (`RestoredFile.policy_unmade`) as
        they are, and a run it keeps whole is that very run.
        """
        earlier = earlier or {}
        defaults: dict[int, bool] = {}  # `RestoredFile.defaults_kept`, by type, this call only
        results: dict[int, Any] = {}
        kept_runs: list[Sequence[Declaration]] = []
        targets: set[str] = set(self.superseded_elsewhere)
        for run in file_runs(self.declarations):
            entry = earlier.get(id(run))
            if entry is None or entry[0] is not run:
                entry = _restricted_run(run, keep, keep_policy, defaults)
            results[id(run)] = entry
            if entry[1]:
                kept_runs.append(entry[1])
            targets.update(entry[3])
        restricted = Workspace(
            declarations=Declarations(kept_runs),
            files=list(self.files),
            registry=self.registry,
            superseded_elsewhere=frozenset(targets),
            cut_from=self.whole,
        )
        return restricted, results

    @property
    def whole(self) -> Workspace:
        """The workspace this one was restricted from, or itself when it is whole."""
        return self.cut_from if self.cut_from is not None else self

    def add_document(self, doc: Document) -> None:
        """Append a parsed document's declarations, each typed through the registry."""
        resolve = self.registry.resolve
        self.files.append(doc.file)
        self.declarations.extend(
            Declaration.from_raw(raw, resolve(raw.kind)) for raw in doc.declarations
        )

    # ---- lookups --------------------------------------------------------

    def _cached(self, key: str, build: Callable[[], _T]) -> _T:
        # Declarations are only ever appended (by add_document, or by callers that
        # append to the list directly), so a size change is what makes a cache stale.
        if self._cache_size != len(self.declarations):
            self._cache.clear()
            self._cache_size = len(self.declarations)
        try:
            return self._cache[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._cache[key] = build()
            return value

    def _index(self) -> dict[str, Declaration]:
        return self._cached("index", self._build_index)

    def _build_index(self) -> dict[str, Declaration]:
        # First declaration wins for each id and each bare name, like a linear scan.
        index: dict[str, Declaration] = {}
        for decl in self.declarations:
            index.setdefault(decl.id, decl)
            index.setdefault(decl.name, decl)
        return index

    def by_id(self, decl_id: str) -> Declaration | None:
        """The first declaration whose id or bare name is `decl_id`."""
        try:
            return self._index().get(decl_id)
        except TypeError:  # unhashable input matches nothing
            return None

    def by_ids(self, keys: Iterable[str]) -> dict[str, Declaration]:
        """`by_id` for many keys at once: key -> declaration, for the keys that match.

        Uses the index when it is already built; otherwise one scan, so that a
        single pass (like lint's) does not pay for a full index.
        """
        wanted = set(keys)
        if not wanted:
            return {}
        index = self._cache.get("index") if self._cache_size == len(self.declarations) else None
        if index is not None:
            return {key: index[key] for key in wanted if key in index}
        found: dict[str, Declaration] = {}
        for decl in self.declarations:
            for key in (decl.id, decl.name):
                if key in wanted and key not in found:
                    found[key] = decl
            if len(found) == len(wanted):
                break
        return found

    def _entities(self) -> list[Declaration]:
        return self._cached(
            "entities", lambda: [d for d in self.declarations if d.runtime_role == "symbol"]
        )

    def entities(self) -> list[Declaration]:
        """Declarations whose runtime role is `symbol`, whatever their status."""
        return list(self._entities())

    def known_names(self) -> frozenset[str]:
        """Name and id of every declaration, of any type or status."""
        return self._cached("names", self._build_known_names)

    def _build_known_names(self) -> frozenset[str]:
        names: set[str] = set()
        for decl in self.declarations:
            names.add(decl.name)
            names.add(decl.id)
        return frozenset(names)

    def known_symbols(self) -> frozenset[str]:
        """Symbol names plus their string canonical names."""
        return self._cached("symbols", self._build_known_symbols)

    def _build_known_symbols(self) -> frozenset[str]:
        symbols: set[str] = set()
        for entity in self._entities():
            symbols.add(entity.name)
            canonical = entity.fields.get("canonical_name")
            if isinstance(canonical, str):
                symbols.add(canonical)
        return frozenset(symbols)

    def _alias_map(self) -> dict[str, list[str]]:
        return self._cached("aliases", self._build_alias_map)

    def _build_alias_map(self) -> dict[str, list[str]]:
        amap: dict[str, list[str]] = {}
        for entity in self._entities():
            aliases = entity.fields.get("aliases", [])
            if isinstance(aliases, list):
                for alias in aliases:
                    amap.setdefault(str(alias).lower(), []).append(entity.name)
        return amap

    def alias_map(self) -> dict[str, list[str]]:
        """Lowercased alias -> names of the symbols declaring it (any status)."""
        return {alias: list(names) for alias, names in self._alias_map().items()}

    def resolve_alias(self, text: str) -> list[str]:
        """The symbols a mention may refer to (exact, case-insensitive alias match)."""
        return list(self._alias_map().get(text.lower(), ()))

    def _active(self) -> list[Declaration]:
        return self._cached(
            "active", lambda: [d for d in self.declarations if d.status not in EXCLUDED_STATUSES]
        )

    def active(self) -> list[Declaration]:
        """Declarations not superseded, retracted or archived — by status alone."""
        return list(self._active())

    def superseded_ids(self) -> frozenset[str]:
        """Raw `supersedes` targets of every declaration, whatever its own status.

        For a restricted workspace, those of the whole workspace.
        """
        return self._cached("superseded", self._build_superseded)

    def _build_superseded(self) -> frozenset[str]:
        targets: set[str] = set(self.superseded_elsewhere)
        for decl in self.declarations:
            targets.update(decl.relation_targets("supersedes"))
        return frozenset(targets)

    def __repr__(self) -> str:
        return f"Workspace({len(self.declarations)} declarations, {len(self.files)} files)"


class Declarations(Sequence[Declaration]):
    """A workspace's declarations as its files' runs in order, read through: made in
    O(files), and a run restored from the parse cache makes a declaration only when it
    is read (`memhubd.model.declaration.RestoredDeclarations`). Read-only; equal to a
    list of the same declarations."""

    __slots__ = ("_runs", "_starts", "_size")

    def __init__(self, runs: Iterable[Sequence[Declaration]]) -> None:
        runs = list(runs)
        sizes = list(map(len, runs))  # once a run: a restored file's length is a Python call
        self._runs = list(compress(runs, sizes))
        self._starts = list(accumulate(filter(None, sizes), initial=0))
        self._size = self._starts[-1]

    def replaced(
        self, old: Sequence[Declaration], new: Sequence[Declaration]
    ) -> Declarations | None:
        """These declarations with the run `old` (this very object) replaced by `new`,
        both non-empty: a one-file edit costs copies in C, not a len() a run. None when
        `old` is not one of the runs."""
        at = next(compress(count(), map(is_, self._runs, repeat(old))), None)
        if at is None or not old or not new:
            return None
        out = Declarations.__new__(Declarations)
        out._runs = list(self._runs)
        out._runs[at] = new
        grown = len(new) - len(old)
        starts = self._starts
        if grown:
            starts = starts[: at + 1] + list(map(add, starts[at + 1 :], repeat(grown)))
        out._starts = starts  # never mutated, so shared while no size changed
        out._size = starts[-1]
        return out

    def __len__(self) -> int:
        return self._size

    @property
    def runs(self) -> list[Sequence[Declaration]]:
        """The files' runs in order, none empty (read-only)."""
        return self._runs

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        number = bisect_right(self._starts, index) - 1
        return self._runs[number][index - self._starts[number]]

    def __iter__(self) -> Iterator[Declaration]:
        return chain.from_iterable(self._runs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Declarations({list(self)!r})"


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Hold off Python's cycle collector while building many long-lived objects.

    Loading allocates millions of containers that all survive; each automatic full
    collection rescans them, which made loading about twice as slow. Reference
    counting still frees everything acyclic. If the collector is already off (by the
    caller or a concurrent load), it is left alone and not turned back on here.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def source_files(path: str, onerror: Callable[[OSError], None] | None = None) -> Iterable[str]:
    """The files to parse for one load path: itself, or its `*.mem` files top-down.
    `onerror` is told of each directory that could not be listed (skipped, as memdsl
    skips it)."""
    if not os.path.isdir(path):
        yield path
        return
    for root, _dirs, names in os.walk(path, onerror=onerror):
        # File names are sorted per directory; subdirectories keep file-system order.
        for name in sorted(names):
            if name.endswith(".mem"):
                yield os.path.join(root, name)


def file_runs(declarations: Sequence[Declaration]) -> Sequence[Sequence[Declaration]]:
    """The runs of consecutive declarations of one file: a snapshot's own runs (the same
    objects while their files are unchanged), else grouped from the list."""
    if isinstance(declarations, Declarations):
        return declarations.runs
    runs: list[list[Declaration]] = []
    for decl in declarations:
        if runs and runs[-1][0].file == decl.file:
            runs[-1].append(decl)
        else:
            runs.append([decl])
    return runs


def _restricted_run(
    run: Sequence[Declaration],
    keep: Callable[[Declaration], bool],
    keep_policy: Callable[[dict[str, Any]], bool] | None,
    defaults: dict[int, bool],
) -> tuple[Any, ...]:
    """One run's entry of `Workspace.restricted_by_run`'s results: (the run, what it
    keeps of it, the left-out ids, the ids they supersede, the left-out positions)."""
    file = run.file if keep_policy is not None and isinstance(run, RestoredDeclarations) else None
    kept_at: list[int] = []
    left: list[str] = []
    left_at: list[int] = []
    left_targets: set[str] = set()
    numbers: Iterable[int] = range(len(run))
    unsure = file.unsure_policies() if file is not None else None
    if file is not None and unsure is not None and file.defaults_kept(keep_policy, defaults):
        # Every other declaration has its type's default policy, which the role set
        # reads: only these need looking at.
        numbers = unsure
        looked_at = set(unsure)
        kept_at = [at for at in range(len(run)) if at not in looked_at]
    for at in numbers:
        policy = file.policy_unmade(at) if file is not None else None
        if policy is not None and keep_policy is not None:
            if keep_policy(policy):
                kept_at.append(at)
                continue
            # Its id and targets from a stand-in nothing keeps: a hidden one is not made.
            decl = file.passing(at) or run[at]  # type: ignore[union-attr]
        else:
            decl = run[at]
            if keep(decl):
                kept_at.append(at)
                continue
        left.append(decl.id)
        left_at.append(at)
        left_targets.update(decl.relation_targets("supersedes"))
    if not left:
        kept: Sequence[Declaration] = run
    elif file is not None:
        kept_at.sort()
        kept = RestoredSubset(file, tuple(kept_at)) if kept_at else ()
    else:
        kept = tuple(run[at] for at in kept_at)
    return (run, kept, tuple(left), frozenset(left_targets), tuple(left_at))


def left_out(results: dict[int, Any]) -> frozenset[str]:
    """The ids `Workspace.restricted_by_run` left out, from its per-run results."""
    return frozenset(chain.from_iterable(entry[2] for entry in results.values()))
