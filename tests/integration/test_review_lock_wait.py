"""A workspace's `review.lock` held by another process (memdsl, a hook, a hung program),
against a real daemon: the wait for it is bounded and answered as a conflict at every
door, and it stalls neither reads, nor other workspaces, nor the workspace's reloads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from memhubd.review import durable
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.test_mcp import mcp_client, mcp_mounted, tool_error

EXAMPLE = "team-coding"
ANSWER_WITHIN_S = 5.0
STUCK = 6  # more review requests than the daemon has engine threads (4)
# Holds the lock until its stdin closes, as `memdsl review approve` holds it while it works.
HOLDER = """
import fcntl, sys
handle = open(sys.argv[1], "a+b")
fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = {
        "a": copy_examples(tmp_path / "a", [EXAMPLE])[EXAMPLE],
        "b": copy_examples(tmp_path / "b", [EXAMPLE])[EXAMPLE],
    }
    with mcp_mounted(), start_daemon(tmp_path, workspaces) as live:
        live.add_token("agent", "write:candidate,read:summary")
        live.add_token("alice", "review,read:summary,read:search", roles=["*"])
        yield live


@contextmanager
def lock_held_elsewhere(daemon: LiveDaemon, workspace: str) -> Iterator[None]:
    """The workspace's review lock, held by a child process for the block."""
    lock = Path(daemon.workspaces[workspace]) / ".memdsl" / "review.lock"
    lock.parent.mkdir(exist_ok=True)
    lock.write_bytes(b"\0")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.communicate(timeout=10)  # closes its stdin: the lock goes with the process


def fact(name: str) -> str:
    return (
        f'fact {name} {{\n  subject: Service.Ledger\n  claim: "Claim {name}."\n'
        f'  evidence {{ source: "chat" quote: "said {name}" }}\n}}\n'
    )


def propose(daemon: LiveDaemon, workspace: str, name: str, timeout: float = 60) -> httpx.Response:
    with daemon.http(daemon.tokens["agent"], timeout=timeout) as client:
        return client.post(f"/v1/workspaces/{workspace}/proposals", json={"source": fact(name)})


def approve(daemon: LiveDaemon, workspace: str, proposal_id: str) -> httpx.Response:
    with daemon.http(daemon.tokens["alice"], timeout=60) as client:
        route = f"/v1/workspaces/{workspace}/proposals/{proposal_id}/approve"
        return client.post(route, json={"into": "decisions.mem"})


def pending(daemon: LiveDaemon, workspace: str) -> list[str]:
    with daemon.http(daemon.tokens["alice"]) as client:
        listed = client.get(f"/v1/workspaces/{workspace}/proposals").json()
    return [p["id"] for p in listed["proposals"]]


def test_a_held_review_lock_stalls_no_read_no_other_workspace_and_no_reload(
    daemon: LiveDaemon,
) -> None:
    # given a pending proposal of b, and b's review lock held by another process
    assert propose(daemon, "b", "ledger.first").status_code == 201
    [first] = pending(daemon, "b")
    alice = daemon.tokens["alice"]
    with ThreadPoolExecutor(STUCK + 1) as pool, lock_held_elsewhere(daemon, "b"):
        # when more proposals than engine threads, and an approval, wait on it
        waiting = [pool.submit(propose, daemon, "b", f"ledger.wait{i}") for i in range(STUCK)]
        approving = pool.submit(approve, daemon, "b", first)
        time.sleep(0.5)  # they have all started waiting
        # then reads, listings, other workspaces' writes and b's reloads still answer
        with daemon.http(alice, timeout=ANSWER_WITHIN_S) as client:
            for route in ("/v1/workspaces/a/map", "/v1/workspaces", "/v1/workspaces/b/proposals"):
                assert client.get(route).status_code == 200, route
        with daemon.http(daemon.admin_token, timeout=ANSWER_WITHIN_S) as client:
            assert client.post("/v1/workspaces/b/reload").status_code == 200
        assert propose(daemon, "a", "ledger.elsewhere", ANSWER_WITHIN_S).status_code == 201
        assert not any(f.done() for f in [*waiting, approving])
    # and the waiting requests go through once the lock is let go
    assert [f.result().status_code for f in waiting] == [201] * STUCK
    assert approving.result().status_code == 200, approving.result().text


