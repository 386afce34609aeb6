"""A workspace's lexical index: its file segments composed in load order, queried lazily.

Composition does only workspace-wide bookkeeping (slots, supersession, the pool, which
segments hold which key, and the codes of keys common to many files); postings become
workspace bitmaps per key on first use (LRU-cached), so a query costs what it touches.
An index may be composed from the previous one (`previous=`): flag bitmaps are spliced
with byte copies around the segments that changed, and the id and name directories and
the key holders are copy-on-write layers over the previous ones, so a one-file edit
costs that file, not the workspace. Nothing here scores or layers; that is `query` and
`check`. Nothing here mutates a structure an older index can still read.
"""

from __future__ import annotations

import sys
import threading
import weakref
from bisect import bisect_right
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, compress, count, repeat
from operator import attrgetter, getitem, is_, is_not, lt
from typing import Any

import numpy as np

from memhubd.index import codes
from memhubd.index.bitmaps import BYTE_BITS, OrdinalSpace
from memhubd.index.segment import Segment, build_segment, cut_segment
from memhubd.index.triggers import TriggerPhrases
from memhubd.model.declaration import RestoredDeclarations, RestoredSubset
from memhubd.model.workspace import cyclic_gc_paused, file_runs

# Segment posting tables a bitmap can be asked for.
TERM = "terms"
SUBJECT = "subjects"
SCOPE = "constraint_scopes"
_TABLES = (TERM, SUBJECT, SCOPE)
_FLAGS = ("in_pool", "is_constraint", "high_confidence", "question")

# Memory allowed for cached posting bitmaps, whatever the workspace size: counted in
# bytes as allocated, so a 1M-declaration workspace (133 KB a bitmap as an int) keeps
# about 960 of them and a 100k one 9,600, enough for the vocabulary a query workload
# touches.
CACHE_BYTES = 128 << 20
_ENTRY_OVERHEAD = 100  # the key tuple and the OrderedDict node, roughly

_GONE: Any = object()  # a key removed in a layer
# A delta this small is never folded into a new base. Kept small: each key a delta
# overrides may pin a replaced segment (and its file's declarations) in the base, and
# a map small enough for this floor to matter is cheap to copy.
_FOLD_MIN = 16
_RARE = 64  # a posting key held by at most this many files lists them
_EXTRAS = 8  # a common key's segments added since its codes were folded, at most
# A previous index's cached posting bitmap is spliced on a miss when at most this many
# files lie between the first and the last changed one; else the bitmap is assembled
# from the key's holders or codes. A view made as an update of the whole index changes
# files all over it: splicing read every file's row of the key (its key dict decoded
# and made, in a restored one), 0.5 s of a view's first query at 100k.
_SPLICE_AT_MOST = _RARE
# Edits (serials) allowed beyond the segment count before codes are rebuilt from scratch.
_SPARE_SERIALS = 1024
_NO_SLOTS = np.zeros(0, np.int64)
_BIT = np.array([0x80 >> n for n in range(8)], np.uint8)  # slot & 7 -> its bit in a byte


# Rows that add up to at most this many bytes are read bit by bit as ints: a scope of a
# dozen small files costs microseconds, where the dozen numpy calls of the byte scan
# cost about 60.
_SMALL_ROWS_BYTES = 64


def _small_row_slots(rows: list[bytes], starts: list[int]) -> Any:
    """`_row_slots` of short rows: each row's set bits, highest slot first (callers sort)."""
    out: list[int] = []
    append = out.append
    for row, start in zip(rows, starts, strict=True):
        bits = int.from_bytes(row, "big")
        last = start + 8 * len(row) - 1  # the slot of the row's lowest bit
        while bits:
            low = bits & -bits
            append(last - low.bit_length() + 1)
            bits ^= low
    return np.array(out, np.int64)


class _Layered:
    """A read-only mapping: a shared base dict plus a small delta of changes on top.

    `updated` returns a new mapping and never mutates either dict, so older indexes
    keep reading theirs; the delta is folded into a new base once it holds a 32nd
    of the keys (or `_FOLD_MIN`), which keeps lookups two probes and updates amortised
    O(changes), and bounds what the base still holds of replaced segments to a few
    percent of the files.
    """

    __slots__ = ("base", "delta")

    def __init__(self, base: dict[str, Any], delta: dict[str, Any] | None = None) -> None:
        self.base = base
        self.delta = delta if delta is not None else {}

    def get(self, key: str, default: Any = None) -> Any:
        value = self.delta.get(key, self)
        if value is self:
            return self.base.get(key, default)
        return default if value is _GONE else value

    def getter(self) -> Callable[[str], Any]:
        """`get` with one argument: the base dict's own when there is no delta (a
        `_Layered` never changes), a lookup in C instead of a Python call."""
        if not self.delta and type(self.base) is dict:
            return self.base.get
        return self.get

    def unfold_for(self, lookups: int) -> None:
        """Ready the base for `lookups` lookups: a restored one (`persist._Unfolded`)
        makes its dict now if they are many."""
        base = self.base
        if type(base) is not dict:
            base.unfold_for(lookups)

    def updated(self, changes: dict[str, Any]) -> _Layered:
        if not changes:
            return self
        delta = {**self.delta, **changes}
        if len(delta) <= max(_FOLD_MIN, len(self.base) >> 5):
            return _Layered(self.base, delta)
        source = self.base  # a restored map (`persist._Unfolded`) gives its dict, made now
        base = dict(source if type(source) is dict else source.base)
        for key, value in delta.items():
            if value is _GONE:
                base.pop(key, None)
            else:
                base[key] = value
        return _Layered(base)

    def items(self) -> Iterator[tuple[str, Any]]:
        delta = self.delta
        for key, value in self.base.items():
            if key not in delta:
                yield key, value
        for key, value in delta.items():
            if value is not _GONE:
                yield key, value


