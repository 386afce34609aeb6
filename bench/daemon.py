"""Daemon benchmarks: HTTP query throughput and latency under concurrent clients,
time from a one-file write to the new generation being served, and `memctl
query` wall time against `memdsl query` on the same workspace.

A script, not a test: it prints numbers. memdsl is found as in the other
scripts (`--memdsl-python`, `$MEMDSL_PYTHON`, or the current interpreter).

    python bench/daemon.py [--sizes 10k,100k] [--clients 32] [--requests 4000]
        [--shape spread|dense] [--limit KEY=VALUE ...] [--max-bytes N]

The daemon runs with default settings (log level info, JSON lines to a file, the
response cache on); `--limit response_cache_bytes=1` measures without the cache. With
wrk, HTTP load runs twice, once the daemon is idle (its lint and parse-cache save after
the reloads done): the first run computes each distinct answer as it is first asked,
the second finds them all in the response cache. Each run also prints the daemon's CPU
time per request.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import synth  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Daemon:
    """`memhubd serve` on a copy of a workspace, with an admin token."""

    def __init__(self, workspace: Path, tmp: Path, settings: dict[str, int] | None = None) -> None:
        self.root = tmp / "ws"
        shutil.copytree(workspace, self.root)
        self.state = tmp / "state"
        self.port = free_port()
        self.socket = str(Path(tempfile.mkdtemp(prefix="mhb-")) / "d.sock")
        created = subprocess.run(
            [
                str(BIN / "memhubd"),
                "token",
                "create",
                "bench",
                "--scopes",
                "all",
                "--roles",
                "*",
                "--state-dir",
                str(self.state),
                "--json",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        self.token = json.loads(created.stdout)["token"]
        self.proc = subprocess.Popen(
            [
                str(BIN / "memhubd"),
                "serve",
                "--port",
                str(self.port),
                "--socket",
                self.socket,
                "--state-dir",
                str(self.state),
                "--workspace",
                f"bench={self.root}",
                *self._config(tmp, settings or {}),
            ],
            # Default settings, access log included: it goes to a file, as in production.
            stdout=subprocess.DEVNULL,
            stderr=open(tmp / "daemon.log", "wb"),  # noqa: SIM115 - the daemon's lifetime
        )
        self.log = tmp / "daemon.log"
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(self.log.read_text(errors="replace"))
            time.sleep(0.2)
        self.headers = {"authorization": f"Bearer {self.token}"}
        # The first query after a load builds the index; do it before measuring.
        httpx.post(
            f"{self.url}/v1/workspaces/bench/query",
            json={"query": "warm up"},
            headers=self.headers,
            timeout=600,
        )

    @staticmethod
    def _config(tmp: Path, settings: dict[str, int]) -> list[str]:
        """`--config FILE` with `[limits]` overrides, or nothing for the defaults."""
        if not settings:
            return []
        path = tmp / "memhub.toml"
        path.write_text(
            "[limits]\n" + "".join(f"{key} = {value}\n" for key, value in settings.items())
        )
        return ["--config", str(path)]

    def generation(self) -> int:
        return httpx.get(
            f"{self.url}/v1/workspaces/bench", headers=self.headers, timeout=120
        ).json()["generation"]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        shutil.rmtree(Path(self.socket).parent, ignore_errors=True)


def query_body(item: dict, max_bytes: int | None) -> dict:
    body = {"query": item["query"], "limit": item.get("limit", 8)}
    if max_bytes:
        body["max_bytes"] = max_bytes
    return body


async def _throughput(
    daemon: Daemon, queries: list[dict], clients: int, total: int, max_bytes: int | None
) -> dict:
    latencies: list[float] = []
    errors = 0
    counter = iter(range(total))

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        for n in counter:
            body = query_body(queries[n % len(queries)], max_bytes)
            started = time.perf_counter()
            response = await client.post("/v1/workspaces/bench/query", json=body)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                errors += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=daemon.url, headers=daemon.headers, limits=limits, timeout=60
    ) as client:
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(clients):
                tg.start_soon(worker, client)
        elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": errors,
        "qps": len(latencies) / elapsed,
        "p50_ms": harness.percentile(latencies, 0.5) * 1000,
        "p99_ms": harness.percentile(latencies, 0.99) * 1000,
    }


_WRK_SCRIPT = """
local bodies = {%s}
local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("POST", "/v1/workspaces/bench/query",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer %s"},
    bodies[(counter %% #bodies) + 1])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK %%d %%d %%d %%f %%f %%f %%f %%f\\n", summary.requests,
    e.connect + e.read + e.write + e.status + e.timeout, summary.duration,
    latency:percentile(50), latency:percentile(99), latency:percentile(95),
    latency:percentile(98), latency.max))
end
"""


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid: int, quiet_s: float = 3.0, timeout_s: float = 120) -> float:
    """Wait until the daemon has used under 5% of a core for `quiet_s`: after a start or
    a reload it saves its parse cache and lints in a worker thread, once reloads have
    been quiet for 2 s, which would otherwise share the first wrk run's CPU. Returns
    the seconds waited."""
    begun = time.monotonic()
    while time.monotonic() - begun < timeout_s:
        before = cpu_s(pid)
        time.sleep(quiet_s)
        if cpu_s(pid) - before < 0.05 * quiet_s:
            break
    return time.monotonic() - begun


def wrk_throughput(
    daemon: Daemon, queries: list[dict], clients: int, seconds: int, max_bytes: int | None
) -> dict:
    """Load from wrk (C, two threads), so that the client does not eat the server's CPU.

    Also the daemon's CPU time per request (user + system, loopback sends included):
    work, which varies far less with the machine's load than the wall-clock figures."""
    bodies = ",".join("[==[" + json.dumps(query_body(q, max_bytes)) + "]==]" for q in queries)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(_WRK_SCRIPT % (bodies, daemon.token))
    cpu_before = cpu_s(daemon.proc.pid)
    try:
        result = subprocess.run(
            ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", "-s", script.name, daemon.url],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        os.unlink(script.name)
    cpu = cpu_s(daemon.proc.pid) - cpu_before
    line = next(x for x in result.stdout.splitlines() if x.startswith("WRK "))
    requests, errors, duration_us, p50_us, p99_us, p95_us, p98_us, max_us = line.split()[1:]
    return {
        "tool": "wrk",
        "clients": clients,
        "requests": int(requests),
        "errors": int(errors),
        "qps": int(requests) / (int(duration_us) / 1e6),
        "p50_ms": float(p50_us) / 1000,
        "p99_ms": float(p99_us) / 1000,
        # A first run's slowest few percent are the requests queued behind its misses.
        "p95_ms": float(p95_us) / 1000,
        "p98_ms": float(p98_us) / 1000,
        "max_ms": float(max_us) / 1000,
        "cpu_ms_per_request": cpu * 1000 / max(1, int(requests)),
    }


def reload_latency(daemon: Daemon, rounds: int) -> dict:
    """Write one new declaration into one file; time until its generation is served."""
    target = sorted(daemon.root.rglob("*.mem"))[0]
    original = target.read_text(encoding="utf-8")
    seen: list[float] = []
    events: list[tuple[float, int]] = []
    stop = threading.Event()
    added = ""

    def listen() -> None:
        with httpx.stream(
            "GET", daemon.url + "/v1/events", headers=daemon.headers, timeout=None
        ) as response:
            for line in response.iter_lines():
                if stop.is_set():
                    return
                if line.startswith("data: ") and '"event": "reloaded"' in line:
                    events.append((time.perf_counter(), json.loads(line[6:])["generation"]))

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    time.sleep(0.5)
    try:
        for n in range(rounds):
            before = daemon.generation()
            # Each write adds to the last one's text: a write that also dropped the
            # previous declaration would be held for `watch.settle_ms` by design.
            added += (
                f'\nfact bench.reload_{n} {{ claim: "reload {n}" '
                f'evidence {{ source: "bench" quote: "q" }} }}\n'
            )
            text = original + added
            temporary = target.with_suffix(".tmp")
            temporary.write_text(text, encoding="utf-8")
            written = time.perf_counter()
            os.replace(temporary, target)
            deadline = written + 60
            while time.perf_counter() < deadline:
                arrived = [at for at, generation in events if generation > before]
                if arrived:
                    seen.append(arrived[0] - written)
                    break
                time.sleep(0.001)
            time.sleep(0.3)
    finally:
        stop.set()
        target.write_text(original, encoding="utf-8")
    return {
        "rounds": len(seen),
        "median_ms": statistics.median(seen) * 1000 if seen else None,
        "max_ms": max(seen) * 1000 if seen else None,
    }


def answer_sizes(daemon: Daemon, queries: list[dict], max_bytes: int | None) -> dict:
    """Median and largest answer (JSON bytes, uncompressed) and how many were refused."""
    sizes, refused, within = [], 0, []
    times: dict[bool, list[float]] = {True: [], False: []}  # by refused, one client
    # The daemon's CPU by refused, in clock ticks: summed over many requests, the work
    # of one, which the machine's load moves far less than its latency.
    cpu: dict[bool, float] = {True: 0.0, False: 0.0}
    with httpx.Client(base_url=daemon.url, headers=daemon.headers, timeout=120) as client:
        for item in queries:
            cpu_before = cpu_s(daemon.proc.pid)
            started = time.perf_counter()
            response = client.post(
                "/v1/workspaces/bench/query",
                json=query_body(item, max_bytes),
                headers={"accept-encoding": "identity"},
            )
            times[response.status_code == 413].append(time.perf_counter() - started)
            cpu[response.status_code == 413] += cpu_s(daemon.proc.pid) - cpu_before
            if response.status_code == 413:
                refused += 1
            else:
                sizes.append(len(response.content))
                within.append(item)
    return {
        "queries": len(queries),
        "median": statistics.median(sizes) if sizes else None,
        "max": max(sizes) if sizes else None,
        "refused": refused,
        "within": within,
        "served_p50_ms": statistics.median(times[False]) * 1000 if times[False] else None,
        "refused_p50_ms": statistics.median(times[True]) * 1000 if times[True] else None,
        "served_cpu_ms": cpu[False] * 1000 / len(times[False]) if times[False] else None,
        "refused_cpu_ms": cpu[True] * 1000 / len(times[True]) if times[True] else None,
    }


def cli_wall_times(
    daemon: Daemon, memdsl: harness.Interpreter, workspace: Path, query: str, repeat: int
) -> dict:
    def timed(args: list[str]) -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            # A refused query (413, exit 1) is timed too: runs with a small result limit.
            subprocess.run(args, check=False, capture_output=True)
            best = min(best, time.perf_counter() - started)
        return best

    # pip compiles an installed wheel's modules (memdsl's included); an editable
    # checkout, or PYTHONDONTWRITEBYTECODE, would make memctl compile its own on every
    # call. Compile them once so both clients are timed as installed.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            str(harness.REPO_ROOT / "client"),
            str(harness.REPO_ROOT / "protocol"),
        ],
        check=False,
        capture_output=True,
    )
    memctl = timed(
        [
            str(BIN / "memctl"),
            "--url",
            f"unix://{daemon.socket}",
            "-w",
            "bench",
            "query",
            "-q",
            query,
        ]
    )
    result = {"memctl_s": memctl, "memdsl_s": None, "ratio": None}
    if memdsl.usable:
        command = [
            memdsl.python,
            "-c",
            "import sys; from memdsl.cli import main; sys.exit(main())",
            "query",
            str(workspace),
            "-q",
            query,
        ]
        result["memdsl_s"] = timed(command)
        result["ratio"] = result["memdsl_s"] / memctl
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=4000, help="without wrk")
    parser.add_argument("--seconds", type=int, default=10, help="with wrk")
    parser.add_argument("--reload-rounds", type=int, default=5)
    parser.add_argument("--cli-repeat", type=int, default=5)
    parser.add_argument("--memdsl-python", default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--shape", choices=synth.SHAPES, default="spread")
    parser.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [limits] setting of the daemon (repeatable); default settings otherwise",
    )
    parser.add_argument("--max-bytes", type=int, default=None, help="answer budget per query")
    args = parser.parse_args(argv)
    settings = {key: int(value) for key, value in (item.split("=", 1) for item in args.limit)}
    memdsl = harness.find_memdsl(args.memdsl_python, ("Workspace",))
    report: dict = {"sizes": {}}
    for label in args.sizes.split(","):
        size = synth.parse_size(label)
        generated = synth.ensure_workspace(size, shape=args.shape)
        queries = generated.queries()
        with tempfile.TemporaryDirectory() as tmp:
            print(f"[{label}] starting memhubd ...", file=sys.stderr, flush=True)
            daemon = Daemon(generated.workspace, Path(tmp), settings)
            try:
                entry: dict = {"shape": args.shape, "settings": settings}
                # The dense shape past 10k: every question asked once, so that answers
                # within `max_result_bytes` and refusals are loaded apart below.
                split = args.shape == "dense" and size > 10_000
                asked = queries if split else queries[:50]
                # First-time answers are timed once the start's lint and parse-cache save
                # are done: in a worker thread, they would hold the GIL from the requests.
                entry["idle_before_s"] = wait_until_idle(daemon.proc.pid)
                entry["answer_bytes"] = answer_sizes(daemon, asked, args.max_bytes)
                within = entry["answer_bytes"].pop("within")
                entry["reload"] = reload_latency(daemon, args.reload_rounds)
                if split and shutil.which("wrk"):
                    print(f"[{label}] throughput, within and over ...", file=sys.stderr, flush=True)
                    entry["idle_after_s"] = wait_until_idle(daemon.proc.pid)
                    within_ids = {id(q) for q in within}
                    over = [q for q in queries if id(q) not in within_ids]
                    for key, subset in (("throughput", within), ("throughput_refused", over)):
                        if subset:
                            entry[key] = wrk_throughput(
                                daemon, subset, args.clients, args.seconds, args.max_bytes
                            )
                            entry[key]["distinct"] = len(subset)
                    if over:  # a refusal asked again, one client (its size is remembered)
                        again = answer_sizes(daemon, over[:50], args.max_bytes)
                        entry["refused_again_p50_ms"] = again["refused_p50_ms"]
                elif size <= 10_000:
                    print(f"[{label}] throughput ...", file=sys.stderr, flush=True)
                    if shutil.which("wrk"):
                        entry["idle_after_s"] = wait_until_idle(daemon.proc.pid)
                        entry["throughput"] = wrk_throughput(
                            daemon, queries, args.clients, args.seconds, args.max_bytes
                        )
                        # The first run computes each distinct answer once, as it is
                        # first asked (its tail is those misses queued behind each
                        # other); the second finds every answer in the response cache.
                        entry["throughput_cached"] = wrk_throughput(
                            daemon, queries, args.clients, args.seconds, args.max_bytes
                        )
                    else:  # the Python client competes with the server for the two cores
                        entry["throughput"] = anyio.run(
                            _throughput,
                            daemon,
                            queries,
                            args.clients,
                            args.requests,
                            args.max_bytes,
                        )
                        entry["throughput"]["tool"] = "httpx (install wrk for a fair load)"
                    print(f"[{label}] memctl vs memdsl ...", file=sys.stderr, flush=True)
                    entry["cli"] = cli_wall_times(
                        daemon, memdsl, generated.workspace, queries[0]["query"], args.cli_repeat
                    )
            finally:
                daemon.stop()
        report["sizes"][label] = entry
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    return 0