def test_a_review_lock_held_too_long_is_a_conflict_asking_for_a_retry(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a pending proposal of b, and b's review lock held past the wait's bound
    monkeypatch.setattr(durable, "LOCK_TIMEOUT_S", 0.5, raising=False)
    assert propose(daemon, "b", "ledger.first").status_code == 201
    [first] = pending(daemon, "b")
    with lock_held_elsewhere(daemon, "b"), daemon.http(daemon.tokens["alice"]) as client:
        # when proposals and decisions come for b
        answers = [
            propose(daemon, "b", "ledger.late", timeout=10),
            client.post(f"/v1/workspaces/b/proposals/{first}/approve", json={"into": "x.mem"}),
            client.post(f"/v1/workspaces/b/proposals/{first}/reject", json={"reason": "no"}),
        ]
    # then each is told the lock is held and to retry, and nothing changed
    for answer in answers:
        assert answer.status_code == 409, answer.text
        error = answer.json()["error"]
        assert error["code"] == "conflict"
        assert "review lock of workspace 'b' is held by another process" in error["message"]
        assert error["message"].endswith("retry")
    assert pending(daemon, "b") == [first]


def test_an_approvals_two_waits_for_the_lock_share_one_bound(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An approval waits for the lock before holding off reloads and again to write: a
    writer taking the lock between the two leaves the second wait only what is left."""
    from memhubd.service import review as review_service

    monkeypatch.setattr(durable, "LOCK_TIMEOUT_S", 2.0, raising=False)
    assert propose(daemon, "b", "ledger.first").status_code == 201
    [first] = pending(daemon, "b")
    lock = str(Path(daemon.workspaces["b"]) / ".memdsl" / "review.lock")
    released: list[threading.Event] = []

    def hold(seconds: float) -> None:
        """The lock taken by another open file (as another writer would), for `seconds`."""
        taken, done = threading.Event(), threading.Event()

        def run() -> None:
            with durable.exclusive_lock(lock, timeout_s=30):
                taken.set()
                time.sleep(seconds)
            done.set()

        threading.Thread(target=run, daemon=True).start()
        assert taken.wait(10)
        released.append(done)

    first_wait = review_service._lock_free

    def then_another_writer(lock_path: str) -> None:
        first_wait(lock_path)
        hold(1.25)  # past what is left of the bound (about 0.5 s), within the bound itself

    monkeypatch.setattr(review_service, "_lock_free", then_another_writer)
    hold(1.5)  # the first wait takes about 1.5 s of the 2 s
    answer = approve(daemon, "b", first)
    assert answer.status_code == 409, answer.text
    assert "review lock of workspace 'b' is held" in answer.json()["error"]["message"]
    assert not released[-1].is_set()  # refused while the second writer still held it
    assert pending(daemon, "b") == [first]
    released[-1].wait(10)


def test_keyed_proposals_of_other_keys_wait_for_the_lock_side_by_side(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idempotency keys order copies of one request only: proposals of other keys each
    wait at most the lock's bound, not one after the other."""
    monkeypatch.setattr(durable, "LOCK_TIMEOUT_S", 1.0, raising=False)
    lock = str(Path(daemon.workspaces["b"]) / ".memdsl" / "review.lock")
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with durable.exclusive_lock(lock, timeout_s=30):
            taken.set()
            time.sleep(2.5)  # past one bound, within two
        done.set()

    threading.Thread(target=hold, daemon=True).start()
    assert taken.wait(10)

    def keyed(n: int) -> httpx.Response:
        with daemon.http(daemon.tokens["agent"], timeout=60) as client:
            body = {"source": fact(f"ledger.keyed{n}"), "idempotency_key": f"k{n}"}
            return client.post("/v1/workspaces/b/proposals", json=body)

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(keyed, range(3)))
    assert not done.is_set()  # every one was answered while the lock was still held
    assert [a.status_code for a in answers] == [409] * 3, [a.text for a in answers]
    done.wait(10)


@pytest.mark.anyio
async def test_memory_propose_says_the_review_lock_is_held(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable, "LOCK_TIMEOUT_S", 0.5, raising=False)
    with lock_held_elsewhere(daemon, "b"):
        async with mcp_client(daemon, daemon.tokens["agent"]) as client:
            arguments = {"source": fact("ledger.mcp"), "workspace": "b"}
            message = await tool_error(client, "memory_propose", arguments)
    assert "conflict: the review lock of workspace 'b' is held by another process" in message
    assert pending(daemon, "b") == []


def test_memctl_says_the_review_lock_is_held(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(durable, "LOCK_TIMEOUT_S", 0.5, raising=False)
    source = tmp_path / "late.mem"
    source.write_text(fact("ledger.memctl"))
    argv = ["--url", daemon.url, "--token", daemon.tokens["agent"], "-w", "b"]
    with lock_held_elsewhere(daemon, "b"):
        done = subprocess.run(
            [sys.executable, "-m", "memctl", *argv, "propose", str(source)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(tmp_path / "home")},
        )
    assert done.returncode == 1, done.stderr
    assert "review lock of workspace 'b' is held by another process" in done.stderr


def test_one_bound_holds_for_the_wait_for_a_slot_and_for_the_lock(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More review writes than a workspace's slots, the lock held elsewhere: each is
    answered within the one bound, not the bound for its slot and then the lock's."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(durable, "LOCK_TIMEOUT_S", 2.0, raising=False)

    def timed(n: int) -> tuple[int, float]:
        started = time.monotonic()
        answer = propose(daemon, "b", f"ledger.crowd{n}", timeout=30)
        return answer.status_code, time.monotonic() - started

    with lock_held_elsewhere(daemon, "b"), ThreadPoolExecutor(5) as pool:
        results = list(pool.map(timed, range(5)))
    assert {status for status, _ in results} == {409}
    # Two slots: without one bound for both waits, the last ones took 4 s or 6 s.
    assert max(took for _, took in results) < 3.5, results
