"""Workspaces added at run time may not nest: a directory inside a served workspace, or
holding one, would put the same files under two review queues (two locks, two audits),
and one declaration could be approved through each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

EXAMPLE = "writing"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = {"a": copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]}
    with start_daemon(tmp_path, workspaces) as live:
        yield live


def add(daemon: LiveDaemon, name: str, path: Path) -> httpx.Response:
    with daemon.http(daemon.admin_token) as client:
        return client.post("/v1/workspaces", json={"name": name, "path": str(path)})


def served(daemon: LiveDaemon) -> list[str]:
    with daemon.http(daemon.admin_token) as client:
        return [w["name"] for w in client.get("/v1/workspaces").json()["workspaces"]]


def test_a_directory_inside_a_served_workspace_is_refused_naming_it(daemon: LiveDaemon) -> None:
    nest = Path(daemon.workspaces["a"]) / "nest"
    nest.mkdir()

    answer = add(daemon, "nest", nest)

    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["code"] == "conflict"
    assert "workspace 'a'" in error["message"] and "may not nest" in error["message"]
    assert error["detail"]["served_as"] == "a"
    assert served(daemon) == ["a"]


def test_a_directory_holding_a_served_workspace_is_refused(daemon: LiveDaemon) -> None:
    answer = add(daemon, "outer", Path(daemon.workspaces["a"]).parent)

    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["detail"]["served_as"] == "a"
    assert served(daemon) == ["a"]


def test_a_symlink_into_a_served_workspace_is_refused(daemon: LiveDaemon, tmp_path: Path) -> None:
    inside = Path(daemon.workspaces["a"]) / "inside"
    inside.mkdir()
    link = tmp_path / "link"
    link.symlink_to(inside)

    answer = add(daemon, "linked", link)

    assert answer.status_code == 409, answer.text
    assert served(daemon) == ["a"]


def test_a_sibling_whose_name_extends_the_served_one_is_added(
    daemon: LiveDaemon,
) -> None:
    # /x/ab is not inside /x/a
    sibling = Path(daemon.workspaces["a"] + "b")
    sibling.mkdir()

    answer = add(daemon, "ab", sibling)

    assert answer.status_code == 201, answer.text
    assert served(daemon) == ["a", "ab"]


def test_a_start_on_workspaces_that_overlap_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    outer = copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]
    inner = Path(outer) / "inner"
    inner.mkdir()
    result = subprocess.run(
        [
            sys.executable, "-m", "memhubd", "serve", "--port", "0",
            "--state-dir", str(tmp_path / "state"), "--socket", str(tmp_path / "d.sock"),
            "--workspace", f"outer={outer}", "--workspace", f"inner={inner}",
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"workspace 'outer' ({outer}) holds workspace 'inner' ({inner})" in result.stderr
    assert not (tmp_path / "d.sock").exists()


def test_a_runtime_workspace_left_out_for_overlapping_can_be_forgotten(tmp_path: Path) -> None:
    import json

    outer = copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]
    inner = Path(outer) / "inner"
    inner.mkdir()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    listed = {"format": "memhub.workspaces.v1", "workspaces": {"inner": str(inner)}}
    (state / "workspaces.json").write_text(json.dumps(listed))
    with start_daemon(tmp_path, {"outer": outer}) as live:
        assert served(live) == ["outer"]
        with live.http(live.admin_token) as client:
            removed = client.delete("/v1/workspaces/inner")
            again = client.delete("/v1/workspaces/inner")
        assert removed.status_code == 200 and removed.json() == {"removed": "inner", "served": False}
        assert again.status_code == 404
        kept = json.loads((state / "workspaces.json").read_text())["workspaces"]
        assert "inner" not in kept


def test_adds_sent_together_are_checked_against_each_other(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    """Each add is checked against those served before it, so adds sent at once cannot
    all pass the checks before any of them is served: one directory, or one inside it,
    is served once."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    # A workspace with files: serving it takes a while, as adds do in real use.
    shared = Path(copy_examples(tmp_path / "shared", ["team-coding"])["team-coding"])
    (shared / "inside").mkdir()
    asked = [("one", shared), ("two", shared), ("three", shared / "inside"), ("four", shared)]
    together = threading.Barrier(len(asked))

    def add_together(name: str, path: Path) -> httpx.Response:
        with daemon.http(daemon.admin_token, timeout=60) as client:
            together.wait()
            return client.post("/v1/workspaces", json={"name": name, "path": str(path)})

    with ThreadPoolExecutor(len(asked)) as pool:
        answers = list(pool.map(lambda item: add_together(*item), asked))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [201, 409, 409, 409], [a.text for a in answers]
    assert len(served(daemon)) == 2


def test_two_runtime_workspaces_that_overlap_are_not_both_served(tmp_path: Path) -> None:
    """A list that holds two run-time workspaces that overlap (written before adds were
    checked against each other) serves the first of them only."""
    import json

    outer = copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]
    inner = Path(outer) / "inner"
    inner.mkdir()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    listed = {
        "format": "memhub.workspaces.v1",
        "workspaces": {"outer": str(outer), "inner": str(inner)},
    }
    (state / "workspaces.json").write_text(json.dumps(listed))
    other = copy_examples(tmp_path / "other", ["team-coding"])
    with start_daemon(tmp_path, other) as live:
        assert served(live) == ["outer", "team-coding"]


def test_a_path_that_is_not_absolute_is_invalid(daemon: LiveDaemon) -> None:
    """Relative to the daemon's directory or home, which are not the caller's: a
    directory that happens to exist there (this test's daemon runs in the checkout) is
    not served."""
    assert Path("examples/writing").is_dir()
    answer = add(daemon, "rel", Path("examples/writing"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["detail"]["field"] == "path"
    assert served(daemon) == ["a"]
