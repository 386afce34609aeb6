"""What a workspace removed at run time leaves behind, through a real daemon: what its
agents said (recall store, diary, cowork inbox) is archived under `removed/` and never
reaches a later workspace of the same name; its parse cache folder is deleted."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memhubd.runtime.cache import _workspace_folder
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

EXAMPLE = "writing"
SECRET = "secret plan for project X: acquire zebra corp"
LESSON = "The zebra corp plan stays between us until the board meets."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("removal")
    with start_daemon(root, copy_examples(root / "ws", [EXAMPLE])) as live:
        live.add_token("mate", "read:summary", workspaces=["*"])
        yield live


def a_directory(tmp_path: Path, name: str) -> str:
    return copy_examples(tmp_path / name, [EXAMPLE])[EXAMPLE]


def add(daemon: LiveDaemon, name: str, path: str) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post("/v1/workspaces", json={"name": name, "path": path})
    assert answer.status_code == 201, answer.text


def remove(daemon: LiveDaemon, name: str) -> int:
    with daemon.http(daemon.admin_token, timeout=60) as http:
        return http.delete(f"/v1/workspaces/{name}").status_code


def say_things(daemon: LiveDaemon, name: str) -> None:
    base = f"/v1/workspaces/{name}"
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(f"{base}/recall/ingest", json={"content": SECRET})
        assert answer.status_code == 201, answer.text
        answer = http.post(f"{base}/diary", json={"type": "LESSON", "content": LESSON})
        assert answer.status_code == 201, answer.text
        answer = http.post(f"{base}/cowork/push", json={"to": "mate", "content": SECRET})
        assert answer.status_code == 201, answer.text


def what_is_found(daemon: LiveDaemon, name: str) -> list[str]:
    base = f"/v1/workspaces/{name}"
    with daemon.http(daemon.admin_token) as http:
        search = http.post(f"{base}/recall/search", json={"query": "zebra corp plan"})
        assert search.status_code == 200, search.text
        diary = http.get(f"{base}/diary", params={"q": "zebra corp plan"})
        assert diary.status_code == 200, diary.text
    with daemon.http(daemon.tokens["mate"]) as http:
        drained = http.post(f"{base}/cowork/drain")
        assert drained.status_code == 200, drained.text
    return (
        [hit["content"] for hit in search.json()["hits"]]
        + [entry["content"] for entry in diary.json()["entries"]]
        + [message["content"] for message in drained.json()["messages"]]
    )


def test_a_workspace_added_again_under_a_removed_name_starts_empty(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # Given a run-time workspace whose agents ingested, wrote a diary entry and a message
    add(daemon, "reuse4", a_directory(tmp_path, "x"))
    say_things(daemon, "reuse4")
    # When it is removed, and a workspace of the same name is added at another directory
    assert remove(daemon, "reuse4") == 200
    add(daemon, "reuse4", a_directory(tmp_path, "y"))
    # Then nothing the first one's agents said reaches the new one
    assert what_is_found(daemon, "reuse4") == []
    # And it is kept for the operator under removed/, each file at its place
    state = daemon.state_dir
    (archived,) = [p for p in (state / "removed").iterdir() if p.name.startswith("reuse4-")]
    assert (archived / "recall" / "reuse4.db").is_file()
    assert (archived / "cowork" / "reuse4.sqlite").is_file()
    assert remove(daemon, "reuse4") == 200


def test_an_archived_store_moved_back_is_served_again(daemon: LiveDaemon, tmp_path: Path) -> None:
    # Given a removed workspace's archive
    add(daemon, "restored", a_directory(tmp_path, "x"))
    say_things(daemon, "restored")
    assert remove(daemon, "restored") == 200
    state = daemon.state_dir
    (archived,) = [p for p in (state / "removed").iterdir() if p.name.startswith("restored-")]
    # When the operator moves it back while no such workspace is served, then adds it
    for path in sorted(archived.rglob("*")):
        if path.is_file():
            target = state / path.relative_to(archived)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, target)
    add(daemon, "restored", a_directory(tmp_path, "y"))
    # Then what was said there is found again
    found = "\n".join(what_is_found(daemon, "restored"))
    assert SECRET in found and LESSON in found
    assert remove(daemon, "restored") == 200


def test_a_removal_whose_state_cannot_be_archived_keeps_the_workspace_served(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # Given a workspace with recall state, and a state dir where the archive cannot go
    add(daemon, "stuck", a_directory(tmp_path, "x"))
    say_things(daemon, "stuck")
    blocker = daemon.state_dir / "removed"
    moved_aside = daemon.state_dir / "removed-aside"
    if blocker.exists():
        os.rename(blocker, moved_aside)
    blocker.write_text("not a folder\n")
    try:
        # When it is removed
        with daemon.http(daemon.admin_token, timeout=60) as http:
            answer = http.delete("/v1/workspaces/stuck")
    finally:
        blocker.unlink()
        if moved_aside.exists():
            os.rename(moved_aside, blocker)
    # Then the removal fails, saying why without the state dir's path, and the workspace
    # is served as it was, its store with it
    assert answer.status_code == 500
    assert "could not be moved to removed/" in answer.text
    assert "workspace list" not in answer.text  # the list was never the problem
    assert answer.json()["error"]["message"].endswith("workspace 'stuck' is still served")
    assert str(daemon.state_dir) not in answer.text
    with daemon.http(daemon.admin_token) as http:
        assert http.get("/v1/workspaces/stuck").status_code == 200
    assert SECRET in what_is_found(daemon, "stuck")
    assert (daemon.state_dir / "recall" / "stuck.db").is_file()
    # And once the archive can be written, it is removed
    assert remove(daemon, "stuck") == 200
    assert not (daemon.state_dir / "recall" / "stuck.db").exists()


def test_removal_deletes_the_workspaces_parse_cache_folder(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # Given a run-time workspace whose parse cache was saved
    root = a_directory(tmp_path, "cached")
    add(daemon, "cached", root)
    with daemon.http(daemon.admin_token) as http:
        assert http.get("/v1/workspaces/cached/declarations").status_code == 200
    folder = _workspace_folder(daemon.state_dir / "parse-cache", root)
    deadline = time.monotonic() + 30
    while not (folder / "snapshot").is_file():
        assert time.monotonic() < deadline, "the parse cache was never saved"
        time.sleep(0.1)
    assert (folder / "root").read_text(encoding="utf-8") == os.path.realpath(root)
    # When it is removed
    assert remove(daemon, "cached") == 200
    # Then its folder is gone, and other workspaces' stay
    assert not folder.exists()
    served = _workspace_folder(daemon.state_dir / "parse-cache", daemon.workspaces[EXAMPLE])
    deadline = time.monotonic() + 30
    while not served.is_dir():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    shutil.rmtree(tmp_path / "cached")
