"""MCP `memory_query` latency (p50, p99) over loopback TCP against a real daemon serving a
synthetic workspace (10k declarations by default), with 1 client and with 16 concurrent ones.

The daemon runs in a child process (so client and server do not share a GIL); each client is
an MCP SDK session; `raw` clients send plain JSON-RPC POSTs (the SDK client's share) and `api`
clients the JSON API's query (the baseline MCP adds to). `floor` runs the SDK client against
a stand-in server that answers every call at once with an answer the daemon gave (same
bytes, same size): what a call costs with the daemon's part taken out; `floor-short` the
same with each answer's text cut to a few bytes (what the SDK client costs whatever the
answer's size), and `floor-raw` the `raw` client against the same stand-in (plain httpx).
`srv cpu ms` is the daemon's own CPU time (user + system, from /proc) per call and
`cli cpu ms` this process's while the clients make their calls (not while they connect):
on a shared machine they move far less with the load than the latencies do.
`--client-profile` samples this process with py-spy during the one-client `floor*` runs
and prints where the client's CPU goes, by layer, stage and function.
`--in-process` calls the daemon's ASGI app directly (no sockets, no HTTP server) with the
requests each client kind sends and prints the CPU time per call of a first pass (answers
computed) and a second (answers cached).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import synth

from daemon import wait_until_idle

SCRIPT = Path(__file__).resolve()
GOAL_P50_MS = 3.0


# --- the daemon (child process) ---------------------------------------------------------


def serve(workspace: str, state: str) -> None:
    """Run memhubd on a free port over `workspace`; print {"url", "token"} once it is ready."""
    import anyio
    import httpx

    import memhubd.server as server_module
    from memhubd.auth.tokens import TokenStore
    from memhubd.mcp import mount_mcp
    from memhubd.runtime.config import load_config
    from memhubd.runtime.logging import configure_logging

    configure_logging("json", "info", stream=open(os.devnull, "w"))  # noqa: SIM115
    original = server_module.build_app

    def build(context):  # noqa: ANN001, ANN202 - no-op once run_daemon mounts MCP itself
        mount_mcp(context)
        return original(context)

    server_module.build_app = build
    _record, secret = TokenStore(state).create("bench", "read:summary,read:search")
    config = load_config(
        None,
        {"port": 0, "socket_path": "", "state_dir": state, "workspaces": {"bench": workspace}},
    )

    def ready(info) -> None:  # noqa: ANN001
        for _attempt in range(6000):  # the workspace loads after the listener is up
            if httpx.get(f"{info.url}/readyz").status_code == 200:
                break
            time.sleep(0.05)
        print(json.dumps({"url": info.url, "token": secret}), flush=True)

    def on_ready(info) -> None:  # noqa: ANN001
        import threading

        threading.Thread(target=ready, args=(info,), daemon=True).start()

    anyio.run(lambda: server_module.run_daemon(config, on_ready=on_ready))


# --- in process: the app alone ----------------------------------------------------------

SDK_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request_of(kind: str, index: int, item: dict) -> tuple[str, dict, list[tuple[bytes, bytes]]]:
    """(path, JSON body, extra headers) of call `index` as client `kind` sends it."""
    params = {"name": "memory_query", "arguments": arguments(item)}
    if kind == "sdk":  # the SDK client's 2026 wire, headers and envelope as it sends them
        body = {"jsonrpc": "2.0", "id": index, "method": "tools/call"}
        body["params"] = {**params, "_meta": SDK_META}
        return (
            "/mcp",
            body,
            [
                (b"mcp-protocol-version", b"2026-07-28"),
                (b"mcp-method", b"tools/call"),
                (b"mcp-name", b"memory_query"),
            ],
        )
    if kind == "raw":
        body = {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}
        return "/mcp", body, [(b"mcp-protocol-version", b"2025-06-18")]
    return "/v1/workspaces/bench/query", arguments(item), []


async def call_app(app, token: str, path: str, body: dict, extra: list) -> tuple[int, bytes]:  # noqa: ANN001
    raw = json.dumps(body, separators=(",", ":")).encode()
    headers = [
        (b"host", b"127.0.0.1:8377"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-length", str(len(raw)).encode()),
        *extra,
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8377),
    }
    messages = [{"type": "http.request", "body": raw, "more_body": False}]
    sent: list[dict] = []

    async def receive() -> dict:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # a client that never disconnects
        return {}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def in_process(workspace: Path, queries: list[dict], calls: int, kinds: list[str]) -> list[dict]:
    """CPU time per call of the daemon's app called directly, first pass and cached pass."""
    import threading

    import anyio

    import memhubd.server as server_module
    from memhubd.auth.tokens import TokenStore
    from memhubd.mcp import mount_mcp
    from memhubd.runtime.config import load_config
    from memhubd.runtime.logging import configure_logging

    configure_logging("json", "info", stream=open(os.devnull, "w"))  # noqa: SIM115
    built: dict = {}
    original = server_module.build_app

    def build(context):  # noqa: ANN001, ANN202
        mount_mcp(context)
        built["app"] = original(context)
        return built["app"]

    server_module.build_app = build
    state = tempfile.mkdtemp(prefix="memhub-bench-")
    _record, token = TokenStore(state).create("bench", "read:summary,read:search")
    overrides = {"port": 0, "socket_path": "", "state_dir": state}
    config = load_config(None, {**overrides, "workspaces": {"bench": str(workspace)}})
    runs: list[dict] = []

    async def measure() -> None:
        stop = threading.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: server_module.run_daemon(config, handle_signals=False, stop=stop)
            )
            while "app" not in built:
                await anyio.sleep(0.05)
            app = built["app"]
            warm = request_of("api", 0, {"query": "warm up the daemon"})
            while (await call_app(app, token, *warm))[0] != 200:
                await anyio.sleep(0.1)
            # The CPU of the start's aftermath (parse cache save, first lint, in worker
            # threads) would be counted with the first pass's: wait until it is done.
            while True:
                before = time.process_time()
                await anyio.sleep(1.0)
                if time.process_time() - before < 0.05:
                    break
            for kind in kinds:
                for label in ("first", "cached"):
                    used = time.process_time()
                    for index in range(calls):
                        item = queries[index % len(queries)]
                        status, body = await call_app(app, token, *request_of(kind, index, item))
                        if status != 200:
                            raise RuntimeError(body[:300])
                    used = time.process_time() - used
                    runs.append({"client": kind, "pass": label, "cpu_ms": used * 1000 / calls})
            stop.set()

    try:
        anyio.run(measure)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    return runs


