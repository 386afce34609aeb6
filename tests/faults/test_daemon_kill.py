"""The daemon killed with SIGKILL at random moments while approvals go through its API.

`memhubd serve` runs as a subprocess; a killer thread kills and restarts it while a
client approves 100 proposals, retrying whatever a kill interrupted. Afterwards every
target parses, every approved declaration is in memory exactly once, the audit log
agrees with the files, and no proposal was lost.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memhubd.auth.tokens import TokenStore
from memhubd.lang import parse_file
from memhubd.lint import has_errors, lint
from memhubd.model import Workspace
from memhubd.review import ReviewStore, approval_marker

# About ten approvals between two kills, as with more of both: each kill and restart
# is what costs (a process start), and ten land at as varied points as twenty.
PROPOSALS = 100
TARGETS = ("alpha.mem", "beta.mem", "nested/gamma.mem")
WS = "ws"
BASE = f"/v1/workspaces/{WS}"
START_TIMEOUT = 60.0  # generous: a start takes 15 s on a machine loaded 8 times over
MAX_KILLS = 10  # each costs a restart (~0.5 s): this bounds the test's duration


class Daemon:
    """One `memhubd serve` at a time on a fixed Unix socket, killed and restarted at will."""

    def __init__(self, root: Path, state: Path, socket_path: str, log: Path) -> None:
        self.argv = [
            sys.executable,
            "-m",
            "memhubd",
            "serve",
            "--port",
            "0",
            "--socket",
            socket_path,
            "--state-dir",
            str(state),
            "--workspace",
            f"{WS}={root}",
            "--log-level",
            "warning",
        ]
        self.socket_path = socket_path
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=log)
        deadline = time.monotonic() + START_TIMEOUT
        with self.client(None, timeout=1.0) as client:
            while time.monotonic() < deadline:
                assert self.process.poll() is None, (
                    f"memhubd exited: {self.log.read_text()[-2000:]}"
                )
                try:
                    if client.get("/readyz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.02)
        raise AssertionError(f"memhubd did not become ready: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)  # no cleanup, no finally blocks
        self.process.wait(START_TIMEOUT)
        self.kills += 1

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def client(self, token: str | None, timeout: float = 30.0) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        transport = httpx.HTTPTransport(uds=self.socket_path)
        return httpx.Client(
            transport=transport, base_url="http://memhub", headers=headers, timeout=timeout
        )


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[tuple[Path, Daemon, dict[str, str]]]:
    root = tmp_path / "ws"
    (root / "nested").mkdir(parents=True)
    (root / "base.mem").write_text("entity db {\n  aliases: [database]\n}\n")
    store = TokenStore(tmp_path / "state")
    tokens = {
        "agent": store.create("agent", "write:candidate")[1],
        "alice": store.create("alice", "review,read:summary")[1],
    }
    socket_dir = tempfile.mkdtemp(prefix="mh-")  # socket paths must stay short
    daemon = Daemon(root, tmp_path / "state", os.path.join(socket_dir, "d.sock"), tmp_path / "log")
    try:
        yield root, daemon, tokens
    finally:
        daemon.stop()
        shutil.rmtree(socket_dir, ignore_errors=True)


def fact(index: int) -> str:
    return (
        f'fact db.f{index:03d} {{\n  subject: db\n  claim: "Fact number {index}."\n'
        f'  evidence {{ source: "chat" quote: "number {index}" }}\n}}\n'
    )


def propose_all(daemon: Daemon, token: str) -> list[str]:
    with daemon.client(token) as client:
        answers = [
            client.post(f"{BASE}/proposals", json={"source": fact(i)}) for i in range(PROPOSALS)
        ]
    assert all(a.status_code == 201 for a in answers), [a.text for a in answers[:3]]
    return [a.json()["proposal_id"] for a in answers]


def approve_until_decided(
    client: httpx.Client, proposal_id: str, into: str, killer_errors: list[BaseException]
) -> Any:
    """Retry through kills until the daemon answers: approved now, or approved before."""
    deadline = time.monotonic() + 4 * START_TIMEOUT
    while time.monotonic() < deadline:
        assert not killer_errors, killer_errors  # no daemon is coming back: fail now
        try:
            response = client.post(f"{BASE}/proposals/{proposal_id}/approve", json={"into": into})
        except httpx.TransportError:  # killed mid-request, or not back yet
            time.sleep(0.02)
            continue
        if response.status_code == 503:  # restarted, workspace still loading
            time.sleep(0.02)
            continue
        assert response.status_code in (200, 409), response.text
        if response.status_code == 409:
            assert response.json()["error"]["detail"]["status"] == "already_approved"
        return response
    raise AssertionError(f"no answer for {proposal_id} through the kills")


def kill_at_random(
    daemon: Daemon, rng: random.Random, done: threading.Event, errors: list[BaseException]
) -> None:
    try:
        while not done.is_set() and daemon.kills < MAX_KILLS:
            if done.wait(rng.uniform(0.01, 0.2)):
                return
            daemon.kill()
            daemon.start()
    except BaseException as error:  # reported by the test rather than lost with the thread
        errors.append(error)


@pytest.mark.slow
def test_sigkilled_daemon_loses_and_duplicates_no_approval(
    setting: tuple[Path, Daemon, dict[str, str]],
) -> None:
    root, daemon, tokens = setting
    rng = random.Random(20261130)
    daemon.start()
    ids = propose_all(daemon, tokens["agent"])
    targets = {pid: TARGETS[i % len(TARGETS)] for i, pid in enumerate(ids)}

    # when every proposal is approved while the daemon is killed and restarted at random
    done = threading.Event()
    errors: list[BaseException] = []
    killer = threading.Thread(target=kill_at_random, args=(daemon, rng, done, errors))
    killer.start()
    try:
        with daemon.client(tokens["alice"]) as client:
            answers = [approve_until_decided(client, p, targets[p], errors) for p in ids]
    finally:
        done.set()
        killer.join(4 * START_TIMEOUT)

    # then
    assert not errors, errors
    assert daemon.kills >= 5, "the test should actually interrupt the daemon"
    approved_now = [a.json() for a in answers if a.status_code == 200]
    assert all(a["served_generation"] is not None for a in approved_now)
    assert_files_proposals_and_audit_agree(root, ids, targets)
    assert_served_by_the_last_daemon(daemon, tokens["alice"])


def assert_files_proposals_and_audit_agree(
    root: Path, ids: list[str], targets: dict[str, str]
) -> None:
    texts = {name: (root / name).read_text() for name in TARGETS}
    for name in TARGETS:
        parse_file(str(root / name))
    workspace = Workspace.load([str(root)])
    assert not has_errors(lint(workspace))
    declared = Counter(d.id for d in workspace.declarations)
    proposals = {p.id: p for p in ReviewStore(str(root)).list("all")}
    assert sorted(proposals) == sorted(ids)  # none lost, none invented
    for pid in ids:
        proposal = proposals[pid]
        assert proposal.status == "approved"
        assert declared[proposal.declaration] == 1
        assert proposal.merged_into == str((root / targets[pid]).resolve())
        markers = {name: text.count(approval_marker(pid)) for name, text in texts.items()}
        assert markers == {name: int(name == targets[pid]) for name in TARGETS}
    entries = [
        json.loads(line)
        for line in (root / ".memdsl" / "audit.log").read_text().splitlines()
        if line.startswith("{") and line.endswith("}")
    ]
    actions = Counter((e["proposal_id"], e["action"], e.get("identity")) for e in entries)
    assert actions == Counter(
        {
            (pid, action, who): 1
            for pid in ids
            for action, who in (("propose", "agent"), ("approve", "alice"))
        }
    )
    for entry in entries:
        if entry["action"] == "approve":
            assert entry["into"] == proposals[entry["proposal_id"]].merged_into


def assert_served_by_the_last_daemon(daemon: Daemon, token: str) -> None:
    with daemon.client(token) as client:
        listed = client.get(f"{BASE}/declarations", params={"limit": "500"}).json()
    served = Counter(item["id"] for item in listed["items"])
    assert all(served[f"fact:db.f{i:03d}"] == 1 for i in range(PROPOSALS))
