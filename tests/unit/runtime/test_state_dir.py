"""The state directory: layout, private permissions, and the persisted run-time workspace list."""

from __future__ import annotations

import json
import multiprocessing
import stat
from pathlib import Path

import pytest

from memhubd.runtime.state import (
    StateDir,
    StateFileError,
    WorkspaceConflict,
    merge_workspaces,
    overlapping,
    write_file_atomic,
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_state_dir_is_created_private_with_its_layout(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "nested" / "state")

    assert mode_of(state.path) == 0o700
    assert state.audit_dir.is_dir() and mode_of(state.audit_dir) == 0o700
    assert state.recall_dir.is_dir()
    assert state.tokens_file == state.path / "tokens.json"
    assert state.workspaces_file == state.path / "workspaces.json"


def test_existing_state_dir_keeps_its_mode(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir(mode=0o750)
    (tmp_path / "state").chmod(0o750)

    state = StateDir(tmp_path / "state")

    assert mode_of(state.path) == 0o750


def test_state_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("x")

    with pytest.raises(NotADirectoryError):
        StateDir(tmp_path / "state")


def test_workspace_list_survives_a_restart(tmp_path: Path) -> None:
    StateDir(tmp_path).workspace_list().add("team", "/srv/team")

    reopened = StateDir(tmp_path).workspace_list()

    assert reopened.load() == {"team": "/srv/team"}
    assert mode_of(tmp_path / "workspaces.json") == 0o600


def test_adding_is_idempotent_and_a_name_keeps_its_path(tmp_path: Path) -> None:
    workspaces = StateDir(tmp_path).workspace_list()

    assert workspaces.add("team", "/srv/team") is True
    assert workspaces.add("team", "/srv/team/") is False
    with pytest.raises(WorkspaceConflict, match="already registered for /srv/team"):
        workspaces.add("team", "/srv/other")
    assert workspaces.load() == {"team": "/srv/team"}


def test_removing_forgets_only_that_workspace(tmp_path: Path) -> None:
    workspaces = StateDir(tmp_path).workspace_list()
    workspaces.add("a", "/srv/a")
    workspaces.add("b", "/srv/b")

    assert workspaces.remove("a") is True
    assert workspaces.remove("a") is False
    assert workspaces.load() == {"b": "/srv/b"}


@pytest.mark.parametrize(("name", "path"), [("bad name", "/x"), ("ok", "relative/path")])
def test_invalid_entries_are_refused(tmp_path: Path, name: str, path: str) -> None:
    workspaces = StateDir(tmp_path).workspace_list()

    with pytest.raises(ValueError):
        workspaces.add(name, path)
    assert workspaces.load() == {}


def test_a_corrupt_list_is_reported_not_emptied(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    state.workspaces_file.write_text("{not json")

    with pytest.raises(StateFileError, match="workspaces.json"):
        state.workspace_list().load()
    with pytest.raises(StateFileError):
        state.workspace_list().add("a", "/a")
    assert state.workspaces_file.read_text() == "{not json"


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    target.write_text("old")

    write_file_atomic(target, b"new")

    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]


def _add_many(state_path: str, prefix: str, count: int) -> None:
    workspaces = StateDir(state_path).workspace_list()
    for index in range(count):
        workspaces.add(f"{prefix}{index}", f"/srv/{prefix}{index}")


def test_concurrent_writers_in_two_processes_lose_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    writers = [
        context.Process(target=_add_many, args=(str(tmp_path), prefix, 25)) for prefix in "ab"
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=30)

    entries = StateDir(tmp_path).workspace_list().load()
    assert len(entries) == 50
    assert json.loads((tmp_path / "workspaces.json").read_text())["workspaces"]["b24"] == "/srv/b24"


def test_configured_workspaces_win_name_clashes() -> None:
    configured = {"team": "/etc-configured/team"}
    added = {"team": "/runtime/team", "extra": "/runtime/extra"}

    assert merge_workspaces(configured, added) == {
        "team": "/etc-configured/team",
        "extra": "/runtime/extra",
    }


def test_a_runtime_workspace_overlapping_a_configured_one_is_left_out() -> None:
    configured = {"team": "/srv/memory/team"}
    added = {
        "inner": "/srv/memory/team/notes",  # inside a configured one
        "outer": "/srv/memory",  # holding one
        "again": "/srv/memory/team",  # the same directory
        "beside": "/srv/memory/team-b",  # a sibling whose name starts alike
    }
    assert merge_workspaces(configured, added) == {
        "team": "/srv/memory/team",
        "beside": "/srv/memory/team-b",
    }


def test_overlapping_names_the_pair_or_none() -> None:
    assert overlapping({"a": "/x/a", "ab": "/x/ab", "b": "/x/b"}) is None
    assert overlapping({"a": "/x/a", "in": "/x/a/in"}) == (("a", "/x/a"), ("in", "/x/a/in"))
    assert overlapping({"z": "/x/a", "y": "/x/a"}) == (("y", "/x/a"), ("z", "/x/a"))


@pytest.mark.parametrize("found", ["memhub.workspaces.v2", None])
def test_a_workspace_list_of_another_format_is_refused_and_kept(
    tmp_path: Path, found: str | None
) -> None:
    payload = {"workspaces": {"writing": "/srv/writing"}, "options": {"kept": True}}
    if found is not None:
        payload["format"] = found
    text = json.dumps(payload)
    (tmp_path / "workspaces.json").write_text(text)

    with pytest.raises(StateFileError, match="format is"):
        StateDir(tmp_path).workspace_list().load()
    with pytest.raises(StateFileError):
        StateDir(tmp_path).workspace_list().add("extra", "/srv/extra")
    assert (tmp_path / "workspaces.json").read_text() == text


def test_the_overlap_warning_names_the_configured_workspace(caplog, monkeypatch) -> None:
    import memhubd.runtime.state as state_module

    seen: list[dict] = []
    monkeypatch.setattr(state_module.log, "warning", lambda event, **fields: seen.append(fields))
    merge_workspaces({"outer": "/srv/a"}, {"inner": "/srv/a/sub", "aaa": "/srv/a"})
    assert {(f["workspace"], f["served"], f["configured"]) for f in seen} == {
        ("inner", "outer", True),
        ("aaa", "outer", True),
    }
