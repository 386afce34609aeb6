"""Parsing a first build's files in worker processes, on every core.

A start with nothing to restore (a cold start, or many files new since the last run)
parses every file in one thread otherwise. Here worker processes read, parse, type and
index the files and send back each one's parse cache entry (`memhubd.runtime.cache`),
which the build restores as it restores a saved entry: the same declarations and
segments, and the compact form a restore holds (field blocks as bytes until read)
instead of every field decoded. The workers run ahead of the build, a bounded number of
chunks at a time, in the order it walks.

It must not decide what is served: a file a worker could not parse (or that changed
since) is left to the build, which parses it and reports its problem as usual.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import multiprocessing
import os
import pickle
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import structlog

from memhubd.runtime.confine import StatKey, stat_tuple
from memhubd.runtime.sources import Saved, SourceFile

log = structlog.get_logger("memhubd.parse_pool")

# Fewer files than this are parsed in the build's own thread: starting the workers (a
# fresh interpreter each, importing the daemon's main module and the parser: about a
# second of CPU each) costs about as much as parsing several hundred ordinary files.
MIN_FILES = 1000
CHUNK_FILES = 32
# Chunks handed to the workers ahead of the one the build waits for, per worker: enough
# to keep them busy, few enough that their answers never pile up in memory.
AHEAD_PER_WORKER = 4
MAX_WORKERS = 8


def worker_count() -> int:
    """Workers for this machine: one per core the process may run on, up to a limit."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


@contextlib.contextmanager
def pooled(
    walked: list[str], saved: Saved | None, real_root: str, registry: Any, *, first: bool
) -> Iterator[Any]:
    """What a build should restore from: `saved`, or (a first build with at least
    `MIN_FILES` files to parse, on more than one core) `saved` with the parses of
    worker processes behind it. The workers stop when the block ends."""
    workers = worker_count()
    if not first or workers < 2 or len(walked) < MIN_FILES:
        yield saved
        return
    todo = _not_saved(walked, saved)
    if len(todo) < MIN_FILES:
        yield saved
        return
    parses = PooledParses(todo, saved, real_root, registry, workers)
    try:
        yield parses
    finally:
        parses.close()


def _not_saved(walked: list[str], saved: Saved | None) -> list[str]:
    """The walked files that the consolidated snapshot does not hold as they are now
    (by stat, as the build tells): those are read, and most of them parsed."""
    if saved is None:
        return walked
    held = saved.consolidated
    todo = []
    for path in walked:
        item = held.get(path)
        if item is not None:
            try:
                if stat_tuple(os.stat(path)) == item[0]:
                    continue
            except OSError:
                continue  # gone: the build finds out
        todo.append(path)
    return todo


