"""A stand-in daemon for memctl's unit tests: a real HTTP server (TCP or Unix socket)
in a thread that answers canned payloads and records what it was sent."""

from __future__ import annotations

import contextlib
import json
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass(frozen=True)
class Canned:
    """One answer: a dict/list is sent as JSON, a str as text/plain (unless told)."""

    body: Any = None
    status: int = 200
    content_type: str | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


Answer = Canned | Callable[[Seen], Canned]


@dataclass
class FakeDaemon:
    url: str
    routes: dict[tuple[str, str], Answer] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    def on(self, method: str, path: str, answer: Answer) -> None:
        self.routes[(method, path)] = answer

    def answer(self, request: Seen) -> Canned:
        found = self.routes.get((request.method, request.path))
        if found is None:
            error = {"code": "not_found", "message": f"no route {request.path}", "detail": {}}
            return Canned({"error": error}, status=404)
        return found(request) if callable(found) else found


# The daemon's answer to an ingest request that stored one file, a.md, in 3 chunks.
ONE_FILE_INGESTED = {
    "schema_version": "memhub.recall.ingest.v1",
    "workspace": "team",
    "files": 1,
    "chunks": 3,
    "sources": [{"source": "a.md", "status": "ingested"}],
}


def handler_for(daemon: FakeDaemon) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Seen(
                method=self.command,
                path=unquote(parts.path),
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw) if raw else None,
            )
            daemon.seen.append(request)
            canned = daemon.answer(request)
            time.sleep(canned.delay)
            # The client may have given up first (a test of its timeout): nothing to tell,
            # and a traceback on stderr would land in whichever test runs next.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._reply(canned)

        def _reply(self, canned: Canned) -> None:
            body = canned.body
            if isinstance(body, dict | list):
                data, kind = json.dumps(body).encode(), "application/json"
            else:
                data, kind = str(body or "").encode(), "text/plain; charset=utf-8"
            self.send_response(canned.status)
            self.send_header("Content-Type", canned.content_type or kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def address_string(self) -> str:
            return "test"

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def run_in_thread(server: socketserver.BaseServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    return thread
