"""A workspace holding a file whose name is not UTF-8: the events library fails the
watch at each event on that name. The workspace is polled meanwhile, a new watch is
armed, and once it works the pauses between tries start over; said once in the log."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from memhubd.runtime import watcher
from tests.unit.runtime.test_workspace_watcher import (
    WAIT_S,
    Handler,
    next_call,
    until_watching,
    watching,
)

pytestmark = pytest.mark.anyio

ODD = b"r\xe9sum\xe9.txt"  # Latin-1, and not even a source


class Recorder:
    """Stands for the module's structlog logger and keeps what it is given (structlog's
    `capture_logs` misses a logger that an earlier test bound and cached)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def _keeper(self, level: str) -> Callable[..., None]:
        def keep(event: str, **fields: Any) -> None:
            self.entries.append({"event": event, "level": level, **fields})

        return keep

    def __getattr__(self, level: str) -> Callable[..., None]:
        return self._keeper(level)

    def named(self, event: str) -> list[dict[str, Any]]:
        return [entry for entry in self.entries if entry["event"] == event]


@pytest.fixture(autouse=True)
def quick_root_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watcher, "ROOT_CHECK_S", 0.1)


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(watcher, "log", recorder)
    return recorder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.mem").write_text('fact a { claim: "one" }\n')
    with open(os.path.join(os.fsencode(root), ODD), "wb"):
        pass  # present from the start: arming a watch on it works
    return root


def touch_odd(root: Path) -> None:
    with open(os.path.join(os.fsencode(root), ODD), "ab") as handle:
        handle.write(b"x")


async def until_logged(logs: Recorder, event: str, count: int) -> None:
    with anyio.fail_after(WAIT_S):
        while len(logs.named(event)) < count:
            await anyio.sleep(0.02)


async def until_restored(root: Path, handler: Handler, logs: Recorder, count: int) -> None:
    """Edit a probe source until a new watch delivered it and said it works again."""
    with anyio.fail_after(WAIT_S):
        while len(logs.named("workspace_watch_restored")) < count:
            (root / "probe.mem").write_text(str(anyio.current_time()))
            await anyio.sleep(0.05)
    await until_watching(root, handler)  # and the calls it caused are drained


async def until_reported(handler: Handler, path: Path) -> None:
    """Calls until one names `path` (or re-reads everything)."""
    while True:
        paths = await next_call(handler)
        if paths is None or path in paths:
            return


async def test_edits_are_served_and_the_pauses_start_over_once_a_watch_works(
    workspace: Path, logs: Recorder
) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        for round in range(1, 7):
            # Given a working watch that an event on the odd name fails
            touch_odd(workspace)
            await until_logged(logs, "workspace_watch_failed", round)

            # Then an edit made while no watch works is served all the same
            (workspace / "a.mem").write_text(f'fact a {{ claim: "round {round}" }}\n')
            await until_reported(handler, workspace / "a.mem")

            # And once a new watch delivered a batch, the count of failures starts over
            await until_restored(workspace, handler, logs, round)

    failed = logs.named("workspace_watch_failed")
    assert [entry["failures"] for entry in failed] == [1] * 6
    assert all(entry["retry_in_s"] == failed[0]["retry_in_s"] for entry in failed)


async def test_the_failure_is_said_once_naming_the_workspace_and_the_cause(
    workspace: Path, logs: Recorder
) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)
        for round in range(1, 4):
            touch_odd(workspace)
            await until_logged(logs, "workspace_watch_failed", round)
            await until_restored(workspace, handler, logs, round)

    loud = [entry for entry in logs.entries if entry["level"] in ("warning", "error")]
    [warning] = loud  # neither one per failure nor `workspace_watch_lost`
    assert warning["event"] == "workspace_watch_failed"
    assert warning["workspace"] == str(workspace) and "not UTF-8" in warning["reason"]
    assert "r\\xE9sum\\xE9.txt" in warning["error"]


async def test_an_edit_made_while_polled_is_reported_as_its_path(
    workspace: Path, logs: Recorder
) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)
        touch_odd(workspace)
        await until_logged(logs, "workspace_watch_failed", 1)

        (workspace / "new.mem").write_text('fact n { claim: "made meanwhile" }\n')

        # A poll names what changed: a reload of that file, not of every file
        paths = await next_call(handler)
        while paths is not None and workspace / "new.mem" not in paths:
            paths = await next_call(handler)
        assert paths == {workspace / "new.mem"}
