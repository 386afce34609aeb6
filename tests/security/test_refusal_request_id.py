"""The refusals the connection writes itself, below the API (431 for an oversized head,
408 for a request not received in time, 400 for one that is not HTTP), carry an
`x-request-id` like every other answer, each its own."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

LIMITS = {"limits.max_header_bytes": 4096, "limits.read_timeout_s": 1}
REQUEST_ID = re.compile(r"[0-9a-f]{16}")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("refusal-ids")
    with start_daemon(root, copy_examples(root / "ws", ["writing"]), **LIMITS) as live:
        yield live


def exchange(daemon: LiveDaemon, data: bytes) -> tuple[int, dict[str, str]]:
    """Send `data`, read until the daemon closes: the status and headers it answered."""
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.settimeout(15)
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    head = received.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(head[0].split()[1]), headers


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 8000 + b"\r\n\r\n", 431),
        (b"GET /healthz HTTP/1.1\r\nhost: x\r\n", 408),  # the head never ends
        (b"NOT HTTP AT ALL\r\n\r\n", 400),
    ],
    ids=["431", "408", "400"],
)
def test_a_refusal_below_the_api_carries_a_request_id(
    daemon: LiveDaemon, data: bytes, status: int
) -> None:
    first, second = exchange(daemon, data), exchange(daemon, data)
    assert first[0] == second[0] == status
    ids = [first[1].get("x-request-id"), second[1].get("x-request-id")]
    assert all(REQUEST_ID.fullmatch(id_ or "") for id_ in ids), ids
    assert ids[0] != ids[1]


def test_an_answer_of_the_api_carries_one_of_the_same_form(daemon: LiveDaemon) -> None:
    status, headers = exchange(
        daemon, b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    )
    assert status == 200 and REQUEST_ID.fullmatch(headers["x-request-id"])


def test_a_refusal_below_the_api_is_counted_in_the_request_metrics(daemon: LiveDaemon) -> None:
    def refused(status: int) -> float:
        with daemon.http(daemon.admin_token) as client:
            text = client.get("/metrics").text
        wanted = f'memhub_requests_total{{route="refused",status="{status}"}} '
        line = next((line for line in text.splitlines() if line.startswith(wanted)), None)
        return float(line.rsplit(" ", 1)[1]) if line else 0.0

    before = {status: refused(status) for status in (400, 431)}
    exchange(daemon, b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 8000 + b"\r\n\r\n")
    exchange(daemon, b"NOT HTTP AT ALL\r\n\r\n")

    assert refused(431) == before[431] + 1
    assert refused(400) == before[400] + 1


def test_a_body_too_slow_is_counted_once_by_the_route_that_began_it(daemon: LiveDaemon) -> None:
    def counts() -> dict[str, float]:
        with daemon.http(daemon.admin_token) as client:
            text = client.get("/metrics").text
        return {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("memhub_requests_total{")
        }

    before = counts()
    head = (
        "POST /v1/workspaces/writing/recall/search HTTP/1.1\r\nhost: x\r\n"
        f"authorization: Bearer {daemon.admin_token}\r\ncontent-type: application/json\r\n"
        "content-length: 40\r\n\r\n"
    )
    status, _headers = exchange(daemon, head.encode() + b'{"query": "x"}')  # 26 bytes short

    assert status == 408
    after = counts()
    grown = {key: after[key] - before.get(key, 0.0) for key in after}
    assert sum(grown.values()) == 2  # this request and the first /metrics read
    assert not any('route="refused"' in key and grown[key] for key in grown)
