"""Answers built from bytes: each declaration's JSON encoded once per snapshot, answers
joined from those pieces, an opt-in MUST budget, and a bounded cache of whole answers.

It must not decide what an answer contains (the engine and `reads` do), nor keep a
snapshot alive: pieces live under their snapshot in a WeakKeyDictionary and cached
answers hold bytes, text and counts only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import secrets
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import numpy as np

from memhub_protocol import ErrorCode, ProtocolError
from memhubd.query.pack import compact_json, compact_text
from memhubd.runtime.snapshot import Snapshot
from memhubd.service import stale

Piece = Callable[[Any], bytes]
Section = TypeVar("Section", bytes, str)


# --- encoding -----------------------------------------------------------------------------


class Raw:
    """A value already encoded as compact JSON, spliced as is by `dumps`."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def dumps(value: Any) -> bytes:
    """`compact_json(value)`, where `Raw` values of a top-level dict are spliced in."""
    if isinstance(value, Raw):
        return value.data
    if isinstance(value, dict) and any(type(item) is Raw for item in value.values()):
        # One join: an answer's spliced pack is most of its bytes, copied once.
        parts = [b"{"]
        for key, item in value.items():
            data = item.data if type(item) is Raw else compact_json(item)
            parts += (compact_json(key), b":", data, b",")
        parts[-1] = b"}"
        return b"".join(parts)
    return compact_json(value)


def dumps_text(value: Any) -> str:
    """`dumps` as text (MCP answers are text); no bytes round trip without a `Raw`."""
    if isinstance(value, dict) and any(type(item) is Raw for item in value.values()):
        return dumps(value).decode("utf-8")
    return compact_text(value)


# --- pieces -------------------------------------------------------------------------------


# Per form and owner (or snapshot): a 1M-declaration workspace's pieces would take about
# 800 MB once every declaration had been in an answer.
PIECE_BYTES = 128 * 1024 * 1024
# A piece's entry beyond its bytes: the tuple, the key (a new int) and the dict's slot.
_PIECE_ENTRY = 120


class _Table(dict):  # type: ignore[type-arg]
    """One form's pieces by declaration id, with the bytes they take (approximate:
    written without a lock, and not lowered by the entries an edit drops), and, for an
    owner's tables, the ids it holds by file (so that an edit drops a file's pieces);
    both start over with the table."""

    __slots__ = ("used", "by_file")

    def __init__(self) -> None:
        super().__init__()
        self.used = 0
        self.by_file: dict[str, set[int]] = {}

    def start_over(self) -> None:
        self.clear()
        self.used = 0
        self.by_file = {}


class _Pieces:
    """One snapshot's encoded declarations, per pack shape (JSON bytes, or text lines).

    Keyed by object identity and holding the declaration beside its bytes, so an id
    can never be reused by another object while its entry exists. Declarations do not
    reference their snapshot, so these values never keep their key alive.

    Given an owner (the served workspace), the tables of shapes are the owner's, shared
    by all its snapshots: a reload keeps the declarations of files it did not reparse,
    and their bytes with them, so a new generation's first answers do not encode them
    all again. They go with the owner.
    """

    def __init__(self, limit: int, shapes: dict[str, _Table]) -> None:
        self.limit = limit
        self.shapes = shapes
        # Joined sections (a MUST layer's JSON or text) by (shape, id of the tuple),
        # holding the tuple; least recently used first out past SECTION_BYTES.
        self.sections: OrderedDict[tuple[str, int], tuple[Any, Any]] = OrderedDict()
        self.section_bytes = 0


