"""One daemon never breaks another: a second memhubd on a live Unix socket or a busy TCP
port refuses to start, says which address and what to do, and the first keeps serving;
a stale socket file (nobody listening) is replaced; a daemon removes only the socket
file it created itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "writing"


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # Unix socket paths are limited to ~100 bytes: pytest's tmp_path can be too long.
    with tempfile.TemporaryDirectory(prefix="mh-") as name:
        yield Path(name)


@pytest.fixture
def first(tmp_path: Path, socket_dir: Path) -> Iterator[LiveDaemon]:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    path = str(socket_dir / "d.sock")
    with start_daemon(tmp_path / "first", workspaces, socket_path=path) as daemon:
        daemon.socket_path = path  # start_daemon records its default path, not the override
        yield daemon


def serves_over_socket(path: str) -> bool:
    transport = httpx.HTTPTransport(uds=path)
    with httpx.Client(transport=transport, base_url="http://memhub", timeout=10) as client:
        return client.get("/v1/status").status_code == 200


def test_a_second_daemon_on_a_live_socket_refuses_and_the_first_keeps_serving(
    tmp_path: Path, first: LiveDaemon
) -> None:
    workspaces = copy_examples(tmp_path / "ws2", [WS])
    with (
        pytest.raises(RuntimeError) as refused,
        start_daemon(tmp_path / "second", workspaces, socket_path=first.socket_path),
    ):
        pass
    message = str(refused.value)
    assert f"unix://{first.socket_path}" in message
    assert "already listening" in message and "--socket" in message
    assert os.path.exists(first.socket_path)
    assert serves_over_socket(first.socket_path)


def test_the_cli_says_which_socket_is_taken_and_exits_2(tmp_path: Path, first: LiveDaemon) -> None:
    result = run_serve(tmp_path, "--port", "0", "--socket", first.socket_path)
    assert result.returncode == 2, result.stderr
    assert f"unix://{first.socket_path}" in result.stderr
    assert "--socket" in result.stderr
    assert serves_over_socket(first.socket_path)


def test_a_second_daemon_on_a_busy_port_names_the_address_and_suggests_port(
    tmp_path: Path, first: LiveDaemon
) -> None:
    port = first.url.rsplit(":", 1)[1]
    result = run_serve(tmp_path, "--port", port, "--socket", "")
    assert result.returncode == 2, result.stderr
    assert f"127.0.0.1:{port}" in result.stderr
    assert "already in use" in result.stderr and "--port" in result.stderr
    with first.http() as client:
        assert client.get("/healthz").status_code == 200


def test_a_stale_socket_file_is_replaced(tmp_path: Path, socket_dir: Path) -> None:
    path = str(socket_dir / "stale.sock")
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(path)
    leftover.close()  # the file stays, nobody listens: what a crash leaves behind
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path / "d", workspaces, socket_path=path):
        assert serves_over_socket(path)
    assert not os.path.exists(path)  # its own socket is removed on exit


def test_a_file_that_is_not_a_socket_is_never_deleted(tmp_path: Path, socket_dir: Path) -> None:
    path = socket_dir / "notes.sock"
    path.write_text("not a socket")
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with (
        pytest.raises(RuntimeError) as refused,
        start_daemon(tmp_path / "d", workspaces, socket_path=str(path)),
    ):
        pass
    assert "not a socket" in str(refused.value)
    assert path.read_text() == "not a socket"


def test_a_daemon_does_not_delete_a_socket_that_replaced_its_own(
    tmp_path: Path, socket_dir: Path
) -> None:
    path = str(socket_dir / "d.sock")
    workspaces = copy_examples(tmp_path / "ws", [WS])
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with start_daemon(tmp_path / "d", workspaces, socket_path=path):
            # Someone removed our socket file and now serves their own at the same path.
            os.unlink(path)
            other.bind(path)
            other.listen(1)
        assert os.path.exists(path), "the daemon deleted a socket it did not create"
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(path)  # still the other listener's
        probe.close()
    finally:
        other.close()


def run_serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`memhubd serve` as a user runs it, in its own process, refused before serving."""
    env = {**os.environ, "MEMHUB_STATE_DIR": str(tmp_path / "cli-state")}
    command = [sys.executable, "-m", "memhubd", "serve", "--state-dir", str(tmp_path / "cli")]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )
