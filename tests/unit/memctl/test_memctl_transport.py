"""memctl's transport: which addresses it accepts, how it reaches the daemon over TCP
and a Unix socket, and the one line it gives when nothing answers."""

from __future__ import annotations

import os

import pytest
from memctl_fakes import Canned, FakeDaemon

from memctl.transport import (
    SOCKET_BASE_URL,
    DaemonUnreachable,
    InvalidTarget,
    Target,
    Transport,
    parse_target,
)


@pytest.mark.parametrize(
    ("text", "base_url"),
    [
        ("http://127.0.0.1:8377", "http://127.0.0.1:8377"),
        ("http://localhost:8377/", "http://localhost:8377"),
        ("https://memhub.example.org", "https://memhub.example.org"),
        ("https://memhub.example.org/team/", "https://memhub.example.org/team"),
    ],
)
def test_http_urls_become_the_base_url(text: str, base_url: str) -> None:
    assert parse_target(text) == Target(url=text, base_url=base_url)


def test_unix_url_connects_through_the_socket_with_a_fixed_host() -> None:
    target = parse_target("unix:///run/user/1000/memhub/memhubd.sock")
    assert target.socket_path == "/run/user/1000/memhub/memhubd.sock"
    assert target.base_url == SOCKET_BASE_URL
    assert target.url == "unix:///run/user/1000/memhub/memhubd.sock"


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("ftp://host", "unsupported"),
        ("127.0.0.1:8377", "unsupported"),
        ("http://", "no host"),
        ("http://host:notaport", "bad port"),
        ("http://a..b:8377", "invalid host name"),
        ("https://" + "a" * 64 + ".example", "invalid host name"),
        ("http://host:8377/?x=1", "query"),
        ("http://127.0.0.1:8377/v1", "without /v1"),
        ("https://proxy.example/memhub/v1/status", "without /v1"),
        ("unix://relative/memhubd.sock", "absolute"),
        ("unix:/run/memhubd.sock", "unix:///"),
        ("unix:///run/memhub/", "directory"),
    ],
)
def test_unusable_addresses_are_refused_with_the_reason(text: str, complaint: str) -> None:
    with pytest.raises(InvalidTarget, match=complaint):
        parse_target(text)


def test_requests_over_tcp_carry_the_token_and_accept_header(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("GET", "/v1/status", Canned({"ok": True}))
    with Transport(parse_target(fake_daemon.url), token="s3cret") as transport:
        response = transport.request("GET", "/v1/status", accept="text/plain")
    assert response.json() == {"ok": True}
    (seen,) = fake_daemon.seen
    assert seen.headers["authorization"] == "Bearer s3cret"
    assert seen.headers["accept"] == "text/plain"
    assert seen.headers["user-agent"].startswith("memctl/")


def test_requests_over_a_unix_socket_reach_the_daemon(fake_socket_daemon: FakeDaemon) -> None:
    fake_socket_daemon.on("GET", "/v1/status", Canned({"via": "socket"}))
    with Transport(parse_target(fake_socket_daemon.url)) as transport:
        response = transport.request("GET", "/v1/status")
    assert response.json() == {"via": "socket"}
    (seen,) = fake_socket_daemon.seen
    assert "authorization" not in seen.headers  # the socket's file mode is the access control


def test_a_closed_port_is_unreachable_with_connection_refused(closed_port_url: str) -> None:
    with (
        Transport(parse_target(closed_port_url)) as transport,
        pytest.raises(DaemonUnreachable) as caught,
    ):
        transport.request("GET", "/v1/status")
    assert caught.value.reason == "connection refused"
    assert caught.value.line == (
        f"memctl: cannot reach memhubd at {closed_port_url} (connection refused); "
        "is the daemon running? (make run / memhubd serve)"
    )


def test_a_missing_socket_file_is_unreachable_with_no_such_socket(short_tmp: str) -> None:
    url = f"unix://{os.path.join(short_tmp, 'absent.sock')}"
    with Transport(parse_target(url)) as transport, pytest.raises(DaemonUnreachable) as caught:
        transport.request("GET", "/v1/status")
    assert caught.value.reason == "no such socket"
    assert f"at {url} (no such socket)" in caught.value.line


@pytest.mark.parametrize(
    ("made", "reason"), [("directory", "a directory, not a socket"), ("file", "not a socket")]
)
def test_a_socket_path_that_is_no_socket_says_so(short_tmp: str, made: str, reason: str) -> None:
    path = os.path.join(short_tmp, "d.sock")
    if made == "directory":
        os.mkdir(path)
    else:
        open(path, "w").close()
    with (
        Transport(parse_target(f"unix://{path}")) as transport,
        pytest.raises(DaemonUnreachable) as caught,
    ):
        transport.request("GET", "/v1/status")
    assert caught.value.reason == reason


def test_a_stale_socket_file_nobody_listens_on_is_connection_refused(short_tmp: str) -> None:
    import socket

    path = os.path.join(short_tmp, "stale.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)  # bound, never listening: what a crashed daemon leaves behind
        with (
            Transport(parse_target(f"unix://{path}")) as transport,
            pytest.raises(DaemonUnreachable) as caught,
        ):
            transport.request("GET", "/v1/status")
    assert caught.value.reason == "connection refused"


def test_a_daemon_slower_than_the_timeout_is_unreachable(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("GET", "/v1/status", Canned({"late": True}, delay=1.0))
    with (
        Transport(parse_target(fake_daemon.url), timeout=0.2) as transport,
        pytest.raises(DaemonUnreachable) as caught,
    ):
        transport.request("GET", "/v1/status")
    assert caught.value.reason == "no answer within 0.2s"
    # Reached, but late: the request may still be carried out, so no "is it running?".
    assert "the request was sent and may still be carried out" in caught.value.line
    assert "is the daemon running" not in caught.value.line


def test_a_token_holding_a_line_break_is_refused_before_sending(
    fake_daemon: FakeDaemon,
) -> None:
    fake_daemon.on("GET", "/v1/status", Canned({"ok": True}))
    with (
        Transport(parse_target(fake_daemon.url), token="s3cret\r\nX-Admin: yes") as transport,
        pytest.raises(ValueError, match="line break"),
    ):
        transport.request("GET", "/v1/status")
    assert fake_daemon.seen == []


def test_a_chunked_answer_is_read_whole(short_tmp: str) -> None:
    import socket
    import threading

    path = os.path.join(short_tmp, "chunked.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
                b'5\r\n{"a":\r\n3;ext=1\r\n 1}\r\n0\r\n\r\n'
            )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with Transport(parse_target(f"unix://{path}")) as transport:
        response = transport.request("GET", "/v1/status")
    thread.join(5)
    listener.close()
    assert response.status_code == 200
    assert response.headers.get("Content-Type") == "application/json"
    assert response.json() == {"a": 1}
