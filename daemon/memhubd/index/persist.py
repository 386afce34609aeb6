"""A composed `WorkspaceIndex` as plain data, so that a restart restores it instead of
composing it again from every segment.

Bitmaps are saved as bytes, directories and key holders as key tuples with arrays of
segment positions, and posting codes as one array blob per table; restoring makes one
dict per directory or table with C-level calls, no Python step per declaration or key
of a single file, and only when one is read whole: a lookup before that searches the
saved keys through their saved sorted order. Segments are named by their position in `index.segments`: the caller
saves which file each position is and hands back the same files' segments. Nothing
here reads or writes a file, or decides whether the data can be trusted.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from typing import Any

import numpy as np

from memhubd.index import workspace as _ix
from memhubd.index.bitmaps import OrdinalSpace
from memhubd.index.segment import Segment
from memhubd.index.workspace import WorkspaceIndex

FORMAT = 2

# Every attribute a composed index holds, and how it comes back: saved (`_SAVED`),
# recomputed from the segments (`_DERIVED`), or empty (`_FRESH`). An index with any
# other attribute is not saved: composing it again is always right.
_SAVED = frozenset(
    {"ids", "_names", "_raw", "_raw_kinds", "_targets", "superseded_elsewhere"}
    | {"_serials", "_serial_of", "_next_serial", "_holders"}
)
_DERIVED = frozenset(
    {"segments", "bases", "space", "_base_of", "declarations", "ids_of", "subjects", "scopes"}
    | {"count", "pool", "constraints", "high_confidence", "questions", "pool_kinds"}
    | {"shared_ids", "global_constraints"}
)
_FRESH = frozenset(
    {"_cache", "_cache_bytes", "_cache_budget", "_lock", "_lazy", "_lazy_lock"}
    | {"_inherited", "memo"}
)
KNOWN = _SAVED | _DERIVED | _FRESH


def index_data(index: WorkspaceIndex) -> tuple[Any, ...] | None:
    """`index` as plain data (`marshal` can write it), or None when the index holds an
    attribute this module does not know how to restore."""
    if set(vars(index)) != KNOWN:
        return None
    position = {id(s): n for n, s in enumerate(index.segments)}
    nbytes = index.space.nbytes
    raw = {flag: bits.to_bytes(nbytes, "big") for flag, bits in index._raw.items()}
    kinds = {kind: bits.to_bytes(nbytes, "big") for kind, bits in index._raw_kinds.items()}
    targets = tuple(index._targets.items())
    holders = {table: _holders_data(h, position) for table, h in index._holders.items()}
    return (
        FORMAT,
        len(index.segments),
        index.space.size,
        raw,
        kinds,
        (tuple(k for k, _ in targets), array("q", (c for _, c in targets)).tobytes()),
        tuple(sorted(index.superseded_elsewhere)),
        _directory_data(index.ids, position),
        _directory_data(index._names, position),
        index._serials.astype(np.int64).tobytes(),
        index._next_serial,
        holders,
    )


def restore_index(data: tuple[Any, ...], segments: Sequence[Segment]) -> WorkspaceIndex:
    """The index `index_data` saved, over `segments` (the same files' segments, in the
    same order). Raises ValueError when the data do not fit them."""
    (form, count, size, raw, kinds, targets, elsewhere, ids, names, serials, next_serial,
     holders) = data  # fmt: skip
    segments = tuple(segments)
    if form != FORMAT or count != len(segments):
        raise ValueError("persisted index of another format or file count")
    if set(raw) != {*_ix._FLAGS, "superseded", "global"} or set(holders) != set(_ix._TABLES):
        raise ValueError("persisted index of another shape")
    index = WorkspaceIndex.__new__(WorkspaceIndex)
    _derive_layout(index, segments)
    if index.space.size != size:
        raise ValueError("persisted index of another size")
    single = [(s,) for s in segments]
    index._raw = {flag: int.from_bytes(bits, "big") for flag, bits in raw.items()}
    index._raw_kinds = {kind: int.from_bytes(bits, "big") for kind, bits in kinds.items()}
    target_keys, target_counts = targets
    index._targets = _ix._Layered(dict(zip(target_keys, _ints("q", target_counts), strict=True)))
    index.superseded_elsewhere = frozenset(elsewhere)
    index._serials = np.frombuffer(serials, np.int64).copy()
    if len(index._serials) != count:
        raise ValueError("persisted index serials do not fit its files")
    index._serial_of = _ix._Layered(
        {id(s): int(n) for s, n in zip(segments, index._serials.tolist(), strict=True)}
    )
    index._next_serial = next_serial
    serials_found = index._serials
    if len(serials_found) and not (0 <= serials_found.min() <= serials_found.max() < next_serial):
        raise ValueError("persisted index serials out of range")
    slot_of_serial = np.full(next_serial, -1, np.int64)
    slot_of_serial[serials_found] = np.array(index.bases, np.int64)
    index._base_of = _ix._BaseOf(index._serial_of, slot_of_serial)
    index.ids = _directory(ids, "local_ids", index._base_of, segments, single)
    index._names = _directory(names, "local_names", index._base_of, segments, single)
    index._holders = {table: _holders(found, segments, single) for table, found in holders.items()}
    index._derive_bitmaps()
    _fresh_caches(index)
    index._lazy["slot_of_serial"] = slot_of_serial
    return index


# --- what is recomputed, as `WorkspaceIndex.__init__` computes it --------------------


def _derive_layout(index: WorkspaceIndex, segments: tuple[Segment, ...]) -> None:
    index.segments = segments
    widths = [s.nbytes * 8 for s in segments]
    index.bases = tuple(accumulate(widths, initial=0))[:-1]
    index.space = OrdinalSpace(sum(widths))
    size = index.space.size
    index.declarations = _ix._BySlot(segments, index.bases, "declarations", size)
    index.ids_of = _ix._BySlot(segments, index.bases, "ids", size)
    index.subjects = _ix._BySlot(segments, index.bases, "subjects_of", size)
    index.scopes = _ix._BySlot(segments, index.bases, "scopes_of", size)
    index.count = sum(len(s) for s in segments)


def _fresh_caches(index: WorkspaceIndex) -> None:
    index._cache = OrderedDict()
    index._cache_bytes = 0
    index._cache_budget = _ix.CACHE_BYTES
    index._lock = threading.Lock()
    index._lazy = {}
    index._lazy_lock = threading.RLock()
    index._inherited = None
    index.memo = {}


# --- directories and holders ---------------------------------------------------------


def _sorted_order(keys: Sequence[str]) -> bytes:
    """The positions of `keys` in key order, for `_Unfolded`'s lookups."""
    return array("q", sorted(range(len(keys)), key=keys.__getitem__)).tobytes()