class PooledParses:
    """`Saved` for one first build (`by_stat`, `by_digest`), backed by worker parses
    of `paths` (in the order the build asks for them) for files `saved` does not hold."""

    def __init__(
        self, paths: list[str], saved: Saved | None, real_root: str, registry: Any, workers: int
    ) -> None:
        self.saved = saved
        self.registry = registry
        self.chunks = [paths[i : i + CHUNK_FILES] for i in range(0, len(paths), CHUNK_FILES)]
        self.chunk_of = {path: n for n, chunk in enumerate(self.chunks) for path in chunk}
        self.ahead = workers * AHEAD_PER_WORKER
        self.futures: dict[int, Future[list[tuple[str, str, bytes | None]]]] = {}
        self.submitted = 0
        self.current = -1  # the chunk whose answers are held in `answers`
        self.answers: dict[str, tuple[str, bytes | None]] = {}
        self.used = 0
        self.broken = False  # a worker died: the build parses whatever is left itself
        # Files whose entry the parse cache holds are restored by the build: a worker
        # reads and hashes them, and parses nothing (a start with no snapshot file).
        entries = None
        if saved is not None:
            folder = saved.cache._workspace_dir(saved.root)
            if folder.is_dir() and next(folder.glob("*.entry"), None) is not None:
                entries = (str(folder), saved.types)
        # None of the files has an entry (a cold start): none is looked for, file by file.
        self.entries = entries is not None
        self.executor = ProcessPoolExecutor(
            max_workers=workers,
            # Not fork: the daemon has threads (the event loop, watchers) by now.
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(pickle.dumps(registry), real_root, entries),
        )
        self._submit_up_to(self.ahead)

    @property
    def consolidated(self) -> dict[str, Any]:
        return self.saved.consolidated if self.saved is not None else {}

    def by_stat(self, path: str, stat: StatKey) -> SourceFile | None:
        return self.saved.by_stat(path, stat) if self.saved is not None else None

    def last_good(self, path: str) -> SourceFile | None:
        return self.saved.last_good(path) if self.saved is not None else None

    def by_digest(self, path: str, digest: str, text: str) -> tuple[Any, ...] | None:
        """(document, typed declarations, segment, registry) for exactly these bytes:
        from the parse cache, else from a worker's parse of the same bytes."""
        if self.saved is not None:
            if self.entries:
                entry = self.saved.by_digest(path, digest, text)
                if entry is not None:
                    return entry
            else:
                self.saved.cache.misses += 1  # as the lookup would count it
        found = self._answer(path)
        if found is None or found[0] != digest or found[1] is None:
            return None  # changed since the worker read it, or left to the build
        from memhubd.runtime.cache import _decode

        try:
            document, typed, segment = _decode(marshal.loads(found[1]), path, text, self.registry)
        except Exception:  # a worker's answer the build cannot use: it parses the file
            log.exception("pooled parse unusable", path=path)
            return None
        self.used += 1
        return document, typed, segment, self.registry

    def _answer(self, path: str) -> tuple[str, bytes | None] | None:
        n = self.chunk_of.get(path)
        if n is None:
            return None
        if n != self.current:
            if n < self.current:
                return None  # asked out of order: the build parses it itself
            self._submit_up_to(n + 1 + self.ahead)
            for earlier in [k for k in self.futures if k < n]:
                self.futures.pop(earlier).cancel()  # skipped by the build
            future = self.futures.pop(n, None)
            if future is None:
                return None  # never handed out: the pool broke first
            try:
                results = future.result()
            except Exception:  # e.g. a worker killed: the pool is unusable from now on
                log.exception("pooled parse failed", files=len(self.chunks[n]))
                self.broken = True
                results = []
            self.current = n
            self.answers = {p: (digest, payload) for p, digest, payload in results}
        return self.answers.pop(path, None)

    def _submit_up_to(self, end: int) -> None:
        while not self.broken and self.submitted < min(end, len(self.chunks)):
            chunk = self.chunks[self.submitted]
            try:
                self.futures[self.submitted] = self.executor.submit(_parse_chunk, chunk)
            except Exception:  # a worker died: the build parses the rest itself
                log.exception("pooled parse failed", files=len(chunk))
                self.broken = True
                return
            self.submitted += 1

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        log.info(
            "pooled parses",
            files=len(self.chunk_of),
            used=self.used,
            chunks=len(self.chunks),
        )


# --- in the worker process ------------------------------------------------------------

_registry: Any = None
_real_root = ""
_entries: tuple[str, str] | None = None  # (the parse cache's folder, the types' key)


def _start_worker(registry: bytes, real_root: str, entries: tuple[str, str] | None) -> None:
    global _registry, _real_root, _entries
    # A worker builds a chunk's trees and drops them: nothing for the collector to find.
    gc.disable()
    _registry = pickle.loads(registry)
    _real_root = real_root
    _entries = entries


def _parse_chunk(paths: list[str]) -> list[tuple[str, str, bytes | None]]:
    """(path, digest of the bytes read, entry payload or None) per path; None (or a
    path left out) leaves that file to the build."""
    from memhubd.runtime.confine import Refused

    results = []
    for path in paths:
        try:
            results.append(_parse_one(path))
        except Refused:
            continue  # the build refuses it itself
        except Exception:  # the build reads it again and decides
            log.exception("pooled parse failed", path=path)
    return results


def _parse_one(path: str) -> tuple[str, str, bytes | None]:
    from memhubd.runtime.cache import ParseCache, _encode
    from memhubd.runtime.confine import read_confined
    from memhubd.runtime.sources import content_digest, load_file

    if _entries is not None:
        found = read_confined(path, _real_root)
        if found is None:
            return path, "", None
        digest = content_digest(found[0])
        folder, types = _entries
        if os.path.exists(os.path.join(folder, ParseCache._entry_name(path, digest, types))):
            return path, digest, None  # the build restores its entry
    loaded = load_file(path, None, _real_root)  # read and parsed as the build would
    if loaded is None:
        return path, "", None
    if loaded.document is None or loaded.problem is not None:
        return path, loaded.digest, None
    typed = loaded.with_types(_registry).with_segment()
    if typed.segment is None:  # no declarations: nothing worth sending
        return path, loaded.digest, None
    return path, loaded.digest, _encode(path, loaded.digest, typed.document, typed.segment)
