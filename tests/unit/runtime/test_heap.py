"""A built snapshot is frozen out of the cycle collector's walks, and frozen cycles are
taken back whenever the allocator's live blocks have grown by a tenth since the last
full collection."""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Iterator

import pytest

from memhubd.runtime import heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.collect()
    yield
    gc.unfreeze()
    heap._size_after_collect = 0
    gc.collect()


def test_what_a_build_makes_is_frozen_and_left_out_of_collections() -> None:
    built = heap.settled(lambda: [Node() for _ in range(1000)])()

    tracked = {id(item) for generation in range(3) for item in gc.get_objects(generation)}
    assert id(built) not in tracked
    assert gc.get_freeze_count() >= 1000
    assert gc.isenabled()


def test_a_build_runs_with_the_collector_paused() -> None:
    seen: list[bool] = []

    heap.settled(lambda: seen.append(gc.isenabled()))()

    assert seen == [False] and gc.isenabled()


def test_frozen_cycles_are_collected_once_memory_has_grown_by_a_tenth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    size = [100]
    monkeypatch.setattr(heap, "_heap_size", lambda: size[0])
    heap.settle_long_lived()  # the baseline: 100
    cycle = Node()
    cycle.other = Node()
    cycle.other.other = cycle
    gone = weakref.ref(cycle)
    size[0] = 109
    heap.settle_long_lived()
    del cycle
    gc.collect()
    assert gone() is not None  # frozen: a collection does not see it

    size[0] = 111
    heap.settle_long_lived()

    assert gone() is None


def _frozen_garbage(count: int) -> weakref.ref[Node]:
    """`count` two-node cycles, frozen while alive, then garbage; a ref to one of them."""
    cycles = []
    for _ in range(count):
        cycle = Node()
        cycle.other = Node()
        cycle.other.other = cycle
        cycles.append(cycle)
    gone = weakref.ref(cycles[0])
    gc.freeze()
    del cycles, cycle
    return gone


def test_frozen_garbage_is_taken_back_again_and_again_not_only_past_a_peak() -> None:
    heap.settle_long_lived()  # the baseline: what the allocator holds now
    pairs = sys.getallocatedblocks() // 4  # a cycle is 4 blocks or more: 25% growth
    for _ in range(3):  # a peak-based baseline would let only the first round through
        gone = _frozen_garbage(pairs)
        gc.collect()
        assert gone() is not None  # frozen: an ordinary collection leaves it

        heap.settle_long_lived()

        assert gone() is None