class _Directory:
    """key -> slots of the declarations with that key (workspace order), for one of
    the segments' local directories (`local_ids` or `local_names`).

    Stored as key -> the segments holding it, so slots that move when an earlier
    file grows or shrinks need no update: they are computed from segment bases.
    """

    __slots__ = ("_where", "_bases", "_local", "multi")

    def __init__(
        self,
        local: str,
        bases: dict[int, int],
        segments: Sequence[Segment],
        previous: _Directory | None = None,
        removed: Sequence[Segment] = (),
    ) -> None:
        self._local = local
        self._bases = bases
        if previous is None:
            self._where, self.multi = _fresh_directory(local, segments)
            return
        where = previous._where
        multi = set(previous.multi)
        changes: dict[str, Any] = {}
        gone = {id(s) for s in removed}
        where.unfold_for(sum(len(s) for s in chain(removed, segments)))
        for segment in removed:
            for key in getattr(segment, local):
                held = changes.get(key)
                held = where.get(key, ()) if held is None or held is _GONE else held
                kept = tuple(s for s in held if id(s) not in gone)
                changes[key] = kept if kept else _GONE
        for segment in segments:
            for key in getattr(segment, local):
                held = changes.get(key)
                held = where.get(key, ()) if held is None else (() if held is _GONE else held)
                changes[key] = (*held, segment)
        for key, held in changes.items():
            if held is _GONE:
                multi.discard(key)
            elif len(held) > 1 or len(getattr(held[0], local)[key]) > 1:
                multi.add(key)
            else:
                multi.discard(key)
        self._where = where.updated(changes)
        # Keys held by more than one declaration (usually few).
        self.multi = frozenset(multi)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            held = self._where.get(key)
        except TypeError:  # unhashable input matches nothing
            return default
        if held is None:
            return default
        local, bases = self._local, self._bases
        if len(held) == 1:
            segment = held[0]
            base = bases[id(segment)]
            return [base + o for o in getattr(segment, local)[key]]
        out: list[int] = []
        for segment in sorted(held, key=lambda s: bases[id(s)]):
            base = bases[id(segment)]
            out.extend(base + o for o in getattr(segment, local)[key])
        return out

    def __getitem__(self, key: str) -> list[int]:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        try:
            return self._where.get(key) is not None  # type: ignore[arg-type]
        except TypeError:
            return False

    def keys(self) -> Iterator[str]:
        return (key for key, _ in self._where.items())


def _fresh_directory(local: str, segments: Sequence[Segment]) -> tuple[_Layered, frozenset[str]]:
    """A directory over `segments` alone, with dict operations in C for unique keys."""
    where: dict[str, tuple[Segment, ...]] = {}
    multi: set[str] = set()
    for segment in segments:
        mine = getattr(segment, local)
        common = mine.keys() & where.keys()
        held = {key: where[key] for key in common}
        where.update(dict.fromkeys(mine, (segment,)))
        for key, before in held.items():
            where[key] = (*before, segment)
        multi.update(common)
        if len(mine) != len(segment):  # a key held twice within the file
            multi.update(key for key, found in mine.items() if len(found) > 1)
    return _Layered(where), frozenset(multi)


class _Holders:
    """Who holds each key of one posting table. A key held by at most `_RARE` files
    lists those files (`rare`), and its bitmap is copied from their rows; any other key
    keeps the codes of its postings (`memhubd.index.codes`) plus the segments added
    since they were last folded (`common`: key -> (codes, extras)), so its bitmap is
    one scatter whatever the number of files. Counts say whether a key exists at all.

    Codes of segments an edit removed stay until their key is folded and are skipped
    by serial; an update only touches the keys of the changed segments.
    """

    __slots__ = ("counts", "rare", "common")

    def __init__(self, counts: _Layered, rare: _Layered, common: _Layered) -> None:
        self.counts = counts
        self.rare = rare
        self.common = common

    @classmethod
    def fresh(cls, table: str, segments: Sequence[Segment]) -> _Holders:
        """Holders of `segments`, whose serials are their positions.

        Each key is numbered once, in the order first met (one pass in C over every
        file's keys); counts, the files of rare keys and the codes of common ones are
        then array operations over those numbers, not a dict lookup per posting each."""
        held = tuple(segments)
        number: defaultdict[str, int] = defaultdict(count().__next__)
        lookup = number.__getitem__
        numbered = [
            np.fromiter(map(lookup, keys), np.int32, len(keys))
            for keys in (getattr(s, table).keys for s in held)
        ]
        keys = list(number)  # by number
        del number, lookup
        flat = np.concatenate(numbered) if numbered else np.zeros(0, np.int32)
        held_by = np.bincount(flat, minlength=len(keys))
        counts = dict(zip(keys, held_by.tolist(), strict=True))
        few = held_by <= _RARE
        # Rare keys: their files in workspace order (a stable sort by key number).
        owner = np.repeat(np.arange(len(held), dtype=np.int64), [len(n) for n in numbered])
        picked = few[flat]
        rare_keys, rare_owners = flat[picked], owner[picked]
        del owner, picked
        order = np.argsort(rare_keys, kind="stable")
        rare_keys, rare_owners = rare_keys[order], rare_owners[order]
        del order
        starts = np.flatnonzero(np.diff(rare_keys, prepend=-1)).tolist()
        ends = [*starts[1:], len(rare_keys)] if starts else []
        owners = rare_owners.tolist()
        owned = held.__getitem__
        rare = {
            keys[n]: tuple(map(owned, owners[start:end]))
            for n, start, end in zip(rare_keys[starts].tolist(), starts, ends, strict=True)
        }
        del rare_keys, rare_owners, owners
        # Common keys: codes of their postings, numbered by their place among them.
        many = np.flatnonzero(~few)
        many_keys = [keys[n] for n in many.tolist()]
        place = np.full(len(keys), -1, np.int32)
        place[many] = np.arange(len(many), dtype=np.int32)
        found = codes.fresh_codes(
            table, held, range(len(held)), [place[n] for n in numbered], many_keys
        )
        wide = [s for n, s in enumerate(held) if not codes.codable(s, n)]
        common = {
            key: (found[key], tuple(s for s in wide if key in getattr(s, table).index))
            for key in many_keys
        }
        return cls(_Layered(counts), _Layered(rare), _Layered(common))

    def updated(
        self,
        table: str,
        removed: Sequence[Segment],
        added: Sequence[Segment],
        serial_of: _Layered,
        live: Any,
    ) -> _Holders:
        """Holders after `removed` left and `added` came (`serial_of`: the new index's
        serial of each segment; `live`: a bool per serial, set for its segments)."""
        counts: dict[str, Any] = {}
        rare: dict[str, Any] = {}
        common: dict[str, Any] = {}

        def current(layer: dict[str, Any], before: _Layered, key: str) -> Any:
            found = layer.get(key)
            found = before.get(key) if found is None else found
            return None if found is _GONE else found

        gone = {id(s) for s in removed}
        looked_up = sum(len(getattr(s, table).keys) for s in chain(removed, added))
        self.counts.unfold_for(looked_up)
        self.rare.unfold_for(looked_up)
        for segment in removed:
            for key in getattr(segment, table).keys:
                count = current(counts, self.counts, key) - 1
                counts[key] = count if count > 0 else _GONE
                held = current(rare, self.rare, key)
                if held is not None:
                    kept = tuple(x for x in held if id(x) not in gone)
                    rare[key] = kept if kept else _GONE
                    continue
                entry = current(common, self.common, key)
                if entry is not None and any(id(x) in gone for x in entry[1]):
                    common[key] = (entry[0], tuple(x for x in entry[1] if id(x) not in gone))
        for segment in added:
            for key in getattr(segment, table).keys:
                before = current(counts, self.counts, key) or 0
                counts[key] = before + 1
                entry = current(common, self.common, key)
                if entry is not None:
                    common[key] = (entry[0], (*entry[1], segment))
                    continue
                held = current(rare, self.rare, key) or ()
                if len(held) < _RARE:
                    rare[key] = (*held, segment)
                else:  # one file too many to list: from now on it keeps codes
                    rare[key] = _GONE
                    common[key] = (codes.EMPTY, (*held, segment))
        for key, entry in common.items():
            if len(entry[1]) > _EXTRAS:
                common[key] = _fold(table, key, entry, serial_of, live)
        for key, count in counts.items():
            if count is _GONE:
                rare[key] = common[key] = _GONE
        return _Holders(
            self.counts.updated(counts), self.rare.updated(rare), self.common.updated(common)
        )


