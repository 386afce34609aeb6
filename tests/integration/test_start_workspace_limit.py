"""`[limits] max_workspaces` at start: the configured workspaces are served, then those
added at run time up to the limit; the rest are named in a warning and kept in the list."""

from __future__ import annotations

import json
from pathlib import Path

from memhubd.runtime.state import StateDir, merge_workspaces
from tests.integration.test_lifecycle import Process


def test_run_time_workspaces_past_the_limit_are_left_out_and_named(tmp_path: Path) -> None:
    # Given two configured workspaces, a limit of two, and one added at run time before
    for name in ("a", "b", "c"):
        (tmp_path / "ws" / name).mkdir(parents=True)
    membership = StateDir(tmp_path / "state").workspace_list()
    membership.add("c", str(tmp_path / "ws" / "c"))
    config = tmp_path / "memhub.toml"
    config.write_text("[limits]\nmax_workspaces = 2\n")
    # When the daemon starts
    daemon = Process(
        tmp_path,
        {"a": str(tmp_path / "ws" / "a"), "b": str(tmp_path / "ws" / "b")},
        "--config",
        str(config),
    )
    daemon.wait_ready()
    with daemon.client() as client:
        served = [w["name"] for w in client.get("/v1/workspaces").json()["workspaces"]]
    assert daemon.stop() == 0
    # Then the configured ones are served, the run-time one is named in a warning and
    # stays in the list (a raised limit serves it again)
    assert served == ["a", "b"]
    events = [json.loads(line) for line in daemon.proc.stderr.read().decode().splitlines()]
    over = [e for e in events if e.get("event") == "runtime_workspaces_over_limit"]
    assert over and over[0]["not_served"] == ["c"] and over[0]["max_workspaces"] == 2
    assert membership.load() == {"c": str(tmp_path / "ws" / "c")}


def test_run_time_workspaces_fill_the_limit_in_list_order() -> None:
    added = {"x": "/srv/x", "y": "/srv/y", "z": "/srv/z"}

    assert merge_workspaces({"a": "/srv/a"}, added, at_most=3) == {
        "a": "/srv/a",
        "x": "/srv/x",
        "y": "/srv/y",
    }
    assert len(merge_workspaces({"a": "/srv/a"}, added)) == 4
