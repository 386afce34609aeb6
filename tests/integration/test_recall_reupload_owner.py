"""Re-uploading a source name against a real daemon: a writer's ingest retires and
refreshes only its own drawers of that source, as only a drawer's writer (or a reviewer
or an admin) may delete it; another writer's drawers and diary entries stay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "writing"
WRITER = "read:summary,read:search,write:recall"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path, workspaces) as live:
        live.add_token("alice", WRITER)
        live.add_token("mallory", WRITER)
        live.add_token("rita", f"{WRITER},review")
        yield live


def ingest(daemon: LiveDaemon, who: str, name: str, content: str, **extra: Any) -> dict:
    with daemon.http(daemon.tokens[who], timeout=60) as client:
        answer = client.post(
            f"/v1/workspaces/{WS}/recall/ingest",
            json={"files": [{"name": name, "content": content}], **extra},
        )
    assert answer.status_code in (200, 201), answer.text
    data = answer.json()
    return {**data, "drawer_ids": data["sources"][0].get("drawer_ids", [])}


def drawer_status(daemon: LiveDaemon, who: str, drawer_id: str) -> int:
    with daemon.http(daemon.tokens[who]) as client:
        return client.get(f"/v1/workspaces/{WS}/recall/drawers/{drawer_id}").status_code


def test_another_writers_drawers_of_a_source_stay(daemon: LiveDaemon) -> None:
    first = ingest(daemon, "alice", "plan.md", "The ledger migration ships on Friday.")
    [alice_drawer] = first["drawer_ids"]
    with daemon.http(daemon.tokens["alice"]) as client:
        entry = client.post(
            f"/v1/workspaces/{WS}/diary",
            json={"type": "LESSON", "content": "Check the ledger backups first.", "shared": True},
        )
    assert entry.status_code == 201, entry.text

    # when another writer uploads the same names with other content
    theirs = ingest(daemon, "mallory", "plan.md", "Nothing ships this month.")
    diary = ingest(daemon, "mallory", "diary/alice", "overwritten", room="alice")

    # then nothing of alice's is retired: the other writer's text is stored beside it
    assert theirs["replaced"] == 0 and len(theirs["drawer_ids"]) == 1
    assert diary["replaced"] == 0
    assert drawer_status(daemon, "alice", alice_drawer) == 200
    with daemon.http(daemon.tokens["alice"]) as client:
        entries = client.get(f"/v1/workspaces/{WS}/diary").json()["entries"]
        hits = client.post(
            f"/v1/workspaces/{WS}/recall/search", json={"query": "ledger migration Friday"}
        ).json()["hits"]
    assert [e["content"] for e in entries] == ["LESSON: Check the ledger backups first."]
    assert alice_drawer in [h["drawer_id"] for h in hits]

    # a writer's own upload still replaces its own earlier text
    again = ingest(daemon, "mallory", "plan.md", "Everything ships next month.")
    assert again["replaced"] == 1
    assert drawer_status(daemon, "mallory", theirs["drawer_ids"][0]) == 404
    assert drawer_status(daemon, "alice", alice_drawer) == 200


def test_a_reviewer_may_replace_what_others_wrote(daemon: LiveDaemon) -> None:
    [alice_drawer] = ingest(daemon, "alice", "plan.md", "The ledger ships on Friday.")[
        "drawer_ids"
    ]
    moderated = ingest(daemon, "rita", "plan.md", "The ledger ships on Monday.")
    assert moderated["replaced"] == 1
    assert drawer_status(daemon, "alice", alice_drawer) == 404
