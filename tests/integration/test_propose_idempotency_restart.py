"""A keyed proposal retried after the daemon restarted (a deploy, a crash) is answered
as already made: the keys are kept in the state directory, per workspace, for the
workspace's root only, and a damaged line is skipped, never trusted."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from memhubd.auth.tokens import TokenStore
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

EXAMPLE = "team-coding"
SOURCE = (
    'fact ledger.kept_key {\n  subject: Service.Ledger\n  claim: "Kept across restarts."\n'
    '  evidence { source: "chat" quote: "kept" }\n}\n'
)
BODY = {"source": SOURCE, "reason": "retried after a deploy", "idempotency_key": "deploy-7"}


def propose(daemon: LiveDaemon, token: str, body: dict[str, Any]) -> Any:
    with daemon.http(token, timeout=60) as client:
        return client.post("/v1/workspaces/ws/proposals", json=body)


def pending(daemon: LiveDaemon) -> list[str]:
    with daemon.http(daemon.admin_token) as client:
        answer = client.get("/v1/workspaces/ws/proposals", params={"status": "pending"})
    assert answer.status_code == 200, answer.text
    return [p["id"] for p in answer.json()["proposals"]]


def start(workdir: Path, workspaces: dict[str, str]) -> Any:
    TokenStore(workdir / "state").revoke("admin")  # start_daemon registers its own
    return start_daemon(workdir, workspaces)


def test_a_retry_after_a_restart_is_answered_as_already_made(tmp_path: Path) -> None:
    workspaces = {"ws": copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]}
    with start_daemon(tmp_path, workspaces) as first:
        agent = first.add_token("bot", "write:candidate,read:summary")
        made = propose(first, agent, BODY)
        assert made.status_code == 201, made.text
        assert made.json()["replayed"] is False
    kept = tmp_path / "state" / "review-keys" / "ws.jsonl"
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600

    with start(tmp_path, workspaces) as second:
        again = propose(second, agent, BODY)
        assert again.status_code == 201, again.text
        assert again.json()["replayed"] is True
        assert again.json()["proposal_id"] == made.json()["proposal_id"]
        assert pending(second) == [made.json()["proposal_id"]]
        # The same key with another request is still a conflict naming the first
        other = propose(second, agent, {**BODY, "reason": "another"})
        assert other.status_code == 409, other.text
        assert made.json()["proposal_id"] in other.text


def test_a_workspace_of_the_name_at_another_root_replays_nothing(tmp_path: Path) -> None:
    first_root = copy_examples(tmp_path / "one", [EXAMPLE])[EXAMPLE]
    with start_daemon(tmp_path, {"ws": first_root}) as first:
        agent = first.add_token("bot", "write:candidate,read:summary")
        assert propose(first, agent, BODY).status_code == 201
    other_root = copy_examples(tmp_path / "two", [EXAMPLE])[EXAMPLE]
    with start(tmp_path, {"ws": other_root}) as second:
        made = propose(second, agent, BODY)
        assert made.status_code == 201, made.text
        assert made.json()["replayed"] is False
        assert pending(second) == [made.json()["proposal_id"]]


def test_a_damaged_line_is_skipped_and_the_others_kept(tmp_path: Path) -> None:
    workspaces = {"ws": copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]}
    with start_daemon(tmp_path, workspaces) as first:
        agent = first.add_token("bot", "write:candidate,read:summary")
        made = propose(first, agent, BODY).json()
        second_body = {**BODY, "idempotency_key": "deploy-8", "reason": "second"}
        second_made = propose(first, agent, second_body).json()
    kept = tmp_path / "state" / "review-keys" / "ws.jsonl"
    lines = kept.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 2
    # The first line cut in the middle (a crash while writing), the second intact
    kept.write_text(lines[0][: len(lines[0]) // 2] + "\n" + lines[1], encoding="utf-8")

    with start(tmp_path, workspaces) as second:
        replayed = propose(second, agent, second_body)
        assert replayed.json()["replayed"] is True
        assert replayed.json()["proposal_id"] == second_made["proposal_id"]
        # The damaged line's key is not trusted: its proposal is made anew
        fresh = propose(second, agent, BODY)
        assert fresh.status_code == 201, fresh.text
        assert fresh.json()["replayed"] is False
        assert fresh.json()["proposal_id"] != made["proposal_id"]
        assert len(pending(second)) == 3
    assert json.loads(kept.read_text(encoding="utf-8").splitlines()[-1])["key"] == "deploy-7"


def test_a_removed_workspace_takes_its_keys_to_its_archive(tmp_path: Path) -> None:
    workspaces = {"ws": copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]}
    with start_daemon(tmp_path, workspaces) as daemon:
        agent = daemon.add_token("bot", "write:candidate,read:summary")
        assert propose(daemon, agent, BODY).status_code == 201
        with daemon.http(daemon.admin_token, timeout=60) as client:
            assert client.delete("/v1/workspaces/ws").status_code == 200
        state = daemon.state_dir
        assert not (state / "review-keys" / "ws.jsonl").exists()
        (archived,) = (state / "removed").iterdir()
        assert (archived / "review-keys" / "ws.jsonl").is_file()