class _Owned:
    """The piece tables of one owner (a served workspace), shared by its snapshots (each
    table knows its pieces' files). When a new snapshot is first answered
    from, the pieces of the files it replaced are dropped: a reload costs the edited
    files here too, and the tables hold no declarations no snapshot serves (up to as
    many again as the workspace's, before)."""

    __slots__ = ("shapes", "files")

    def __init__(self) -> None:
        self.shapes: dict[str, _Table] = {}
        self.files: tuple[Any, ...] = ()  # the sources of the snapshot last advanced to

    def advance(self, files: tuple[Any, ...]) -> None:
        before, self.files = self.files, files
        if not before or before is files:
            return
        if len(before) == len(files):  # an edit: files in the same order, a few replaced
            changed = [
                path
                for old, new in zip(before, files, strict=True)
                if old is not new and (old.path != new.path or old.digest != new.digest)
                for path in {old.path, new.path}
            ]
        else:
            now = {source.path: source for source in files}
            changed = [
                old.path
                for old in before
                if (new := now.get(old.path)) is None
                or (new is not old and new.digest != old.digest)
            ]
        for table in list(self.shapes.values()):
            by_file = table.by_file
            for path in changed:
                for key in list(by_file.pop(path, ())):  # list(): one step in C
                    table.pop(key, None)


_PIECES: weakref.WeakKeyDictionary[Snapshot, _Pieces] = weakref.WeakKeyDictionary()
# Piece tables by shape of each owner (a served workspace), for as long as it lives.
_SHARED: weakref.WeakKeyDictionary[Any, _Owned] = weakref.WeakKeyDictionary()
_PIECES_LOCK = threading.Lock()


def _store(snapshot: Snapshot, owner: Any = None) -> tuple[_Pieces, _Owned | None]:
    with _PIECES_LOCK:
        owned = None if owner is None else _SHARED.get(owner)
        if owner is not None and owned is None:
            owned = _SHARED[owner] = _Owned()
        store = _PIECES.get(snapshot)
        if store is None:
            shapes: dict[str, _Table] = {}
            if owned is not None:
                owned.advance(snapshot.files)
                shapes = owned.shapes
            store = _Pieces(2 * len(snapshot.workspace.declarations) + 1024, shapes)
            _PIECES[snapshot] = store
        return store, owned


def pieces(
    snapshot: Snapshot, shape: str, encode: Callable[[Any], Section], owner: Any = None
) -> Callable[[Any], Section]:
    """`encode`, remembered per declaration of `snapshot` (a declaration never changes
    within one), and across the snapshots of `owner` (weakly referenced: the workspace's
    host) when given, less the files each new snapshot replaced. Bounded: past twice
    the snapshot's declarations, or `PIECE_BYTES` as allocated, a shape starts over. A
    shape's pieces are bytes (JSON) or text (a rendered line), as `encode` gives them."""
    store, owned = _store(snapshot, owner)
    with _PIECES_LOCK:
        table = store.shapes.setdefault(shape, _Table())
    limit = store.limit
    owned_table = owned is not None

    # Unlocked on purpose: dict reads and writes are atomic, and two threads encoding
    # the same declaration at once both get the same bytes.
    def piece(declaration: Any) -> Section:
        entry = table.get(id(declaration))
        if entry is not None and entry[0] is declaration:
            return entry[1]
        data = encode(declaration)
        cost = sys.getsizeof(data) + _PIECE_ENTRY
        if len(table) >= limit or table.used + cost > PIECE_BYTES:
            table.start_over()
        table[id(declaration)] = (declaration, data)
        table.used += cost
        if owned_table:
            table.by_file.setdefault(declaration.file, set()).add(id(declaration))
        return data

    def many(declarations: Sequence[Any]) -> list[Section]:
        """`[piece(d) for d in declarations]`, a kept piece read without a call: a MUST
        layer met for the first time is hundreds of rules whose pieces are mostly kept."""
        get = table.get
        return [
            kept[1] if (kept := get(id(d))) is not None and kept[0] is d else piece(d)
            for d in declarations
        ]

    piece.many = many  # type: ignore[attr-defined]
    return piece


# Per snapshot: a dense workspace's answers share a few MUST layers of hundreds of KB.
SECTION_BYTES = 32 * 1024 * 1024
# Shorter sections are joined again: cheap, and not worth an entry.
SECTION_MIN_ITEMS = 32


