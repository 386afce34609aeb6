"""An in-place edit that keeps the file's size and puts its old modification time back
(`cp -p`, `rsync -t --inplace`, `touch -r`, a clock set back) is still served: by the
running daemon, and by a daemon restarted on the same state directory, whose persisted
snapshot must not vouch for the old text."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from memhubd.auth.tokens import TokenStore
from memhubd.runtime.watcher import workspace_signature
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
FILE = "tools.mem"
OLD = "ripgrep rather than grep -r"
NEW = "ackgrep rather than grep -r"
DECLARATION = "search.ripgrep"


def edit_in_place_keeping_size_and_times(path: Path) -> None:
    """Rewrite `path` in place (same inode, same size), then restore its atime and mtime."""
    before = os.stat(path)
    data = path.read_bytes()
    edited = data.replace(OLD.encode(), NEW.encode())
    assert edited != data and len(edited) == len(data)
    # The old ctime must be behind us: the kernel's timestamps can be a few ms coarse.
    time.sleep(0.05)
    with path.open("r+b") as handle:
        handle.write(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )


def claim(daemon: LiveDaemon) -> str:
    with daemon.http(daemon.admin_token) as client:
        answer = client.get(f"/v1/workspaces/{WS}/declarations?limit=500")
    assert answer.status_code == 200
    for item in answer.json()["items"]:
        if item["id"].endswith(DECLARATION):
            return str(item["claim"])
    raise AssertionError(f"{DECLARATION} is not served")


def wait_for_claim(daemon: LiveDaemon, wanted: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    seen = claim(daemon)
    while wanted not in seen and time.monotonic() < deadline:
        time.sleep(0.05)
        seen = claim(daemon)
    return seen


def restart(workdir: Path, workspaces: dict[str, str], **settings: Any) -> Any:
    """start_daemon again on the same state dir (it registers its own admin token)."""
    TokenStore(workdir / "state").revoke("admin")
    return start_daemon(workdir, workspaces, **settings)


def wait_for_snapshot(state: Path) -> None:
    """The consolidated snapshot is written off the request path: wait until it is."""
    deadline = time.monotonic() + 30
    while not list((state / "parse-cache").glob("*/snapshot")):
        assert time.monotonic() < deadline, "no parse cache snapshot written"
        time.sleep(0.1)


def test_the_running_daemon_serves_a_same_size_edit_with_its_old_mtime(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    path = Path(workspaces[WS]) / FILE
    with start_daemon(tmp_path, workspaces) as daemon:
        assert OLD in claim(daemon)
        edit_in_place_keeping_size_and_times(path)
        assert NEW in wait_for_claim(daemon, NEW)


def test_a_restarted_daemon_serves_a_same_size_edit_made_while_it_was_down(
    tmp_path: Path,
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    path = Path(workspaces[WS]) / FILE
    with start_daemon(tmp_path, workspaces) as first:
        assert OLD in claim(first)
        wait_for_snapshot(first.state_dir)

    edit_in_place_keeping_size_and_times(path)

    with restart(tmp_path, workspaces) as second:
        # Served as the first build found it: no wait, a reload must not be needed.
        assert NEW in claim(second)


def test_the_periodic_rescan_sees_a_same_size_edit_with_its_old_mtime(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    root = Path(workspaces[WS])
    before = workspace_signature(root)
    edit_in_place_keeping_size_and_times(root / FILE)
    assert workspace_signature(root) != before
