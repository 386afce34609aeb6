"""The daemon's HTTP application in one process, without sockets: CPU time per query
request through the whole ASGI stack (token check, access log to a file, metrics,
response cache), for answers computed for the first time and for cached ones, then how
many declarations the first answers after a one-file edit encode again.

A script, not a test: it prints numbers. uvicorn and the kernel's loopback are left out,
so a change to the application shows apart from the machine's network path; with
`--out FILE` every response (status, headers without the request id and the tag's
value, a hash of the body) is written for comparing two trees' answers.

    python bench/app_cost.py [--size 10k] [--shape spread|dense] [--passes 10] [--out FILE]
        [--max-result-bytes N]

The first pass also prints, per response status (200, 413), the CPU of the thread that
served each request: an admin's miss is computed there, so this leaves out the start's
lint and parse-cache save, which run in a worker thread meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

ROUTE = "/v1/workspaces/bench/query"


def scope(body: bytes, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """What uvicorn hands the application for a POST on the query route."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": ROUTE,
        "raw_path": ROUTE.encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ],
        "state": {},
    }


async def call(app: Any, body: bytes, headers: list[tuple[bytes, bytes]]) -> list[dict]:
    sent: list[dict] = []
    delivered = False

    async def receive() -> dict:
        nonlocal delivered
        if delivered:
            await anyio.sleep_forever()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope(body, headers), receive, send)
    return sent


def summary(sent: list[dict]) -> list[Any]:
    start = sent[0]
    body = b"".join(message.get("body", b"") for message in sent[1:])
    headers = [
        (name.decode(), "<tag>" if name == b"etag" else value.decode())
        for name, value in start["headers"]
        if name != b"x-request-id"
    ]
    return [start["status"], headers, hashlib.sha256(body).hexdigest()]


def build(root: Path, state: Path, max_result_bytes: int | None = None) -> tuple[Any, Any, Any]:
    """The hub, the application and its lifespan, as `memhubd serve` builds them."""
    from memhubd import server
    from memhubd.mcp import mount_mcp
    from memhubd.runtime.cache import ParseCache
    from memhubd.runtime.config import load_config
    from memhubd.runtime.logging import configure_logging
    from memhubd.service.cowork import open_cowork
    from memhubd.service.recall import open_shelf

    settings: dict[str, Any] = {"state_dir": str(state), "workspaces": {"bench": str(root)}}
    if max_result_bytes is not None:
        settings["limits"] = {"max_result_bytes": max_result_bytes}
    config = load_config(None, settings)
    configure_logging(config.log_format, config.log_level)  # defaults: info, JSON lines
    state_dir = server.StateDir(config.state_dir)
    tokens = server.TokenStore(state_dir.path)
    hub = server.Hub(
        watch=server.WatchSettings(rescan_interval_s=0),
        membership=state_dir.workspace_list(),
        limits=config.limits,
    )
    # Opened at once, as the daemon opens them by their first use or a second after its
    # start: the application's cost per request is the same.
    hub.recall = open_shelf(state_dir.recall_dir, config.recall)
    hub.cowork = open_cowork(state_dir.path / "cowork", tokens)
    hub.cache = ParseCache(state_dir.path / "parse-cache")

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        with contextlib.closing(hub.recall), contextlib.closing(hub.cowork):
            async with hub.running(dict(config.workspaces)):
                yield

    context = server.ApiContext(
        hub=hub,
        tokens=tokens,
        max_body_bytes=config.limits.max_body_bytes,
        max_result_bytes=config.limits.max_result_bytes,
        lifespan=lifespan,
    )
    mount_mcp(context, config.mcp)
    return hub, server.build_app(context), context.lifespan


