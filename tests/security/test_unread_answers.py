"""An answer the client stops reading: the connection holds the unsent rest in memory,
so it is dropped once writing has stalled for `limits.write_timeout_s`, while a client
that reads, however slowly it started, gets its whole answer."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.security.test_limits import parse, read_until_closed, request

WS = "team-coding"
# Far more than the loopback socket buffers hold, so the daemon's transport must keep
# the rest while nobody reads.
BIG_BYTES = 6 * 1024 * 1024


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("unread")
    workspaces = copy_examples(root / "ws", [WS])
    padding = "# " + "unread answers pad this file out. " * (BIG_BYTES // 34) + "\n"
    (root / "ws" / WS / "big.mem").write_text("module teamcode.big\n" + padding)
    with start_daemon(root, workspaces, **{"limits.write_timeout_s": 1}) as live:
        yield live


def ask_for_big_file(daemon: LiveDaemon) -> socket.socket:
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: small window
    sock.connect((host, int(port)))
    sock.settimeout(15)
    token = b"authorization: Bearer " + daemon.admin_token.encode()
    with daemon.http(daemon.admin_token) as client:
        files = client.get(f"/v1/workspaces/{WS}/files").json()["files"]
    file_id = next(f["file_id"] for f in files if f["path"].endswith("big.mem"))
    sock.sendall(request(f"/v1/workspaces/{WS}/files/{file_id}", token, b"accept: text/plain"))
    return sock


def test_an_answer_nobody_reads_is_dropped_after_the_write_timeout(daemon: LiveDaemon) -> None:
    sock = ask_for_big_file(daemon)
    with sock:
        time.sleep(3)  # reads nothing for three times the write timeout
        received = read_until_closed(sock)
    assert len(received) < BIG_BYTES, "the daemon kept the whole unread answer"
    with daemon.http(daemon.admin_token) as client:  # and serves everyone else as before
        assert client.get("/healthz").status_code == 200


def test_a_client_that_reads_gets_the_whole_answer(daemon: LiveDaemon) -> None:
    sock = ask_for_big_file(daemon)
    with sock:
        time.sleep(0.3)  # a short pause is no stall
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(65536)
        status, headers, body = parse(received)
        while len(body) < int(headers["content-length"]):
            body += sock.recv(65536)
    assert status == 200 and len(body) == int(headers["content-length"]) > BIG_BYTES // 2


def test_a_client_that_reads_slowly_gets_the_whole_answer(daemon: LiveDaemon) -> None:
    """A small receive window read a piece at a time: the send buffer stays full for
    many times the write timeout, yet the answer keeps coming, since some of it is read
    in each period."""
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    with daemon.http(daemon.admin_token) as client:
        files = client.get(f"/v1/workspaces/{WS}/files").json()["files"]
    file_id = next(f["file_id"] for f in files if f["path"].endswith("big.mem"))
    token = b"authorization: Bearer " + daemon.admin_token.encode()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # before connect
    with sock:
        sock.connect((host, int(port)))
        sock.settimeout(15)
        sock.sendall(request(f"/v1/workspaces/{WS}/files/{file_id}", token, b"accept: text/plain"))
        received = b""
        started = time.monotonic()
        while chunk := sock.recv(65536):
            received += chunk
            status, headers, body = parse(received)
            if len(body) >= int(headers["content-length"]):
                break
            time.sleep(0.03)
    assert time.monotonic() - started > 2, "read faster than the test means to"
    assert status == 200 and len(body) == int(headers["content-length"])
