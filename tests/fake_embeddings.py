"""A real OpenAI-compatible `/v1/embeddings` server on a free loopback port, for tests.

What it answers is switched while it runs (`server.mode = "e500"`), so a test can make an
embedder that loaded fine start failing, and then recover. Modes: ok, e500, wrongdim,
fewer, nan, big (1e39, beyond float32), huge (1e38, a length float32 cannot hold), zero,
tiny (1e-30, a length that underflows to 0), down (the connection is closed unanswered),
hold (answered as ok once `gate` is set: a request held under way), echo (HTTP 400 whose
body quotes the input, as some gateways do), bigint (a 400-digit integer in a vector).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = (
    "ok",
    "e500",
    "wrongdim",
    "fewer",
    "nan",
    "big",
    "huge",
    "zero",
    "tiny",
    "down",
    "hold",
    "echo",
    "bigint",
)


def fake_vector(text: str, dimension: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [((digest[i % 32] + i * 7) % 251) / 251.0 - 0.5 for i in range(dimension)]


@dataclass
class FakeEmbeddings:
    url: str = ""
    dimension: int = 16
    mode: str = "ok"
    requests: list[list[str]] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)

    def answer(self, texts: list[str]) -> tuple[int, bytes]:
        mode = self.mode
        if mode == "e500":
            return 500, b'{"error": "model exploded"}'
        if mode == "echo":
            return 400, json.dumps({"error": f"bad input: {' | '.join(texts)}"}).encode()
        width = self.dimension + 1 if mode == "wrongdim" else self.dimension
        rows = [fake_vector(t, width) for t in texts]
        if mode == "fewer":
            rows = rows[:-1]
        elif mode in ("big", "huge", "zero", "tiny"):
            value = {"big": 1e39, "huge": 1e38, "zero": 0.0, "tiny": 1e-30}[mode]
            rows = [[value] * width for _ in rows]
        elif mode == "nan" and rows:
            rows[0][0] = float("nan")  # json.dumps writes it as NaN, as some servers do
        elif mode == "bigint" and rows:
            rows[0][0] = 10**400  # valid JSON; no float holds it
        data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
        return 200, json.dumps({"object": "list", "data": data, "model": "fake"}).encode()


def _handler(server: FakeEmbeddings) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            length = int(self.headers.get("Content-Length", "0"))
            texts = json.loads(self.rfile.read(length) or b"{}").get("input", [])
            server.requests.append(list(texts))
            if server.mode == "down":
                self.close_connection = True
                return
            if server.mode == "hold":
                server.gate.wait(30)
            status, body = server.answer(list(texts))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def fake_embeddings(dimension: int = 16) -> Iterator[FakeEmbeddings]:
    """The server, listening until the block ends; `url` is its `/v1/embeddings`."""
    state = FakeEmbeddings(dimension=dimension)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1/embeddings"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
