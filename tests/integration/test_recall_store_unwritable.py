"""A recall store the daemon cannot open for writing (a read-only file system, something
else in its place) is named at every recall door as the workspace's store being
unavailable, with the system's reason; governed memory is served as before."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from memhubd.recall.ingest.lock import LockTimeout, SourceLock
from memhubd.review.store import ReviewStore
from tests.integration.conftest import copy_examples, memctl, start_daemon
from tests.integration.test_mcp import call, mcp_client, mcp_mounted, tool_error

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"


def test_a_recall_store_that_cannot_be_opened_is_unavailable_not_an_internal_error(
    tmp_path: Path,
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path, workspaces) as live:
        # Given a directory where the workspace's recall store should be (os.open fails
        # on it as on a read-only file system, for root too)
        (live.state_dir / "recall" / f"{WS}.db").mkdir(parents=True)
        with live.http(live.admin_token) as http:
            # When recall, the diary and the knowledge graph are asked for
            answers = {
                "search": http.post(f"{BASE}/recall/search", json={"query": "ledger"}),
                "status": http.get(f"{BASE}/recall/status"),
                "diary": http.get(f"{BASE}/diary"),
                "kg": http.get(f"{BASE}/kg/triples"),
            }
            # and governed memory
            query = http.post(f"{BASE}/query", json={"query": "payment sdk sandbox key logs"})
            declarations = http.get(f"{BASE}/declarations?limit=5")
    # Then each recall door says which file cannot be used and why
    for door, answer in answers.items():
        assert answer.status_code == 503, (door, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "workspace_unavailable", door
        assert (
            f"recall/{WS}.db: cannot be opened for writing: is a directory" in (error["message"])
        ), door
        assert str(tmp_path) not in answer.text  # the state dir's path stays on the server
    # and governed memory answers as before
    assert query.status_code == 200, query.text
    assert query.json()["must"] or query.json()["context"]
    assert declarations.status_code == 200 and declarations.json()["items"], declarations.text


def test_a_cowork_inbox_whose_folder_cannot_be_made_is_unavailable(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path, workspaces) as live:
        # Given a file where the cowork folder should be (mkdir fails, for root too)
        (live.state_dir / "cowork").write_text("not a folder\n")
        with live.http(live.admin_token) as http:
            answer = http.get(f"{BASE}/cowork/status")
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["code"] == "workspace_unavailable"
    assert "cannot be opened for writing" in error["message"]
    assert str(tmp_path) not in answer.text


def test_another_workspaces_unusable_store_leaves_this_ones_search_alone(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS, "writing"])
    with start_daemon(tmp_path, workspaces) as live:
        with live.http(live.admin_token) as http:
            stored = http.post(
                f"{BASE}/recall/ingest", json={"content": "the ledger closes at six"}
            )
            assert stored.status_code == 201, stored.text
        # Given the other workspace's store broken (a directory in its place)
        (live.state_dir / "recall" / "writing.db").mkdir(parents=True)
        with live.http(live.admin_token) as http:
            found = http.post(f"{BASE}/recall/search", json={"query": "ledger"})
            tunnels = http.get("/v1/tunnels")
            broken = http.get("/v1/workspaces/writing/recall/status")
    # Then this workspace's search still answers (the other lends no tunnel room)
    assert found.status_code == 200, found.text
    assert "ledger closes" in found.text
    assert tunnels.status_code == 200, tunnels.text
    # and the broken one still says why
    assert broken.status_code == 503 and "writing.db" in broken.text


# --- storage failures at the MCP door and at ingest -------------------------------------


def _read_only(path: Path) -> OSError:
    """What the system raises for a file that cannot be made on a read-only file system
    (made up here: a chmod does not stop root, who may run these tests)."""
    return OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))


@pytest.fixture
def lock_cannot_be_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ingest lock file fails as on a read-only recall directory."""

    def acquire(self: SourceLock, source: str, path: Path, started: float) -> int:
        raise _read_only(path)

    monkeypatch.setattr(SourceLock, "_acquire", acquire)