def _fold(
    table: str, key: str, entry: tuple[Any, tuple[Segment, ...]], serial_of: _Layered, live: Any
) -> tuple[Any, tuple[Segment, ...]]:
    """A common key's codes with its extra segments' postings folded in and those of
    removed segments dropped (files too large for codes stay extras)."""
    found, extras = entry
    parts = [codes.live_codes(found, live)]
    wide: list[Segment] = []
    for segment in extras:
        serial = serial_of.get(id(segment))
        if codes.codable(segment, serial):
            postings = getattr(segment, table)
            parts.append(codes.row_codes(postings.row(postings.index[key]), serial))
        else:
            wide.append(segment)
    return np.concatenate(parts), tuple(wide)


class _BySlot(Sequence[Any]):
    """A per-slot view of one segment attribute (None between segments), computed on
    access so that composing an index never copies per-declaration lists."""

    __slots__ = ("_segments", "_bases", "_attribute", "_size", "_array")

    def __init__(
        self, segments: tuple[Segment, ...], bases: tuple[int, ...], attribute: str, size: int
    ) -> None:
        self._segments = segments
        self._bases = bases
        self._attribute = attribute
        self._size = size
        self._array: Any = None  # `bases` as an array, made on the first `take`

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, slot: Any) -> Any:
        if isinstance(slot, slice):
            return [self[i] for i in range(*slot.indices(self._size))]
        if slot < 0:
            slot += self._size
        if not 0 <= slot < self._size:
            raise IndexError(slot)
        number = bisect_right(self._bases, slot) - 1
        values = getattr(self._segments[number], self._attribute)
        local = slot - self._bases[number]
        return values[local] if local < len(values) else None

    def take(self, slots: Iterable[int]) -> list[Any]:
        """The values at `slots` (each holding a declaration; an int array or any
        iterable of ints), in the order given."""
        wanted = slots if isinstance(slots, np.ndarray) else np.fromiter(slots, np.int64)
        if self._array is None:
            self._array = np.array(self._bases, np.int64)
        numbers = np.searchsorted(self._array, wanted, side="right") - 1
        local = (wanted - self._array[numbers]).tolist()
        segments = map(self._segments.__getitem__, numbers.tolist())
        return list(map(getitem, map(getattr, segments, repeat(self._attribute)), local))

    def __iter__(self) -> Iterator[Any]:
        at = 0
        for base, segment in zip(self._bases, self._segments, strict=True):
            if base > at:
                yield from (None,) * (base - at)
            values = getattr(segment, self._attribute)
            yield from values
            at = base + len(values)
        if self._size > at:
            yield from (None,) * (self._size - at)


class _Splice:
    """How the previous index's segments map onto the new ones: an unchanged head and
    tail (the same segment objects) around a changed middle. Bitmaps over the new
    slots are the old bitmap's head and tail bits around the middle segments' rows."""

    def __init__(self, old: WorkspaceIndex | None, new: Sequence[Segment]) -> None:
        segments = old.segments if old is not None else ()
        limit = min(len(segments), len(new))
        # Found in C: a one-file edit compares 20,000 segments at 1M declarations.
        head = next(compress(count(), map(is_not, segments, new)), limit)
        tail = next(compress(count(), map(is_not, reversed(segments), reversed(new))), limit - head)
        tail = min(tail, limit - head)
        self.head, self.tail = head, tail
        self.old_nbytes = old.space.nbytes if old is not None else 0
        bases = old.bases if old is not None else ()
        self.head_bytes = bases[head] >> 3 if head < len(bases) else self.old_nbytes
        cut = len(segments) - tail
        self.tail_bytes = self.old_nbytes - (
            bases[cut] >> 3 if cut < len(bases) else self.old_nbytes
        )
        self.old_middle = tuple(segments[head:cut])
        self.middle = tuple(new[head : len(new) - tail])

    def apply(self, old_bits: int, row_of: Any) -> int:
        """The bitmap over the new slots: `old_bits` with the middle replaced by the
        middle segments' rows (`row_of`). Shifts and masks of the old int: converting
        the whole bitmap to bytes and back cost ~0.5 ms at 1M declarations."""
        middle = b"".join([row_of(s) for s in self.middle])
        if self.head_bytes == 0 and self.tail_bytes == 0:
            return int.from_bytes(middle, "big")
        tail_bits = 8 * self.tail_bytes
        head = old_bits >> (8 * (self.old_nbytes - self.head_bytes))
        bits = head << (8 * len(middle) + tail_bits) if head else 0
        if middle:
            bits |= int.from_bytes(middle, "big") << tail_bits
        if tail_bits:
            bits |= old_bits & ((1 << tail_bits) - 1)
        return bits


