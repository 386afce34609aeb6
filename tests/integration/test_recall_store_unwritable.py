"""A recall store the daemon cannot open for writing (a read-only file system, something
else in its place) is named at every recall door as the workspace's store being
unavailable, with the system's reason; governed memory is served as before."""

from __future__ import annotations

from pathlib import Path

from tests.integration.conftest import copy_examples, start_daemon

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