def sections(
    snapshot: Snapshot, shape: str, join: Callable[[Sequence[Any]], Section]
) -> Callable[[Sequence[Any]], Section]:
    """`join`, remembered per tuple of declarations of `snapshot` (the engine hands the
    same tuple back for a MUST layer met again). Lists, which could change, and short
    tuples are joined every time."""
    store, _owned = _store(snapshot)

    def section(items: Sequence[Any]) -> Section:
        if type(items) is not tuple or len(items) < SECTION_MIN_ITEMS:
            return join(items)
        key = (shape, id(items))
        with _PIECES_LOCK:
            entry = store.sections.get(key)
            if entry is not None and entry[0] is items:
                store.sections.move_to_end(key)
                return entry[1]  # type: ignore[no-any-return]
        data = join(items)
        cost = _section_cost(data)
        if cost > SECTION_BYTES // 4:
            return data
        with _PIECES_LOCK:
            old = store.sections.pop(key, None)
            if old is not None:
                store.section_bytes -= _section_cost(old[1])
            store.sections[key] = (items, data)
            store.section_bytes += cost
            while store.section_bytes > SECTION_BYTES:
                _key, (_items, dropped) = store.sections.popitem(last=False)
                store.section_bytes -= _section_cost(dropped)
        return data

    return section


def _section_cost(data: Section) -> int:
    """A kept section's bytes: the object as allocated (a text of non-Latin-1 characters
    takes 2 or 4 bytes each) and its entry."""
    return sys.getsizeof(data) + 64


def joined_size(parts: list[bytes]) -> int:
    return sum(len(part) for part in parts)


# The length of each slot's "query" piece, per index (-1: not encoded yet), carried
# over to the index of a one-file edit like the index's own per-slot structures.
_PIECE_LENGTHS = "service.query_piece_lengths"


def joined_length(index: Any, slots: Any, piece: Piece, over: int | None = None) -> int:
    """`len(b",".join(piece(d) for d in index.declarations.take(slots)))`, from each
    slot's piece length kept with `index` (the index of the declarations `piece`
    encodes): a dense workspace's MUST layer is thousands of rules, whose size is then a
    sum over an array instead of a join. Slots met for the first time are encoded.

    With `over`, a length known to exceed it may come back as a lower bound of the
    length that still exceeds it: the slots not encoded yet are encoded only until the
    sum passes `over` (a refusal needs no more, and a first-time one would otherwise
    encode thousands of rules no answer will hold).
    """
    if not len(slots):
        return 0
    lengths = index.derived(
        _PIECE_LENGTHS,
        lambda: np.full(index.space.size, -1, np.int32),
        lambda old, splice: splice.array(old, -1),
    )
    found = lengths[slots]
    unknown = np.flatnonzero(found < 0)
    # The commas between pieces, and the known pieces (each unknown one counted -1).
    total = int(found.sum(dtype=np.int64)) + len(unknown) + len(slots) - 1
    limit = -1 if over is None else over
    for start in range(0, len(unknown), _ENCODED_AT_ONCE):
        if 0 <= limit < total:
            break
        chunk = unknown[start : start + _ENCODED_AT_ONCE]
        for at, declaration in zip(
            chunk.tolist(), index.declarations.take(slots[chunk]), strict=True
        ):
            length = lengths[slots[at]] = len(piece(declaration))
            total += length
    return total


# Unknown slots made and encoded per step of `joined_length` when it may stop early.
_ENCODED_AT_ONCE = 64


# --- the MUST budget ----------------------------------------------------------------------


def budget_message(omitted: int, hidden: int) -> str:
    """The next step when MUST rules were left out of an answer ("" when none were)."""
    if not omitted:
        return ""
    rules = "1 more MUST rule applies" if omitted == 1 else f"{omitted} more MUST rules apply"
    hidden_part = f" (and {hidden} hidden from you may)" if hidden else ""
    return f"{rules}{hidden_part}: run check before acting"


