"""A built snapshot is frozen out of the cycle collector's walks, and frozen cycles are
taken back once the process's peak memory has grown by a tenth."""

from __future__ import annotations

import gc
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
