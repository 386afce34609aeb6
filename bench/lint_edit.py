"""The lint after a one-file edit, in process: thread CPU and RSS, as the daemon lints.

Restores a generated workspace from its parse cache (by default the 1M copy a kept
`bench/restart.py --keep` run serves, and that run's state dir, so the restore is a
restart's), lints it once, then edits one file N times (restored afterwards), builds
each next snapshot from the previous one and times its lint (`Snapshot.diagnostics`,
which hands the previous lint's results on). `--verify` also lints the last snapshot
from scratch and compares every diagnostic.

    python bench/lint_edit.py [--size 1m] [--edits 3] [--verify] [--generated]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1m")
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--verify", action="store_true", help="compare with a fresh lint")
    parser.add_argument(
        "--generated", action="store_true", help="the generated workspace and its parse cache"
    )
    args = parser.parse_args(argv)

    from memhubd.lint import lint_files
    from memhubd.runtime.cache import ParseCache
    from memhubd.runtime.heap import settled
    from memhubd.runtime.snapshot import build_snapshot

    size = synth.parse_size(args.size)
    data = synth.ensure_workspace(size)
    place = data.root.parent / f"{data.root.name}-daemon"
    root, folder = place / "ws", place / "state" / "parse-cache"
    if args.generated or not root.exists():
        root, folder = data.workspace, data.root.parent / f"{data.root.name}-parse-cache"
    began = time.perf_counter()
    snapshot = settled(
        lambda: build_snapshot("b", str(root), None, cache=ParseCache(folder)), collect=False
    )()
    print(f"restored {time.perf_counter() - began:.1f} s, RSS {rss_mb():.0f} MiB", flush=True)

    def linted(current):  # type: ignore[no-untyped-def]
        cpu = time.thread_time()
        found = current.diagnostics()
        return found, time.thread_time() - cpu

    found, first_cpu = linted(snapshot)
    print(
        f"first lint {first_cpu:.2f} s CPU, {len(found)} diagnostics, RSS {rss_mb():.0f} MiB",
        flush=True,
    )
    target = sorted(root.rglob("*.mem"))[len(list(root.rglob("*.mem"))) // 2]
    original = target.read_text(encoding="utf-8")
    cpus = []
    try:
        for n in range(args.edits):
            target.write_text(
                original + f'\nfact bench.lint_edit_{n} {{ claim: "edit {n}" '
                'evidence { source: "bench" quote: "q" } }\n',
                encoding="utf-8",
            )
            snapshot = settled(
                lambda previous=snapshot: build_snapshot(
                    "b", str(root), previous, trusted=True, changed={str(target)}
                ),
                collect=False,
            )()
            found, cpu = linted(snapshot)
            cpus.append(cpu)
            print(f"edit {n}: lint {cpu * 1000:.1f} ms CPU, RSS {rss_mb():.0f} MiB", flush=True)
    finally:
        target.write_text(original, encoding="utf-8")
    print(
        f"{synth.size_label(size)}: lint after a one-file edit median "
        f"{statistics.median(cpus) * 1000:.1f} ms CPU (first lint {first_cpu:.1f} s), "
        f"RSS {rss_mb():.0f} MiB",
        flush=True,
    )
    if args.verify:
        runs = [f.typed for f in snapshot.files if f.typed]
        fresh, _ = lint_files(snapshot.workspace, runs)

        def full(diags):  # type: ignore[no-untyped-def]
            return [(d.code, d.severity, d.message, d.file, d.line, d.decl_id) for d in diags]

        same = full(fresh) == full(found)
        print(f"verified against a fresh lint: {'same' if same else 'DIFFERENT'}", flush=True)
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
