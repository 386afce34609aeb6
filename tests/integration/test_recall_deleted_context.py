"""A deleted exchange of a transcript against a real daemon: its words no longer find its
neighbours (whose context held its start and end), after the delete, after the same
transcript is ingested again, and after a purge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, memctl, start_daemon

WS = "writing"
SECRET = "hunter2-ZX81-secret"
EXCHANGES = [
    ("How do I rotate the deploy key?", "Run the rotate script in ops/keys."),
    (f"Oops, here is the prod password: {SECRET}, ignore it", "I will not store it."),
    ("Now what about the staging cluster?", "Staging uses the same rotate script."),
]


def transcript() -> str:
    lines = []
    for number, (question, answer) in enumerate(EXCHANGES):
        for role, text in (("user", question), ("assistant", answer)):
            message = {"role": role, "content": text}
            stamp = f"2025-06-10T10:{number:02d}:00Z"
            lines.append(json.dumps({"type": role, "timestamp": stamp, "message": message}))
    return "\n".join(lines) + "\n"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path, workspaces) as live:
        yield live


def ingest(daemon: LiveDaemon) -> dict[str, Any]:
    with daemon.http(daemon.admin_token, timeout=60) as client:
        files = [{"name": "claude/s5.jsonl", "content": transcript()}]
        answer = client.post(f"/v1/workspaces/{WS}/recall/ingest", json={"files": files})
    assert answer.status_code in (200, 201), answer.text
    return dict(answer.json()["sources"][0])


def found_by_words(daemon: LiveDaemon) -> list[str]:
    """The drawers BM25 matches for the secret's words (vector hits are not its words)."""
    with daemon.http(daemon.admin_token) as client:
        answer = client.post(f"/v1/workspaces/{WS}/recall/search", json={"query": SECRET})
    assert answer.status_code == 200, answer.text
    return [h["drawer_id"] for h in answer.json()["hits"] if h["signals"].get("bm25")]


def test_a_deleted_exchange_is_found_by_its_words_nowhere(daemon: LiveDaemon) -> None:
    # Given a transcript whose middle exchange holds a secret: all three are found by it
    stored = ingest(daemon)
    assert len(found_by_words(daemon)) == 3
    secret_drawer = stored["drawer_ids"][1]
    # When that exchange is deleted, then nothing is
    code, _out, err = memctl(
        daemon, daemon.admin_token, "-w", WS, "recall", "delete", secret_drawer
    )
    assert code == 0, err
    assert found_by_words(daemon) == []
    # nor after the same transcript comes again, which does not bring the exchange back
    again = ingest(daemon)
    assert (again["deleted"], again["chunks"]) == (1, 0)
    assert found_by_words(daemon) == []
    # nor after a purge
    code, _out, err = memctl(daemon, daemon.admin_token, "-w", WS, "recall", "purge")
    assert code == 0, err
    assert found_by_words(daemon) == []