class WorkspaceIndex:
    """Segments in workspace order plus the facts that need the whole workspace.

    Declarations are addressed by slot: segment `n` owns slots `bases[n] + local`,
    each base a multiple of 8 so segment bitmaps copy in whole bytes; the few slots
    between segments hold no declaration. Slot order is workspace order.

    `pool` is the query pool (active, searchable, not a symbol) and `constraints` the
    active constraints, both without superseded declarations (by id or bare name,
    whatever the superseder's status). Posting bitmaps cover both; callers cut them to
    the one they mean. `previous`: an index over mostly the same segment objects to
    update instead of composing from nothing (the answers are the same either way).
    """

    def __init__(
        self,
        segments: Sequence[Segment],
        superseded_elsewhere: Iterable[str] = (),
        *,
        previous: WorkspaceIndex | None = None,
    ) -> None:
        self.segments = tuple(segments)
        splice = _Splice(previous, self.segments)
        # Layout spliced as arrays: a one-file edit costs its segments and a few passes
        # in C, not a Python step for each of the 20,000 files at 1M declarations.
        bases = _layout(splice, previous, self.segments)
        self.bases = tuple(bases[:-1].tolist())
        size = int(bases[-1])
        self.space = OrdinalSpace(size)
        self._lazy: dict[str, Any] = {"base_array": bases[:-1]}
        self._lazy_lock = threading.RLock()  # a lazy part may need another (when_any: superseded)
        if previous is not None:
            self.count = (
                previous.count
                - sum(len(s.ids) for s in splice.old_middle)
                + sum(len(s.ids) for s in splice.middle)
            )
        else:
            # From each segment's ids (a tuple): the length of a restored file's
            # declarations takes two Python calls.
            self.count = sum(len(s.ids) for s in self.segments)
        self.declarations: _BySlot = _BySlot(self.segments, self.bases, "declarations", size)
        self.ids_of: _BySlot = _BySlot(self.segments, self.bases, "ids", size)
        self.subjects: Sequence[str | None] = _BySlot(
            self.segments, self.bases, "subjects_of", size
        )
        self.scopes: Sequence[str | None] = _BySlot(self.segments, self.bases, "scopes_of", size)
        self._serials, self._serial_of, self._next_serial = _serials(
            splice, previous, self.segments
        )
        renumbered = previous is None or self._next_serial > 2 * len(self.segments) + _SPARE_SERIALS
        if renumbered:
            # Serials renumbered from 0, which drops every code of a removed file.
            self._serials = np.arange(len(self.segments), dtype=np.int64)
            self._serial_of = _Layered({id(s): n for n, s in enumerate(self.segments)})
            self._next_serial = len(self.segments)
        self._lazy["slot_of_serial"] = slot_of_serial = self._slots_by_serial()
        self._base_of = _BaseOf(self._serial_of, slot_of_serial)
        if previous is not None:
            kept = {id(s) for s in splice.middle}
            removed = [s for s in splice.old_middle if id(s) not in kept]
            moved = {id(s) for s in splice.old_middle}
            added = [s for s in splice.middle if id(s) not in moved]
            old_raw, old_kinds = previous._raw, previous._raw_kinds
            old_ids, old_names = previous.ids, previous._names
            targets = previous._targets
        else:
            removed, added = [], list(self.segments)
            old_raw, old_kinds = dict.fromkeys((*_FLAGS, "superseded", "global"), 0), {}
            old_ids = old_names = None
            targets = _Layered({})
        self.ids = _Directory("local_ids", self._base_of, added, old_ids, removed)
        self._names = _Directory("local_names", self._base_of, added, old_names, removed)
        # Raw flag bitmaps (before supersession), spliced from the previous index's.
        self._raw = {
            flag: splice.apply(old_raw[flag], lambda s, f=flag: s.flag_rows[f]) for flag in _FLAGS
        }
        kinds = set(old_kinds).union(*(s.kind_rows for s in splice.middle))
        self._raw_kinds = {
            kind: splice.apply(
                old_kinds.get(kind, 0), lambda s, k=kind: s.kind_rows.get(k) or bytes(s.nbytes)
            )
            for kind in kinds
        }
        self._raw_kinds = {kind: bits for kind, bits in self._raw_kinds.items() if bits}
        self._targets, flipped = _count_targets(targets, removed, added)
        self.superseded_elsewhere = frozenset(superseded_elsewhere)
        raw = self._raw
        elsewhere_changed = (
            previous is not None and previous.superseded_elsewhere != self.superseded_elsewhere
        )
        raw["superseded"] = self._superseded(
            splice, old_raw["superseded"], flipped, elsewhere_changed
        )
        raw["global"] = splice.apply(old_raw["global"], _global_row)
        self._derive_bitmaps()
        if renumbered:
            self._holders = {t: _Holders.fresh(t, self.segments) for t in _TABLES}
        else:
            live = np.zeros(self._next_serial, np.bool_)
            live[self._serials] = True
            self._holders = {
                t: previous._holders[t].updated(t, removed, added, self._serial_of, live)
                for t in _TABLES
            }
        self._cache: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._cache_bytes = 0
        self._cache_budget = CACHE_BYTES
        self._lock = threading.Lock()
        # The previous index's posting bitmaps, spliced on a miss instead of assembled
        # from every segment, and the consumers' structures it can carry over
        # (`derived`): only those are kept, not that index.
        self._inherited = (
            (
                previous._cache if len(splice.middle) <= _SPLICE_AT_MOST else {},
                splice,
                _carried(previous._lazy),
            )
            if previous is not None
            else None
        )
        # Per-index caches of downstream engines (e.g. compiled rules), dropped with it.
        self.memo: dict[str, dict[Any, Any]] = {}

    def _derive_bitmaps(self) -> None:
        """The bitmaps read from the raw rows, the kinds and the ids: built, patched
        and restored indexes (index/persist.py) derive them alike."""
        raw = self._raw
        live = ~raw["superseded"]
        self.pool = raw["in_pool"] & live
        self.constraints = raw["is_constraint"] & live
        self.high_confidence = raw["high_confidence"] & self.pool
        self.questions = raw["question"] & self.pool
        self.pool_kinds = {k: b & self.pool for k, b in self._raw_kinds.items() if b & self.pool}
        self.shared_ids = self.pool & self.space.bitmap(
            o for key in self.ids.multi for o in self.ids[key]
        )
        self.global_constraints = raw["global"] & self.constraints

    def _superseded(
        self, splice: _Splice, before: int, flipped: set[str], elsewhere_changed: bool
    ) -> int:
        """Bitmap of the declarations whose id or bare name some declaration supersedes
        (one of this index's, or from elsewhere: `superseded_elsewhere`).

        Spliced for changed segments; in unchanged ones only the declarations under a
        target that appeared or disappeared can change (`flipped`), unless the targets
        from elsewhere are not the previous index's (`elsewhere_changed`): a role-limited
        view's next snapshot then costs its edited files here too (it rebuilt this bitmap
        from every target, 115 ms at 1M declarations).
        """
        if elsewhere_changed or splice.head_bytes == splice.tail_bytes == 0:
            return self.space.bitmap(
                o
                for target in self.superseded_elsewhere.union(k for k, _ in self._targets.items())
                for o in (*self.ids.get(target, ()), *self._names.get(target, ()))
            )
        # By the segments' ids and names: no declaration is read (or made) for it.
        hit = self._is_target
        bits = splice.apply(
            before,
            lambda s: _row_of(
                s.nbytes, [o for o, key in enumerate(zip(s.ids, s.names, strict=True)) if hit(*key)]
            ),
        )
        top = self.space.width - 1
        names = _BySlot(self.segments, self.bases, "names", self.space.size) if flipped else ()
        for target in flipped:
            for o in (*self.ids.get(target, ()), *self._names.get(target, ())):
                if hit(self.ids_of[o], names[o]):
                    bits |= 1 << (top - o)
                else:
                    bits &= ~(1 << (top - o))
        return bits

    def _is_target(self, ident: str, name: str) -> bool:
        """Whether a declaration of this id and bare name is superseded."""
        targets = self._targets
        if targets.get(ident) is not None or targets.get(name) is not None:
            return True
        elsewhere = self.superseded_elsewhere
        return bool(elsewhere) and (ident in elsewhere or name in elsewhere)

    @property
    def superseded(self) -> set[int]:
        """Slots of superseded declarations (see `_superseded`)."""
        return self._once(  # type: ignore[no-any-return]
            "superseded", lambda: set(self.space.members(self._raw["superseded"]))
        )

    def derived(self, name: str, build: Any, carry: Any = None) -> Any:
        """`build()`, made once per index on first use and kept with it: for consumers'
        structures over this index's slots (their names must not clash).

        With `carry`, an index composed from a previous one that had made it first asks
        `carry(old, slots)` (`slots`: a `SlotSplice`) and builds only when that gives
        None, so a one-file edit does not cost a rebuild over the whole workspace.
        """
        if carry is None:
            return self._once(name, build)
        _CARRIED.add(name)
        inherited = self._inherited
        old = inherited[2].get(name) if inherited is not None else None
        if old is None:
            return self._once(name, build)
        splice = inherited[1]

        def carried() -> Any:
            inherited[2].pop(name, None)  # this index's own copy: the old one may go
            head, tail = splice.head_bytes * 8, splice.tail_bytes * 8
            where = SlotSplice(
                head, tail, splice.old_nbytes * 8, self.space.width, splice.old_middle
            )
            found = carry(old, where)
            return build() if found is None else found

        return self._once(name, carried)

    def _once(self, name: str, build: Any) -> Any:
        found = self._lazy.get(name)
        if found is None:
            with self._lazy_lock, cyclic_gc_paused():
                found = self._lazy.get(name)
                if found is None:
                    found = self._lazy[name] = build()
        return found

    @property
    def when_any(self) -> dict[str, list[int]]:
        """`when_any` phrase -> live constraints it triggers (kept as lists: few each).

        Built on first use (checks need it, queries do not), then kept with the index.
        """
        return self._once("when_any", self._triggers)  # type: ignore[no-any-return]

    def _triggers(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        superseded = self.superseded
        for base, segment in zip(self.bases, self.segments, strict=True):
            for phrase, found in segment.when_any.items():
                kept = [base + x for x in found if base + x not in superseded]
                if kept:
                    out.setdefault(phrase, []).extend(kept)
        return out

    @property
    def trigger_phrases(self) -> TriggerPhrases:
        """`when_any` (phrase -> live constraints), searchable by the words of a text."""
        return self._once("trigger_phrases", self._trigger_phrases)  # type: ignore[no-any-return]

    def _trigger_phrases(self) -> TriggerPhrases:
        return TriggerPhrases(self.when_any)

    @property
    def aliases(self) -> _AliasMatcher:
        return self._once("aliases", self._alias_matcher)  # type: ignore[no-any-return]

    def _alias_matcher(self) -> _AliasMatcher:
        amap: dict[str, list[str]] = {}
        for segment in self.segments:
            for alias, name in segment.aliases:
                amap.setdefault(alias, []).append(name)
        return _AliasMatcher(amap)

    def warm(self) -> None:
        """Build what is otherwise built on first use, e.g. off the request path."""
        _ = self.trigger_phrases, self.aliases

    def bits(self, table: str, key: str) -> int:
        """Bitmap of the indexed declarations under `key` in one posting table (cached).

        Not yet cut to the pool or the constraints (see `constraint_bits`). A key held
        by a few files is assembled from them on each call and never cached: its copy
        costs less than the room it would take from the common keys' bitmaps.
        """
        held = self._holders[table].rare.get(key)
        if held is not None:
            return self._from_holders(table, key, held)
        cache_key = (table, key)
        with self._lock:
            cached = self._cache.get(cache_key)
            if cached is not None:
                self._cache.move_to_end(cache_key)
                return cached
        old = self._inherited[0].get(cache_key) if self._inherited is not None else None
        if old is not None:
            bits = self._inherited[1].apply(old, lambda s: _table_row(s, table, key))  # type: ignore[index]
        else:
            bits = self._assemble(table, key)
        if not bits:
            # A key no declaration holds (a query's word found nowhere) costs a lookup to
            # answer again: kept, callers' distinct words would fill the cache.
            return bits
        with self._lock:
            if cache_key not in self._cache:
                self._cache[cache_key] = bits
                self._cache_bytes += _cost(key, bits)
                while self._cache_bytes > self._cache_budget and len(self._cache) > 1:
                    (_table, gone), gone_bits = self._cache.popitem(last=False)
                    self._cache_bytes -= _cost(gone, gone_bits)
        return bits

    def _assemble(self, table: str, key: str) -> int:
        holders = self._holders[table]
        held = holders.rare.get(key)
        if held is not None:
            return self._from_holders(table, key, held)
        if holders.counts.get(key) is None:
            return 0
        entry = holders.common.get(key)
        if entry is None:
            return 0
        found, extras = entry
        data = codes.bitmap_bytes(found, self._slot_of_serial(), self.space.nbytes)
        base_of = self._base_of
        for segment in extras:
            postings = getattr(segment, table)
            width = postings.width
            row = postings.index[key]
            start = base_of[id(segment)] >> 3
            data[start : start + width] = np.frombuffer(postings.row(row), np.uint8)
        return int.from_bytes(data.tobytes(), "big")

    def _slot_of_serial(self) -> Any:
        """Each serial's first slot in this index, -1 for serials of no segment here."""
        return self._once("slot_of_serial", self._slots_by_serial)

    def _slots_by_serial(self) -> Any:
        slots = np.full(self._next_serial, -1, np.int64)
        slots[self._serials] = self._base_array()
        return slots

    def _base_array(self) -> Any:
        """`bases` as an int64 array (kept from composing; a restored index makes it)."""
        return self._once("base_array", lambda: np.array(self.bases, np.int64))

    def _from_holders(self, table: str, key: str, held: Sequence[Segment]) -> int:
        """The bitmap of a key held by `held` alone, converted from the bytes between its
        first and last holder only: the zero bytes after them are one shift, and a key of
        one file at 1M declarations costs microseconds instead of a 125 KB conversion."""
        serial_of, slots = self._base_of.readers()
        nbytes = self.space.nbytes
        first, last = nbytes, 0
        placed = []
        for segment in held:
            postings = getattr(segment, table)
            width = postings.width
            at = postings.index[key] * width
            start = slots[serial_of(id(segment))] >> 3
            if start < first:
                first = start
            if start + width > last:
                last = start + width
            placed.append((start, postings.rows[at : at + width]))
        if not placed:
            return 0
        buffer = bytearray(last - first)
        for start, row in placed:
            buffer[start - first : start - first + len(row)] = row
        return int.from_bytes(buffer, "big") << (8 * (nbytes - last))

    def constraint_bits(self, table: str, key: str) -> int:
        return self.bits(table, key) & self.constraints

    def constraint_slots(self, table: str, key: str) -> Any:
        """`constraint_bits(table, key)` as ascending slots (an int64 array), read from
        the holders' rows or the key's codes without a workspace-wide bitmap: a key of a
        few files costs those files' rows at any workspace size."""
        holders = self._holders[table]
        held = holders.rare.get(key)
        if held is not None:
            slots = self._row_slots(table, key, held)
        else:
            entry = holders.common.get(key) if holders.counts.get(key) is not None else None
            if entry is None:
                return _NO_SLOTS
            found, extras = entry
            slots = codes.slots_of(found, self._slot_of_serial())
            if extras:
                slots = np.concatenate((slots, self._row_slots(table, key, extras)))
        slots = self.only_constraints(slots)
        slots.sort()
        return slots

    def only_constraints(self, slots: Any) -> Any:
        """The `slots` (an int64 array) that hold live constraints, in the order given."""
        flags = self._once("constraint_bytes", self._constraint_bytes)
        return slots[(flags[slots >> 3] & _BIT[slots & 7]) != 0]

    def _constraint_bytes(self) -> Any:
        return np.frombuffer(self.constraints.to_bytes(self.space.nbytes, "big"), np.uint8)

    def _row_slots(self, table: str, key: str, held: Sequence[Segment]) -> Any:
        """Slots of the postings of `key` in the rows of `held`, one byte scan for all."""
        serial_of, slots = self._base_of.readers()
        rows: list[bytes] = []
        starts: list[int] = []
        for segment in held:
            postings = getattr(segment, table)
            width = postings.width
            at = postings.index[key] * width
            rows.append(postings.rows[at : at + width])
            starts.append(slots[serial_of(id(segment))])
        if sum(map(len, rows)) <= _SMALL_ROWS_BYTES:
            return _small_row_slots(rows, starts)
        lengths = np.fromiter(map(len, rows), np.int64, len(rows))
        offsets = np.cumsum(lengths) - lengths
        # Slot of bit b of byte j of the joined rows: its row's base + (j - offset) * 8 + b.
        first = np.repeat(np.array(starts, np.int64) - offsets * 8, lengths)
        data = np.frombuffer(b"".join(rows), np.uint8)
        at = np.flatnonzero(data)
        byte, bit = np.nonzero(BYTE_BITS[data[at]])
        at = at[byte]
        return first[at] + at * 8 + bit

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

    def keys_at(self, slot: int) -> tuple[Any, Any, Any]:
        """`(ids_of[slot], scopes[slot], subjects[slot])`, its segment found once."""
        number = bisect_right(self.bases, slot) - 1
        segment = self.segments[number]
        local = slot - self.bases[number]
        ids = segment.ids
        if not 0 <= local < len(ids):
            return None, None, None
        return ids[local], segment.scopes_of[local], segment.subjects_of[local]

    def match_aliases(self, lowered_query: str) -> list[tuple[str, list[str]]]:
        """(alias, symbols) of every alias that is a substring of the query, map order."""
        return self.aliases.match(lowered_query)


def _serials(
    splice: _Splice, previous: WorkspaceIndex | None, segments: tuple[Segment, ...]
) -> tuple[Any, _Layered, int]:
    """Serials of `segments` (an array in segment order), segment id -> serial, and the
    next serial: kept segments keep theirs (head and tail through the splice), the
    others get new ones. Empty when there is no previous index (numbered fresh)."""
    if previous is None:
        return np.zeros(0, np.int64), _Layered({}), 0
    of = previous._serial_of
    next_serial = previous._next_serial
    changes: dict[int, Any] = {id(s): _GONE for s in splice.old_middle}
    middle = []
    for segment in splice.middle:
        serial = of.get(id(segment))
        if serial is None:
            serial, next_serial = next_serial, next_serial + 1
        changes[id(segment)] = serial
        middle.append(serial)
    old = previous._serials
    array = np.concatenate(
        (old[: splice.head], np.array(middle, np.int64), old[len(old) - splice.tail :])
    )
    return array, of.updated(changes), next_serial


def _layout(splice: _Splice, previous: WorkspaceIndex | None, segments: Sequence[Segment]) -> Any:
    """Each segment's first slot and, last, the slot count (int64): the previous
    layout's widths around the middle segments' own, summed in C."""
    if previous is None:
        widths = np.fromiter((s.nbytes * 8 for s in segments), np.int64, len(segments))
    else:
        old = previous._base_array()
        old_widths = np.diff(old, append=np.int64(previous.space.width))
        middle = np.fromiter((s.nbytes * 8 for s in splice.middle), np.int64, len(splice.middle))
        widths = np.concatenate(
            (old_widths[: splice.head], middle, old_widths[len(old_widths) - splice.tail :])
        )
    bases = np.zeros(len(widths) + 1, np.int64)
    np.cumsum(widths, out=bases[1:])
    return bases


class _BaseOf:
    """id(segment) -> its first slot, read through the segments' serials: made in O(1)
    per index instead of a dict over every segment (the slots become a list, one int
    per file, on the first read). Holds no index (no cycle). A restored index has one
    too, so its directories and rare keys read slots as a composed one's do."""

    __slots__ = ("_serial_of", "_slots", "_listed")

    def __init__(self, serial_of: _Layered, slots: Any) -> None:
        self._serial_of = serial_of
        self._slots = slots
        self._listed: list[int] | None = None  # `slots` as a list, made on first use

    def _list(self) -> list[int]:
        listed = self._listed
        if listed is None:
            listed = self._listed = self._slots.tolist()
        return listed

    def readers(self) -> tuple[Callable[[int], Any], list[int]]:
        """`(serial_of, slots)`: the first slot of a segment of this index is
        `slots[serial_of(id(segment))]`, without a call of `self[...]` each (a rare
        key's holders are read so, a few dozen a query)."""
        return self._serial_of.getter(), self._list()

    def get(self, key: int, default: Any = None) -> Any:
        serial = self._serial_of.get(key)
        if serial is None:
            return default
        slot = (self._listed or self._list())[serial]
        return default if slot < 0 else slot

    def __getitem__(self, key: int) -> int:
        serial = self._serial_of.get(key)
        if serial is not None:
            slot = (self._listed or self._list())[serial]
            if slot >= 0:
                return slot  # type: ignore[no-any-return]
        raise KeyError(key)


@dataclass(frozen=True, slots=True)
class SlotSplice:
    """How an index's slots continue the previous index's: its first `head` slots are
    the previous first `head`, its last `tail` the previous last `tail` (same
    declarations); the slots between belong to changed files."""

    head: int
    tail: int
    old_size: int
    size: int
    old_between: tuple[Segment, ...]  # the previous index's segments between head and tail

    def list(self, old: Sequence[Any], fill: Any = None) -> list[Any]:
        """A per-slot list carried over: `fill` for the slots between."""
        kept_tail = list(old[self.old_size - self.tail :]) if self.tail else []
        return [*old[: self.head], *repeat(fill, self.size - self.head - self.tail), *kept_tail]

    def array(self, old: Any, fill: Any) -> Any:
        """A per-slot numpy array carried over: `fill` for the slots between."""
        out = np.full(self.size, fill, old.dtype)
        out[: self.head] = old[: self.head]
        if self.tail:
            out[self.size - self.tail :] = old[self.old_size - self.tail :]
        return out

    def old_ids(self, old: Sequence[Any]) -> Iterator[tuple[str, Any]]:
        """(id, value in `old`) of each declaration the previous index held between
        head and tail: what changed files held before."""
        at = self.head
        for segment in self.old_between:
            yield from zip(segment.ids, old[at : at + len(segment)], strict=True)
            at += segment.nbytes * 8


# Names of derived structures an index hands to the next one (see `derived`).
_CARRIED: set[str] = set()


def _carried(lazy: dict[str, Any]) -> dict[str, Any]:
    return {name: lazy[name] for name in tuple(_CARRIED) if name in lazy}


def _cost(key: str, bits: int) -> int:
    """Bytes a cached bitmap holds: the int as allocated (30 bits in 4 bytes), its key
    (a caller's word may be long) and its entry."""
    return sys.getsizeof(bits) + sys.getsizeof(key) + _ENTRY_OVERHEAD


def _table_row(segment: Segment, table: str, key: str) -> bytes:
    postings = getattr(segment, table)
    row = postings.index.get(key)
    return bytes(segment.nbytes) if row is None else postings.row(row)  # type: ignore[no-any-return]


def _global_row(segment: Segment) -> bytes:
    return _table_row(segment, SCOPE, "global")


def _row_of(nbytes: int, ordinals: Iterable[int]) -> bytes:
    buffer = bytearray(nbytes)
    for o in ordinals:
        buffer[o >> 3] |= 0x80 >> (o & 7)
    return bytes(buffer)


def _count_targets(
    targets: _Layered, removed: Sequence[Segment], added: Sequence[Segment]
) -> tuple[_Layered, set[str]]:
    """`supersedes` target -> how many segments name it, updated for changed segments;
    and the targets that appeared or disappeared."""
    changes: dict[str, Any] = {}
    for sign, segments in ((-1, removed), (1, added)):
        for segment in segments:
            for target in set(segment.supersedes):
                now = changes.get(target)
                count = targets.get(target, 0) if now is None else (0 if now is _GONE else now)
                count += sign
                changes[target] = count if count > 0 else _GONE
    flipped = {t for t, now in changes.items() if (now is _GONE) != (targets.get(t) is None)}
    return targets.updated(changes), flipped


class _AliasMatcher:
    """Finds aliases occurring in a query: scan them all or look up query substrings.

    Both give the same answer; per query the cheaper one is chosen, so thousands of
    aliases do not cost a scan of each when the query is short. A lookup reads an alias
    of `HEAD` characters or more through its first `HEAD` (one probe a query position,
    then a comparison with the few aliases sharing that head) and a shorter one by the
    query's substrings of its length.
    """

    HEAD = 4

    def __init__(self, aliases: dict[str, list[str]]) -> None:
        self.items = list(aliases.items())
        head = self.HEAD
        self.heads: dict[str, list[tuple[str, int]]] = {}
        self.short: dict[str, int] = {}
        for n, (alias, _) in enumerate(self.items):
            if len(alias) >= head:
                self.heads.setdefault(alias[:head], []).append((alias, n))
            else:
                self.short[alias] = n
        self.short_lengths = sorted({len(alias) for alias in self.short})

    def match(self, lowered: str) -> list[tuple[str, list[str]]]:
        size = len(lowered)
        lookups = max(0, size - self.HEAD + 1) + sum(
            size - n + 1 if n else 1 for n in self.short_lengths if n <= size
        )
        return self.scan(lowered) if lookups >= len(self.items) else self.lookup(lowered)

    def scan(self, lowered: str) -> list[tuple[str, list[str]]]:
        return [(alias, symbols) for alias, symbols in self.items if alias in lowered]

    def lookup(self, lowered: str) -> list[tuple[str, list[str]]]:
        size = len(lowered)
        head = self.HEAD
        found: set[int] = set()
        heads = self.heads.get
        for start in range(size - head + 1):
            sharing = heads(lowered[start : start + head])
            if sharing is not None:
                found.update(n for alias, n in sharing if lowered.startswith(alias, start))
        short = self.short.get
        for n in self.short_lengths:
            if n > size:
                break
            for start in range(size - n + 1 if n else 1):
                hit = short(lowered[start : start + n])
                if hit is not None:
                    found.add(hit)
        return [self.items[n] for n in sorted(found)]


def build_index(ws: Any) -> WorkspaceIndex:
    """Index a workspace: one segment per run of consecutive declarations of a file."""
    with cyclic_gc_paused():
        segments = [build_segment(run) for run in _file_runs(ws.declarations)]
        elsewhere = getattr(ws, "superseded_elsewhere", ())
        return WorkspaceIndex(segments, elsewhere)


def compose_index(
    ws: Any, previous: WorkspaceIndex | None, whole: WorkspaceIndex | None
) -> WorkspaceIndex:
    """The index of `ws`, a workspace restricted to what a role set may read, composed
    from segments it already has where it can.

    `previous` is that role set's index of the previous snapshot, `whole` the whole
    workspace's index. A file run made of the same declaration objects as a segment of
    theirs keeps that segment; one made of some of the declarations of a segment of
    `whole` is cut from it (`cut_segment`) instead of read again; the others are built.
    The index is updated from `previous` instead of composed from nothing, and a first
    view (no `previous`) that keeps most of `whole`'s segments is updated from `whole`.
    The answers are the same either way, as for a reload: an edit costs a role set's
    view the edited files, and a first view the files it cuts.
    """
    same: dict[int, Segment] = {}  # a segment by its run: a run kept whole is the very one
    reusable: dict[int, list[Segment]] = {}
    by_file: dict[str, list[Segment]] = {}
    for index in (previous, whole):
        for segment in index.segments if index is not None else ():
            if not segment.declarations:
                continue
            same.setdefault(id(segment.declarations), segment)
            # A restored run, or part of one, is only ever reused as the very object.
            if not isinstance(segment.declarations, (RestoredDeclarations, RestoredSubset)):
                reusable.setdefault(id(segment.declarations[0]), []).append(segment)
            if index is whole:
                by_file.setdefault(_file_of(segment.declarations, 0), []).append(segment)
    elsewhere = frozenset(getattr(ws, "superseded_elsewhere", ()))
    with cyclic_gc_paused():
        segments = []
        for run in _joined(file_runs(ws.declarations)):
            kept = same.get(id(run))
            if kept is not None and kept.declarations is run:
                segments.append(kept)
                continue
            if not isinstance(run, (RestoredDeclarations, RestoredSubset)):
                kept = _same_run(reusable.get(id(run[0]), ()), run)
            if kept is None:
                kept = _cut_from(by_file.get(_file_of(run, 0), ()), run)
            segments.append(kept if kept is not None else build_segment(run))
        if previous is None and whole is not None and _mostly_kept(segments, whole):
            previous = whole  # its files cut are then all this index's composing costs
        return WorkspaceIndex(segments, elsewhere, previous=previous)


def _mostly_kept(segments: Sequence[Segment], whole: WorkspaceIndex) -> bool:
    """Whether at least 3/4 of `segments` are `whole`'s very segments: a view reading
    most files whole is then made as an edit of the whole index (the splice of its cut
    files), not composed from every segment. Past that, composing is the cheaper."""
    theirs = set(map(id, whole.segments))
    kept = sum(1 for segment in segments if id(segment) in theirs)
    return kept * 4 >= len(segments) * 3


def _cut_from(candidates: Sequence[Segment], run: Sequence[Any]) -> Segment | None:
    """`run` cut from the first of `candidates` that holds all its declarations in order."""
    if isinstance(run, RestoredSubset):  # says which it keeps: none is made to find out
        for segment in candidates:
            if getattr(segment.declarations, "file", None) is run.file:
                return cut_segment(segment, run.ordinals, run)
    for segment in candidates:
        position = {id(d): o for o, d in enumerate(segment.declarations)}
        kept = [position.get(id(d), -1) for d in run]
        if min(kept) >= 0 and all(map(lt, kept, kept[1:])):
            # The run itself as the segment's declarations: the index is then seen to be
            # the workspace's by one identity test a run (`_same_declarations`).
            return cut_segment(segment, kept, run if isinstance(run, tuple) else None)
    return None


def _joined(runs: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    """`runs` with neighbours of the same file joined, as `build_index` segments them
    (a view's runs of one file meet when the declarations between them are hidden)."""
    out: list[Sequence[Any]] = []
    for run in runs:
        if out and _file_of(out[-1], -1) == _file_of(run, 0):
            out[-1] = (*out[-1], *run)
        else:
            out.append(run)
    return out


def segment_runs(ws: Any) -> list[Sequence[Any]]:
    """The runs `compose_index` makes one segment of each, in order."""
    return _joined(file_runs(ws.declarations))


def run_path(run: Sequence[Any]) -> str:
    """The file of a run of declarations of one file (a segment's), read without making
    any where the run is restored."""
    return _file_of(run, 0)


def _file_of(run: Sequence[Any], at: int) -> str:
    """The file of `run[at]`, read without making it where the run is restored."""
    restored = getattr(run, "file", None)
    return restored.path if restored is not None else run[at].file  # type: ignore[no-any-return]


def _same_run(candidates: Sequence[Segment], run: Sequence[Any]) -> Segment | None:
    for segment in candidates:
        mine = segment.declarations
        if len(mine) == len(run) and all(map(is_, mine, run)):
            return segment
    return None


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
    if not _same_declarations(index, ws.declarations):
        return False
    with _LOCK:
        _remember(ws, index)
    return True


_DECLARATIONS = attrgetter("declarations")


def _same_declarations(index: WorkspaceIndex, declarations: Sequence[Any]) -> bool:
    """The index's declarations are `declarations`: same count, and each segment's
    first and last declaration are the very objects at their positions (segments are
    built from runs of the workspace list, so that pins every run in place)."""
    if index.count != len(declarations):
        return False
    runs = getattr(declarations, "runs", None)  # memhubd.model.workspace.Declarations
    # A snapshot's declarations are its segments' own runs: one identity test each, in C
    # (indexing the runs costs a bisect per segment, 20,000 at 1M declarations).
    if (
        runs is not None
        and len(runs) == len(index.segments)
        and all(map(is_, runs, map(_DECLARATIONS, index.segments)))
    ):
        return True
    at = 0
    for segment in index.segments:
        mine = segment.declarations
        if mine and (
            mine[0] is not declarations[at] or mine[-1] is not declarations[at + len(mine) - 1]
        ):
            return False
        at += len(mine)
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
        build = _BUILDERS.pop(id(ws), None)
        underway = _UNDERWAY.get(id(ws))
        if build is None and underway is None:
            index = build_index(ws)
            _remember(ws, index)
            return index
        if build is not None:
            underway = _UNDERWAY[id(ws)] = threading.Event()
    if build is None:  # another thread composes it: wait for that one
        underway.wait()
        return index_for(ws)
    # Composed outside the lock, which every index's first use and every reload's
    # adoption take: a view's first composition can take seconds on a large workspace.
    index = None
    try:
        index = build(ws)
    finally:
        with _LOCK:
            if index is None or not _same_declarations(index, ws.declarations):
                index = build_index(ws)
            _remember(ws, index)
            del _UNDERWAY[id(ws)]
            underway.set()
    return index


# Workspaces whose index is to be built otherwise than from nothing (`build_with`), and
# those whose builder is running (their other askers wait for it).
_BUILDERS: dict[int, Any] = {}
_UNDERWAY: dict[int, threading.Event] = {}


def build_with(ws: Any, build: Any) -> None:
    """Have `index_for(ws)` build the index of `ws` with `build(ws)` (e.g. `compose_index`
    over earlier indexes) when it first needs it; one whose declarations are not
    exactly those of `ws` is not used. `build` must not hold `ws` (it is kept until
    `ws` goes)."""
    with _LOCK:
        if id(ws) in _BUILDERS or id(ws) in _CACHE:
            return
        try:
            weakref.finalize(ws, _BUILDERS.pop, id(ws), None)
        except TypeError:  # not weak-referenceable: an id() key could be reused
            return
        _BUILDERS[id(ws)] = build


def _remember(ws: Any, index: WorkspaceIndex) -> None:
    if id(ws) not in _CACHE:
        try:
            weakref.finalize(ws, _CACHE.pop, id(ws), None)
        except TypeError:  # not weak-referenceable: an id() key could be reused
            return
    _CACHE[id(ws)] = ((len(ws.declarations), len(ws.files)), index)


def cached_index(ws: Any) -> WorkspaceIndex | None:
    """The index `index_for(ws)` would answer from its cache, or None (never builds)."""
    entry = _CACHE.get(id(ws))
    if entry is not None and entry[0] == (len(ws.declarations), len(ws.files)):
        return entry[1]
    return None


def is_indexed(ws: Any) -> bool:
    """True when `index_for(ws)` would answer from the cache, without building."""
    entry = _CACHE.get(id(ws))
    return entry is not None and entry[0] == (len(ws.declarations), len(ws.files))