@pytest.mark.anyio
async def test_mcp_search_on_an_unusable_store_names_the_file_and_why(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with mcp_mounted(), start_daemon(tmp_path, workspaces) as live:
        # Given a directory where the workspace's recall store should be
        (live.state_dir / "recall" / f"{WS}.db").mkdir(parents=True)
        async with mcp_client(live, live.admin_token) as client:
            # When memory_search is called, for the workspace or across every one
            named = await tool_error(client, "memory_search", {"query": "ledger", "wing": WS})
            across = await tool_error(client, "memory_search", {"query": "ledger"})
            status = await tool_error(client, "memory_recall_status", {"wing": WS})
    # Then it says what the other recall tools say: the store, and why it cannot be used
    for said in (named, across):
        assert said.startswith("workspace_unavailable: "), said
        assert f"recall/{WS}.db: cannot be opened for writing: is a directory" in said
        assert str(tmp_path) not in said
    assert f"recall/{WS}.db: cannot be opened for writing" in status


@pytest.mark.anyio
async def test_memdsl_status_with_unreadable_proposals_answers_without_the_pending_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with mcp_mounted(), start_daemon(tmp_path, workspaces) as live:
        reader = live.add_token("one-ws", "read:summary,read:search", workspaces=[WS])
        async with mcp_client(live, reader) as client:
            before = json.loads((await client.read_resource("memdsl://status")).contents[0].text)

            # Given the workspace's proposals folder that cannot be read
            def refused(self: ReviewStore, status: str = "pending") -> list[Any]:
                raise PermissionError(errno.EACCES, "Permission denied", self.proposals_dir)

            monkeypatch.setattr(ReviewStore, "list", refused)
            # When the status resource and the review list are read
            after = json.loads((await client.read_resource("memdsl://status")).contents[0].text)
            listed = await call(client, "memory_review_list", {})
    # Then the status answers all it knows, the pending count unknown and why
    assert after["pending_proposals"] is None
    (warning,) = after["warnings"]
    assert ".memdsl/proposals: Permission denied" in warning
    assert list(after)[: len(before)] == list(before)  # memdsl's keys, in memdsl's order
    assert {k: v for k, v in after.items() if k not in ("pending_proposals", "warnings")} == {
        k: v for k, v in before.items() if k != "pending_proposals"
    }
    # and the review list's advice is about the files, not about linting the sources
    assert listed["status"] == "unavailable" and not listed["ok"]
    assert ".memdsl/proposals: Permission denied" in listed["error"]
    (advice,) = listed["next_actions"]
    assert "lint" not in advice and "permissions" in advice


@pytest.mark.anyio
async def test_an_ingest_lock_that_cannot_be_made_is_unavailable_at_every_door(
    tmp_path: Path, lock_cannot_be_made: None
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with mcp_mounted(), start_daemon(tmp_path, workspaces) as live:
        # Given ingest locks that cannot be made (a read-only recall directory)
        # When text is ingested by the JSON API, memctl and MCP, and the diary written
        with live.http(live.admin_token) as http:
            api = http.post(f"{BASE}/recall/ingest", json={"content": "the ledger closes at six"})
        notes = tmp_path / "notes.md"
        notes.write_text("the ledger closes at six\n")
        code, out, err = memctl(live, live.admin_token, "-w", WS, "recall", "ingest", str(notes))
        async with mcp_client(live, live.admin_token) as client:
            ingest = await tool_error(
                client, "memory_ingest", {"wing": WS, "content": "the ledger closes at six"}
            )
            diary = await tool_error(
                client,
                "memory_diary",
                {"workspace": WS, "action": "write", "entry_type": "LESSON", "content": "ledger"},
            )
    # Then each answers that the workspace's state is unavailable (503), naming the lock
    # file, the system's reason and what to check, as the diary does: not a bad request
    assert api.status_code == 503, api.text
    error = api.json()["error"]
    assert error["code"] == "workspace_unavailable"
    for said in (error["message"], out + err, ingest, diary):
        assert ".lock: Read-only file system" in said, said
        assert "check the permissions and free space" in said, said
        assert str(tmp_path) not in said
    assert code != 0
    assert ingest.startswith("workspace_unavailable: "), ingest
    assert diary.startswith("workspace_unavailable: "), diary


def test_a_file_that_fails_to_parse_leaves_the_others_of_its_batch_stored(
    tmp_path: Path,
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path, workspaces) as live, live.http(live.admin_token) as http:
        # Given a batch whose middle file is a ChatGPT export without a message
        files = [
            {"name": "a.md", "content": "the ledger closes at six"},
            {"name": "b.json", "content": '[{"title": "x", "mapping": {}}]'},
            {"name": "c.md", "content": "the vault opens at nine"},
        ]
        answer = http.post(f"{BASE}/recall/ingest", json={"files": files})
    # Then the batch is stored but that file, which is named as failed
    assert answer.status_code in (200, 201), answer.text
    summary = answer.json()
    assert [f["source"] for f in summary["failed"]] == ["b.json"]
    assert "no user or assistant messages" in summary["failed"][0]["reason"]
    stored = {s["source"]: s["status"] for s in summary["sources"]}
    assert stored["a.md"] == stored["c.md"] == "ingested"


@pytest.mark.anyio
async def test_a_content_ingest_whose_lock_another_ingest_holds_is_a_conflict_to_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def held(self: SourceLock, source: str, path: Path, started: float) -> int:
        raise LockTimeout(f"ingest lock for {source!r} is held elsewhere (waited 30 s)")

    workspaces = copy_examples(tmp_path / "ws", [WS])
    with mcp_mounted(), start_daemon(tmp_path, workspaces) as live:
        # Given a source whose ingest lock another ingest holds past the wait
        monkeypatch.setattr(SourceLock, "_acquire", held)
        async with mcp_client(live, live.admin_token) as client:
            said = await tool_error(
                client, "memory_ingest", {"wing": WS, "content": "the ledger closes at six"}
            )
    # Then the agent is told to send it again later, not that its text is invalid
    assert said.startswith("conflict: ingest lock: "), said
    assert "is held elsewhere" in said and "send it again" in said


def test_a_file_where_the_ingest_locks_folder_belongs_is_unavailable(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path, workspaces) as live:
        # Given a regular file where the workspace's ingest lock folder belongs
        locks = live.state_dir / "recall" / "locks" / WS
        if locks.exists():
            locks.rename(locks.with_name(f"{WS}.aside"))
        locks.parent.mkdir(parents=True, exist_ok=True)
        locks.write_text("not a folder\n")
        # When text is ingested
        with live.http(live.admin_token) as http:
            api = http.post(f"{BASE}/recall/ingest", json={"content": "the ledger closes at six"})
    # Then the workspace's state is unavailable, saying what is in the way: not a file
    # of the request that failed
    assert api.status_code == 503, api.text
    error = api.json()["error"]
    assert error["code"] == "workspace_unavailable"
    assert "something else is in its place" in error["message"], error["message"]
    assert str(tmp_path) not in error["message"]
