"""A real memhubd for integration tests: uvicorn on a free loopback port and a
temporary Unix socket, over copies of the example workspaces.

The daemon runs in its own thread with its own event loop, so tests may use
blocking clients (memctl, httpx.Client) or async ones alike.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memhubd.auth.tokens import TokenStore
from memhubd.runtime.config import load_config
from memhubd.runtime.logging import configure_logging
from memhubd.server import DaemonInfo, run_daemon

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The in-process daemons log through the same handlers as the test process:
# warnings and errors only, so that failures stay readable.
configure_logging("console", "warning")


@dataclass
class LiveDaemon:
    url: str
    socket_path: str
    state_dir: Path
    workspaces: dict[str, str]
    admin_token: str
    tokens: dict[str, str] = field(default_factory=dict)  # name -> secret
    thread: threading.Thread | None = None
    stop: threading.Event | None = None
    errors: list[BaseException] = field(default_factory=list)

    @property
    def socket_url(self) -> str:
        return f"unix://{self.socket_path}"

    def http(self, token: str | None = None, timeout: float = 10, **kwargs: Any) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout, **kwargs)

    def unix(self, token: str | None = None) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        transport = httpx.HTTPTransport(uds=self.socket_path)
        return httpx.Client(
            transport=transport, base_url="http://memhub", headers=headers, timeout=10
        )

    def add_token(self, name: str, scopes: str, **grants: Any) -> str:
        _record, secret = TokenStore(self.state_dir).create(name, scopes, **grants)
        self.tokens[name] = secret
        return secret


def copy_examples(target: Path, names: list[str] | None = None) -> dict[str, str]:
    chosen = names or sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    out = {}
    for name in chosen:
        # Never inherit review state (proposals, audit) a local run left in examples/.
        shutil.copytree(EXAMPLES / name, target / name, ignore=shutil.ignore_patterns(".memdsl"))
        out[name] = str(target / name)
    return out


@contextmanager
def start_daemon(
    workdir: Path, workspaces: dict[str, str], **settings: Any
) -> Iterator[LiveDaemon]:
    state_dir = workdir / "state"
    # Unix socket paths are limited to ~100 bytes: keep them in a short temp dir.
    socket_dir = Path(tempfile.mkdtemp(prefix="mh-"))
    socket_path = str(socket_dir / "d.sock")
    store = TokenStore(state_dir)
    _record, admin = store.create("admin", "all", roles=["*"])
    overrides = {
        "host": "127.0.0.1",
        "port": 0,
        "socket_path": socket_path,
        "state_dir": str(state_dir),
        "workspaces": workspaces,
        "watch.debounce_ms": 50,
        "watch.rescan_interval_s": 1.0,
        **settings,
    }
    config = load_config(None, overrides)
    ready = threading.Event()
    stop = threading.Event()
    holder: dict[str, DaemonInfo] = {}
    daemon = LiveDaemon("", socket_path, state_dir, dict(workspaces), admin, {"admin": admin})

    def on_ready(info: DaemonInfo) -> None:
        holder["info"] = info
        ready.set()

    def run() -> None:
        try:
            anyio.run(
                lambda: run_daemon(config, handle_signals=False, on_ready=on_ready, stop=stop)
            )
        except BaseException as error:  # reported by the fixture, not lost in the thread
            daemon.errors.append(error)
            ready.set()

    thread = threading.Thread(target=run, name="memhubd-test", daemon=True)
    thread.start()
    if not ready.wait(30) or daemon.errors:
        stop.set()
        thread.join(20)
        shutil.rmtree(socket_dir, ignore_errors=True)
        raise RuntimeError(f"daemon did not start: {daemon.errors!r}")
    daemon.url = holder["info"].url
    daemon.thread, daemon.stop = thread, stop
    try:
        yield daemon
    finally:
        stop.set()
        thread.join(20)
        shutil.rmtree(socket_dir, ignore_errors=True)
        assert not thread.is_alive(), "daemon did not stop"


@pytest.fixture
def live_daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    """A daemon over fresh copies of every example workspace."""
    workspaces = copy_examples(tmp_path / "ws")
    with start_daemon(tmp_path, workspaces) as daemon:
        yield daemon


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """One daemon for a module of read-only tests."""
    root = tmp_path_factory.mktemp("shared")
    workspaces = copy_examples(root / "ws")
    with start_daemon(root, workspaces) as daemon:
        yield daemon


@pytest.fixture
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """memctl run by a test sees no MEMHUB_* variables and no client.toml of the
    machine's user (a home and config directory of its own)."""
    for name in ("MEMHUB_URL", "MEMHUB_TOKEN", "MEMHUB_WORKSPACE", "MEMHUB_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def memctl(daemon: LiveDaemon, secret: str, *argv: str) -> tuple[int, str, str]:
    """memctl run as a user runs it, against `daemon` with `secret`: exit code, stdout
    and stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", secret, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    return result.returncode, result.stdout, result.stderr


def wait_for(check: Callable[[], bool], seconds: float = 15) -> None:
    """Return once `check()` is true; fail the test after `seconds` (a generous bound for
    what a daemon serves within about a second)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("not served in time")
