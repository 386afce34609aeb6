"""A served workspace whose directory is moved away (a restore or checkout under way):
its review queue cannot be read, which every door says instead of an empty queue, and
its files, still served from their last good version, are reported stale, as a single
file that cannot be read is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon, wait_for
from tests.integration.test_mcp import TEAM, mcp_client, mcp_mounted, token

pytestmark = pytest.mark.anyio

BASE = f"/v1/workspaces/{TEAM}"
FACT = """fact tidewater.uses_nats {
  subject: Service.Tidewater
  claim: "Tidewater publishes shipment events to NATS JetStream."
  evidence { source: "chat" quote: "we publish to jetstream now" }
}
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    with mcp_mounted(), start_daemon(tmp_path, copy_examples(tmp_path / "ws", [TEAM])) as live:
        yield live


def agent(daemon: LiveDaemon) -> str:
    return token(daemon, "agent", "read:summary,write:candidate", workspaces=[TEAM])


def get(daemon: LiveDaemon, route: str, **headers: str) -> Any:
    with daemon.http(agent(daemon)) as client:
        return client.get(f"{BASE}{route}", headers=headers)


def propose(daemon: LiveDaemon) -> str:
    with daemon.http(agent(daemon)) as client:
        made = client.post(f"{BASE}/proposals", json={"source": FACT})
    assert made.status_code == 201, made.text
    return str(made.json()["proposal_id"])


def unavailable(response: Any) -> str:
    """The message of a 503 `workspace_unavailable` answer."""
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "workspace_unavailable"
    return str(error["message"])


def degraded(daemon: LiveDaemon) -> bool:
    return bool(get(daemon, "").json()["health"] == "degraded")


@pytest.fixture
def moved_away(daemon: LiveDaemon) -> Iterator[Path]:
    """The workspace directory moved away, and the daemon serving it degraded; put back
    at the end."""
    root = Path(daemon.workspaces[TEAM])
    moved = root.with_name(root.name + ".moved")
    root.rename(moved)
    try:
        wait_for(lambda: degraded(daemon))
        yield root
    finally:
        if moved.exists():
            moved.rename(root)


def test_the_review_queue_of_a_moved_away_workspace_is_unavailable_not_empty(
    daemon: LiveDaemon,
) -> None:
    # Given a pending proposal
    proposal_id = propose(daemon)
    root = Path(daemon.workspaces[TEAM])
    moved = root.with_name(root.name + ".moved")
    # When the workspace directory is moved away
    root.rename(moved)
    try:
        wait_for(lambda: degraded(daemon))
        listed = get(daemon, "/proposals")
        shown = get(daemon, f"/proposals/{proposal_id}")
        # Then neither the list nor the proposal says there is none: the queue cannot
        # be read until the directory is back
        for message in (unavailable(listed), unavailable(shown)):
            assert "workspace directory" in message and "missing" in message
            assert "retry once it is back" in message
        assert listed.json()["error"]["detail"]["status"] == "missing"
        # And it cannot be decided either
        reviewer = token(daemon, "reviewer", "review,read:summary", roles=["*"])
        with daemon.http(reviewer) as client:
            approved = client.post(
                f"{BASE}/proposals/{proposal_id}/approve", json={"into": "facts.mem"}
            )
            rejected = client.post(f"{BASE}/proposals/{proposal_id}/reject", json={})
        for decision in (approved, rejected):
            unavailable(decision)
        assert not root.exists()  # nothing made in its place
    finally:
        moved.rename(root)
    # And once it is back, the proposal is listed and shown again
    wait_for(lambda: get(daemon, "/proposals").status_code == 200)
    assert [p["id"] for p in get(daemon, "/proposals").json()["proposals"]] == [proposal_id]
    assert get(daemon, f"/proposals/{proposal_id}").status_code == 200


async def test_mcp_says_the_review_queue_of_a_moved_away_workspace_cannot_be_read(
    daemon: LiveDaemon, moved_away: Path
) -> None:
    async with mcp_client(daemon, agent(daemon)) as client:
        listed = await client.call_tool("memory_review_list", {})
        shown = await client.call_tool("memory_review_show", {"id": "p-20260101-000000-abcdef"})
        status = await client.read_resource("memdsl://status")
    listed_text = listed.content[0].text
    assert "missing" in listed_text and '"total": 0' not in listed_text
    assert json.loads(listed_text)["status"] == "unavailable"
    shown_text = shown.content[0].text
    assert "missing" in shown_text and "not_found" not in shown_text
    # The status says what it can, the pending count unknown rather than 0
    payload = json.loads(status.contents[0].text)
    assert payload["pending_proposals"] is None
    assert any("missing" in warning for warning in payload["warnings"])


def test_a_workspace_never_proposed_to_has_an_empty_queue(daemon: LiveDaemon) -> None:
    # Given a workspace whose review directory was never made
    assert not (Path(daemon.workspaces[TEAM]) / ".memdsl").exists()
    # Then its queue is empty, and an unknown proposal is not found
    listed = get(daemon, "/proposals")
    assert listed.status_code == 200 and listed.json()["total"] == 0
    assert get(daemon, "/proposals/p-20260101-000000-abcdef").status_code == 404


def test_files_of_a_moved_away_workspace_are_stale(daemon: LiveDaemon, moved_away: Path) -> None:
    summary = get(daemon, "").json()
    listed = get(daemon, "/files").json()["files"]
    raw = get(daemon, "/files/rules.mem")
    as_json = get(daemon, "/files/rules.mem", accept="application/json").json()
    # The workspace says why, and that the last good version is served
    (problem,) = summary["problems"]
    assert "missing" in problem["message"] and "last good version" in problem["message"]
    # Each file is served from its last good version, reported as not loaded from disk
    assert listed and {f["status"] for f in listed} == {"read_error"}
    assert raw.status_code == 200 and "rule" in raw.text
    assert raw.headers["x-memhub-stale"] == "true"
    assert as_json["stale"] is True


async def test_mcp_file_resources_of_a_moved_away_workspace_are_stale(
    daemon: LiveDaemon, moved_away: Path
) -> None:
    async with mcp_client(daemon, agent(daemon)) as client:
        memhub = (await client.read_resource(f"memhub://{TEAM}/files")).contents[0].text
        memdsl = (await client.read_resource("memdsl://files")).contents[0].text
    for text in (memhub, memdsl):
        files = json.loads(text)["files"]
        assert files and {f["status"] for f in files} == {"read_error"}


def test_files_are_ok_again_once_the_directory_is_back(daemon: LiveDaemon) -> None:
    root = Path(daemon.workspaces[TEAM])
    moved = root.with_name(root.name + ".moved")
    root.rename(moved)
    wait_for(lambda: degraded(daemon))
    moved.rename(root)
    wait_for(lambda: not degraded(daemon))
    assert {f["status"] for f in get(daemon, "/files").json()["files"]} == {"ok"}
    assert get(daemon, "/files/rules.mem").headers["x-memhub-stale"] == "false"
