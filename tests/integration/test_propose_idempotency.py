"""Proposals with an idempotency key against a real daemon: a retry of the same
request by the same identity answers the proposal already made, at once or sent
together; the key never makes one identity's proposal answer another's, and a key
used for another request is a conflict."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

EXAMPLE = "team-coding"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = {"ws": copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]}
    with start_daemon(tmp_path, workspaces) as live:
        live.add_token("agent", "write:candidate,read:summary")
        live.add_token("other", "write:candidate,read:summary")
        live.add_token("reader", "read:summary")
        yield live


def fact(name: str) -> str:
    return (
        f'fact {name} {{\n  subject: Service.Ledger\n  claim: "Claim {name}."\n'
        f'  evidence {{ source: "chat" quote: "said {name}" }}\n}}\n'
    )


def propose(daemon: LiveDaemon, who: str, body: dict[str, Any]) -> tuple[int, dict]:
    with daemon.http(daemon.tokens[who], timeout=60) as client:
        answer = client.post("/v1/workspaces/ws/proposals", json=body)
    return answer.status_code, answer.json()


def pending(daemon: LiveDaemon) -> list[dict]:
    with daemon.http(daemon.admin_token) as client:
        answer = client.get("/v1/workspaces/ws/proposals", params={"status": "pending"})
    return answer.json()["proposals"]


def test_a_retry_with_the_same_key_answers_the_first_proposal(daemon: LiveDaemon) -> None:
    body = {"source": fact("keyed"), "reason": "r", "idempotency_key": "req-1"}
    first_status, first = propose(daemon, "agent", body)
    again_status, again = propose(daemon, "agent", body)
    assert (first_status, again_status) == (201, 201)
    assert first["replayed"] is False and again["replayed"] is True
    assert again["proposal_id"] == first["proposal_id"]
    assert {**again, "replayed": False} == first
    assert [p["id"] for p in pending(daemon)] == [first["proposal_id"]]

    # the same key for another request is a conflict, and makes nothing
    status, other = propose(daemon, "agent", {**body, "source": fact("changed")})
    assert status == 409 and other["error"]["code"] == "conflict"
    assert other["error"]["detail"]["proposal_id"] == first["proposal_id"]
    # another identity's key is its own
    status, theirs = propose(daemon, "other", body)
    assert status == 201 and theirs["replayed"] is False
    assert theirs["proposal_id"] != first["proposal_id"]
    assert len(pending(daemon)) == 2
    # a caller without the scope hears about the scope, not the key
    status, refused = propose(daemon, "reader", body)
    assert status == 403 and refused["error"]["code"] == "forbidden"
    # no key: as before, and no `replayed`
    status, plain = propose(daemon, "agent", {"source": fact("plain")})
    assert status == 201 and "replayed" not in plain


def test_copies_sent_together_make_one_proposal(daemon: LiveDaemon) -> None:
    body = {"source": fact("together"), "idempotency_key": "same"}
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: propose(daemon, "agent", body), range(6)))
    assert {status for status, _ in answers} == {201}
    assert len({data["proposal_id"] for _, data in answers}) == 1
    assert sorted(data["replayed"] for _, data in answers) == [False] + [True] * 5
    assert len(pending(daemon)) == 1


def test_memctl_sends_the_key(daemon: LiveDaemon, tmp_path: Path) -> None:
    source = tmp_path / "candidate.mem"
    source.write_text(fact("by_memctl"))
    command = [sys.executable, "-m", "memctl", "--url", daemon.url]
    command += ["--token", daemon.tokens["agent"], "-w", "ws", "propose", str(source)]
    command += ["--idempotency-key", "k-7"]
    runs = [subprocess.run(command, capture_output=True, text=True, timeout=60) for _ in range(2)]
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr
    assert "pending review" in runs[0].stdout
    assert "already made with this idempotency key" in runs[1].stdout
    assert len(pending(daemon)) == 1


def test_a_token_of_the_same_name_with_other_roles_gets_no_replay(daemon: LiveDaemon) -> None:
    """An answer is redacted for the roles it was made for."""
    from memhubd.auth.tokens import TokenStore

    body = {"source": fact("roles_keyed"), "idempotency_key": "r-1"}
    status, first = propose(daemon, "agent", body)
    assert status == 201 and first["replayed"] is False
    TokenStore(daemon.state_dir).revoke("agent")
    daemon.add_token("agent", "write:candidate,read:summary", roles=["dev"])
    status, again = propose(daemon, "agent", body)
    assert status == 201 and again["replayed"] is False
    assert again["proposal_id"] != first["proposal_id"]
