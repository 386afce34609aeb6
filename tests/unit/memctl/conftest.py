"""Fixtures for memctl's unit tests: canned daemons on TCP and on a Unix socket."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from memctl_fakes import FakeDaemon, UnixHTTPServer, handler_for, run_in_thread


@pytest.fixture
def fake_daemon() -> Iterator[FakeDaemon]:
    """A canned daemon on a free loopback port."""
    daemon = FakeDaemon(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(daemon))
    server.daemon_threads = True
    daemon.url = f"http://127.0.0.1:{server.server_address[1]}"
    run_in_thread(server)
    yield daemon
    server.shutdown()
    server.server_close()


@pytest.fixture
def short_tmp() -> Iterator[str]:
    """A short directory: Unix socket paths are limited to about 100 bytes."""
    path = tempfile.mkdtemp(prefix="memctl-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_socket_daemon(short_tmp: str) -> Iterator[FakeDaemon]:
    """The same canned daemon on a Unix socket."""
    path = os.path.join(short_tmp, "d.sock")
    daemon = FakeDaemon(url=f"unix://{path}")
    server = UnixHTTPServer(path, handler_for(daemon))
    run_in_thread(server)
    yield daemon
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL where nothing listens (the port was just free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def no_client_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Isolate memctl from the user's environment and client.toml."""
    for name in (
        "MEMHUB_URL",
        "MEMHUB_TOKEN",
        "MEMHUB_WORKSPACE",
        "MEMHUB_STATE_DIR",
        "XDG_CONFIG_HOME",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