def start_server(workspace: Path, state: str) -> tuple[subprocess.Popen, dict]:
    return start_child("--serve", str(workspace), "--state", state)


# --- the stand-in server (child process, for the `floor` clients) -----------------------

_ANSWER_ID = re.compile(rb'^\{"jsonrpc":"2\.0","id":(?:\d+|"[^"]*"),')


def serve_recorded(path: str) -> None:
    """Answer each POST at once with the daemon's recorded answer to the same method (calls
    in turn), its id replaced; print {"url"} once listening. HTTP/1.1 keep-alive, no more."""
    recorded = json.loads(Path(path).read_text())
    answers = {method: [a.encode() for a in items] for method, items in recorded.items()}
    served = {"count": 0}

    def answer_to(body: bytes) -> bytes:
        request = json.loads(body)
        options = answers.get(request.get("method"), answers["tools/call"])
        answer = options[served["count"] % len(options)]
        served["count"] += 1
        head = b'{"jsonrpc":"2.0","id":' + json.dumps(request.get("id")).encode() + b","
        return _ANSWER_ID.sub(lambda _match: head, answer, count=1)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = answer_to(await reader.readexactly(length))
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n" % len(body) + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(connection, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(json.dumps({"url": f"http://127.0.0.1:{port}"}), flush=True)
        await server.serve_forever()

    asyncio.run(main())


