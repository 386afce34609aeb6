"""A workspace removal cut short (the daemon killed after the workspace list forgot the
name, before its state was moved under `removed/`) is finished at the next start, before
any store is opened: a workspace added later under the name starts empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhubd.auth.tokens import TokenStore
from memhubd.runtime.archive import REMOVING_DIR
from memhubd.runtime.state import WorkspaceList
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

EXAMPLE = "writing"
SECRET = "the launch code is 4711, keep it in this workspace"


def add(daemon: LiveDaemon, name: str, path: str) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post("/v1/workspaces", json={"name": name, "path": path})
    assert answer.status_code == 201, answer.text


def found(daemon: LiveDaemon, name: str) -> list[str]:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(f"/v1/workspaces/{name}/recall/search", json={"query": "launch code"})
    assert answer.status_code == 200, answer.text
    return [hit["content"] for hit in answer.json()["hits"]]


def added_with_a_drawer(tmp_path: Path, base: dict[str, str], name: str, path: str) -> Path:
    """A daemon's state dir once it added workspace `name` and stored SECRET in it."""
    with start_daemon(tmp_path, base) as daemon:
        add(daemon, name, path)
        with daemon.http(daemon.admin_token) as http:
            stored = http.post(f"/v1/workspaces/{name}/recall/ingest", json={"content": SECRET})
        assert stored.status_code == 201, stored.text
        return daemon.state_dir


def test_a_removal_cut_short_is_finished_at_the_next_start(tmp_path: Path) -> None:
    first = copy_examples(tmp_path / "one", [EXAMPLE])[EXAMPLE]
    second = copy_examples(tmp_path / "two", [EXAMPLE])[EXAMPLE]
    base = copy_examples(tmp_path / "ws", [EXAMPLE])
    state = added_with_a_drawer(tmp_path, base, "cut", first)
    # Given what a removal killed half-way leaves: the name gone from the list, its
    # marker there, its store still in place
    listed = WorkspaceList(state / "workspaces.json", state / "workspaces.json.lock")
    assert listed.remove("cut")
    (state / REMOVING_DIR).mkdir(mode=0o700, exist_ok=True)
    (state / REMOVING_DIR / "cut").touch()
    assert (state / "recall" / "cut.db").is_file()

    # When the daemon starts again and a workspace of that name is added elsewhere
    TokenStore(state).revoke("admin")
    with start_daemon(tmp_path, base) as daemon:
        add(daemon, "cut", second)
        # Then it starts empty, and the first one's state waits under removed/
        assert found(daemon, "cut") == []
    (archived,) = (state / "removed").iterdir()
    assert archived.name.startswith("cut-") and (archived / "recall" / "cut.db").is_file()
    assert list((state / REMOVING_DIR).iterdir()) == []


def test_a_removal_is_marked_before_the_list_forgets_and_unmarked_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marked_when_saved: list[bool] = []
    forget = WorkspaceList.remove

    def remove(self: WorkspaceList, name: str) -> bool:
        marked_when_saved.append((Path(self.file).parent / REMOVING_DIR / name).is_file())
        return forget(self, name)

    monkeypatch.setattr(WorkspaceList, "remove", remove)
    base = copy_examples(tmp_path / "ws", [EXAMPLE])
    with start_daemon(tmp_path, base) as daemon:
        add(daemon, "done", copy_examples(tmp_path / "one", [EXAMPLE])[EXAMPLE])
        with daemon.http(daemon.admin_token) as http:
            assert http.post("/v1/workspaces/done/recall/ingest", json={"content": SECRET})
            assert http.delete("/v1/workspaces/done").status_code == 200
        marks = daemon.state_dir / REMOVING_DIR
        assert not marks.exists() or list(marks.iterdir()) == []
    assert marked_when_saved == [True]


def test_a_removal_cut_short_before_the_list_forgot_the_name_never_happened(
    tmp_path: Path,
) -> None:
    first = copy_examples(tmp_path / "one", [EXAMPLE])[EXAMPLE]
    base = copy_examples(tmp_path / "ws", [EXAMPLE])
    state = added_with_a_drawer(tmp_path, base, "kept", first)
    # Given what a removal killed before the list was saved leaves: its marker, the
    # name still listed
    (state / REMOVING_DIR).mkdir(mode=0o700, exist_ok=True)
    (state / REMOVING_DIR / "kept").touch()

    # When the daemon starts again
    TokenStore(state).revoke("admin")
    with start_daemon(tmp_path, base) as daemon:
        # Then the workspace is served with everything it held, and the marker is gone
        assert found(daemon, "kept") == [SECRET]
    assert not (state / "removed").exists() or list((state / "removed").iterdir()) == []
    assert list((state / REMOVING_DIR).iterdir()) == []
