"""A daemon that refuses the bridge's request (a bad token: 401 with the envelope) is
named by its address in the JSON-RPC error and on stderr, as an unreachable one is."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memctl.mcp_bridge import DAEMON_REFUSED, run_bridge

ENVELOPE = {
    "error": {
        "code": "unauthorized",
        "message": "invalid or expired token; send Authorization: Bearer <token>",
        "detail": {},
    }
}


class Refusing(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps(ENVELOPE).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_token_names_the_daemons_address(refusing_url: str) -> None:
    stdout, stderr = io.BytesIO(), io.StringIO()
    ping = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode() + b"\n"
    assert (
        run_bridge(refusing_url, "mh_wrong", stdin=io.BytesIO(ping), stdout=stdout, stderr=stderr)
        == 0
    )
    (reply,) = [json.loads(line) for line in stdout.getvalue().splitlines()]
    error = reply["error"]
    assert reply["id"] == 3 and error["code"] == DAEMON_REFUSED
    assert error["message"] == (
        f"memhubd at {refusing_url} answered 401: "
        "invalid or expired token; send Authorization: Bearer <token>"
    )
    assert error["data"] == ENVELOPE
    assert stderr.getvalue() == f"memctl mcp: {error['message']}\n"
