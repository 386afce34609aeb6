"""Review benchmarks through the JSON API of a real `memhubd serve`: proposals per second,
approvals per second (one client, then several at once), and the time from sending an
approval to the declaration being answered by a query.

A script, not a test: it prints numbers and asserts only that the daemon answered.

    python bench/review.py [--sizes example,1k,10k] [--approvals 100] [--clients 8] [--json]

`example` is examples/team-coding; a number is a generated workspace (bench/synth.py).
Approving revalidates against the whole workspace, so its cost grows with the size.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from memhubd.auth.tokens import TokenStore

REPO = Path(__file__).resolve().parent.parent
WS = "bench"
BASE = f"/v1/workspaces/{WS}"


class Daemon:
    """`memhubd serve` over a copy of a workspace, with an agent and a reviewer token."""

    def __init__(self, workspace: Path, tmp: Path) -> None:
        self.root = tmp / "ws"
        shutil.copytree(workspace, self.root, ignore=shutil.ignore_patterns(".memdsl"))
        state = tmp / "state"
        store = TokenStore(state)
        self.agent = store.create("agent", "write:candidate")[1]
        self.reviewer = store.create("reviewer", "review,read:summary,read:search", roles=["*"])[1]
        self.socket = str(Path(tempfile.mkdtemp(prefix="mhr-")) / "d.sock")
        argv = [sys.executable, "-m", "memhubd", "serve", "--port", "0", "--socket", self.socket]
        argv += ["--state-dir", str(state), "--workspace", f"{WS}={self.root}"]
        self.proc = subprocess.Popen([*argv, "--log-level", "warning"], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                with self.client(None) as client:
                    if client.get("/readyz").status_code == 200:
                        return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(self.proc.stderr.read().decode())  # type: ignore[union-attr]
            time.sleep(0.1)
        raise RuntimeError("memhubd did not become ready")

    def client(self, token: str | None) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        transport = httpx.HTTPTransport(uds=self.socket)
        return httpx.Client(
            transport=transport, base_url="http://memhub", headers=headers, timeout=600
        )

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        shutil.rmtree(Path(self.socket).parent, ignore_errors=True)


def workspace_for(size: str) -> Path:
    if size == "example":
        return REPO / "examples" / "team-coding"
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import synth

    return synth.ensure_workspace(synth.parse_size(size)).root / "workspace"


def some_symbol(daemon: Daemon) -> str:
    """The name of a declared symbol, to be the subject of the proposed facts."""
    with daemon.client(daemon.reviewer) as client:
        items = client.get(f"{BASE}/declarations", params={"limit": "500"}).json()["items"]
    return next(item["id"].split(":", 1)[1] for item in items if item["runtime_role"] == "symbol")


def fact(run: str, index: int, subject: str) -> tuple[str, str]:
    """A proposal source and the one word that finds it by query."""
    word = f"benchmark{run}x{index:05d}"
    return (
        f'fact bench.{run}.f{index:05d} {{\n  subject: {subject}\n  claim: "The {word} holds."\n'
        f'  evidence {{ source: "bench" quote: "{word}" }}\n}}\n',
        word,
    )


def propose_all(daemon: Daemon, run: str, count: int, subject: str) -> tuple[list, list[float]]:
    proposed, latencies = [], []
    with daemon.client(daemon.agent) as client:
        for index in range(count):
            source, word = fact(run, index, subject)
            started = time.perf_counter()
            response = client.post(f"{BASE}/proposals", json={"source": source})
            latencies.append(time.perf_counter() - started)
            if response.status_code != 201:
                raise RuntimeError(response.text)
            proposed.append(
                (response.json()["proposal_id"], f"fact:bench.{run}.f{index:05d}", word)
            )
    return proposed, latencies


def approve_then_query(daemon: Daemon, proposed: list) -> tuple[list[float], list[float]]:
    """One client: approve, then query until the declaration is in the answer."""
    approve, served = [], []
    with daemon.client(daemon.reviewer) as client:
        for proposal_id, decl_id, word in proposed:
            started = time.perf_counter()
            response = client.post(
                f"{BASE}/proposals/{proposal_id}/approve", json={"into": "bench-approved.mem"}
            )
            approve.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise RuntimeError(response.text)
            while decl_id not in client.post(f"{BASE}/query", json={"query": word}).text:
                time.sleep(0.001)
            served.append(time.perf_counter() - started)
    return approve, served


def approve_concurrently(daemon: Daemon, proposed: list, clients: int) -> float:
    """Seconds for `clients` reviewers to approve every proposal, each into its own file."""
    shares = [list(enumerate(proposed))[n::clients] for n in range(clients)]

    def reviewer(share: list[tuple[int, tuple[str, str, str]]]) -> None:
        with daemon.client(daemon.reviewer) as client:  # one connection per reviewer
            for index, (proposal_id, _decl_id, _word) in share:
                body = {"into": f"bench-concurrent-{index % clients}.mem"}
                response = client.post(f"{BASE}/proposals/{proposal_id}/approve", json=body)
                if response.status_code != 200:
                    raise RuntimeError(response.text)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(reviewer, shares))
    return time.perf_counter() - started


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)] if ordered else math.nan


def measure(size: str, approvals: int, clients: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        daemon = Daemon(workspace_for(size), Path(tmp))
        try:
            subject = some_symbol(daemon)
            proposed, propose_s = propose_all(daemon, "a", approvals, subject)
            approve_s, served_s = approve_then_query(daemon, proposed)
            alone, _ = propose_all(daemon, "b", approvals, subject)
            alone_s = approve_concurrently(daemon, alone, 1)
            together, _ = propose_all(daemon, "c", approvals, subject)
            together_s = approve_concurrently(daemon, together, clients)
        finally:
            daemon.stop()
    ms = 1000.0
    return {
        "size": size,
        "approvals": approvals,
        "propose_p50_ms": percentile(propose_s, 0.5) * ms,
        "approve_p50_ms": percentile(approve_s, 0.5) * ms,
        "approve_p99_ms": percentile(approve_s, 0.99) * ms,
        "approvals_per_s_1_client": approvals / alone_s,
        "approve_to_query_p50_ms": percentile(served_s, 0.5) * ms,
        "approve_to_query_p99_ms": percentile(served_s, 0.99) * ms,
        "clients": clients,
        "approvals_per_s_concurrent": approvals / together_s,
    }


def render(rows: list[dict[str, Any]]) -> str:
    columns = [
        ("size", "{}"),
        ("propose_p50_ms", "{:.1f}"),
        ("approve_p50_ms", "{:.1f}"),
        ("approve_p99_ms", "{:.1f}"),
        ("approvals_per_s_1_client", "{:.1f}"),
        ("approvals_per_s_concurrent", "{:.1f}"),
        ("approve_to_query_p50_ms", "{:.1f}"),
        ("approve_to_query_p99_ms", "{:.1f}"),
    ]
    cells = [[name for name, _ in columns]]
    cells += [[fmt.format(row[name]) for name, fmt in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(map(str.rjust, line, widths)) for line in cells)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="example,1k", help="example and/or 1k,10k,...")
    parser.add_argument("--approvals", type=int, default=100, help="per measurement")
    parser.add_argument("--clients", type=int, default=8, help="concurrent reviewers")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    rows = [measure(size, args.approvals, args.clients) for size in args.sizes.split(",")]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"approvals through the JSON API; concurrent: {args.clients} clients")
        print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