def render(report: dict) -> str:
    lines = ["memhubd daemon benchmark (2 cores)", ""]
    for label, entry in report["sizes"].items():
        sizes = entry["answer_bytes"]
        settings = ", ".join(f"{k}={v}" for k, v in entry["settings"].items()) or "defaults"
        median = f"{sizes['median'] / 1024:.0f} KB" if sizes["median"] else "n/a"
        lines.append(
            f"{label} ({entry['shape']}, {settings}): median answer {median}, "
            f"{sizes['refused']} of {sizes['queries']} refused (413)"
            + "".join(
                f", {what} p50 {sizes[key]:.1f} ms (first time, one client)"
                for key, what in (("served_p50_ms", "served"), ("refused_p50_ms", "refused"))
                if sizes.get(key) is not None
            )
        )
        cpu = [
            f"{what} {sizes[key]:.1f} ms"
            for key, what in (("served_cpu_ms", "served"), ("refused_cpu_ms", "refused"))
            if sizes.get(key) is not None
        ]
        if cpu:
            lines.append(f"{label}: daemon CPU a first-time request: {', '.join(cpu)} (mean)")
        if entry.get("refused_again_p50_ms") is not None:
            lines.append(
                f"{label}: a refusal asked again, one client: p50 "
                f"{entry['refused_again_p50_ms']:.1f} ms"
            )
        reload = entry["reload"]
        lines.append(
            f"{label}: write -> served generation: median {harness.fmt_ms(reload['median_ms'] / 1000) if reload['median_ms'] else 'n/a'}"
            f", max {harness.fmt_ms(reload['max_ms'] / 1000) if reload['max_ms'] else 'n/a'} ({reload['rounds']} rounds)"
        )
        for key, what in (
            ("throughput", ""),
            ("throughput_cached", ", every answer cached"),
            ("throughput_refused", ", only questions refused (413)"),
        ):
            if key not in entry:
                continue
            t = entry[key]
            lines.append(
                f"{label}: HTTP query, {t['clients']} clients ({t.get('tool', 'httpx')}{what}): "
                f"{t['qps']:.0f} queries/s, "
                f"p50 {t['p50_ms']:.2f} ms, p99 {t['p99_ms']:.2f} ms, errors {t['errors']}"
                + (
                    f" (p95 {t['p95_ms']:.1f}, p98 {t['p98_ms']:.1f}, max {t['max_ms']:.1f} ms)"
                    if "p98_ms" in t
                    else ""
                )
                + (
                    f", daemon CPU {t['cpu_ms_per_request']:.3f} ms a request"
                    if "cpu_ms_per_request" in t
                    else ""
                )
            )
        if "cli" in entry:
            c = entry["cli"]
            memdsl = f"{c['memdsl_s'] * 1000:.0f} ms" if c["memdsl_s"] else "n/a (memdsl not found)"
            ratio = f"{c['ratio']:.1f}x" if c["ratio"] else "n/a"
            lines.append(
                f"{label}: memctl query {c['memctl_s'] * 1000:.0f} ms vs memdsl query {memdsl}: {ratio}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