async def measure(args: argparse.Namespace, work: Path) -> None:
    from memhubd.auth.tokens import TokenStore

    generated = synth.ensure_workspace(synth.parse_size(args.size), shape=args.shape)
    root = work / "ws"
    shutil.copytree(generated.workspace, root)
    _record, token = TokenStore(work / "state").create("bench", "all", roles=["*"])
    auth = [(b"authorization", f"Bearer {token}".encode())]
    bodies = [
        json.dumps({"query": q["query"], "limit": q.get("limit", 8)}).encode()
        for q in generated.queries()
    ]
    hub, app, lifespan = build(root, work / "state", args.max_result_bytes)
    out = open(args.out, "w") if args.out else None  # noqa: SIM115 - closed below
    async with lifespan(app):
        await call(app, json.dumps({"query": "warm up"}).encode(), auth)  # builds the index
        passes: list[float] = []
        first: dict[int, list[float]] = {}  # the first pass's requests by status
        for number in range(args.passes):
            started = time.process_time()
            for body in bodies:
                begun = time.thread_time()
                sent = await call(app, body, auth)
                if number == 0:
                    spent = (time.thread_time() - begun) * 1000
                    first.setdefault(sent[0]["status"], []).append(spent)
                if out is not None and number < 2:
                    out.write(json.dumps(summary(sent)) + "\n")
            passes.append((time.process_time() - started) * 1000 / len(bodies))
        print(f"computed (first pass): {passes[0]:.3f} ms of CPU a request")
        for status, spent in sorted(first.items()):
            print(
                f"  status {status}: {len(spent)} requests, this thread's CPU p50 "
                f"{statistics.median(spent):.3f} ms, mean {statistics.fmean(spent):.3f} ms"
            )
        cached = passes[1:]
        print(
            f"cached ({len(cached)} passes): min {min(cached):.3f}, "
            f"median {statistics.median(cached):.3f} ms of CPU a request"
        )
        await edited(app, hub, root, bodies, auth)
    if out is not None:
        out.close()


async def edited(app: Any, hub: Any, root: Path, bodies: list[bytes], auth: list) -> None:
    """The first pass after a one-file edit: CPU, and declarations encoded again."""
    import memhubd.query.pack as pack

    encoded = 0
    encode = pack.declaration_json

    def counted(declaration: Any) -> bytes:
        nonlocal encoded
        encoded += 1
        return encode(declaration)

    host = hub.hosts["bench"]
    generation = host.snapshot.generation
    target = sorted(root.rglob("*.mem"))[0]
    target.write_text(target.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    before = {id(d) for d in host.snapshot.workspace.declarations}
    await host.reload([str(target)])  # as the watcher tells it
    declarations = host.snapshot.workspace.declarations
    kept = sum(id(d) in before for d in declarations)
    pack.declaration_json = counted  # read by the query path at each call
    try:
        started = time.process_time()
        for body in bodies:
            await call(app, body, auth)
        cpu = (time.process_time() - started) * 1000 / len(bodies)
    finally:
        pack.declaration_json = encode
    print(
        f"after a one-file edit (generation {generation} -> {host.snapshot.generation}, "
        f"{kept:,} of {len(declarations):,} declarations kept): {cpu:.3f} ms of CPU a request, "
        f"{encoded:,} declarations encoded again"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10k")
    parser.add_argument("--shape", choices=synth.SHAPES, default="spread")
    parser.add_argument("--passes", type=int, default=10, help="the first computes, the rest hit")
    parser.add_argument("--out", default=None, help="write each response's summary here")
    parser.add_argument(
        "--max-result-bytes", type=int, default=None, help="limits.max_result_bytes (413 over it)"
    )
    args = parser.parse_args(argv)
    # One fixed place: answers name their files, so two runs' --out compare equal.
    work = Path(tempfile.gettempdir()) / "memhub-app-cost"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        # The access log goes to a file, as in production; the figures to stdout.
        log = open(work / "daemon.log", "wb")  # noqa: SIM115 - the run's lifetime
        os.dup2(log.fileno(), 2)
        anyio.run(measure, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
