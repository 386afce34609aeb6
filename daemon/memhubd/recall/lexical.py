"""An in-memory BM25 index that ranks exactly as SQLite FTS5's `bm25()` does.

Rows are known by position (the order they were added, ascending with the store's
rowids) and terms by the tokens the store's own tokenizer produced; nothing here
tokenizes text, speaks SQL or knows about drawers or filters. Postings live in
append-only numpy segments, merged geometrically; deleted rows are masked (and leave
the statistics) until the owner rebuilds the index.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# FTS5's bm25() constants (sqlite/ext/fts5/fts5_aux.c).
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6  # FTS5 uses this when log((N - n + 0.5) / (n + 0.5)) is not positive
COLUMN_BITS = 2  # an instance code is rowid << COLUMN_BITS | column
COLUMNS = 1 << COLUMN_BITS
VISIBLE_KEPT = 16  # masks whose totals are kept (one per reader-role set searching)
CHUNK = 2_000_000  # token instances turned into postings at a time, bounding the temporaries


@dataclass(frozen=True, slots=True)
class Segment:
    """Postings of rows added together: for the term `terms[i]`, postings
    `offsets[i]:offsets[i + 1]`, each a position and its frequency per column."""

    terms: np.ndarray  # int32, ascending, distinct
    offsets: np.ndarray  # int64, len(terms) + 1
    positions: np.ndarray  # int32, ascending within a term
    freqs: np.ndarray  # (postings, COLUMNS), the narrowest unsigned type that fits

    @property
    def size(self) -> int:
        return len(self.positions)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.terms, self.offsets, self.positions, self.freqs))

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray] | None:
        at = int(np.searchsorted(self.terms, term))
        if at == len(self.terms) or self.terms[at] != term:
            return None
        start, stop = self.offsets[at], self.offsets[at + 1]
        return self.positions[start:stop], self.freqs[start:stop]


def _narrow(freqs: np.ndarray) -> np.ndarray:
    top = int(freqs.max()) if freqs.size else 0
    for kind in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(kind).max:
            return freqs.astype(kind)
    return freqs


_POSITION_BITS = 31  # positions are int32


def segment_of(terms: np.ndarray, positions: np.ndarray, columns: np.ndarray) -> Segment:
    """A segment from token instances (term id, row position, column), one per token,
    in any order (sorted input, as FTS5 lists it, is not sorted again)."""
    if not len(terms):
        empty = np.zeros(0, np.int32)
        return Segment(empty, np.zeros(1, np.int64), empty, np.zeros((0, COLUMNS), np.uint8))
    shift = _POSITION_BITS + COLUMN_BITS
    key = (terms.astype(np.int64) << shift) | (positions.astype(np.int64) << COLUMN_BITS)
    key |= columns
    if (key[1:] < key[:-1]).any():
        key.sort()
    row = key >> COLUMN_BITS
    new = np.empty(len(key), dtype=bool)
    new[0] = True
    np.not_equal(row[1:], row[:-1], out=new[1:])
    posting = np.cumsum(new) - 1
    count = int(posting[-1]) + 1
    freqs = np.bincount(posting * COLUMNS + (key & (COLUMNS - 1)), minlength=count * COLUMNS)
    row = row[new]
    positions = row & ((1 << _POSITION_BITS) - 1)
    return _from_postings(row >> _POSITION_BITS, positions, freqs.reshape(count, COLUMNS))


def _from_postings(terms: np.ndarray, positions: np.ndarray, freqs: np.ndarray) -> Segment:
    """A segment from postings sorted by term, then position."""
    starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1])))
    offsets = np.append(starts, len(terms)).astype(np.int64)
    return Segment(
        terms[starts].astype(np.int32), offsets, positions.astype(np.int32), _narrow(freqs)
    )


def concat(parts: Sequence[Segment]) -> Segment:
    """One segment from segments whose terms ascend from one to the next (no sort)."""
    if len(parts) == 1:
        return parts[0]
    width = np.result_type(*(p.freqs.dtype for p in parts))
    bases = np.cumsum([0] + [p.size for p in parts[:-1]])
    return Segment(
        np.concatenate([p.terms for p in parts]),
        np.concatenate(
            [parts[0].offsets[:1]] + [p.offsets[1:] + b for p, b in zip(parts, bases, strict=True)]
        ),
        np.concatenate([p.positions for p in parts]),
        np.concatenate([p.freqs.astype(width) for p in parts]),
    )


def merge(older: Segment, newer: Segment) -> Segment:
    """One segment holding both (every position of `newer` above those of `older`)."""
    if not older.size or not newer.size or older.terms[-1] < newer.terms[0]:
        return concat([s for s in (older, newer) if s.size] or [older])
    terms = np.concatenate([np.repeat(s.terms, np.diff(s.offsets)) for s in (older, newer)]).astype(
        np.int64
    )
    order = np.argsort(terms, kind="stable")  # keeps positions ascending within a term
    positions = np.concatenate([older.positions, newer.positions])[order]
    width = np.promote_types(older.freqs.dtype, newer.freqs.dtype)
    freqs = np.concatenate([older.freqs.astype(width), newer.freqs.astype(width)])[order]
    return _from_postings(terms[order], positions, freqs)


class LexicalIndex:
    """Rows' postings, lengths and liveness; `rank` scores like FTS5's bm25() over the
    OR of single-token phrases, with the statistics of the live rows only."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.segments: list[Segment] = []
        # Row arrays grow by doubling, so a write of a few drawers costs no full copy.
        self._size = 0
        self._rowids = np.zeros(0, np.int64)
        self._lengths = np.zeros(0, np.int64)  # tokens of every column
        self._alive = np.zeros(0, dtype=bool)
        self.live = 0
        self.live_tokens = 0
        self._scores = np.zeros(0)
        self._seen = np.zeros(0, dtype=bool)
        self._norm_of = np.zeros(0)
        self._norm_state: tuple[int, int, int] | None = None
        # id(mask) -> (mask, state, live rows it holds, their count, their tokens)
        self._visible: dict[int, tuple[np.ndarray, tuple[int, int, int], np.ndarray, int, int]] = {}

    def __len__(self) -> int:
        return self._size

    @property
    def rowids(self) -> np.ndarray:
        return self._rowids[: self._size]

    @property
    def lengths(self) -> np.ndarray:
        return self._lengths[: self._size]

    @property
    def alive(self) -> np.ndarray:
        return self._alive[: self._size]

    @property
    def max_rowid(self) -> int:
        return int(self.rowids[-1]) if len(self.rowids) else 0

    @property
    def dead(self) -> int:
        return len(self.rowids) - self.live

    @property
    def nbytes(self) -> int:
        arrays = (self._rowids, self._lengths, self._alive, self._scores, self._seen, self._norm_of)
        masks = sum(held[2].nbytes for held in self._visible.values())
        return sum(s.nbytes for s in self.segments) + sum(a.nbytes for a in arrays) + masks

    # -- rows ---------------------------------------------------------------------------

    def add(
        self,
        rowids: np.ndarray,
        instances: Iterable[tuple[str, np.ndarray]],
        *,
        chunk: int = CHUNK,
    ) -> None:
        """Append rows (`rowids` ascending, above every row held) and their tokens:
        per term, one code `rowid << COLUMN_BITS | column` per occurrence. Raises
        ValueError, adding nothing, when a code names a row not in `rowids`."""
        rowids = np.asarray(rowids, np.int64)
        if len(rowids) and len(self.rowids) and rowids[0] <= self.rowids[-1]:
            raise ValueError("rows must be added in ascending rowid order")
        first = len(self.rowids)
        vocabulary = dict(self.vocabulary)
        lengths = np.zeros(len(rowids), np.int64)
        parts: list[Segment] = []
        terms: list[np.ndarray] = []
        codes: list[np.ndarray] = []
        pending = 0

        def flush() -> None:
            code = np.concatenate(codes)
            rows = code >> COLUMN_BITS
            at = np.searchsorted(rowids, rows)
            if at.max() >= len(rowids) or (rowids[at] != rows).any():
                raise ValueError("a token belongs to a row that is not being added")
            lengths[:] += np.bincount(at, minlength=len(rowids))
            parts.append(segment_of(np.concatenate(terms), at + first, code & (COLUMNS - 1)))
            terms.clear()
            codes.clear()

        for term, found in instances:
            if not len(found):
                continue
            terms.append(np.full(len(found), vocabulary.setdefault(term, len(vocabulary))))
            codes.append(np.asarray(found, np.int64))
            pending += len(found)
            if pending >= chunk:
                flush()
                pending = 0
        if codes:
            flush()
        segment = parts[0] if len(parts) == 1 else None
        if len(parts) > 1:
            ascending = all(
                a.terms[-1] < b.terms[0] for a, b in zip(parts, parts[1:], strict=False)
            )
            segment = concat(parts) if ascending else parts[0]
            for part in [] if ascending else parts[1:]:
                segment = merge(segment, part)
        self.vocabulary = vocabulary
        self._reserve(len(rowids))
        end = first + len(rowids)
        self._rowids[first:end] = rowids
        self._lengths[first:end] = lengths
        self._alive[first:end] = True
        self._size = end
        self.live += len(rowids)
        self.live_tokens += int(lengths.sum())
        if segment is not None and segment.size:
            self.segments.append(segment)
        # Geometric merging: a segment never sits beside a newer one half its size or
        # more, so there are O(log rows) segments and each posting is copied O(log) times.
        while len(self.segments) > 1 and 2 * self.segments[-1].size >= self.segments[-2].size:
            newer = self.segments.pop()
            self.segments[-1] = merge(self.segments[-1], newer)

    def _reserve(self, extra: int) -> None:
        need = self._size + extra
        if need <= len(self._rowids):
            return
        capacity = max(need, 2 * len(self._rowids))
        for name in ("_rowids", "_lengths", "_alive"):
            old = getattr(self, name)
            new = np.zeros(capacity, old.dtype)
            new[: self._size] = old[: self._size]
            setattr(self, name, new)
        self._scores = np.zeros(capacity)  # all zero between searches
        self._seen = np.zeros(capacity, dtype=bool)

    def delete(self, rowids: Sequence[int] | np.ndarray) -> int:
        """Mask these rows (those held and live); returns how many were."""
        wanted = np.asarray(rowids, np.int64)
        if not len(wanted) or not len(self.rowids):
            return 0
        at = np.searchsorted(self.rowids, wanted)
        held = at < len(self.rowids)
        at, wanted = at[held], wanted[held]
        at = np.unique(at[self.rowids[at] == wanted])
        at = at[self.alive[at]]
        self.alive[at] = False
        self.live -= len(at)
        self.live_tokens -= int(self.lengths[at].sum())
        return len(at)

    # -- ranking ------------------------------------------------------------------------

    def postings(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        """Every position holding `token` (live or not) and its frequencies per column."""
        term = self.vocabulary.get(token)
        parts = [p for s in self.segments if term is not None and (p := s.postings(term))]
        if not parts:
            return np.zeros(0, np.int32), np.zeros((0, COLUMNS), np.uint8)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p for p, _ in parts]), np.concatenate(
            [f.astype(np.uint32) for _, f in parts]
        )

    def rank(
        self,
        tokens: Sequence[str],
        weights: Sequence[float],
        visible: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every live position matching any of `tokens` (one phrase each, in query
        order) and its score, computed in FTS5's order of operations: the score is
        -bm25(), so higher is better. `weights` are per column (missing ones: 1.0).

        `visible` (a mask over positions, at least `len(self)` long) limits the answer
        and the statistics alike to the positions it holds: the scores are FTS5's over
        a table holding only those rows, so rows outside it change nothing."""
        if visible is None:
            live, live_tokens, mask = self.live, self.live_tokens, None
        else:
            mask, live, live_tokens = self._visible_totals(visible)
        if not live or not tokens:
            return np.zeros(0, np.int64), np.zeros(0)
        norm = self._norm() if mask is None else None
        average = float(live_tokens) / float(live)
        column = np.ones(COLUMNS)
        column[: len(weights)] = weights[:COLUMNS]
        everyone = mask is None and self.live == len(self.rowids)
        counted = self.alive if mask is None else mask
        scores, seen = self._scores, self._seen
        for token in tokens:
            positions, freqs = self.postings(token)
            if not len(positions):
                continue
            hits = len(positions) if everyone else int(np.count_nonzero(counted[positions]))
            idf = math.log((live - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = MIN_IDF
            # FTS5 adds a column's weight once per token instance; with weights of few
            # binary digits (the defaults 1.0, 0.5 and 0.75) the sum is exact in any order.
            frequency = freqs @ column
            if norm is not None:
                at = norm[positions]
            else:  # only where needed: the statistics are the visible rows'
                at = K1 * (1 - B + B * self.lengths[positions].astype(np.float64) / average)
            scores[positions] += idf * ((frequency * (K1 + 1.0)) / (frequency + at))
            seen[positions] = True
        found = np.flatnonzero(seen)
        out = scores[found]
        scores[found] = 0.0
        seen[found] = False
        if everyone:
            return found, out
        keep = counted[found]
        return found[keep], out[keep]

    def _norm(self) -> np.ndarray:
        """k1 * (1 - b + b * D / avgdl) per position, for the current statistics."""
        state = (self.live, self.live_tokens, len(self.rowids))
        if self._norm_state != state:
            average = float(self.live_tokens) / float(self.live)
            self._norm_of = K1 * (1 - B + B * self.lengths.astype(np.float64) / average)
            self._norm_state = state
        return self._norm_of

    def _visible_totals(self, visible: np.ndarray) -> tuple[np.ndarray, int, int]:
        """The live rows `visible` holds, their count and tokens; kept per mask (the
        same array object) until a row is added or deleted."""
        state = (self.live, self.live_tokens, self._size)
        held = self._visible.get(id(visible))
        if held is not None and held[0] is visible and held[1] == state:
            return held[2], held[3], held[4]
        mask = self.alive & visible[: self._size]
        totals = (mask, int(np.count_nonzero(mask)), int(self.lengths[mask].sum()))
        if len(self._visible) >= VISIBLE_KEPT:
            self._visible.pop(next(iter(self._visible)))
        self._visible[id(visible)] = (visible, state, *totals)
        return totals


def top(positions: np.ndarray, scores: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The `limit` best of `positions` by score, ties to the lower position (FTS5's
    `ORDER BY bm25, rowid`: positions ascend with rowids)."""
    if limit <= 0 or not len(positions):
        return positions[:0], scores[:0]
    if len(positions) > limit:
        kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = scores >= kth
        positions, scores = positions[keep], scores[keep]
    order = np.lexsort((positions, -scores))[:limit]
    return positions[order], scores[order]
