"""A daemon's start imports what answering governed memory needs, and the rest on use.

Recall, the knowledge graph, cowork's and the diary's routes, the OpenAPI document and the
recall benchmark are imported by their first use (or in the background a second after the
start), never before a fresh daemon's first query is answered.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from memhub_protocol import ROUTES
from memhubd.api.app import DEFERRED_ROUTES, ApiContext, _handlers
from memhubd.runtime.hub import Hub

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Modules a start must not have imported when its first query is answered.
DEFERRED_PREFIXES = (
    "memhubd.recall",
    "memhubd.graph",
    "memhubd.service.recall",
    "memhubd.service.graph",
    "memhubd.service.diary",
    "memhubd.service.recall_review",
    "memhubd.api.recall",
    "memhubd.api.cowork",
    "memhubd.api.graph",
    "memhubd.api.diary",
    "memhubd.api.recall_review",
    "memhubd.api.openapi",
    "memhubd.mcp",
    "mcp",
    "pydantic",
)

# A fresh interpreter starts a daemon as `memhubd serve` does (the command line parsed,
# then `run_daemon`), asks one query over its Unix socket and prints what was imported
# by then. The deferred loading is pushed out of the way so that only the start counts.
_FIRST_QUERY = """
import json, sys, threading
import anyio
from memhubd.cli import build_parser
args = build_parser().parse_args(["serve", "--port", "0", "--socket", sys.argv[2],
    "--state-dir", sys.argv[3], "--workspace", "team=" + sys.argv[1]])
import memhubd.server as server
from memhubd.runtime.config import config_from_args
server.DEFERRED_IMPORT_DELAY_S = server.MCP_IMPORT_DELAY_S = 3600.0
ready, stop = threading.Event(), threading.Event()
thread = threading.Thread(target=lambda: anyio.run(lambda: server.run_daemon(
    config_from_args(args), handle_signals=False, on_ready=lambda info: ready.set(), stop=stop)))
thread.start()
assert ready.wait(60)
import socket
body = json.dumps({"query": "deploy"}).encode()
with socket.socket(socket.AF_UNIX) as conn:
    conn.connect(sys.argv[2])
    conn.sendall(b"POST /v1/workspaces/team/query HTTP/1.1\\r\\nhost: memhub\\r\\n"
        b"content-type: application/json\\r\\nconnection: close\\r\\n"
        b"content-length: %d\\r\\n\\r\\n%s" % (len(body), body))
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
loaded = sorted(name for name, module in sys.modules.items() if module is not None)
stop.set()
thread.join(30)
head, _, payload = answer.partition(b"\\r\\n\\r\\n")
print(json.dumps({"status": head.split(b" ", 2)[1].decode(), "body": payload.decode(), "modules": loaded}))
"""


def test_a_fresh_daemon_answers_its_first_query_without_the_deferred_modules(
    tmp_path: Path,
) -> None:
    # Given a fresh interpreter that starts a daemon over a copy of an example workspace
    workspace = shutil.copytree(EXAMPLES / "team-coding", tmp_path / "team-coding")
    socket_dir = tempfile.mkdtemp(prefix="mh-")  # a short path: Unix sockets need one
    script = [sys.executable, "-c", _FIRST_QUERY, str(workspace)]
    script += [f"{socket_dir}/d.sock", str(tmp_path / "state")]
    # When it has answered its first query
    try:
        found = subprocess.run(script, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout.strip().splitlines()[-1])
    # Then the query was answered, and none of the deferred modules was imported for it
    assert result["status"] == "200"
    assert json.loads(result["body"])["must"]
    early = [
        name
        for name in result["modules"]
        if any(name == prefix or name.startswith(prefix + ".") for prefix in DEFERRED_PREFIXES)
    ]
    assert early == []


def test_every_route_has_a_handler_now_or_deferred() -> None:
    # Given the core handlers and the deferred route table
    core = set(_handlers(ApiContext(hub=Hub(), tokens=None)))
    deferred = [name for _factory, names in DEFERRED_ROUTES.values() for name in names]
    # Then each route of the protocol is served by exactly one of them
    assert sorted([*core, *deferred]) == sorted(spec.name for spec in ROUTES)


def test_each_deferred_module_serves_the_routes_the_table_names() -> None:
    # Given each deferred route module, imported
    context = ApiContext(hub=Hub(), tokens=None)
    for module, (factory, names) in DEFERRED_ROUTES.items():
        handlers = getattr(importlib.import_module(module), factory)(context)
        # Then its handlers are exactly the routes the table defers to it
        assert sorted(handlers) == sorted(names), module
