"""Attack: make the daemon serve a file from outside a workspace through a symbolic link.

A `.mem` link to /etc/passwd or into another workspace is never read: it is missing
from the file list, its content cannot be fetched, nothing of it is found by a query,
and the workspace reports it as an `outside_workspace` problem that names only the
link's own path. Linked directories are not descended. A link whose target stays
inside the workspace is followed (once: a link to another source is not served twice).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
OTHER = "writing"
BASE = f"/v1/workspaces/{WS}"
# Words that only the other workspace's voice.mem holds, and a claim of it to look for.
OTHER_WORDS = "letter to a friend"
OTHER_CLAIM = "Newsletter issues read like a letter"
INSIDE_FACT = """fact notes.reached_through_a_link {
  claim: "This fact lives in a text file that a link inside the workspace points to."
  evidence { source: "test" quote: "inside" }
}
"""


def wait_for(predicate: Callable[[], object], timeout: float = 15.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """team-coding with links out (to /etc/passwd, into `writing`) and one link within."""
    root = tmp_path_factory.mktemp("links")
    workspaces = copy_examples(root / "ws", [WS, OTHER])
    ws, other = Path(workspaces[WS]), Path(workspaces[OTHER])
    (ws / "passwd.mem").symlink_to("/etc/passwd")
    (ws / "stolen.mem").symlink_to(other / "voice.mem")
    (ws / "relative.mem").symlink_to(Path("..") / OTHER / "publishing.mem")
    (ws / "borrowed").symlink_to(other, target_is_directory=True)
    (ws / "notes").mkdir()
    (ws / "notes" / "inside.txt").write_text(INSIDE_FACT, encoding="utf-8")
    (ws / "inside.mem").symlink_to(Path("notes") / "inside.txt")
    (ws / "rules-again.mem").symlink_to("rules.mem")
    with start_daemon(root, workspaces) as daemon:
        yield daemon


def files(client) -> dict[str, dict]:
    response = client.get(f"{BASE}/files")
    assert response.status_code == 200, response.text
    return {item["file_id"]: item for item in response.json()["files"]}


def problems(client) -> dict[str, dict]:
    return {p["file"]: p for p in client.get(BASE).json()["problems"]}


OUTSIDE = ["passwd.mem", "stolen.mem", "relative.mem"]


def test_links_leading_outside_are_not_listed_and_are_reported(linked: LiveDaemon) -> None:
    ws = Path(linked.workspaces[WS])
    with linked.unix(linked.admin_token) as client:
        listed = files(client)
        found = problems(client)
    for name in OUTSIDE:
        assert name not in listed
        problem = found[str(ws / name)]
        assert problem["kind"] == "outside_workspace"
        assert "/etc" not in problem["message"] and OTHER not in problem["message"]
    assert not any(file_id.startswith("borrowed") for file_id in listed)


@pytest.mark.parametrize("file_id", [*OUTSIDE, "borrowed/voice.mem", "voice.mem"])
def test_the_content_behind_a_link_out_cannot_be_fetched(linked: LiveDaemon, file_id: str) -> None:
    with linked.unix(linked.admin_token) as client:
        response = client.get(f"{BASE}/files/{file_id}", headers={"accept": "application/json"})
    assert response.status_code == 404, response.text
    assert "root:" not in response.text and OTHER_CLAIM not in response.text


def test_nothing_behind_a_link_out_is_found_by_a_query(linked: LiveDaemon) -> None:
    with linked.unix(linked.admin_token) as client:
        answer = client.post(f"{BASE}/query", json={"query": OTHER_WORDS, "limit": 50})
        declarations = client.get(f"{BASE}/declarations?include_inactive=true&limit=500")
    assert answer.status_code == 200, answer.text
    assert OTHER_CLAIM not in answer.text and "root:" not in answer.text
    ids = {item["id"] for item in declarations.json()["items"]}
    assert not any(i.startswith(("voice.", "publishing.")) for i in ids)


def test_a_link_within_the_workspace_is_followed_once(linked: LiveDaemon) -> None:
    with linked.unix(linked.admin_token) as client:
        listed = files(client)
        ids = [item["id"] for item in client.get(f"{BASE}/declarations?limit=500").json()["items"]]
        content = client.get(f"{BASE}/files/inside.mem", headers={"accept": "application/json"})
    assert "inside.mem" in listed and listed["inside.mem"]["status"] == "ok"
    assert "fact:notes.reached_through_a_link" in ids
    assert content.json()["content"] == INSIDE_FACT
    assert "rules-again.mem" not in listed  # the same source as rules.mem: served once
    assert len(ids) == len(set(ids))


def test_a_link_made_while_serving_is_not_read(linked: LiveDaemon) -> None:
    ws = Path(linked.workspaces[WS])
    late = ws / "late.mem"
    late.symlink_to(Path(linked.workspaces[OTHER]) / "outlets.mem")
    try:
        with linked.unix(linked.admin_token) as client:
            wait_for(lambda: str(late) in problems(client))
            assert problems(client)[str(late)]["kind"] == "outside_workspace"
            assert "late.mem" not in files(client)
    finally:
        late.unlink()
    with linked.unix(linked.admin_token) as client:
        wait_for(lambda: str(late) not in problems(client))


def test_a_source_replaced_by_a_link_out_stops_being_served(linked: LiveDaemon) -> None:
    ws = Path(linked.workspaces[WS])
    tools = ws / "tools.mem"
    saved = tools.read_bytes()
    tools.unlink()
    tools.symlink_to("/etc/passwd")
    try:
        with linked.unix(linked.admin_token) as client:
            wait_for(lambda: str(tools) in problems(client))
            assert "tools.mem" not in files(client)
            response = client.get(f"{BASE}/files/tools.mem", headers={"accept": "application/json"})
            assert response.status_code == 404 and "root:" not in response.text
    finally:
        tools.unlink()
        tools.write_bytes(saved)
    with linked.unix(linked.admin_token) as client:
        wait_for(lambda: "tools.mem" in files(client))
