"""Header, time and size limits: what one connection may make the daemon hold.

A request head is bounded in bytes and in fields before the parser buffers more of it
(431), a client that trickles its request or sends nothing is cut off (408 or a plain
close), an idle keep-alive connection is closed, and no answer, JSON or text, is larger
than `limits.max_result_bytes` (413). All refusals are the JSON error envelope; no
token is needed to be refused, which is the point.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
MAX_HEADER_BYTES = 8192
MAX_RESULT_BYTES = 4096
LIMITS = {
    "limits.max_header_bytes": MAX_HEADER_BYTES,
    "limits.max_headers": 50,
    "limits.read_timeout_s": 1,
    "limits.keep_alive_timeout_s": 1,
    "limits.max_result_bytes": MAX_RESULT_BYTES,
    "limits.max_body_bytes": 256 * 1024,
}


def bulk_file(count: int = 60) -> str:
    """A .mem file whose source, map and answers are all far over MAX_RESULT_BYTES."""
    parts = ["module teamcode.bulk\n"]
    for n in range(count):
        parts.append(
            f"teamcode.tool_preference bulk.deploy_step_{n} {{\n"
            '  scope: repository("tidewater")\n'
            f'  claim: "Deploy step {n}: run the release checklist before every deploy."\n'
            "  tool: make\n"
            '  evidence { source: "chat" quote: "deploy carefully" }\n}\n'
        )
    return "\n".join(parts)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("limits")
    workspaces = copy_examples(root / "ws", [WS])
    (root / "ws" / WS / "bulk.mem").write_text(bulk_file())
    with start_daemon(root, workspaces, **LIMITS) as live:
        yield live


def connect(daemon: LiveDaemon, unix: bool = False) -> socket.socket:
    if unix:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(daemon.socket_path)
    else:
        host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))
    sock.settimeout(15)  # a safety net for a broken daemon, never what a test waits for
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def read_response(sock: socket.socket) -> bytes:
    """One complete response (head and content-length body), leaving the connection open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    _status, headers, body = parse(received)
    while len(body) < int(headers.get("content-length", "0")):
        more = sock.recv(65536)
        received, body = received + more, body + more
    return received


def parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def assert_refused(raw: bytes, status: int, code: str) -> dict[str, Any]:
    got, headers, body = parse(raw)
    assert got == status, raw[:300]
    assert headers["content-type"].startswith("application/json")
    assert headers.get("connection") == "close"
    error = json.loads(body)["error"]
    assert error["code"] == code and error["message"]
    return error


def request(path: str, *headers: bytes, method: bytes = b"GET", body: bytes = b"") -> bytes:
    head = [method + b" " + path.encode() + b" HTTP/1.1", b"host: localhost", *headers]
    if body:
        head.append(b"content-length: %d" % len(body))
    return b"\r\n".join(head) + b"\r\n\r\n" + body


# -- the request head -------------------------------------------------------------------------


@pytest.mark.parametrize("unix", [False, True], ids=["tcp", "unix"])
def test_one_oversized_header_is_refused_with_431(daemon: LiveDaemon, unix: bool) -> None:
    with connect(daemon, unix) as sock:
        sock.sendall(request("/healthz", b"x-big: " + b"a" * (4 * MAX_HEADER_BYTES)))
        raw = read_until_closed(sock)
    assert "larger than" in assert_refused(raw, 431, "headers_too_large")["message"]


def test_an_oversized_request_line_is_refused_with_431(daemon: LiveDaemon) -> None:
    with connect(daemon) as sock:
        sock.sendall(request("/healthz?" + "q" * (2 * MAX_HEADER_BYTES)))
        raw = read_until_closed(sock)
    assert_refused(raw, 431, "headers_too_large")


def test_too_many_header_fields_are_refused_with_431(daemon: LiveDaemon) -> None:
    many = [b"x-%d: 1" % n for n in range(60)]
    with connect(daemon) as sock:
        sock.sendall(request("/healthz", *many))
        raw = read_until_closed(sock)
    assert "header fields" in assert_refused(raw, 431, "headers_too_large")["message"]


