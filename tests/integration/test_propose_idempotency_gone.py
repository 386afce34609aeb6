"""A keyed proposal retried once its first proposal no longer exists on disk (the
staging directory cleaned away, as `git clean -fdx` does to an untracked `.memdsl/`):
the key is forgotten and the proposal made anew, never answered as already made."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

EXAMPLE = "team-coding"
SOURCE = (
    'fact ledger.retried {\n  subject: Service.Ledger\n  claim: "Retried."\n'
    '  evidence { source: "chat" quote: "retried" }\n}\n'
)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = {"ws": copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]}
    with start_daemon(tmp_path, workspaces) as live:
        live.add_token("agent", "write:candidate,read:summary")
        yield live


def propose(daemon: LiveDaemon, body: dict[str, Any]) -> dict[str, Any]:
    with daemon.http(daemon.tokens["agent"], timeout=60) as client:
        answer = client.post("/v1/workspaces/ws/proposals", json=body)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def shown(daemon: LiveDaemon, proposal_id: str) -> int:
    with daemon.http(daemon.tokens["agent"]) as client:
        return client.get(f"/v1/workspaces/ws/proposals/{proposal_id}").status_code


def test_a_retry_after_the_proposal_was_removed_makes_it_anew(daemon: LiveDaemon) -> None:
    # given a keyed proposal whose staging directory was then removed
    body = {"source": SOURCE, "idempotency_key": "k-gone"}
    first = propose(daemon, body)
    shutil.rmtree(Path(daemon.workspaces["ws"]) / ".memdsl")
    assert shown(daemon, first["proposal_id"]) == 404

    # when the same request is retried with its key
    again = propose(daemon, body)

    # then a proposal is made again, and exists
    assert again["replayed"] is False
    assert shown(daemon, again["proposal_id"]) == 200
    # and the key now names that one
    third = propose(daemon, body)
    assert third["replayed"] is True and third["proposal_id"] == again["proposal_id"]


def test_a_retry_while_the_proposal_exists_is_still_a_replay(daemon: LiveDaemon) -> None:
    body = {"source": SOURCE, "idempotency_key": "k-kept"}
    first = propose(daemon, body)
    again = propose(daemon, body)
    assert again["replayed"] is True and again["proposal_id"] == first["proposal_id"]
