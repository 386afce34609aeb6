"""`memctl cowork drain` without a workspace drains every workspace it may use even when
one of them has an inbox the daemon cannot use: the others' messages still come, the
failure is one stderr line (and an `errors` entry in json), and the hook exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

DAMAGED, SOUND = "team-coding", "writing"  # the damaged one is drained first
AGENT = "read:summary,read:search,write:recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-damaged")
    inboxes = root / "state" / "cowork"
    inboxes.mkdir(parents=True, mode=0o700)
    damaged = inboxes / f"{DAMAGED}.sqlite"
    damaged.write_bytes(b"not an SQLite database " * 40)
    damaged.chmod(0o600)
    with start_daemon(root, copy_examples(root / "ws", [DAMAGED, SOUND])) as live:
        yield live


def pair(daemon: LiveDaemon, prefix: str) -> tuple[str, str, str]:
    """A sender's secret, and a recipient's name and secret, both granted both workspaces."""
    grants = {"workspaces": [DAMAGED, SOUND]}
    sender = daemon.add_token(f"{prefix}-from", AGENT, **grants)
    return sender, f"{prefix}-to", daemon.add_token(f"{prefix}-to", AGENT, **grants)


def push(daemon: LiveDaemon, secret: str, to: str, content: str) -> None:
    with daemon.http(secret) as http:
        route = f"/v1/workspaces/{SOUND}/cowork/push"
        answer = http.post(route, json={"to": to, "content": content})
    assert answer.status_code == 201, answer.text


def drain(daemon: LiveDaemon, secret: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["XDG_CONFIG_HOME"] = "/nonexistent"
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", secret, "cowork"]
        + ["drain", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        input="",
    )


def test_the_damaged_inbox_is_there(daemon: LiveDaemon) -> None:
    assert Path(daemon.state_dir, "cowork", f"{DAMAGED}.sqlite").exists()
    sender, bob, secret = pair(daemon, "check")
    with daemon.http(secret) as http:
        assert http.post(f"/v1/workspaces/{DAMAGED}/cowork/drain").status_code >= 500


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
def test_a_prompt_drain_delivers_the_other_workspaces_and_names_the_damaged_one(
    daemon: LiveDaemon, fmt: str
) -> None:
    sender, bob, secret = pair(daemon, f"prompt-{fmt}")
    push(daemon, sender, bob, "the migration lock is mine")

    done = drain(daemon, secret, "--format", fmt)

    assert done.returncode == 0
    assert f"from prompt-{fmt}-from in {SOUND}: the migration lock is mine" in done.stdout
    assert done.stderr.startswith(f"memctl cowork drain: {DAMAGED}: ")
    assert len(done.stderr.splitlines()) == 1
    assert drain(daemon, secret, "--format", fmt).stdout == ""  # delivered once


def test_a_json_drain_lists_the_failed_workspace_beside_the_messages(daemon: LiveDaemon) -> None:
    sender, bob, secret = pair(daemon, "json")
    push(daemon, sender, bob, "proofs are in")

    done = drain(daemon, secret, "--format", "json")

    answer = json.loads(done.stdout)
    assert done.returncode == 0 and "error" not in answer
    assert [(m["workspace"], m["content"]) for m in answer["messages"]] == [
        (SOUND, "proofs are in")
    ]
    [failed] = answer["errors"]
    assert failed["workspace"] == DAMAGED and failed["code"] and failed["message"]


def test_a_drain_of_the_damaged_workspace_alone_says_it_stopped(daemon: LiveDaemon) -> None:
    sender, bob, secret = pair(daemon, "alone")

    done = drain(daemon, secret, "--format", "json", "-w", DAMAGED)

    answer = json.loads(done.stdout)
    assert done.returncode == 0 and answer["messages"] == [] and answer["error"]["code"]
