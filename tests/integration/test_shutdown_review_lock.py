"""A daemon told to stop while review work waits on a workspace's `review.lock` held by
another process: the waiting request is answered at once that the daemon is stopping,
nothing is written later when the lock is let go, and the process exits promptly."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.test_lifecycle import Process, _ended_processes  # noqa: F401
from tests.integration.test_review_lock_wait import fact, lock_held_elsewhere

EXAMPLE = "team-coding"
# Well under uvicorn's graceful timeout (5 s), after which it would cut the request.
ANSWER_WITHIN_S = 2.0
EXIT_WITHIN_S = 3.0
WAITING_S = 0.5  # long enough for a proposal to be waiting on the lock


def as_live(process: Process, workspaces: dict[str, str]) -> LiveDaemon:
    """A daemon process described as the in-process ones are, for their helpers."""
    url = f"http://127.0.0.1:{process.port}"
    return LiveDaemon(url, process.socket_path, process.state, workspaces, admin_token="")


def post_proposal(client: httpx.Client, name: str) -> httpx.Response:
    with client:
        return client.post(f"/v1/workspaces/{name}/proposals", json={"source": fact("ledger.late")})


def answered_within(future: Future[httpx.Response], seconds: float) -> httpx.Response:
    return future.result(timeout=seconds)


def assert_told_the_daemon_is_stopping(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == "workspace_unavailable"
    assert error["message"] == "the daemon is stopping; retry"


def assert_nothing_proposed(workspace: str) -> None:
    review = Path(workspace) / ".memdsl"
    assert not list((review / "proposals").glob("*")), "a proposal was written"
    audit = review / "audit.log"
    assert not audit.exists() or "propose" not in audit.read_text(), "an audit line was written"


def test_sigterm_gives_up_a_proposal_waiting_on_a_held_review_lock(tmp_path: Path) -> None:
    # given a daemon process, and its workspace's review lock held by another process
    workspace = copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]
    daemon = Process(tmp_path, {EXAMPLE: workspace})
    daemon.wait_ready()
    live = as_live(daemon, {EXAMPLE: workspace})
    with ThreadPoolExecutor(1) as pool, lock_held_elsewhere(live, EXAMPLE):
        # when a proposal waits on it and the daemon gets SIGTERM
        answer = pool.submit(post_proposal, live.unix(), EXAMPLE)
        time.sleep(WAITING_S)
        daemon.proc.terminate()
        signalled = time.monotonic()
        # then the proposal is told the daemon is stopping, in the JSON envelope
        assert_told_the_daemon_is_stopping(answered_within(answer, ANSWER_WITHIN_S))
        # and the process exits, lock still held, well before uvicorn's timeout
        assert daemon.proc.wait(EXIT_WITHIN_S) == 0
        assert time.monotonic() - signalled < EXIT_WITHIN_S
        # and its state directory is free: another daemon starts on it at once
        again = Process(tmp_path, {EXAMPLE: workspace})
        again.wait_ready()
        assert again.stop() == 0
    # and nothing is written once the lock is let go
    time.sleep(WAITING_S)
    assert_nothing_proposed(workspace)


def test_a_stopping_daemon_gives_up_its_own_review_waits_only(tmp_path: Path) -> None:
    # given two daemons in one process, each with its workspace's review lock held
    first = copy_examples(tmp_path / "first" / "ws", [EXAMPLE])[EXAMPLE]
    second = copy_examples(tmp_path / "second" / "ws", [EXAMPLE])[EXAMPLE]
    with (
        ThreadPoolExecutor(2) as pool,
        start_daemon(tmp_path / "first", {EXAMPLE: first}) as stopping,
        start_daemon(tmp_path / "second", {EXAMPLE: second}) as serving,
    ):
        with lock_held_elsewhere(serving, EXAMPLE):
            with lock_held_elsewhere(stopping, EXAMPLE):
                # when a proposal waits on each, and the first daemon is told to stop
                given_up = pool.submit(post_proposal, stopping.unix(), EXAMPLE)
                waiting = pool.submit(post_proposal, serving.unix(), EXAMPLE)
                time.sleep(WAITING_S)
                assert stopping.stop is not None and stopping.thread is not None
                stopping.stop.set()
                # then the first daemon's proposal is told it is stopping, and it ends
                assert_told_the_daemon_is_stopping(answered_within(given_up, ANSWER_WITHIN_S))
                stopping.thread.join(EXIT_WITHIN_S)
                assert not stopping.thread.is_alive()
            time.sleep(WAITING_S)
            assert_nothing_proposed(first)
            # and the second daemon's proposal still waits on its own lock
            assert not waiting.done()
        # and goes through once that lock is let go
        assert waiting.result(timeout=10).status_code == 201