async def record_answers(url: str, token: str, queries: list[dict], calls: int) -> dict:
    """The daemon's answers (bytes as sent) to an SDK session of `calls` queries, by method."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    recorded: dict[str, list[str]] = {}

    async def keep(response: httpx2.Response) -> None:
        await response.aread()
        method = json.loads(response.request.content).get("method", "")
        recorded.setdefault(method, []).append(response.content.decode())

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=60, event_hooks={"response": [keep]}
    )
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        for index in range(calls):
            await client.call_tool("memory_query", arguments(queries[index % len(queries)]))
    return recorded


def start_child(*args: str) -> tuple[subprocess.Popen, dict]:
    child = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=harness.REPO_ROOT,
    )
    line = child.stdout.readline() if child.stdout else ""
    if not line:
        child.kill()
        raise RuntimeError(f"the child {args[0]} did not start")
    return child, json.loads(line)


# --- the clients ------------------------------------------------------------------------


class CallWindow:
    """This process's CPU time from when every client has connected and warmed up to when
    the last one has made its calls: what the calls cost, without connecting."""

    def __init__(self, clients: int) -> None:
        self.barrier = asyncio.Barrier(clients)
        self.started: float | None = None
        self.ended = 0.0

    async def start(self) -> None:
        await self.barrier.wait()
        if self.started is None:
            self.started = time.process_time()

    def end(self) -> None:
        self.ended = max(self.ended, time.process_time())

    def cpu_seconds(self) -> float:
        return 0.0 if self.started is None else self.ended - self.started


async def sdk_client(
    url: str, token: str, queries: list[dict], calls: int, window: CallWindow
) -> list[float]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    timings = []
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        await client.call_tool("memory_query", arguments(queries[0]))  # warm the session
        await window.start()
        for index in range(calls):
            started = time.perf_counter()
            result = await client.call_tool(
                "memory_query", arguments(queries[index % len(queries)])
            )
            timings.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(result.content[0].text)
        window.end()
    return timings


async def raw_client(
    url: str, token: str, queries: list[dict], calls: int, window: CallWindow
) -> list[float]:
    """Plain JSON-RPC `tools/call` POSTs (stateless server: no handshake needed)."""
    import httpx

    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    timings = []
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        for index in range(calls + 1):
            if index == 1:  # the first call warms the connection
                await window.start()
            body = {
                "jsonrpc": "2.0",
                "id": index,
                "method": "tools/call",
                "params": {
                    "name": "memory_query",
                    "arguments": arguments(queries[index % len(queries)]),
                },
            }
            started = time.perf_counter()
            response = await http.post("/mcp", json=body)
            elapsed = time.perf_counter() - started
            if response.status_code != 200 or response.json()["result"].get("isError"):
                raise RuntimeError(response.text[:300])
            if index:
                timings.append(elapsed)
        window.end()
    return timings


async def api_client(
    url: str, token: str, queries: list[dict], calls: int, window: CallWindow
) -> list[float]:
    """The JSON API's query route on the same daemon: the baseline MCP adds its cost to."""
    import httpx

    timings = []
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        for index in range(calls + 1):
            if index == 1:
                await window.start()
            started = time.perf_counter()
            body = arguments(queries[index % len(queries)])
            response = await http.post("/v1/workspaces/bench/query", json=body)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise RuntimeError(response.text[:300])
            if index:
                timings.append(elapsed)
        window.end()
    return timings


# Set from --max-bytes: the answer budget every call asks for (None: memdsl's answers).
MAX_BYTES: int | None = None


