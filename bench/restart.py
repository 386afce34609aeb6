"""Restart and edit benchmarks: a daemon's cold start against a warm start from its
persisted parse cache, and a one-file edit until a query serves it, with RSS.

A script, not a test: it prints numbers. For each size it serves a generated
workspace (`synth`) with a real `memhubd serve` and default settings:

* cold: an empty state dir; time from process start to the first query answered;
* warm: the same state dir again (the first run saved the parse cache), `--starts` times
  (the median, and the modules the daemon had imported by its first answer);
* edit: once the warm daemon is idle (its first lint and cache save done), `--edits`
  times append one declaration to one file (0.3 s apart) and time until the status
  reports a reload (its `reloaded` event: write -> served, watcher included) and until a query
  returns the declaration (that query's own cost included);
* query: p50 of the workload's queries against the warm daemon; RSS after all that.

`--trace` serves the edits at log level debug and prints, per edit, where its time went
(the daemon's monotonic marks: watcher batch, reload lock, build and its CPU time, swap,
event) and how long the lint and cache save after each swap took.

`--in-process` measures the builder alone instead: the first snapshot parsed, then
restored from the parse cache (with and without its consolidated snapshot file; the
former also in a new process, as a daemon's start makes it, with the CPU of its steps),
and the next snapshot after each one-file edit.

    python bench/restart.py [--sizes 10k,100k,1m] [--edits 20] [--queries 200] [--in-process]
                            [--starts N] [--trace] [--keep] [--roles ROLES]
                            [--shape spread|clustered]

`--roles` gives the requests' token those roles instead of `*`, so that every answer is
served from that role set's view (the synthetic workspaces hide about 5% of their
declarations from a token without `developer` or `coding_agent`).

Set PYTHONPATH to time other code (e.g. a worktree's daemon/, client/ and protocol/): the
daemons run from it, and it is compiled as the repository's own code is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402
from harness import REPO_ROOT as REPO  # noqa: E402
from soak import rss_mb  # noqa: E402

from daemon import BIN, free_port, wait_until_idle  # noqa: E402

# `memhubd serve` as its console script runs it; on SIGUSR1 it writes how many modules
# it has imported to $MEMHUB_BENCH_MODULES.
SERVE = """
import os, signal, sys
def count(*_):
    path = os.environ["MEMHUB_BENCH_MODULES"]
    with open(path + ".part", "w") as out:
        out.write(str(sum(1 for module in sys.modules.values() if module is not None)))
    os.replace(path + ".part", path)
