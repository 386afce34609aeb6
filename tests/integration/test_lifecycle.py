"""The daemon as a process: it answers, finishes in-flight requests on SIGTERM,
cleans up its socket, keeps workspaces added at run time across restarts and
refuses an open bind without tokens."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import copy_examples


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_STARTED: list[Process] = []


@pytest.fixture(autouse=True)
def _ended_processes() -> Iterator[None]:
    """Each daemon a test started is gone after it, with its socket's directory."""
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait(20)
        for stream in (process.proc.stdout, process.proc.stderr):
            if stream is not None:
                stream.close()
        shutil.rmtree(Path(process.socket_path).parent, ignore_errors=True)


class Process:
    def __init__(self, tmp: Path, workspaces: dict[str, str], *extra: str) -> None:
        self.port = free_port()
        self.socket_path = str(Path(tempfile.mkdtemp(prefix="mh-")) / "d.sock")
        self.state = tmp / "state"
        args = [
            sys.executable,
            "-m",
            "memhubd.cli",
            "serve",
            "--port",
            str(self.port),
            "--socket",
            self.socket_path,
            "--state-dir",
            str(self.state),
            "--log-format",
            "json",
            *extra,
        ]
        for name, path in workspaces.items():
            args += ["--workspace", f"{name}={path}"]
        # As a shell starts it, whatever this run inherited: the suite run under `nohup`
        # would start every daemon ignoring SIGHUP (which the nohup test checks apart).
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
        )
        _STARTED.append(self)

    def client(self) -> httpx.Client:
        transport = httpx.HTTPTransport(uds=self.socket_path)
        return httpx.Client(transport=transport, base_url="http://memhub", timeout=10)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60  # a loaded machine has taken over 30 s to start one
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(self.proc.stderr.read().decode())
            try:
                with self.client() as client:
                    if client.get("/readyz").status_code == 200:
                        return
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        raise AssertionError("daemon not ready")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(20)


def test_sigterm_lets_an_in_flight_request_finish(tmp_path: Path) -> None:
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.wait_ready()
    late = tmp_path / "late"  # beside the served workspace: one holding it is refused
    late.mkdir()
    body = json.dumps({"name": "late", "path": str(late)}).encode()
    raw = socket.socket(socket.AF_UNIX)
    raw.connect(daemon.socket_path)
    raw.sendall(
        b"POST /v1/workspaces HTTP/1.1\r\nHost: memhub\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body[:10]
    )
    time.sleep(0.3)
    daemon.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    raw.sendall(body[10:])
    response = raw.recv(65536).decode()
    raw.close()
    assert daemon.proc.wait(20) == 0
    assert response.startswith("HTTP/1.1 201"), response[:200]
    assert not os.path.exists(daemon.socket_path)


def test_sighup_stops_the_daemon_as_sigterm_does(tmp_path: Path) -> None:
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.wait_ready()
    daemon.proc.send_signal(signal.SIGHUP)
    assert daemon.proc.wait(20) == 0
    assert not os.path.exists(daemon.socket_path)
    log = daemon.proc.stderr.read().decode() + daemon.proc.stdout.read().decode()
    assert '"signal": "SIGHUP"' in log and '"event": "shutting down"' in log


def test_a_daemon_started_under_nohup_outlives_sighup(tmp_path: Path) -> None:
    import shutil as shell_tools

    nohup = shell_tools.which("nohup")
    if nohup is None:
        pytest.skip("no nohup on this machine")
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.proc.kill()
    daemon.proc.wait(20)
    daemon.proc = subprocess.Popen(
        [nohup, *daemon.proc.args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    daemon.wait_ready()
    daemon.proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert daemon.proc.poll() is None  # still serving
    with daemon.client() as client:
        assert client.get("/readyz").status_code == 200
    assert daemon.stop() == 0


def test_workspaces_added_at_run_time_survive_a_restart(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", ["writing", "assistant"])
    first = Process(tmp_path, {"writing": workspaces["writing"]})
    first.wait_ready()
    with first.client() as client:
        added = client.post(
            "/v1/workspaces", json={"name": "asst", "path": workspaces["assistant"]}
        )
        assert added.status_code == 201, added.text
    assert first.stop() == 0
    second = Process(tmp_path, {"writing": workspaces["writing"]})
    second.wait_ready()
    with second.client() as client:
        names = [w["name"] for w in client.get("/v1/workspaces").json()["workspaces"]]
        assert names == ["asst", "writing"]
        assert client.delete("/v1/workspaces/asst").status_code == 200
    assert second.stop() == 0
    third = Process(tmp_path, {"writing": workspaces["writing"]})
    third.wait_ready()
    with third.client() as client:
        names = [w["name"] for w in client.get("/v1/workspaces").json()["workspaces"]]
    assert names == ["writing"]
    assert third.stop() == 0


def test_socket_is_private_to_the_operator(tmp_path: Path) -> None:
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.wait_ready()
    mode = os.stat(daemon.socket_path).st_mode & 0o777
    assert daemon.stop() == 0
    assert mode == 0o600


@pytest.mark.parametrize("host", ["0.0.0.0"])
def test_non_loopback_bind_is_refused_while_no_token_exists(tmp_path: Path, host: str) -> None:
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]), "--host", host)
    assert daemon.proc.wait(20) == 2
    assert b"no token exists" in daemon.proc.stderr.read()


