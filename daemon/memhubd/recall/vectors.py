"""The in-memory vector index of one store: exact cosine below a size, an inverted-file
(IVF) index above it, with an exact re-score of every candidate it probes.

Rows are known by their position (the order they were added); which positions a
search may return is a boolean mask the caller computes. Nothing here knows about
drawers, SQL or filters, and no search ever returns a position its mask refuses.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
import structlog

log = structlog.get_logger("memhubd.recall.vectors")

EXACT_BELOW = 20_000  # rows; below this (or this many allowed rows) every search is exact
MIN_LISTS = 16
MAX_LISTS = 4096
MIN_PROBE = 8
PROBE_SHARE = 1 / 8  # of the lists, probed per search (0.84 of the exact top 200 at 100k)
TRAIN_PER_LIST = 32  # sample rows per centroid when training
TRAIN_ROUNDS = 8
RETRAIN_GROWTH = 2.0  # retrain when the rows double since the last training
TAIL_SHARE = 1 / 32  # re-pack when the unlisted tail passes this share of the listed rows
MIN_TAIL = 4096
_BLOCK = 16_384  # rows per matrix product, to bound temporary score arrays


@dataclass(frozen=True, slots=True)
class _Layout:
    """A built index: the rows at slots [0, size) are stored list by list.

    `positions[slot]` is a listed slot's position and `slots[position]` its inverse;
    rows added after the build sit in the tail, where slot and position coincide."""

    centroids: np.ndarray  # (lists, dimension), unit length
    offsets: np.ndarray  # (lists + 1,): list j holds slots offsets[j]:offsets[j + 1]
    positions: np.ndarray
    slots: np.ndarray
    trained_rows: int  # rows the centroids were trained on, for the retrain rule

    @property
    def size(self) -> int:
        return len(self.positions)


class VectorIndex:
    """Vectors of one dimension; `search` is exact until the index holds `exact_below`
    rows, then approximate over the lists nearest the query and exact over the rest of
    what it looks at. Builds run on a background thread (or inline when `background` is
    false); until one is installed, searches stay exact."""

    def __init__(
        self, dimension: int, *, exact_below: int | None = None, background: bool = True
    ) -> None:
        self.dimension = dimension
        self.exact_below = EXACT_BELOW if exact_below is None else exact_below
        self._background = background
        self._lock = threading.Lock()
        self._buffer = np.zeros((0, dimension), dtype=np.float32)  # rows by slot
        self._count = 0
        self._layout: _Layout | None = None
        self._builder: threading.Thread | None = None
        self._closed = False

    def __len__(self) -> int:
        return self._count

    @property
    def listed(self) -> int:
        """Rows the built index holds in lists (0 while every search is exact)."""
        layout = self._layout
        return layout.size if layout is not None else 0

    # -- rows ---------------------------------------------------------------------------

    def add(self, vectors: np.ndarray) -> None:
        """Append rows; their positions follow the existing ones (`maybe_build` after)."""
        rows = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dimension)
        with self._lock:
            needed = self._count + len(rows)
            if needed > len(self._buffer):
                # Never written in place below `_count`: a builder may be reading them.
                grown = np.empty(
                    (max(needed, 2 * len(self._buffer), 1024), self.dimension), np.float32
                )
                grown[: self._count] = self._buffer[: self._count]
                self._buffer = grown
            self._buffer[self._count : needed] = rows
            self._count = needed

    def compacted(self, positions: np.ndarray) -> VectorIndex:
        """A new index of the rows at `positions` (ascending), in that order: position
        `positions[i]` here is position `i` there. This one is left as it is (a caller
        may still be searching it). Searches of the new one are exact until it is built."""
        with self._lock:
            count, layout, buffer = self._count, self._layout, self._buffer
        positions = np.asarray(positions, np.int64)
        if len(positions) and int(positions[-1]) >= count:
            raise ValueError("a position past the rows held")
        slots = positions if layout is None else _slots_of(layout, positions)
        fresh = VectorIndex(
            self.dimension, exact_below=self.exact_below, background=self._background
        )
        fresh.add(buffer[slots])
        fresh.maybe_build()
        return fresh

    def close(self) -> None:
        """Stop installing builds (a running one finishes and is dropped)."""
        self._closed = True

    def wait_built(self, timeout: float | None = None) -> bool:
        """Wait for a running build; True when none is left running."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
            return not builder.is_alive()
        return True

    # -- searches -----------------------------------------------------------------------

    def search(
        self, query: np.ndarray, allowed: np.ndarray | None, limit: int, *, probe: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The positions of the best `limit` allowed rows by inner product with `query`,
        best first (ties by position), and their scores. `allowed` is a mask over positions
        (None: all). `probe` overrides how many lists are scanned (benchmarks)."""
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._lock:
            count, layout, buffer = self._count, self._layout, self._buffer
        if count == 0 or limit <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if layout is None:
            positions, scores = np.arange(count), buffer[:count] @ vector
        elif allowed is not None and int(np.count_nonzero(allowed[:count])) <= self.exact_below:
            positions = np.flatnonzero(allowed[:count])
            scores = buffer[_slots_of(layout, positions)] @ vector
        else:
            positions, scores = self._probe(layout, buffer, count, vector, allowed, limit, probe)
        return _best(positions, scores, allowed, limit)

    def _probe(
        self,
        layout: _Layout,
        buffer: np.ndarray,
        count: int,
        vector: np.ndarray,
        allowed: np.ndarray | None,
        limit: int,
        probe: int | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Scores of the tail (exact) and of the lists nearest `vector`, probing more lists
        until at least `limit` allowed rows were seen or every list was."""
        lists = len(layout.centroids)
        wanted = probe or max(MIN_PROBE, math.ceil(lists * PROBE_SHARE))
        ranked = np.argsort(-(layout.centroids @ vector), kind="stable")
        parts_pos = [np.arange(layout.size, count)]
        parts_score = [buffer[layout.size : count] @ vector]
        seen = _allowed_count(parts_pos[0], allowed)
        done = 0
        while done < lists:
            for j in ranked[done : min(lists, wanted)]:
                start, stop = int(layout.offsets[j]), int(layout.offsets[j + 1])
                if stop > start:
                    parts_pos.append(layout.positions[start:stop])
                    parts_score.append(buffer[start:stop] @ vector)
                    seen += _allowed_count(parts_pos[-1], allowed)
            done = min(lists, wanted)
            if seen >= limit:
                break
            wanted *= 2
        return np.concatenate(parts_pos), np.concatenate(parts_score)

    def best_matches(self, rows: np.ndarray, allowed: np.ndarray) -> list[tuple[int, float] | None]:
        """For each row, the allowed position with the highest inner product, exactly."""
        queries = np.asarray(rows, dtype=np.float32).reshape(-1, self.dimension)
        with self._lock:
            count, layout, buffer = self._count, self._layout, self._buffer
        if count == 0 or not allowed[:count].any():
            return [None] * len(queries)
        slot_positions = _positions_of(layout, count)
        usable = allowed[slot_positions]
        best_score = np.full(len(queries), -np.inf, dtype=np.float32)
        best_slot = np.full(len(queries), -1, dtype=np.int64)
        for start in range(0, count, _BLOCK):
            stop = min(count, start + _BLOCK)
            scores = queries @ buffer[start:stop].T
            scores[:, ~usable[start:stop]] = -np.inf
            at = scores.argmax(axis=1)
            top = scores[np.arange(len(queries)), at]
            better = top > best_score
            best_score[better] = top[better]
            best_slot[better] = at[better] + start
        return [
            (int(slot_positions[s]), float(v)) if s >= 0 else None
            for s, v in zip(best_slot, best_score, strict=True)
        ]

    # -- building -----------------------------------------------------------------------

    def maybe_build(self) -> None:
        """Start a build when the rows passed `exact_below`, doubled since the last
        training, or left too long a tail outside the lists."""
        with self._lock:
            if self._closed or (self._builder is not None and self._builder.is_alive()):
                return
            count, layout = self._count, self._layout
            if count < self.exact_below:
                return
            if layout is None or count >= RETRAIN_GROWTH * layout.trained_rows:
                centroids = None
            elif count - layout.size > max(MIN_TAIL, int(layout.size * TAIL_SHARE)):
                centroids = layout.centroids
            else:
                return
            snapshot = self._buffer[:count]
            work = (snapshot, _positions_of(layout, count), layout, centroids)
            if not self._background:
                self._builder = None
            else:
                self._builder = threading.Thread(
                    target=self._build, args=work, name="recall-vector-index", daemon=True
                )
                self._builder.start()
                return
        self._build(*work)

    def _build(
        self,
        snapshot: np.ndarray,
        positions: np.ndarray,
        previous: _Layout | None,
        centroids: np.ndarray | None,
    ) -> None:
        try:
            rows = len(snapshot)
            if centroids is None:
                lists = int(min(MAX_LISTS, rows, max(MIN_LISTS, round(math.sqrt(rows)))))
                centroids = train(snapshot, lists)
                assign = assign_lists(snapshot, centroids)
                trained = rows
            else:
                assert previous is not None
                listed = np.repeat(np.arange(len(centroids)), np.diff(previous.offsets))
                tail = assign_lists(snapshot[previous.size :], centroids)
                assign = np.concatenate([listed, tail])
                trained = previous.trained_rows
            order = np.argsort(assign, kind="stable")
            counts = np.bincount(assign, minlength=len(centroids))
            offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            slot_positions = positions[order]
            slots = np.empty(rows, dtype=np.int64)
            slots[slot_positions] = np.arange(rows)
            packed = np.empty((rows + MIN_TAIL, self.dimension), np.float32)
            # mode="clip": with the default mode, `out` is filled through a full-size buffer.
            np.take(snapshot, order, axis=0, out=packed[:rows], mode="clip")
            self._install(packed, _Layout(centroids, offsets, slot_positions, slots, trained))
        except Exception as error:  # searches stay exact; logged, never silent
            log.error("vector index build failed", error=str(error), rows=len(snapshot))

    def _install(self, packed: np.ndarray, layout: _Layout) -> None:
        with self._lock:
            if self._closed:
                return
            count, rows = self._count, layout.size
            if count > len(packed):
                packed = np.concatenate(
                    [packed[:rows], np.empty((count - rows, self.dimension), np.float32)]
                )
            packed[rows:count] = self._buffer[rows:count]  # the tail added meanwhile
            self._buffer, self._layout = packed, layout
        log.info("vector index built", rows=layout.size, lists=len(layout.centroids))
        self.maybe_build()


def train(rows: np.ndarray, lists: int, rounds: int = TRAIN_ROUNDS, seed: int = 0) -> np.ndarray:
    """Spherical k-means centroids (unit length) of a sample of `rows`."""
    rng = np.random.default_rng(seed)
    size = min(len(rows), lists * TRAIN_PER_LIST)
    sample = rows[np.sort(rng.choice(len(rows), size, replace=False))]
    centroids = sample[rng.choice(size, lists, replace=False)].copy()
    for _ in range(rounds):
        assign = assign_lists(sample, centroids)
        counts = np.bincount(assign, minlength=lists)
        order = np.argsort(assign, kind="stable")
        filled = counts > 0
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[filled]
        centroids[filled] = np.add.reduceat(sample[order], starts, axis=0)
        empty = int((~filled).sum())
        if empty:  # an empty list restarts from a random row
            centroids[~filled] = sample[rng.choice(size, empty, replace=False)]
        norms = np.linalg.norm(centroids, axis=1, keepdims=True)
        centroids /= np.where(norms > 0, norms, 1)
    return centroids


def assign_lists(rows: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid by inner product."""
    out = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), _BLOCK):
        out[start : start + _BLOCK] = (rows[start : start + _BLOCK] @ centroids.T).argmax(axis=1)
    return out


def _positions_of(layout: _Layout | None, count: int) -> np.ndarray:
    """Every slot's position, for the first `count` slots."""
    listed = layout.positions if layout is not None else np.zeros(0, np.int64)
    return np.concatenate([listed, np.arange(len(listed), count)])


def _slots_of(layout: _Layout, positions: np.ndarray) -> np.ndarray:
    inside = positions < layout.size
    out = positions.copy()
    out[inside] = layout.slots[positions[inside]]
    return out


def _allowed_count(positions: np.ndarray, allowed: np.ndarray | None) -> int:
    return len(positions) if allowed is None else int(np.count_nonzero(allowed[positions]))


def _best(
    positions: np.ndarray, scores: np.ndarray, allowed: np.ndarray | None, limit: int
) -> tuple[np.ndarray, np.ndarray]:
    """The top `limit` allowed (position, score) pairs, best first, ties by position."""
    if allowed is not None:
        keep = allowed[positions]
        positions, scores = positions[keep], scores[keep]
    count = min(limit, len(scores))
    if count <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    if count < len(scores):
        top = np.argpartition(-scores, count - 1)[:count]
        positions, scores = positions[top], scores[top]
    order = np.lexsort((positions, -scores))
    return positions[order], scores[order]
