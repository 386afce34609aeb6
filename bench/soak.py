"""Soak benchmark: the daemon's resident memory over many edit+query cycles.

A script, not a test: it prints numbers. It serves a generated workspace (10k
declarations by default, from `synth`) with a real `memhubd serve`, then repeats:
edit one `.mem` file (alternately adding and removing one declaration), wait until
the new generation is served, and read it as a token without roles (which has
declarations hidden from it) and as an admin: a query, a check and the workspace
status each. With `--mcp N`, each cycle also asks N MCP `memory_query` calls as each
token (plain JSON-RPC POSTs to `/mcp`), each a question not asked before (a generated
query with two more of its words), so the answers and MCP's kept texts keep changing.
With `--no-edit` the cycles only read: one snapshot is served throughout, so the
answer caches and MCP's kept texts fill up to their budgets and stay there.
With `--recall N`, recall is soaked as well: the repository's docs are ingested first
(a third of them readable by one role only), then each cycle asks N recall searches as
each token (each a question not asked before), one across every workspace and a
wake-up; unless `--no-edit`, the admin also ingests a new note and soft-deletes it.
It prints the daemon's RSS every `--every` cycles; memory that keeps growing with
cycles is a leak (a snapshot or a per-caller view kept alive, a cache over its budget).

    python bench/soak.py [--size 10k] [--cycles 1000] [--every 100] [--mcp 0] [--recall 0]
                         [--no-edit]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

from daemon import BIN, Daemon  # noqa: E402

EXTRA = (
    '\nfact soak.extra {{ claim: "Soak cycle {n} adds this declaration." '
    'evidence {{ source: "soak" quote: "q" }} }}\n'
)


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (Linux `/proc`)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def role_less_token(daemon: Daemon) -> str:
    """A token without roles, as the docs suggest creating for an agent."""
    created = subprocess.run(
        [
            str(BIN / "memhubd"),
            "token",
            "create",
            "soak-agent",
            "--scopes",
            "read:summary,read:search",
            "--state-dir",
            str(daemon.state),
            "--json",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return str(json.loads(created.stdout)["token"])


def wait_for_generation(client: httpx.Client, above: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        generation = int(client.get("/v1/workspaces/bench").json()["generation"])
        if generation > above:
            return generation
        time.sleep(0.01)
    raise RuntimeError(f"generation {above} was never replaced")


def read_as(client: httpx.Client, query: dict, check: dict) -> None:
    for response in (
        client.post("/v1/workspaces/bench/query", json={"query": query["query"], "limit": 8}),
        client.post(
            "/v1/workspaces/bench/check",
            json={"task": check["task"], "candidate": check["candidate"]},
        ),
        client.get("/v1/workspaces/bench"),
    ):
        response.raise_for_status()


class McpAsker:
    """`memory_query` over MCP as plain JSON-RPC POSTs, each a question not asked before."""

    def __init__(self, queries: list[dict], calls: int) -> None:
        self.queries = queries
        self.calls = calls
        self.words = sorted({word for q in queries for word in q["query"].split()})
        self.random = random.Random(7)
        self.asked = 0

    def ask(self, client: httpx.Client) -> None:
        for _ in range(self.calls):
            self.asked += 1
            query = self.queries[self.asked % len(self.queries)]["query"]
            extra = " ".join(self.random.choice(self.words) for _ in range(2))
            body = {
                "jsonrpc": "2.0",
                "id": self.asked,
                "method": "tools/call",
                "params": {
                    "name": "memory_query",
                    "arguments": {"query": f"{query} {extra}", "workspace": "bench"},
                },
            }
            response = client.post("/mcp", json=body, headers=MCP_HEADERS)
            response.raise_for_status()
            if response.json().get("result", {}).get("isError", True):
                raise RuntimeError(response.text[:300])


class RecallAsker:
    """Recall searches and wake-ups, each search a question not asked before; with
    `write`, a new note ingested and soft-deleted each cycle as well."""

    DOCS = Path(__file__).resolve().parent.parent / "docs"

    def __init__(self, searches: int, write: bool) -> None:
        self.searches = searches
        self.write = write
        self.random = random.Random(11)
        self.asked = 0
        self.words: list[str] = []

    def load(self, admin: httpx.Client) -> int:
        """Ingest the docs (every third readable by the role `soak-only`); the drawers."""
        if not self.searches:
            return 0
        files = sorted(self.DOCS.glob("*.md"))
        words: set[str] = set()
        chunks = 0
        for index, path in enumerate(files):
            text = path.read_text(encoding="utf-8")
            words.update(w for w in text.lower().split() if w.isalpha() and len(w) > 3)
            body: dict = {"files": [{"name": path.name, "content": text}]}
            if index % 3 == 0:
                body["readers"] = ["soak-only"]
            response = admin.post("/v1/workspaces/bench/recall/ingest", json=body)
            response.raise_for_status()
            chunks += int(response.json().get("chunks", 0))
        self.words = sorted(words)
        return chunks

    def question(self) -> str:
        return " ".join(self.random.choice(self.words) for _ in range(3))

    def ask(self, client: httpx.Client) -> None:
        for _ in range(self.searches):
            self.asked += 1
            client.get(
                "/v1/workspaces/bench/recall/search", params={"q": self.question(), "limit": 10}
            ).raise_for_status()
        if self.searches:
            client.post("/v1/recall/search", json={"query": self.question()}).raise_for_status()
            client.get("/v1/workspaces/bench/recall/wake-up").raise_for_status()

    def churn(self, admin: httpx.Client, n: int) -> None:
        if not (self.searches and self.write):
            return
        content = f"Soak note {n}: " + self.question() + "."
        response = admin.post(
            "/v1/workspaces/bench/recall/ingest",
            json={"files": [{"name": f"soak-{n}.md", "content": content}]},
        )
        response.raise_for_status()
        drawers = [d for source in response.json()["sources"] for d in source["drawer_ids"]]
        if not drawers:
            raise RuntimeError(f"the note of cycle {n} was not stored: {response.text[:300]}")
        for drawer in drawers:
            admin.delete(f"/v1/workspaces/bench/recall/drawers/{drawer}").raise_for_status()


MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


def soak(
    daemon: Daemon,
    queries: list[dict],
    checks: list[dict],
    cycles: int,
    every: int,
    mcp_calls: int = 0,
    edit: bool = True,
    recall: int = 0,
) -> None:
    target = sorted(daemon.root.rglob("*.mem"))[0]
    original = target.read_text(encoding="utf-8")
    agent = role_less_token(daemon)
    admin_client = httpx.Client(base_url=daemon.url, headers=daemon.headers, timeout=120)
    agent_client = httpx.Client(
        base_url=daemon.url, headers={"authorization": f"Bearer {agent}"}, timeout=120
    )
    asker = McpAsker(queries, mcp_calls)
    recaller = RecallAsker(recall, edit)
    if recall:
        print(f"recall: {recaller.load(admin_client)} drawers ingested", flush=True)
    pid = daemon.proc.pid
    print(f"cycle      0  rss {rss_mb(pid):8.1f} MiB", flush=True)
    started = time.perf_counter()
    try:
        for n in range(1, cycles + 1):
            if edit:
                before = int(admin_client.get("/v1/workspaces/bench").json()["generation"])
                text = original + EXTRA.format(n=n) if n % 2 else original
                temporary = target.with_suffix(".soak")
                temporary.write_text(text, encoding="utf-8")
                temporary.replace(target)
                wait_for_generation(admin_client, before)
            query, check = queries[n % len(queries)], checks[n % len(checks)]
            read_as(agent_client, query, check)
            read_as(admin_client, query, check)
            asker.ask(agent_client)
            asker.ask(admin_client)
            recaller.ask(agent_client)
            recaller.ask(admin_client)
            recaller.churn(admin_client, n)
            if n % every == 0:
                elapsed = time.perf_counter() - started
                print(f"cycle {n:6d}  rss {rss_mb(pid):8.1f} MiB  ({elapsed:6.1f} s)", flush=True)
    finally:
        admin_client.close()
        agent_client.close()
        target.write_text(original, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10k")
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument(
        "--mcp", type=int, default=0, help="MCP memory_query calls per cycle and token (default 0)"
    )
    parser.add_argument(
        "--recall",
        type=int,
        default=0,
        help="recall searches per cycle and token, after ingesting docs/ (default 0)",
    )
    parser.add_argument(
        "--no-edit", action="store_true", help="read only: serve one snapshot throughout"
    )
    args = parser.parse_args(argv)
    generated = synth.ensure_workspace(synth.parse_size(args.size))
    queries = generated.queries()
    checks = generated.checks()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"[{args.size}] starting memhubd ...", file=sys.stderr, flush=True)
        daemon = Daemon(generated.workspace, Path(tmp))
        try:
            soak(
                daemon,
                queries,
                checks,
                args.cycles,
                args.every,
                args.mcp,
                not args.no_edit,
                args.recall,
            )
        finally:
            daemon.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