def _holder_codes(
    items: Sequence[tuple[str, Sequence[Segment]]], position: dict[int, int]
) -> tuple[tuple[str, ...], bytes, bytes, bytes, bytes]:
    """Keys, and per key one code: the position of its only segment, or (below zero)
    `-1 - n` for the n-th key of several segments, whose positions follow (all of them
    in one array, and how many each); last, the keys' sorted order."""
    keys = []
    found = array("q")
    several = array("q")
    sizes = array("q")
    for key, held in items:
        keys.append(key)
        if len(held) == 1:
            found.append(position[id(held[0])])
        else:
            found.append(-1 - len(sizes))
            sizes.append(len(held))
            several.extend(position[id(s)] for s in held)
    return tuple(keys), found.tobytes(), several.tobytes(), sizes.tobytes(), _sorted_order(keys)


def _check_held(saved: tuple[Any, ...], segments: int) -> None:
    """Raise ValueError unless `_held` can make its dict from `saved` (checked when
    restored: the dict itself is made when first read)."""
    keys, found, several, sizes, order = saved
    codes = np.frombuffer(found, np.int64)
    if len(codes) != len(keys):
        raise ValueError("persisted holders do not fit their keys")
    _check_order(order, len(keys))
    listed = np.frombuffer(several, np.int64)
    counts = np.frombuffer(sizes, np.int64)
    if int(counts.sum()) != len(listed) or (
        len(listed) and not 0 <= int(listed.min()) <= int(listed.max()) < segments
    ):
        raise ValueError("persisted holders do not fit their segments")
    if len(codes) and (int(codes.max()) >= segments or int(codes.min()) < -len(counts)):
        raise ValueError("persisted holders do not fit their segments")


