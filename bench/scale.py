"""Query and check latency at scale, in one process: load a generated workspace once (from
a parse cache kept beside it when there is one), then time the workload's queries and
checks, optionally under cProfile. memhub only; answers are not compared here.

The parse cache lives in bench/.cache/<workspace>-parse-cache and is written on the first
run (at 1M declarations parsing takes minutes, restoring about a third of that).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import pstats
import resource
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import synth


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(size: int, shape: str = "spread") -> object:
    """The workspace's first snapshot, restored from the parse cache (saved if new)."""
    from memhubd.runtime.cache import ParseCache
    from memhubd.runtime.snapshot import build_snapshot, persist

    data = synth.ensure_workspace(size, shape=shape)
    cache_dir = data.root.parent / f"{data.root.name}-parse-cache"
    cache = ParseCache(cache_dir)
    started = time.perf_counter()
    snapshot = build_snapshot("bench", str(data.workspace), None, cache=cache)
    took = time.perf_counter() - started
    # A cache of another format version (an older tree's run) is refused entry by entry
    # and the files are parsed: say so, and save the cache again for the next run.
    parsed = cache.misses + cache.refused
    how = "parsed" if cache.hits == 0 else "restored from the parse cache"
    if parsed and cache.hits:
        how += f", {parsed} entries missing or refused and parsed"
    print(f"loaded {len(snapshot.workspace.declarations)} declarations ({how}) in {took:.1f} s")
    if parsed or cache.hits == 0:
        before = rss_mib()
        with _highest_rss() as highest:
            started = time.perf_counter()
            persist(snapshot, cache)
            took = time.perf_counter() - started
        print(
            f"parse cache saved in {took:.1f} s (RSS {before:.0f} MiB before, "
            f"at most {highest[0]:.0f} MiB while saving: +{highest[0] - before:.0f})"
        )
    return snapshot


@contextlib.contextmanager
def _highest_rss() -> Iterator[list[float]]:
    """The highest RSS seen while the block runs (sampled every 10 ms), in [0]."""
    highest = [rss_mib()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            highest[0] = max(highest[0], rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield highest
    finally:
        done.set()
        sampler.join()
        highest[0] = max(highest[0], rss_mib())


def timed(label: str, call, items: list[dict], profile: cProfile.Profile | None) -> None:
    """Wall and CPU time per call: on a shared machine the CPU time is the figure to compare."""
    wall, cpu = [], []
    for item in items:
        if profile is not None:
            profile.enable()
        started, started_cpu = time.perf_counter(), time.process_time()
        call(item)
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
        if profile is not None:
            profile.disable()
    print(f"{label}: n {len(wall)}, {_percentiles(wall)} wall, {_percentiles(cpu)} cpu", flush=True)


def _percentiles(times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:.2f} ms / p99 {p99 * 1000:.2f} ms"


def compose(index: object, edits: int) -> None:
    """CPU time of a from-scratch composition, then of `edits` one-file updates."""
    from memhubd.index import WorkspaceIndex, build_segment

    segments = list(index.segments)  # type: ignore[attr-defined]
    started = time.process_time()
    WorkspaceIndex(segments)
    print(f"index composed from scratch in {time.process_time() - started:.2f} s cpu")
    gc.collect()
    previous, cpu = index, []
    for edit in range(edits):
        at = (edit * 7919) % len(segments)  # files spread over the workspace
        segments[at] = build_segment(segments[at].declarations)
        started = time.process_time()
        previous = WorkspaceIndex(segments, previous=previous)
        cpu.append(time.process_time() - started)
    print(f"index updated for one file: n {edits}, {_percentiles(cpu)} cpu", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100k")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--passes", type=int, default=2, help="times the workload is run")
    parser.add_argument(
        "--profile", type=int, metavar="N", help="profile the last pass, print its top N"
    )
    parser.add_argument(
        "--compose",
        type=int,
        default=0,
        metavar="N",
        help="also time composing the index from scratch, and N times from the previous "
        "one after one file's segment is rebuilt (the builder's share of an edit)",
    )
    args = parser.parse_args(argv)

    from memhubd.check import check_compliance
    from memhubd.index.workspace import index_for
    from memhubd.query import build_evidence_pack

    size = synth.parse_size(args.size)
    snapshot = load(size)
    ws = snapshot.workspace  # type: ignore[attr-defined]
    index_for(ws)
    gc.collect()
    print(f"RSS after load {rss_mib():.0f} MiB, peak {peak_mib():.0f} MiB", flush=True)
    if args.compose:
        compose(index_for(ws), args.compose)
    workload = synth.ensure_workspace(size)
    queries = workload.queries()[: args.queries]
    checks = workload.checks()[: args.checks]
    profile = cProfile.Profile() if args.profile else None

    def query(q: dict) -> object:
        return build_evidence_pack(
            ws, q["query"], subject=q["subject"], limit=q["limit"], types=q["types"]
        )

    def check(c: dict) -> object:
        return check_compliance(
            ws,
            c["task"],
            c["candidate"],
            subject=c["subject"],
            scope=c["scope"],
            exceptions=c["exceptions"] or None,
        )

    for number in range(1, args.passes + 1):
        traced = profile if number == args.passes else None  # the last pass is profiled
        timed(f"pass {number} query", query, queries, traced)
        timed(f"pass {number} check", check, checks, traced)
    print(f"RSS at the end {rss_mib():.0f} MiB, peak {peak_mib():.0f} MiB")
    if profile is not None:
        pstats.Stats(profile, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)
        pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
