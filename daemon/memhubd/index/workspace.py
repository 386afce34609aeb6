"""A workspace's lexical index: its file segments composed in load order, queried lazily.

Composition does only workspace-wide bookkeeping (slots, supersession, the pool, which
segments hold which key); postings stay in the segments and become workspace bitmaps
per key on first use (LRU-cached), so a query costs what it touches. Nothing here
scores or layers; that is `query` and `check`.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import Any

from memhubd.index.bitmaps import OrdinalSpace
from memhubd.index.segment import Segment, build_segment
from memhubd.model.workspace import cyclic_gc_paused

# Segment posting tables a bitmap can be asked for.
TERM = "terms"
SUBJECT = "subjects"
SCOPE = "constraint_scopes"
_TABLES = (TERM, SUBJECT, SCOPE)

# Memory allowed for cached posting bitmaps, whatever the workspace size.
CACHE_BYTES = 32 << 20


class WorkspaceIndex:
    """Segments in workspace order plus the facts that need the whole workspace.

    Declarations are addressed by slot: segment `n` owns slots `bases[n] + local`,
    each base a multiple of 8 so segment bitmaps copy in whole bytes; the few slots
    between segments hold no declaration. Slot order is workspace order.

    `pool` is the query pool (active, searchable, not a symbol) and `constraints` the
    active constraints, both without superseded declarations (by id or bare name,
    whatever the superseder's status). Posting bitmaps cover both; callers cut them to
    the one they mean.
    """

    def __init__(
        self,
        segments: Sequence[Segment],
        aliases: dict[str, list[str]],
        superseded_elsewhere: Iterable[str] = (),
    ) -> None:
        self.segments = tuple(segments)
        widths = [(len(s) + 7) // 8 * 8 for s in self.segments]
        self.bases = tuple(accumulate(widths, initial=0))[:-1]
        self.space = OrdinalSpace(sum(widths))
        self.declarations: list[Any] = self._by_slot("declarations")
        self.ids_of: list[str] = self._by_slot("ids")
        self.subjects: list[str | None] = self._by_slot("subjects_of")
        self.scopes: list[str | None] = self._by_slot("scopes_of")
        self.ids = _directory(self.ids_of)
        self.superseded = self._superseded(
            _directory(self._by_slot("names")), frozenset(superseded_elsewhere)
        )
        live = ~self.space.bitmap(self.superseded)
        self.pool = self._flagged("in_pool") & live
        self.constraints = self._flagged("is_constraint") & live
        self.high_confidence = self._flagged("high_confidence") & self.pool
        roles = self._by_slot("roles")
        self.questions = self.pool & self.space.bitmap(
            o for o, role in enumerate(roles) if role == "question"
        )
        self.pool_kinds = self._pool_kinds()
        self.shared_ids = self.pool & self.space.bitmap(
            o for slots in self.ids.values() if len(slots) > 1 for o in slots
        )
        self.aliases = _AliasMatcher(aliases)
        self._rows = {table: [getattr(s, table).rows for s in self.segments] for table in _TABLES}
        self._widths = [s.terms.width for s in self.segments]
        self._byte_bases = [base >> 3 for base in self.bases]
        self._pieces = {table: self._row_maps(table) for table in _TABLES}
        self._cache: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._cache_limit = max(256, CACHE_BYTES // max(1, self.space.nbytes))
        self._lock = threading.Lock()
        self.global_constraints = self.bits(SCOPE, "global") & self.constraints
        self.when_any = self._triggers()
        # Per-index caches of downstream engines (e.g. compiled rules), dropped with it.
        self.memo: dict[str, dict[Any, Any]] = {}

    def _by_slot(self, attribute: str) -> list[Any]:
        out: list[Any] = [None] * self.space.size
        for base, segment in zip(self.bases, self.segments, strict=True):
            values = getattr(segment, attribute)
            out[base : base + len(values)] = values
        return out

    def _row_maps(self, table: str) -> list[dict[str, int]]:
        """Per segment: key -> row of its posting table (C-speed dict building).

        Which segments hold a key is found when the key is first asked for, so
        composing an index costs no Python work per posting key.
        """
        maps = []
        for segment in self.segments:
            keys = getattr(segment, table).keys
            maps.append(dict(zip(keys, range(len(keys)), strict=True)))
        return maps

    def _superseded(self, names: dict[str, list[int]], elsewhere: frozenset[str]) -> set[int]:
        # `elsewhere`: targets of declarations left out of a restricted workspace.
        hidden: set[int] = set()
        for target in {t for s in self.segments for t in s.supersedes} | elsewhere:
            hidden.update(self.ids.get(target, ()))
            hidden.update(names.get(target, ()))
        return hidden

    def _flagged(self, flags: str) -> int:
        return self.space.bitmap(o for o, flag in enumerate(self._by_slot(flags)) if flag)

    def _pool_kinds(self) -> dict[str, int]:
        members: dict[str, list[int]] = {}
        kinds = self._by_slot("kinds")
        for o in self.space.members(self.pool):
            members.setdefault(kinds[o], []).append(o)
        return {kind: self.space.bitmap(slots) for kind, slots in members.items()}

    def _triggers(self) -> dict[str, list[int]]:
        """`when_any` phrase -> live constraints it triggers (kept as lists: few each)."""
        out: dict[str, list[int]] = {}
        for base, segment in zip(self.bases, self.segments, strict=True):
            for phrase, found in segment.when_any.items():
                kept = [base + x for x in found if base + x not in self.superseded]
                if kept:
                    out.setdefault(phrase, []).extend(kept)
        return out

    def bits(self, table: str, key: str) -> int:
        """Bitmap of the indexed declarations under `key` in one posting table (cached).

        Not yet cut to the pool or the constraints (see `constraint_bits`).
        """
        cache_key = (table, key)
        with self._lock:
            cached = self._cache.get(cache_key)
            if cached is not None:
                self._cache.move_to_end(cache_key)
                return cached
        bits = self._assemble(table, key)
        with self._lock:
            self._cache[cache_key] = bits
            if len(self._cache) > self._cache_limit:
                self._cache.popitem(last=False)
        return bits

    def _assemble(self, table: str, key: str) -> int:
        buffer: bytearray | None = None
        rows, widths, starts = self._rows[table], self._widths, self._byte_bases
        for number, row_of in enumerate(self._pieces[table]):
            row = row_of.get(key)
            if row is None:
                continue
            if buffer is None:
                buffer = bytearray(self.space.nbytes)
            width = widths[number]
            start = starts[number]
            buffer[start : start + width] = rows[number][row * width : (row + 1) * width]
        return 0 if buffer is None else int.from_bytes(buffer, "big")

    def constraint_bits(self, table: str, key: str) -> int:
        return self.bits(table, key) & self.constraints

    def candidates(self, types: Any, subject: str | None) -> int:
        """Pool members passing the type filter (`kind in types`) and subject filter."""
        bits = self.pool
        if types is not None:
            bits = 0
            for kind, members in self.pool_kinds.items():
                if kind in types:
                    bits |= members
        if subject is not None:
            bits &= self.bits(SUBJECT, subject)
        return bits & self.pool

    def has_bit(self, bits: int, slot: int) -> bool:
        return bool(bits >> (self.space.width - 1 - slot) & 1)

    def match_aliases(self, lowered_query: str) -> list[tuple[str, list[str]]]:
        """(alias, symbols) of every alias that is a substring of the query, map order."""
        return self.aliases.match(lowered_query)


class _AliasMatcher:
    """Finds aliases occurring in a query: scan them all or look up query substrings.

    Both give the same answer; per query the cheaper one is chosen, so thousands of
    aliases do not cost a scan of each when the query is short.
    """

    def __init__(self, aliases: dict[str, list[str]]) -> None:
        self.items = list(aliases.items())
        self.position = {alias: n for n, (alias, _) in enumerate(self.items)}
        self.lengths = sorted({len(alias) for alias in self.position})

    def match(self, lowered: str) -> list[tuple[str, list[str]]]:
        size = len(lowered)
        lookups = sum(size - n + 1 if n else 1 for n in self.lengths if n <= size)
        return self.scan(lowered) if lookups >= len(self.items) else self.lookup(lowered)

    def scan(self, lowered: str) -> list[tuple[str, list[str]]]:
        return [(alias, symbols) for alias, symbols in self.items if alias in lowered]

    def lookup(self, lowered: str) -> list[tuple[str, list[str]]]:
        size = len(lowered)
        found: set[int] = set()
        for n in self.lengths:
            if n > size:
                break
            for start in range(size - n + 1 if n else 1):
                hit = self.position.get(lowered[start : start + n])
                if hit is not None:
                    found.add(hit)
        return [self.items[n] for n in sorted(found)]


def _concat(parts: Iterable[Sequence[Any]]) -> list[Any]:
    out: list[Any] = []
    for part in parts:
        out.extend(part)
    return out


def _directory(keys: list[str | None]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for slot, key in enumerate(keys):
        if key is not None:
            out.setdefault(key, []).append(slot)
    return out


def build_index(ws: Any) -> WorkspaceIndex:
    """Index a workspace: one segment per run of consecutive declarations of a file."""
    with cyclic_gc_paused():
        segments = [build_segment(run) for run in _file_runs(ws.declarations)]
        elsewhere = getattr(ws, "superseded_elsewhere", ())
        return WorkspaceIndex(segments, ws.alias_map(), elsewhere)


def _file_runs(declarations: Sequence[Any]) -> Iterable[Sequence[Any]]:
    start = 0
    for end in range(1, len(declarations) + 1):
        if end == len(declarations) or declarations[end].file != declarations[start].file:
            yield declarations[start:end]
            start = end


# The index is cached per Workspace object, keyed by id() and dropped by a weakref
# finalizer when the workspace goes away (workspaces need not be hashable).
_CACHE: dict[int, tuple[tuple[int, int], WorkspaceIndex]] = {}
_LOCK = threading.Lock()


def adopt_index(ws: Any, index: WorkspaceIndex) -> bool:
    """Make `index` (composed from segments built elsewhere) the cached index of `ws`.

    Adopted only when its declarations are exactly `ws.declarations` (same objects,
    same order); otherwise `index_for` builds one as usual. Returns whether it was.
    """
    mine = [d for d in index.declarations if d is not None]
    if len(mine) != len(ws.declarations) or not all(map(operator.is_, mine, ws.declarations)):
        return False
    with _LOCK:
        _remember(ws, index)
    return True


def index_for(ws: Any) -> WorkspaceIndex:
    """The (lazily built, cached) index of `ws`; rebuilt if documents were added since."""
    stamp = (len(ws.declarations), len(ws.files))
    entry = _CACHE.get(id(ws))
    if entry is not None and entry[0] == stamp:
        return entry[1]
    with _LOCK:
        entry = _CACHE.get(id(ws))
        if entry is not None and entry[0] == stamp:
            return entry[1]
        index = build_index(ws)
        _remember(ws, index)
        return index


def _remember(ws: Any, index: WorkspaceIndex) -> None:
    if id(ws) not in _CACHE:
        try:
            weakref.finalize(ws, _CACHE.pop, id(ws), None)
        except TypeError:  # not weak-referenceable: an id() key could be reused
            return
    _CACHE[id(ws)] = ((len(ws.declarations), len(ws.files)), index)


def is_indexed(ws: Any) -> bool:
    """True when `index_for(ws)` would answer from the cache, without building."""
    entry = _CACHE.get(id(ws))
    return entry is not None and entry[0] == (len(ws.declarations), len(ws.files))