def test_a_header_that_never_ends_is_cut_off_long_before_it_is_all_sent(
    daemon: LiveDaemon,
) -> None:
    # The attack that took RSS from 88 to 646 MB: 50 MB of one header, without a token.
    chunk, total, sent = b"a" * (1024 * 1024), 50 * 1024 * 1024, 0
    with connect(daemon) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-big: ")
        try:
            while sent < total:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        raw = read_until_closed(sock)
    assert sent < total, "the daemon accepted the whole 50 MB header"
    if raw:  # a reset may discard the answer the daemon wrote before closing
        assert_refused(raw, 431, "headers_too_large")


def test_headers_just_under_the_limit_are_served(daemon: LiveDaemon) -> None:
    fields = [b"x-%d: " % n + b"b" * 100 for n in range(40)]
    with connect(daemon) as sock:
        sock.sendall(request("/healthz", b"connection: close", *fields))
        status, _headers, body = parse(read_until_closed(sock))
    assert status == 200 and json.loads(body) == {"status": "ok"}


def test_a_body_larger_than_the_head_limit_sent_in_one_write_is_not_mistaken_for_a_head(
    daemon: LiveDaemon,
) -> None:
    body = json.dumps({"query": "deploy " + "word " * (4 * MAX_HEADER_BYTES // 5)}).encode()
    token = b"authorization: Bearer " + daemon.admin_token.encode()
    message = request(
        f"/v1/workspaces/{WS}/query",
        token,
        b"connection: close",
        b"content-type: application/json",
        method=b"POST",
        body=body,
    )
    with connect(daemon) as sock:
        sock.sendall(message)
        status, _headers, _body = parse(read_until_closed(sock))
    assert status in (200, 413)  # served, or refused for its result size: never 431
    assert status != 431


# -- time -------------------------------------------------------------------------------------


TRICKLES = 100  # 20 s of trickling if nobody cuts it off


def trickle(daemon: LiveDaemon, start: bytes, piece: bytes) -> tuple[int, bytes]:
    """Send `start`, then `piece` every 0.2 s; how many pieces went out, and the answer."""
    sent = 0
    with connect(daemon) as sock:
        sock.sendall(start)
        try:
            for _ in range(TRICKLES):
                sock.sendall(piece)
                sent += 1
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return sent, read_until_closed(sock)


def test_a_slowly_trickled_head_is_cut_off_with_408(daemon: LiveDaemon) -> None:
    start = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n"
    sent, raw = trickle(daemon, start, b"x-slow: 1\r\n")
    assert sent < TRICKLES, "the daemon waited for the whole trickle"
    if raw:  # a reset may discard the answer the daemon wrote before closing
        assert "not received within" in assert_refused(raw, 408, "request_timeout")["message"]


def test_a_slowly_trickled_body_is_cut_off_too(daemon: LiveDaemon) -> None:
    token = b"authorization: Bearer " + daemon.admin_token.encode()
    head = request(f"/v1/workspaces/{WS}/query", token, b"content-length: 100000", method=b"POST")
    sent, raw = trickle(daemon, head, b" ")
    assert sent < TRICKLES, "the daemon waited for the whole trickled body"
    if raw:
        assert_refused(raw, 408, "request_timeout")


def test_a_connection_that_sends_nothing_is_closed(daemon: LiveDaemon) -> None:
    with connect(daemon) as sock:
        assert read_until_closed(sock) == b""  # closed, no answer: there was no request


def test_an_idle_keep_alive_connection_is_closed(daemon: LiveDaemon) -> None:
    with connect(daemon) as sock:
        sock.sendall(request("/healthz"))
        assert parse(read_response(sock))[0] == 200
        assert read_until_closed(sock) == b""  # closed by the daemon after the idle timeout


def test_a_refusal_of_a_kept_alive_connections_next_request_is_answered(
    daemon: LiveDaemon,
) -> None:
    """The last request's finished answer is no answer in progress: the next request's
    refusal is written, not replaced by a bare close."""
    with connect(daemon) as sock:
        sock.sendall(request("/healthz"))
        assert parse(read_response(sock))[0] == 200
        sock.sendall(request("/healthz", b"x-big: " + b"a" * (4 * MAX_HEADER_BYTES)))
        assert_refused(read_until_closed(sock), 431, "headers_too_large")
    with connect(daemon) as sock:
        sock.sendall(request("/healthz"))
        assert parse(read_response(sock))[0] == 200
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n")  # never finished
        assert_refused(read_until_closed(sock), 408, "request_timeout")


def test_a_prompt_keep_alive_client_is_served_many_requests(daemon: LiveDaemon) -> None:
    with daemon.http() as client:
        for _ in range(5):
            assert client.get("/healthz").status_code == 200


# -- answer size ------------------------------------------------------------------------------


def bulk_file_id(daemon: LiveDaemon) -> str:
    with daemon.http(daemon.admin_token) as client:
        listing = client.get(f"/v1/workspaces/{WS}/files").json()
    return next(f["file_id"] for f in listing["files"] if f["path"].endswith("bulk.mem"))


@pytest.mark.parametrize("accept", ["text/plain", "application/json"])
@pytest.mark.parametrize("route", ["map", "file", "query", "declarations"])
def test_answers_over_max_result_bytes_are_refused_in_text_and_json(
    daemon: LiveDaemon, route: str, accept: str
) -> None:
    base = f"/v1/workspaces/{WS}"
    with daemon.http(daemon.admin_token) as client:
        client.headers["accept"] = accept
        if route == "query":
            response = client.post(f"{base}/query", json={"query": "deploy step", "limit": 60})
        elif route == "file":
            response = client.get(f"{base}/files/{bulk_file_id(daemon)}")
        else:
            response = client.get(
                f"{base}/{route}", params={"limit": "500"} if route == "declarations" else None
            )
    assert response.status_code == 413, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "too_large" and error["detail"]["limit"] == MAX_RESULT_BYTES


def test_small_answers_are_served_under_the_same_bound(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as client:
        response = client.get("/v1/workspaces", headers={"accept": "text/plain"})
    assert response.status_code == 200
    assert len(response.content) <= MAX_RESULT_BYTES


@pytest.mark.parametrize("expect", [False, True], ids=["sent", "expect-100-continue"])
def test_a_body_declared_over_max_body_bytes_is_refused_before_it_is_read(
    daemon: LiveDaemon, expect: bool
) -> None:
    # Given a request whose Content-Length is far over the limit, with a few bytes of
    # body sent, or none while it waits for a `100 Continue`
    token = b"authorization: Bearer " + daemon.admin_token.encode()
    headers = [token, b"content-length: 50000000", b"content-type: application/json"]
    if expect:
        headers.append(b"expect: 100-continue")
    head = request(f"/v1/workspaces/{WS}/query", *headers, method=b"POST")
    with connect(daemon) as sock:
        # When it is sent
        sock.sendall(head + (b"" if expect else b'{"query":"x"}'))
        started = time.monotonic()
        first = read_response(sock)
        took = time.monotonic() - started
        rest = read_until_closed(sock)
    # Then it is refused at once with 413 (not invited, not waited out to a 408)
    status, headers, _ = parse(first)
    assert status == 413 and json.loads(parse(first)[2])["error"]["code"] == "too_large"
    assert took < 0.9  # LIMITS' read timeout is 1 s
    # and nothing follows it: a client waiting to be invited sent no body, and its
    # connection is closed; one sending its body is not reset under it, the rest of the
    # body passed over until the read timeout, with no second answer
    assert rest == b""
    assert headers.get("connection") == ("close" if expect else None)


def test_bodies_over_max_body_bytes_are_refused_with_413(daemon: LiveDaemon) -> None:
    body = json.dumps({"query": "x" * (300 * 1024)})
    with daemon.http(daemon.admin_token) as client:
        response = client.post(f"/v1/workspaces/{WS}/query", content=body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