def test_a_refused_run_examples_reset_leaves_the_served_copies_alone(tmp_path: Path) -> None:
    # Given a daemon serving, and example copies in its state dir with an edit
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.wait_ready()
    from memhubd.daemon import bundled_examples, seed_examples

    source = bundled_examples()
    assert source is not None
    copies = seed_examples(source, daemon.state / "examples")
    edited = Path(copies["team-coding"]) / "decisions.mem"
    edited.write_text(edited.read_text() + "\n# kept: an edit made while served\n")
    # When a second run-examples --reset is started on the same state dir, be it on the
    # same port and socket or on addresses of its own
    own_socket = str(Path(daemon.socket_path).with_name("second.sock"))
    for extra in (
        ["--socket", daemon.socket_path, "--port", "0"],
        ["--port", str(daemon.port)],
        ["--socket", own_socket, "--port", "0"],
    ):
        refused = subprocess.run(
            [sys.executable, "-m", "memhubd.cli", "run-examples", "--reset"]
            + ["--state-dir", str(daemon.state), *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )
        # Then it is refused before it replaces anything
        assert refused.returncode == 2, refused.stderr
        assert f"another memhubd (pid {daemon.proc.pid}) is using the state directory" in (
            refused.stderr
        )
        assert "# kept: an edit made while served" in edited.read_text()
    # and a plain second daemon on its own addresses is refused too, the first serving on
    second = subprocess.run(
        [sys.executable, "-m", "memhubd.cli", "serve", "--state-dir", str(daemon.state)]
        + ["--socket", own_socket, "--port", "0", "--workspace", f"w={copies['writing']}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 2 and "is using the state directory" in second.stderr
    with daemon.client() as client:
        assert client.get("/v1/status").status_code == 200
    assert daemon.stop() == 0


def test_a_token_file_it_cannot_read_stops_the_daemon_naming_it(tmp_path: Path) -> None:
    from memhubd.auth import TokenStore

    state = tmp_path / "state"
    TokenStore(state).create("reader", "read:summary")
    tokens = state / "tokens.json"
    tokens.write_text(tokens.read_text()[:200])  # cut short, as by a full disk
    for host in ("127.0.0.1", "0.0.0.0"):
        done = subprocess.run(
            [sys.executable, "-m", "memhubd.cli", "serve", "--state-dir", str(state)]
            + ["--host", host, "--port", "0", "--socket", ""],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"memhubd: {tokens}: unreadable token file"), done.stderr
        assert "Traceback" not in done.stderr


def test_a_parse_cache_it_cannot_open_never_stops_a_start(tmp_path: Path) -> None:
    # Given a state dir whose parse-cache path is taken by a file
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "parse-cache").write_text("not a directory\n")
    # When the daemon starts, then it serves (the cache can always be rebuilt)
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.wait_ready()
    with daemon.client() as client:
        assert client.get("/v1/workspaces/writing/map").status_code == 200
    assert daemon.stop() == 0


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="reads /proc")
def test_the_daemon_raises_its_open_file_limit_to_the_hard_one(tmp_path: Path) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("the hard limit leaves nothing to raise")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))  # as a shell's low soft limit
    try:
        daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    daemon.wait_ready()
    limits = Path(f"/proc/{daemon.proc.pid}/limits").read_text().splitlines()
    row = next(line for line in limits if line.startswith("Max open files")).split()
    assert int(row[3]) > 256, row
    assert daemon.stop() == 0


@pytest.mark.parametrize("secret", ["abc", "two words here but long enough to pass the length"])
def test_a_malformed_bootstrap_secret_stops_the_start_in_one_line(
    tmp_path: Path, secret: str
) -> None:
    environ = {**os.environ, "MEMHUB_BOOTSTRAP_TOKEN": secret}
    done = subprocess.run(
        [sys.executable, "-m", "memhubd.cli", "serve", "--state-dir", str(tmp_path / "state")]
        + ["--port", "0", "--socket", ""],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("memhubd: the bootstrap secret must"), done.stderr
    assert "Traceback" not in done.stderr and secret not in done.stderr


def test_a_broken_token_file_answers_the_operator_naming_it(tmp_path: Path) -> None:
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.wait_ready()
    tokens = daemon.state / "tokens.json"
    tokens.write_text("{ cut short")
    with daemon.client() as client:  # the operator, on the Unix socket
        listed = client.get("/v1/tokens")
        revoked = client.delete("/v1/tokens/anyone")
        pushed = client.post(
            "/v1/workspaces/writing/cowork/push", json={"to": "anyone", "content": "hello"}
        )
    for answer in (listed, revoked, pushed):
        assert answer.status_code == 500, answer.text
        assert answer.json()["error"]["message"].startswith(f"{tokens}: unreadable token file")
        assert answer.json()["error"]["message"].endswith("or move it aside")
    lines = (daemon.state / "audit" / "admin.jsonl").read_text().splitlines()
    assert [json.loads(line)["outcome"] for line in lines[-2:]] == ["failed", "failed"]
    assert daemon.stop() == 0


def test_a_token_file_that_cannot_be_written_is_not_called_damaged(tmp_path: Path) -> None:
    daemon = Process(tmp_path, copy_examples(tmp_path / "ws", ["writing"]))
    daemon.wait_ready()
    tokens = daemon.state / "tokens.json"
    before = tokens.read_bytes() if tokens.exists() else None
    # Given a state dir where the token file's lock cannot be taken (as on a read-only
    # or full disk; a directory stands in its place, which even root cannot open)
    lock = daemon.state / "tokens.lock"
    with contextlib.suppress(FileNotFoundError):
        lock.unlink()
    lock.mkdir()
    with daemon.client() as client:
        made = client.post(
            "/v1/tokens", json={"name": "ci", "scopes": ["read:summary"], "workspaces": ["*"]}
        )
    # Then the operator is told the file is unchanged, not to restore or move it aside
    assert made.status_code == 500, made.text
    message = made.json()["error"]["message"]
    assert "it is unchanged" in message and "move it aside" not in message, message
    assert (tokens.read_bytes() if tokens.exists() else None) == before
    lock.rmdir()
    assert daemon.stop() == 0