def apply_budget(
    pack: Any, piece: Piece, max_bytes: int | None, max_must: int | None, hidden: int
) -> tuple[Any, dict[str, Any]]:
    """The pack with MUST cut to the budget (memdsl's order kept), and its `budget` key.

    `max_bytes` bounds the compact JSON of the whole pack: MUST keeps the longest
    prefix that fits beside the other layers. Those are never cut, so a pack whose
    other layers alone exceed the budget comes with no MUST and may be larger.
    """
    must = list(pack.must)
    total = len(must)
    keep = total if max_must is None else min(total, max_must)

    def budget(shown: int) -> dict[str, Any]:
        return {
            "max_bytes": max_bytes,
            "max_must": max_must,
            "must_total": total,
            "must_shown": shown,
            "must_omitted": total - shown,
            "next_step": budget_message(total - shown, hidden),
        }

    if max_bytes is not None:
        # The widest `budget` key this answer can carry: the count of one digit more
        # than any real one, so the final answer never exceeds the estimate.
        widest = budget(0)
        widest["next_step"] = budget_message(max(total, 2) * 10, hidden)
        widest["must_shown"] = widest["must_omitted"]
        bare = dataclasses.replace(pack, must=[])
        used = joined_size(bare.json_parts(piece, {"budget": widest}))
        fitted = 0
        for declaration in must[:keep]:
            used += len(piece(declaration)) + (1 if fitted else 0)
            if used > max_bytes:
                break
            fitted += 1
        keep = fitted
    return dataclasses.replace(pack, must=must[:keep]), budget(keep)


# --- answers and their cache --------------------------------------------------------------


@dataclass(slots=True)
class QueryAnswer:
    """One query's answer as served: the pack's JSON, its text (when asked for), the
    counts a cowork note needs, and the snapshot it came from (by number only)."""

    key: Hashable
    body: bytes
    text: str
    tag: str
    generation: int
    health: str
    counts: dict[str, int]
    missing: list[str]
    excluded_total: int
    gzipped: bytes | None = field(default=None)

    @property
    def cost(self) -> int:
        # The text as allocated: 1, 2 or 4 bytes a character, as its widest one needs.
        return len(self.body) + sys.getsizeof(self.text) + len(self.gzipped or b"") + 512

    def facts(self) -> dict[str, Any]:
        """The pack's shape for callers that only count or test layers (cowork notes, the
        MCP payload's status): `range`s have the layers' lengths without their items."""
        out: dict[str, Any] = {key: range(count) for key, count in self.counts.items()}
        out["missing"] = self.missing
        out["search_trace"] = {"excluded_by_filters_total": self.excluded_total}
        return out


# A process-wide nonce in every tag: snapshot numbers start over with the process,
# so a tag from before a restart must not match an answer of after it.
_NONCE = secrets.token_hex(4)
_SERIALS: weakref.WeakKeyDictionary[Snapshot, int] = weakref.WeakKeyDictionary()
_SERIAL_COUNTER = itertools.count(1)


def snapshot_serial(snapshot: Snapshot) -> int:
    """A number no other snapshot of this process has had (generations restart when a
    workspace is removed and added again)."""
    with _PIECES_LOCK:
        serial = _SERIALS.get(snapshot)
        if serial is None:
            serial = next(_SERIAL_COUNTER)
            _SERIALS[snapshot] = serial
            stale.remember(serial, snapshot)
        return serial


def answer_tag(key: Hashable) -> str:
    """An opaque, quoted entity tag for one answer key."""
    digest = hashlib.blake2b(repr((_NONCE, key)).encode(), digest_size=12).hexdigest()
    return f'"{digest}"'


class _Flight:
    """One answer being computed; callers asking for the same key wait for it."""

    __slots__ = ("done", "answer")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.answer: QueryAnswer | None = None