def _held(
    saved: tuple[Any, ...], segments: tuple[Segment, ...], single: list[tuple[Segment, ...]]
) -> dict[str, tuple[Segment, ...]]:
    """key -> its segments, from `_holder_codes`: a key of one file shares that file's
    one-tuple with every other such key, so the dict is made without a Python step."""
    keys, found, several, sizes, _order = saved
    codes = np.frombuffer(found, np.int64)
    if len(codes) != len(keys):
        raise ValueError("persisted holders do not fit their keys")
    listed = list(map(segments.__getitem__, np.frombuffer(several, np.int64).tolist()))
    ends = np.cumsum(np.frombuffer(sizes, np.int64)).tolist()
    if ends and ends[-1] != len(listed):
        raise ValueError("persisted holders do not fit their segments")
    values = [*single, *map(tuple, map(listed.__getitem__, map(slice, [0, *ends], ends)))]
    at = np.where(codes >= 0, codes, len(single) - 1 - codes).tolist()
    return dict(zip(keys, map(values.__getitem__, at), strict=True))


def _directory_data(directory: Any, position: dict[int, int]) -> tuple[Any, ...]:
    return (_holder_codes(list(directory._where.items()), position), tuple(directory.multi))


def _directory(
    saved: tuple[Any, ...],
    local: str,
    bases: dict[int, int],
    segments: tuple[Segment, ...],
    single: list[tuple[Segment, ...]],
) -> Any:
    held, multi = saved
    directory = _ix._Directory.__new__(_ix._Directory)
    directory._local = local
    directory._bases = bases
    _check_held(held, len(segments))
    directory._where = _Unfolded(
        lambda: _held(held, segments, single), _held_finder(held, segments, single), len(held[0])
    )
    directory.multi = frozenset(multi)
    return directory


def _holders_data(holders: Any, position: dict[int, int]) -> tuple[Any, ...]:
    counts = list(holders.counts.items())
    count_keys = tuple(k for k, _ in counts)
    rare = _holder_codes(list(holders.rare.items()), position)
    common = list(holders.common.items())
    blob = [np.asarray(found, np.uint32) for _, (found, _extras) in common]
    sizes = array("q", (len(found) for found in blob))
    extras = tuple(tuple(position[id(s)] for s in extras) for _, (_found, extras) in common)
    return (
        count_keys,
        array("q", (c for _, c in counts)).tobytes(),
        _sorted_order(count_keys),
        rare,
        tuple(k for k, _ in common),
        (np.concatenate(blob) if blob else np.zeros(0, np.uint32)).tobytes(),
        sizes.tobytes(),
        extras,
    )


def _holders(
    saved: tuple[Any, ...], segments: tuple[Segment, ...], single: list[tuple[Segment, ...]]
) -> Any:
    count_keys, counts, count_order, rare, common_keys, blob, sizes, extras = saved
    if len(counts) != 8 * len(count_keys):
        raise ValueError("persisted counts do not fit their keys")
    _check_order(count_order, len(count_keys))
    _check_held(rare, len(segments))
    found = np.frombuffer(blob, np.uint32).copy()
    ends = np.cumsum(_ints("q", sizes), dtype=np.int64).tolist()
    if len(ends) != len(common_keys) or (ends and ends[-1] != len(found)):
        raise ValueError("persisted codes do not fit their keys")
    starts = [0, *ends][: len(ends)]
    common = {
        key: (found[start:end], tuple(segments[n] for n in more))
        for key, start, end, more in zip(common_keys, starts, ends, extras, strict=True)
    }
    count_of = memoryview(counts).cast("q")
    return _ix._Holders(
        _Unfolded(
            lambda: dict(zip(count_keys, _ints("q", counts), strict=True)),
            _finder(count_keys, count_order, count_of.__getitem__),
            len(count_keys),
        ),
        _Unfolded(
            lambda: _held(rare, segments, single),
            _held_finder(rare, segments, single),
            len(rare[0]),
        ),
        _ix._Layered(common),
    )


# --- lookups before a dict is made ---------------------------------------------------