def arguments(item: dict) -> dict:
    args = {"query": item["query"], "limit": item.get("limit", 8)}
    if MAX_BYTES:
        args["max_bytes"] = MAX_BYTES
    if item.get("types"):
        args["types"] = item["types"]
    if item.get("subject"):
        args["subject"] = item["subject"]
    return args


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process `pid` so far (None where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CLIENTS = {
    "sdk": sdk_client,
    "floor": sdk_client,
    "floor-short": sdk_client,
    "floor-raw": raw_client,
    "raw": raw_client,
    "api": api_client,
}


async def run_clients(kind: str, count: int, server: dict, queries: list[dict], calls: int) -> dict:
    client = CLIENTS[kind]
    # Each client starts at a different place in the query list.
    shifted = [
        queries[i * 7 % len(queries) :] + queries[: i * 7 % len(queries)] for i in range(count)
    ]
    window = CallWindow(count)
    started = time.perf_counter()
    results = await asyncio.gather(
        *(client(server["url"], server["token"], shifted[i], calls, window) for i in range(count))
    )
    wall = time.perf_counter() - started
    timings = [t for result in results for t in result]
    return {
        "client": kind,
        "clients": count,
        "calls": len(timings),
        "p50_ms": harness.percentile(timings, 0.5) * 1000,
        "p99_ms": harness.percentile(timings, 0.99) * 1000,
        "throughput_per_s": len(timings) / wall,
        "client_cpu_ms": window.cpu_seconds() * 1000 / len(timings),
    }


# A short text in place of each recorded answer's (`floor-short`): the SDK client's cost
# for an answer of a few hundred bytes.
SHORT_TEXT = '{"ok":true,"status":"ok"}'


def start_floor(
    server: dict, queries: list[dict], children: list[subprocess.Popen], short: bool = False
) -> tuple[subprocess.Popen, dict]:
    """The stand-in server, serving the daemon's answers to the first 100 queries."""
    recorded = asyncio.run(record_answers(server["url"], server["token"], queries, 100))
    if short:
        answers = []
        for answer in recorded["tools/call"]:
            message = json.loads(answer)
            message["result"]["content"][0]["text"] = SHORT_TEXT
            answers.append(json.dumps(message, separators=(",", ":")))
        recorded["tools/call"] = answers
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(recorded, handle)
    try:
        stand_in, address = start_child("--serve-recorded", handle.name)
    finally:
        os.unlink(handle.name)  # read by the child before it prints its address
    children.append(stand_in)
    return stand_in, {**address, "token": server["token"]}


# --- where the SDK client's CPU goes (py-spy, --client-profile) ---------------------------

# Layers by the module a sample's innermost frame is in.
LAYERS = [
    ("mcp SDK client (session, transport, dispatcher)", ("mcp/", "mcp_types/", "opentelemetry/")),
    ("pydantic (models, validation, dumps)", ("pydantic/", "pydantic_core/")),
    ("httpx2 / httpx (client, models, URLs)", ("httpx2/", "httpx/")),
    ("httpcore2 / httpcore + h11 (HTTP/1.1 connection)", ("httpcore2/", "httpcore/", "h11/")),
    ("anyio (tasks, streams, cancel scopes)", ("anyio/",)),
    ("asyncio event loop + socket calls", ("asyncio/", "selectors.py", "socket.py")),
    ("json (stdlib decoder and encoder)", ("json/",)),
]
# Samples taken while connecting or between runs, not while calling: left out.
SETUP_FRAMES = ("sampled", "AsyncClient.__init__", "Client.__aenter__", "Client.__aexit__")


def sampled(pid: int, out: Path) -> subprocess.Popen:
    """py-spy sampling process `pid` into `out` (raw stacks) until interrupted."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    command = [spy, "record", "-r", "500", "-f", "raw", "-o", str(out), "--pid", str(pid)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)  # attached before the calls start
    return process


def client_profile(stacks: Path) -> dict:
    """Shares of the samples by layer (innermost frame) and by function (innermost frame,
    and anywhere on the stack), from py-spy's raw output."""
    layers: dict[str, int] = {}
    leaves: dict[str, int] = {}
    within: dict[str, int] = {}
    total = 0
    for line in stacks.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        names = {frame.split(" (", 1)[0] for frame in frames}
        if names & set(SETUP_FRAMES):
            continue
        samples = int(count)
        total += samples
        leaf = frames[-1]
        where = leaf[leaf.rfind("(") + 1 :]
        layer = next((name for name, parts in LAYERS if where.startswith(parts)), "other stdlib")
        layers[layer] = layers.get(layer, 0) + samples
        leaves[leaf] = leaves.get(leaf, 0) + samples
        for name in names:
            within[name] = within.get(name, 0) + samples

    def top(counts: dict[str, int], n: int) -> list[tuple[str, float]]:
        ranked = sorted(counts.items(), key=lambda item: -item[1])[:n]
        return [(name, 100 * value / max(total, 1)) for name, value in ranked]

    stages = [name for name in STAGES if name in within]
    return {
        "samples": total,
        "layers": top(layers, len(LAYERS) + 1),
        "functions": top(leaves, 15),
        "stages": [(name, 100 * within[name] / max(total, 1)) for name in stages],
    }


# Stages of one SDK call, each with everything it calls.
STAGES = [
    "Client.call_tool",
    "ClientSession.send_request",
    "JSONRPCDispatcher.send_raw_request",
    "StreamableHTTPTransport.post_writer",
    "StreamableHTTPTransport._handle_post_request",
    "BaseClient.build_request",
    "AsyncClient.send",
    "AsyncHTTP11Connection._send_request_headers",
    "AsyncHTTP11Connection._send_request_body",
    "AsyncHTTP11Connection._receive_response_headers",
    "StreamableHTTPTransport._handle_json_response",
    "Response.aread",
    "TypeAdapter.validate_json",
    "JSONRPCDispatcher.run",
    "EpollSelector.select",
]


def render_profile(kind: str, profile: dict, cpu_ms: float) -> str:
    lines = [
        f"\n{kind} x1: where the client's CPU goes ({profile['samples']} samples, "
        f"{cpu_ms:.2f} ms of client CPU a call)"
    ]
    lines.append("by layer (innermost frame):")
    lines += [
        f"  {share:5.1f}%  {share * cpu_ms / 100:5.2f} ms  {name}"
        for name, share in profile["layers"]
    ]
    lines.append("by stage (with what it calls):")
    lines += [
        f"  {share:5.1f}%  {share * cpu_ms / 100:5.2f} ms  {name}"
        for name, share in profile["stages"]
    ]
    lines.append("by function (innermost frame):")
    lines += [f"  {share:5.1f}%  {name}" for name, share in profile["functions"]]
    return "\n".join(lines)


def render(report: dict) -> str:
    rows = [
        [
            r["client"],
            str(r["clients"]),
            str(r["calls"]),
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            f"{r['throughput_per_s']:.0f}",
            "n/a" if r.get("server_cpu_ms") is None else f"{r['server_cpu_ms']:.2f}",
            "n/a" if r.get("client_cpu_ms") is None else f"{r['client_cpu_ms']:.2f}",
        ]
        for r in report["runs"]
    ]
    head = (
        f"MCP memory_query over loopback TCP, {report['declarations']} declarations "
        f"(synthetic, {report['shape']}, seed {report['seed']}, "
        f"max_bytes {report['max_bytes'] or 'none'}; measured once the daemon was idle, "
        f"{report['idle_wait_s']:.1f} s after its first answer)"
    )
    table = harness.table(
        ["client", "clients", "calls", "p50 ms", "p99 ms", "calls/s", "srv cpu ms", "cli cpu ms"],
        rows,
    )
    verdict = "met" if report["goal_met"] else "NOT met"
    goal = f"goal: p50 <= {GOAL_P50_MS:g} ms with one SDK client: {verdict}"
    return f"{head}\n{table}\n{goal}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10k", help="declarations (default 10k)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--calls", type=int, default=400, help="calls per client (default 400)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--shape", choices=synth.SHAPES, default="spread")
    parser.add_argument("--max-bytes", type=int, default=None, help="answer budget per call")
    parser.add_argument(
        "--kinds",
        default="sdk,raw,api",
        help="which clients to run, of sdk,raw,api,floor,floor-short,floor-raw "
        "(default sdk,raw,api)",
    )
    parser.add_argument(
        "--client-profile",
        action="store_true",
        help="sample the one-client floor and floor-short runs with py-spy: the SDK "
        "client's CPU by layer, stage and function",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="call the daemon's app in this process (no sockets): CPU per call of sdk,raw,api",
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--state", help=argparse.SUPPRESS)
    parser.add_argument("--serve-recorded", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.state)
        return 0
    if args.serve_recorded:
        serve_recorded(args.serve_recorded)
        return 0
    global MAX_BYTES
    MAX_BYTES = args.max_bytes
    size = synth.parse_size(args.size)
    generated = synth.ensure_workspace(size, args.seed, shape=args.shape)
    queries = generated.queries()
    kinds = args.kinds.split(",")
    if args.in_process:
        runs = in_process(
            generated.workspace,
            queries,
            args.calls,
            [k for k in kinds if k in ("sdk", "raw", "api")],
        )
        if args.json:
            print(json.dumps({"benchmark": "mcp_query_in_process", "runs": runs}, indent=2))
        else:
            rows = [[r["client"], r["pass"], str(args.calls), f"{r['cpu_ms']:.2f}"] for r in runs]
            print(f"MCP memory_query in process (the app alone), {size} declarations")
            print(harness.table(["client", "pass", "calls", "cpu ms per call"], rows))
        return 0
    # The parent owns the daemon's state directory, so that it is gone after the run
    # whichever way the daemon ends.
    state = tempfile.mkdtemp(prefix="memhub-bench-")
    try:
        child, server = start_server(generated.workspace, state)
    except BaseException:
        shutil.rmtree(state, ignore_errors=True)
        raise
    children = [child]
    try:
        # The first call builds what every later one reuses (the index, the vocabulary):
        # made with a question of its own before anything is measured.
        asyncio.run(run_clients("api", 1, server, [{"query": "warm up the daemon"}], 1))
        # After a start the daemon saves its parse cache and lints in a worker thread:
        # measured beside that, a first pass times the start's aftermath, not the answers
        # (as bench/daemon.py waits before its wrk runs).
        idle_s = wait_until_idle(child.pid)
        import httpx  # noqa: F401 - imported before any client's CPU time is counted
        import httpx2  # noqa: F401
        from mcp import Client  # noqa: F401

        runs = []
        profiles = []
        for kind in kinds:
            # Recording the stand-in's answers caches them in the daemon: only when due.
            floor = kind.startswith("floor")
            serving, address = (
                start_floor(server, queries, children, short=kind == "floor-short")
                if floor
                else (child, server)
            )
            for count in (1, args.clients):
                profiled = floor and count == 1 and args.client_profile
                stacks = Path(tempfile.mkdtemp(prefix="mcp-query-")) / "stacks.txt"
                spy = sampled(os.getpid(), stacks) if profiled else None
                before = cpu_seconds(serving.pid)
                run = asyncio.run(run_clients(kind, count, address, queries, args.calls))
                after = cpu_seconds(serving.pid)
                spent = None if before is None or after is None else after - before
                run["server_cpu_ms"] = None if spent is None else spent * 1000 / run["calls"]
                runs.append(run)
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait(60)
                    profile = client_profile(stacks)
                    profiles.append(render_profile(kind, profile, run["client_cpu_ms"]))
                    run["client_profile"] = profile
                shutil.rmtree(stacks.parent, ignore_errors=True)
    finally:
        for running in children:
            running.terminate()
            running.wait(20)
        shutil.rmtree(state, ignore_errors=True)
    single = next((r for r in runs if r["client"] == "sdk" and r["clients"] == 1), None)
    report = {
        "benchmark": "mcp_query",
        "declarations": size,
        "seed": args.seed,
        "shape": args.shape,
        "max_bytes": args.max_bytes,
        "idle_wait_s": idle_s,
        "runs": runs,
        "goal_met": single is not None and single["p50_ms"] <= GOAL_P50_MS,
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    if profiles and not args.json:
        print("\n".join(profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