signal.signal(signal.SIGUSR1, count)
from memhubd.cli import main
sys.argv[0] = "memhubd"
sys.exit(main())
"""


class Served:
    """`memhubd serve` over `root` with `state`; `started_s`: start -> first answer,
    `cpu_s`: the daemon's CPU time by then (steadier than wall time on a shared machine),
    `modules`: how many modules it had imported by then."""

    def __init__(self, root: Path, state: Path, token: str, *, trace: bool = False) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        self.headers = {"authorization": f"Bearer {token}"}
        self.socket = str(Path(tempfile.mkdtemp(prefix="mhr-")) / "d.sock")
        self.log = state.parent / "daemon.log"
        counted = Path(self.socket).with_name("modules")
        begun = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SERVE,
                "serve",
                "--port",
                self.url.rsplit(":", 1)[1],
                "--socket",
                self.socket,
                "--state-dir",
                str(state),
                "--workspace",
                f"bench={root}",
                *(["--log-level", "debug"] if trace else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "ab"),  # noqa: SIM115 - the daemon's lifetime
            env={**os.environ, "MEMHUB_BENCH_MODULES": str(counted)},
        )
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("daemon exited; see daemon.log")
            try:
                answer = self.query("warm up")
                if answer.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.started_s = time.perf_counter() - begun
        self.cpu_s = process_cpu_s(self.proc.pid)
        self.proc.send_signal(signal.SIGUSR1)
        while not counted.exists() and time.perf_counter() - begun < self.started_s + 10:
            time.sleep(0.01)
        self.modules = int(counted.read_text()) if counted.exists() else 0

    def query(self, text: str) -> httpx.Response:
        return httpx.post(
            f"{self.url}/v1/workspaces/bench/query",
            json={"query": text, "limit": 8},
            headers=self.headers,
            timeout=600,
        )

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:  # at 1M a lint in progress can outlast this
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(Path(self.socket).parent, ignore_errors=True)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds process `pid` has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def token(state: Path, roles: str = "*") -> str:
    """A new token of every scope with `roles` (comma-separated; empty: none)."""
    created = subprocess.run(
        # A name of its own: a kept state dir (`--keep`) holds earlier runs' tokens.
        [str(BIN / "memhubd"), "token", "create", f"bench{os.getpid()}", "--scopes", "all"]
        + (["--roles", roles] if roles else [])
        + ["--state-dir", str(state), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return str(json.loads(created.stdout)["token"])


def revoke(state: Path) -> None:
    """Revoke the token `token` made for this run."""
    subprocess.run(
        [str(BIN / "memhubd"), "token", "revoke", f"bench{os.getpid()}"]
        + ["--state-dir", str(state)],
        check=True,
        capture_output=True,
    )


def wait_for_cache(state: Path, files: int, timeout_s: float = 1800) -> None:
    """The cache is written off the request path after the first load: wait for its
    entries and then its consolidated snapshot file."""
    deadline = time.monotonic() + timeout_s
    cache = state / "parse-cache"
    while time.monotonic() < deadline:
        if len(list(cache.glob("*/*.entry"))) >= files and list(cache.glob("*/snapshot")):
            return
        time.sleep(0.5)


class Reloads:
    """The daemon's `reloaded` events as (arrival time, generation), from its SSE stream:
    no polling that would compete with the reload it times."""

    def __init__(self, daemon: Served) -> None:
        self.seen: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, args=(daemon,), daemon=True)
        self._thread.start()
        time.sleep(0.5)

    def _listen(self, daemon: Served) -> None:
        with httpx.stream(
            "GET", daemon.url + "/v1/events", headers=daemon.headers, timeout=None
        ) as response:
            for line in response.iter_lines():
                if self._stop.is_set():
                    return
                if line.startswith("data: ") and '"event": "reloaded"' in line:
                    # monotonic: the daemon's trace lines use the same clock
                    self.seen.append((time.monotonic(), json.loads(line[6:])["generation"]))

    def after(self, moment: float) -> tuple[float, int] | None:
        arrived = [seen for seen in self.seen if seen[0] >= moment]
        return arrived[0] if arrived else None

    def stop(self) -> None:
        self._stop.set()


def edit_to_served(
    daemon: Served, root: Path, edits: int
) -> tuple[list[float], list[float], list[tuple[float, float, int]]]:
    """Append one uniquely worded declaration; time until a new generation is served
    (its `reloaded` event) and until a query returns the declaration. Also returns each
    edit's (written, event arrived, generation), monotonic, for `breakdown`."""
    target = sorted(root.rglob("*.mem"))[len(list(root.rglob("*.mem"))) // 2]
    original = target.read_text(encoding="utf-8")
    seen = []
    swapped = []
    moments: list[tuple[float, float, int]] = []
    added = ""
    reloads = Reloads(daemon)
    try:
        for n in range(edits):
            word = f"zqx{n}restartbench"
            # Each edit adds to the last one's text: an edit that also dropped the
            # previous declaration would be held for `watch.settle_ms` by design.
            added += (
                f'\nfact bench.edit_{n} {{ claim: "{word} marks this edit." '
                f'evidence {{ source: "bench" quote: "q" }} }}\n'
            )
            text = original + added
            temporary = target.with_suffix(".tmp")
            temporary.write_text(text, encoding="utf-8")
            written = time.monotonic()
            temporary.replace(target)
            while time.monotonic() - written < 60:
                event = reloads.after(written)
                if event is not None:
                    swapped.append(event[0] - written)
                    moments.append((written, *event))
                    break
                time.sleep(0.001)
            while time.monotonic() - written < 60:
                if f"bench.edit_{n}" in daemon.query(word).text:
                    seen.append(time.monotonic() - written)
                    break
                time.sleep(0.002)
            time.sleep(0.3)
    finally:
        reloads.stop()
        target.write_text(original, encoding="utf-8")
    return swapped, seen, moments


# The daemon's debug trace of a reload (runtime/watcher.py and runtime/hub.py), as the
# steps between its monotonic marks; `arrived` is when the bench read the event.
STEPS = (
    ("watch", "written", "received"),  # watchfiles noticed the batch and handed it over
    ("deliver", "received", "delivered"),  # the watcher's lock and stat of the paths
    ("call", "delivered", "entered"),
    ("lock", "entered", "locked"),  # an earlier reload still running
    ("queue", "locked", "build_started"),  # worker thread and build limiter
    ("build", "build_started", "built"),
    ("settle", "built", "returned"),  # freezing the heap (a full collection at times)
    ("swap", "returned", "swapped"),
    ("publish", "swapped", "reported"),
    ("deliver_event", "reported", "arrived"),  # SSE fan-out to the bench
)


def breakdown(log: Path, moments: list[tuple[float, float, int]]) -> None:
    """Print where each edit's time went, from the trace lines of a daemon run with
    `--log-level debug`, and the median of each step."""
    batches, reloads, warms = [], {}, []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if record.get("event") == "workspace_batch":
            batches.append(record)
        elif record.get("event") == "reload_trace":
            reloads[record["generation"]] = record
        elif record.get("event") == "warm_trace":
            warms.append(record)
    per_step: dict[str, list[float]] = {name: [] for name, _, _ in STEPS}
    for written, arrived, generation in moments:
        marks = {"written": written, "arrived": arrived, **reloads.get(generation, {})}
        batch = next((b for b in batches if b["received"] >= written), None)
        if batch is not None:
            marks.update(received=batch["received"], delivered=batch["delivered"])
        # A lint or cache save of an earlier snapshot running while this edit was served.
        busy = any(
            w.get(start, arrived) < arrived and w.get(end, written) > written
            for w in warms
            for start, end in (("started", "indexed"), ("quiet", "ended"))
        )
        parts = []
        for name, start, end in STEPS:
            if start in marks and end in marks:
                took = (marks[end] - marks[start]) * 1000
                per_step[name].append(took)
                parts.append(f"{name} {took:.0f}")
        if "build_cpu" in marks:
            per_step.setdefault("build_cpu", []).append(marks["build_cpu"] * 1000)
            parts.append(f"(build CPU {marks['build_cpu'] * 1000:.0f})")
        total = (arrived - written) * 1000
        print(f"  edit {total:.0f} ms: " + ", ".join(parts) + (" [warming]" if busy else ""))
    medians = ", ".join(f"{n} {statistics.median(t):.0f}" for n, t in per_step.items() if t)
    print(f"  median ms: {medians}", flush=True)
    warm_steps = (("index", "started", "indexed"), ("wait", "indexed", "quiet"))
    warm_steps += (("persist", "quiet", "persisted"), ("lint", "persisted", "linted"))
    warm_steps += (("settle", "linted", "ended"),)
    spans = {
        name: [(w[end] - w[start]) * 1000 for w in warms if start in w and end in w]
        for name, start, end in warm_steps
    }
    print(
        f"  after each swap ({len(warms)} runs), median ms: "
        + ", ".join(f"{n} {statistics.median(t):.0f}" for n, t in spans.items() if t),
        flush=True,
    )


def query_p50(daemon: Served, workload: list[dict], count: int) -> float:
    times = []
    for item in workload[:count]:
        begun = time.perf_counter()
        daemon.query(item["query"]).raise_for_status()
        times.append(time.perf_counter() - begun)
    return statistics.median(times)


def run(
    size: int,
    edits: int,
    queries: int,
    trace: bool = False,
    keep: bool = False,
    starts: int = 1,
    roles: str = "*",
    shape: str = "spread",
) -> dict:
    """`keep`: serve a copy of the workspace and a state dir kept beside it
    (bench/.cache/<workspace>-daemon) across runs, so that only the first run pays the
    cold start (minutes at 1M); later runs report no cold figure. `starts`: warm starts
    timed (each stopped after its first answer but the last, which the edits use).
    `roles`: the roles of the token every request uses (its view of the workspace);
    `shape`: the generated workspace's (`synth.SHAPES`)."""
    data = synth.ensure_workspace(size, shape=shape)
    with tempfile.TemporaryDirectory(prefix="mh-restart-") as tmp:
        place = data.root.parent / f"{data.root.name}-daemon" if keep else Path(tmp)
        root = place / "ws"
        state = place / "state"
        if not root.exists():
            shutil.copytree(data.workspace, root.with_name("ws.tmp"), dirs_exist_ok=True)
            root.with_name("ws.tmp").rename(root)
        (place / "daemon.log").unlink(missing_ok=True)
        secret = token(state, roles)
        files = len(list(root.rglob("*.mem")))
        cold = None
        if not list((state / "parse-cache").glob("*/snapshot")):
            cold = Served(root, state, secret)
            wait_for_cache(state, files)
            cold.stop()
        earlier = []
        for _ in range(starts - 1):
            earlier.append(Served(root, state, secret))
            earlier[-1].stop()
        warm = Served(root, state, secret, trace=trace)
        every = [*earlier, warm]
        try:
            settled = wait_until_idle(warm.proc.pid, quiet_s=1.0, timeout_s=600)
            load = os.getloadavg()[0]
            swapped, served, moments = edit_to_served(warm, root, edits)
            if trace:
                breakdown(warm.log, moments)
            p50 = query_p50(warm, data.queries(), queries)
            rss = rss_mb(warm.proc.pid)
        finally:
            warm.stop()
            if keep:  # a kept state dir's tokens would have later runs warm their views
                revoke(state)
    return {
        "size": size,
        "cold_s": cold.started_s if cold is not None else None,
        "cold_cpu_s": cold.cpu_s if cold is not None else None,
        "warm_s": statistics.median(start.started_s for start in every),
        "warm_cpu_s": statistics.median(start.cpu_s for start in every),
        "warm_all_s": [start.started_s for start in every],
        "warm_modules": warm.modules,
        "settled_s": settled,
        "swap_median_ms": statistics.median(swapped) * 1000 if swapped else None,
        "swap_max_ms": max(swapped) * 1000 if swapped else None,
        "edit_median_ms": statistics.median(served) * 1000 if served else None,
        "edit_max_ms": max(served) * 1000 if served else None,
        "query_p50_ms": p50 * 1000,
        "rss_mb": rss,
        "edit_load": load,
    }


def in_process(size: int, edits: int) -> None:
    """`build_snapshot` timings without a daemon: cold, from the cache, per edit.

    Each figure is wall time and, in brackets, the process's CPU time (steadier on a
    shared machine). "From the snapshot" is a start with the consolidated snapshot file,
    "from the entries" one without it (every file read, hashed and restored from its
    entry). An edit's build is told the edited path, as the watcher tells the daemon; each
    is paired with one that walks, timed with the watcher's walk before it (the former way).
    """
    from memhubd.runtime.cache import ParseCache
    from memhubd.runtime.snapshot import build_snapshot, persist
    from memhubd.runtime.watcher import workspace_signature

    def timed(build):  # type: ignore[no-untyped-def]
        wall, cpu = time.perf_counter(), time.process_time()
        result = build()
        return result, time.perf_counter() - wall, time.process_time() - cpu

    data = synth.ensure_workspace(size)
    with tempfile.TemporaryDirectory(prefix="mh-restart-") as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(data.workspace, root)
        folder = Path(tmp) / "parse-cache"
        cache = ParseCache(folder)
        with composing_timed() as composed:
            snapshot, cold, cold_cpu = timed(
                lambda: build_snapshot("b", str(root), None, cache=cache)
            )
        persist(snapshot, cache)
        _, warm, warm_cpu = timed(
            lambda: build_snapshot("b", str(root), None, cache=ParseCache(folder))
        )
        restart = restored_in_new_process(root, folder)
        for file in folder.glob("*/snapshot"):
            file.unlink()
        _, entries, entries_cpu = timed(
            lambda: build_snapshot("b", str(root), None, cache=ParseCache(folder))
        )
        target = sorted(root.rglob("*.mem"))[len(list(root.rglob("*.mem"))) // 2]
        original = target.read_text(encoding="utf-8")
        times, cpus, walks = [], [], []
        for n in range(edits):
            for told in (False, True):  # a walk as every reload made before, then as now
                target.write_text(
                    original + f'\nfact bench.edit_{n}_{told} {{ claim: "edit {n}" '
                    f'evidence {{ source: "bench" quote: "q" }} }}\n',
                    encoding="utf-8",
                )
                snapshot, took, cpu = timed(
                    lambda previous=snapshot, told=told: build_snapshot(
                        "b", str(root), previous, trusted=True,
                        changed={str(target)} if told else None,
                    )
                )  # fmt: skip
                if told:
                    times.append(took)
                    cpus.append(cpu)
                else:
                    # The watcher's walk that came before each reload, and the build's own.
                    signature = timed(lambda: workspace_signature(root))[2]
                    walks.append(cpu + signature)
                time.sleep(0.3)
    print(
        f"{synth.size_label(size)} in process: first snapshot parsed {cold:.2f} s "
        f"({cold_cpu:.2f} s CPU, of which composing its index {composed[0]:.2f} s), "
        f"from the snapshot {warm:.2f} s ({warm_cpu:.2f} s CPU; "
        f"in a new process {restart['wall']:.2f} s, {restart['cpu']:.2f} s CPU: file "
        f"{restart['file']:.2f}, declarations {restart['declarations']:.2f}, index "
        f"{restart['index']:.2f}), "
        f"from the entries {entries:.2f} s ({entries_cpu:.2f} s CPU), next snapshot after "
        f"a one-file edit median {statistics.median(times) * 1000:.0f} ms "
        f"({statistics.median(cpus) * 1000:.0f} ms CPU; max {max(times) * 1000:.0f} ms); "
        f"walking instead, watcher and build: {statistics.median(walks) * 1000:.0f} ms CPU",
        flush=True,
    )


@contextlib.contextmanager
def composing_timed() -> Iterator[list[float]]:
    """The CPU time the builds in the block spend composing their workspace index
    (after every file is parsed or restored: on one core, the tail of a cold start)."""
    import memhubd.runtime.snapshot as snapshot_module

    inner = snapshot_module._index_from_segments
    spent = [0.0]

    def composing(*args, **kwargs):  # type: ignore[no-untyped-def]
        begun = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - begun

    snapshot_module._index_from_segments = composing
    try:
        yield spent
    finally:
        snapshot_module._index_from_segments = inner


def restored_in_new_process(root: Path, folder: Path) -> dict[str, float]:
    """A restart's `build_snapshot` from the snapshot file in a fresh process (as a
    daemon's start makes it, with nothing interned yet), and the CPU of its steps."""
    found = subprocess.run(
        [sys.executable, __file__, "--restore", str(root), str(folder)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(found.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def restore_steps(root: str, folder: str) -> None:
    """Print (JSON) the wall and CPU time of one start from `folder`'s snapshot file and
    the CPU of its steps: reading, verifying and unmarshalling the file, rebuilding the
    declarations and segments, composing the workspace index."""
    import memhubd.runtime.cache as cache_module
    import memhubd.runtime.snapshot as snapshot_module

    steps = {"file": 0.0, "declarations": 0.0, "index": 0.0}

    def counted(owner, name, step):  # type: ignore[no-untyped-def]
        inner = getattr(owner, name)

        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            begun = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                steps[step] += time.process_time() - begun

        setattr(owner, name, call)

    counted(cache_module.ParseCache, "load_snapshot", "file")
    counted(cache_module, "_decode", "declarations")
    counted(snapshot_module, "_index_from_segments", "index")
    from memhubd.runtime.heap import settled

    wall, cpu = time.perf_counter(), time.process_time()
    # As the daemon builds: the cycle collector paused, what was built frozen after.
    settled(
        lambda: snapshot_module.build_snapshot(
            "b", root, None, cache=cache_module.ParseCache(folder)
        ),
        collect=False,
    )()
    steps["wall"] = time.perf_counter() - wall
    steps["cpu"] = time.process_time() - cpu
    print(json.dumps(steps), flush=True)


def compile_daemon() -> None:
    """Compile the daemon's modules once, as pip does when it installs a wheel (and the
    code on PYTHONPATH, which the daemons then run).

    An editable checkout, or PYTHONDONTWRITEBYTECODE in the environment, would
    otherwise make every daemon start compile them again, and a start would be timed
    with work an installed daemon never does.
    """
    other = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            str(REPO / "daemon"),
            str(REPO / "protocol"),
            *other,
        ],
        check=False,
        capture_output=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k")
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--in-process", action="store_true", help="the builder alone")
    parser.add_argument(
        "--starts", type=int, default=1, help="warm starts timed (their median is printed)"
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="serve the edits at log level debug and print where each edit's time went",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the served copy and its state dir across runs (bench/.cache/<ws>-daemon)",
    )
    parser.add_argument(
        "--roles",
        default="*",
        help="roles of the token the requests use, comma-separated; empty for none "
        "(default *: every declaration, no role-limited view)",
    )
    parser.add_argument(
        "--shape",
        choices=synth.SHAPES,
        default="spread",
        help="the generated workspace's shape (clustered: its restricted declarations in "
        "one file of 20)",
    )
    parser.add_argument("--restore", nargs=2, metavar=("ROOT", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.restore:  # the child of restored_in_new_process
        restore_steps(*args.restore)
        return 0
    if not args.in_process:
        compile_daemon()
    for size in (synth.parse_size(s) for s in args.sizes.split(",")):
        if args.in_process:
            in_process(size, args.edits)
            continue
        r = run(
            size,
            args.edits,
            args.queries,
            args.trace,
            args.keep,
            max(1, args.starts),
            args.roles,
            args.shape,
        )
        edit = "n/a" if r["edit_median_ms"] is None else f"{r['edit_median_ms']:.0f} ms"
        cold = (
            "kept state"
            if r["cold_s"] is None
            else f"{r['cold_s']:.2f} s ({r['cold_cpu_s']:.2f} s CPU)"
        )
        starts = ""
        if len(r["warm_all_s"]) > 1:
            each = ", ".join(f"{took:.2f}" for took in r["warm_all_s"])
            starts = f" median of {len(r['warm_all_s'])}: {each};"
        print(
            f"{synth.size_label(size)}: cold start {cold}, warm start "
            f"{r['warm_s']:.2f} s ({r['warm_cpu_s']:.2f} s CPU;{starts} {r['warm_modules']} "
            f"modules imported; idle {r['settled_s']:.1f} s later), edit -> new generation "
            f"served median {r['swap_median_ms'] or 0:.0f} ms (max {r['swap_max_ms'] or 0:.0f} ms), "
            f"edit -> found by a query median {edit} "
            f"(max {r['edit_max_ms'] or 0:.0f} ms), query p50 {r['query_p50_ms']:.1f} ms, "
            f"RSS {r['rss_mb']:.0f} MiB; load average {r['edit_load']:.1f} as the edits began",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
