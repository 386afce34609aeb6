"""The cycle collector and the daemon's long-lived heap.

A served snapshot (declarations, index, lint) lives until a reload replaces it. Left
in the collector's generations, it is walked again on every older-generation
collection, and a build made with the collector paused leaves it all in the youngest
generation, so the next request to allocate pays for walking all of it: pauses of tens
of milliseconds on the event loop, the tail of the HTTP latency. Freezing it once it
is built takes it out of those walks. Nothing here decides when a snapshot is built.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from memhubd.model.workspace import cyclic_gc_paused

T = TypeVar("T")

# A frozen object freed by reference counting leaves the frozen set. What cannot be
# freed that way are cycles frozen while still alive: the state of requests in flight
# during a settle, garbage once they end. So when the objects the allocator holds have
# grown by a tenth since the last full collection, one takes them back. Counted in the
# allocator's blocks (`sys.getallocatedblocks`, a pass over its arenas, not its
# objects), never in the process's memory: freed memory stays mapped, so a baseline
# of memory would only ever rise, and so would the garbage allowed over it. Counting
# objects would walk every frozen one.
_GROWTH_BEFORE_COLLECTING = 1.1
_lock = threading.Lock()
_size_after_collect = 0


def _heap_size() -> int:
    return sys.getallocatedblocks()


def settle_long_lived(*, collect: bool = True) -> None:
    """Freeze every object alive now (`gc.freeze`). Run it right after a snapshot, its
    index or its lint is built, best while the collector is still paused.

    `collect=False` never runs the full collection that growth calls for (it holds the
    GIL for as long as the heap takes to walk): for a path someone waits on."""
    global _size_after_collect
    with _lock:
        gc.freeze()
        if not collect:
            return
        size = _heap_size()
        if not _size_after_collect:
            _size_after_collect = size
        elif size > _GROWTH_BEFORE_COLLECTING * _size_after_collect:
            gc.unfreeze()
            gc.collect()
            _size_after_collect = _heap_size()
            gc.freeze()


def settled(build: Callable[[], T], *, collect: bool = True) -> Callable[[], T]:
    """`build`, run with the collector paused and what it made frozen before it resumes
    (`collect`: as in `settle_long_lived`)."""

    def run() -> T:
        with cyclic_gc_paused():
            result = build()
            settle_long_lived(collect=collect)
        return result

    return run