def _check_order(order: bytes, keys: int) -> None:
    """Raise ValueError unless `order` can be the sorted order of `keys` keys (a
    permutation is not verified: the data are this daemon's, sealed)."""
    positions = np.frombuffer(order, np.int64)
    if len(positions) != keys or (keys and not 0 <= positions.min() <= positions.max() < keys):
        raise ValueError("persisted key order does not fit its keys")


def _finder(
    keys: tuple[str, ...], order: bytes, value_at: Callable[[int], Any]
) -> Callable[[str, Any], Any]:
    """A lookup of one key in saved columns: a binary search of `keys` through their
    sorted `order`, then `value_at` of the key's position."""
    positions = memoryview(order).cast("q")
    count = len(positions)

    def find(key: str, default: Any = None) -> Any:
        at = bisect_left(positions, key, key=keys.__getitem__)
        if at < count:
            found = positions[at]
            if keys[found] == key:
                return value_at(found)
        return default

    return find


def _held_finder(
    saved: tuple[Any, ...], segments: tuple[Segment, ...], single: list[tuple[Segment, ...]]
) -> Callable[[str, Any], Any]:
    """One key's value of `_held`'s dict, from the same columns."""
    keys, found, several, sizes, order = saved
    codes = memoryview(found).cast("q")
    listed = memoryview(several).cast("q")
    ends: list[int] = []

    def value_at(position: int) -> tuple[Segment, ...]:
        code = codes[position]
        if code >= 0:
            return single[code]
        if not ends:  # the first key of several segments looked up
            ends.extend(np.cumsum(np.frombuffer(sizes, np.int64)).tolist())
        n = -1 - code
        start = ends[n - 1] if n else 0
        return tuple(segments[listed[i]] for i in range(start, ends[n]))

    return _finder(keys, order, value_at)


class _Unfolded(_ix._Layered):
    """A restored key -> value dict made from its saved columns when first read whole:
    a start then makes none of the id, name, count and rare-key dicts (a fifth of a
    100k restart), and a lookup before that searches the columns (`find`) instead of
    making a dict of every key (a first query's terms cost 0.2 s of CPU so at 100k).
    Read as any `_Layered`. An update layers its changes over this map, so the first
    edits after a start do not make the dict either (0.26 s of a first edit at 100k);
    it is made when those changes are folded into a new base."""

    __slots__ = ("_make", "_made", "_find", "_count")

    def __init__(
        self, make: Callable[[], dict[str, Any]], find: Callable[[str, Any], Any], count: int
    ) -> None:
        self.delta = {}
        self._make = make
        self._made: dict[str, Any] | None = None
        self._find = find
        self._count = count

    def __len__(self) -> int:
        made = self._made
        return self._count if made is None else len(made)

    def updated(self, changes: dict[str, Any]) -> _ix._Layered:
        return _ix._Layered(self).updated(changes)

    def unfold_for(self, lookups: int) -> None:
        """Make the dict before `lookups` lookups when they are as many as an update's
        fold would make it for anyway (a 32nd of the keys): a binary search of the
        columns a key cost a clustered view of a restored 100k workspace 0.5 s of its
        1.1 s (58,068 searches), and the dict was made after them all the same."""
        if self._made is None and lookups > max(_ix._FOLD_MIN, self._count >> 5):
            self.base  # noqa: B018 - made now

    def get(self, key: str, default: Any = None) -> Any:
        if self._made is None:  # never changed: `delta` stays empty
            return self._find(key, default)
        return self._made.get(key, default)

    def items(self) -> Iterator[tuple[str, Any]]:
        """Every item, from a dict made for this pass alone while none is kept: saving
        an index reads each of its maps whole once, and keeping what that made held
        about 320 MiB more for the daemon's life at 1M declarations."""
        made = self._made
        if made is None:
            make = self._make
            made = make() if make is not None else self._made
        return iter(made.items())  # type: ignore[union-attr]

    @property  # type: ignore[override]
    def base(self) -> dict[str, Any]:
        made = self._made
        if made is None:  # two threads may both make it: equal dicts, either is kept
            make = self._make
            if make is None:  # made meanwhile (set before `_make` is dropped)
                return self._made  # type: ignore[return-value]
            made = self._made = make()
            self._make = None  # the saved columns are the dict's now
        return made


def _ints(code: str, data: bytes) -> array[int]:
    found = array(code)
    found.frombytes(data)
    return found