class AnswerCache:
    """Whole answers, least recently used first out, bounded by their encoded size.

    Keys start with a snapshot serial; an answer of a replaced snapshot is never asked
    for again, and is dropped at the next `put` once that snapshot is gone.
    """

    # Sizes of answers refused for their size, so asking again is refused at once.
    MAX_REFUSALS = 1024
    # Distinct answers being computed at once that later askers may wait for; past
    # this, a miss is computed by its own caller (never an unbounded table).
    MAX_FLIGHTS = 256

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._items: OrderedDict[Hashable, QueryAnswer] = OrderedDict()
        self._by_snapshot = stale.KeysBySnapshot()
        self._refused: OrderedDict[Hashable, int] = OrderedDict()
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()

    async def computed_once(
        self, key: Hashable, compute: Callable[[], Awaitable[QueryAnswer]]
    ) -> tuple[QueryAnswer, bool]:
        """`compute()`, unless the same key is being computed already: then that answer,
        once it is done. Returns (answer, shared), shared when another caller computed
        it (with its own size limit: check yours). A caller whose computation failed
        leaves its waiters to compute for themselves. Event-loop side only.

        Many agents asking the same question of a new snapshot at once then cost one
        computation, whether or not the answer fits the cache.
        """
        flight = self._flights.get(key)
        if flight is not None:
            await flight.done.wait()
            if flight.answer is not None:
                return flight.answer, True
            return await compute(), False
        if len(self._flights) >= self.MAX_FLIGHTS:
            return await compute(), False
        flight = self._flights[key] = _Flight()
        try:
            flight.answer = await compute()
            return flight.answer, False
        finally:
            del self._flights[key]
            flight.done.set()

    def flights(self) -> int:
        """How many answers are being computed with waiters allowed (for tests)."""
        return len(self._flights)

    def refused_size(self, key: Hashable) -> int | None:
        """The size of the answer for `key` if it was refused as too large (or a lower
        bound of it over the limit it was refused at), else None."""
        with self._lock:
            return self._refused.get(key)

    def note_refusal(self, key: Hashable, size: int) -> None:
        with self._lock:
            self._refused[key] = size
            self._refused.move_to_end(key)
            while len(self._refused) > self.MAX_REFUSALS:
                self._refused.popitem(last=False)

    def get(self, key: Hashable) -> QueryAnswer | None:
        with self._lock:
            answer = self._items.get(key)
            if answer is not None:
                self._items.move_to_end(key)
            return answer

    def put(self, key: Hashable, answer: QueryAnswer) -> None:
        cost = answer.cost
        if cost > self.max_bytes // 4:
            return  # one answer must not flush most of the others
        with self._lock:
            for freed in self._by_snapshot.take_freed():
                self._forget(freed)
            self._forget(key)
            self._items[key] = answer
            self._by_snapshot.add(key)
            self.used += cost
            self._shrink()

    def _forget(self, key: Hashable) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.used -= old.cost
            self._by_snapshot.discard(key)

    def _shrink(self) -> None:
        while self.used > self.max_bytes and self._items:
            key, dropped = self._items.popitem(last=False)
            self.used -= dropped.cost
            self._by_snapshot.discard(key)

    def attach_gzip(self, answer: QueryAnswer, data: bytes) -> None:
        """Keep `data`, the compressed body, with a cached answer (and count it)."""
        with self._lock:
            if answer.gzipped is not None or self._items.get(answer.key) is not answer:
                return
            answer.gzipped = data
            self.used += len(data)
            self._shrink()

    def __len__(self) -> int:
        return len(self._items)


_CACHES: weakref.WeakKeyDictionary[Any, AnswerCache] = weakref.WeakKeyDictionary()


def answer_cache(hub: Any) -> AnswerCache:
    """The hub's answer cache, sized by `limits.response_cache_bytes`."""
    with _PIECES_LOCK:
        cache = _CACHES.get(hub)
        if cache is None:
            size = getattr(hub.limits, "response_cache_bytes", 64 * 1024 * 1024)
            cache = AnswerCache(int(size))
            _CACHES[hub] = cache
        return cache


class AnswerTooLarge(ProtocolError):
    """The refusal of an answer larger than `limits.max_result_bytes`; `size` is its size,
    or a lower bound of it that is over the limit (a refusal decided early)."""

    def __init__(self, limit: int, size: int) -> None:
        super().__init__(
            ErrorCode.TOO_LARGE,
            f"result is larger than {limit} bytes (limits.max_result_bytes); narrow the request",
            {"limit": limit},
        )
        self.size = size


def result_too_large(limit: int, size: int) -> AnswerTooLarge:
    return AnswerTooLarge(limit, size)
