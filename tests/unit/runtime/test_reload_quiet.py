"""Saving the parse cache and linting wait for reloads to be quiet: they would share the
GIL with a reload someone waits on, and a snapshot replaced meanwhile is not linted."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from memhubd.runtime import hub as hub_module
from memhubd.runtime.hub import Hub, ReloadActivity, WatchSettings
from memhubd.runtime.snapshot import Snapshot

pytestmark = pytest.mark.anyio

FACT = 'fact notes.n{n} {{\n  claim: "Number {n}."\n  evidence {{ source: "t" quote: "q" }}\n}}\n'


async def test_quiet_comes_only_once_no_reload_has_run_for_the_quiet_time() -> None:
    activity = ReloadActivity()
    done: list[float] = []

    async def wait() -> None:
        await activity.wait_quiet(0.2, 10.0)
        done.append(time.monotonic())

    async with anyio.create_task_group() as tg:
        with activity.reloading():
            tg.start_soon(wait)
            await anyio.sleep(0.4)
            assert done == []  # a reload is running
        ended = time.monotonic()
    assert done and done[0] - ended >= 0.2


async def test_waiting_for_quiet_gives_up_after_the_longest_wait() -> None:
    activity = ReloadActivity()
    with activity.reloading():
        begun = time.monotonic()
        with anyio.fail_after(5):
            await activity.wait_quiet(0.1, 0.3)
        assert time.monotonic() - begun >= 0.3


def _record_lints(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The generations of the snapshots linted from now on, in order."""
    linted: list[int] = []
    lint = Snapshot.diagnostics

    def recording(snapshot: Snapshot) -> list:
        linted.append(snapshot.generation)
        return lint(snapshot)

    monkeypatch.setattr(Snapshot, "diagnostics", recording)
    return linted


async def test_only_the_last_snapshot_of_a_burst_of_edits_is_linted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a hub whose background lint waits for 0.3 s without reloads
    monkeypatch.setattr(hub_module, "WARM_QUIET_S", 0.3)
    linted = _record_lints(monkeypatch)
    source = tmp_path / "a.mem"
    source.write_text(FACT.format(n=0), encoding="utf-8")
    hub = Hub(watch=WatchSettings(enabled=False))
    async with hub.running({"ws": str(tmp_path)}):
        host = hub.get("ws")
        assert host is not None
        # when edits are reloaded one after the other
        generations = []
        for n in range(1, 5):
            source.write_text(source.read_text() + FACT.format(n=n), encoding="utf-8")
            served = await host.reload([str(source)])
            assert served is not None
            generations.append(served.generation)
        assert linted == []
        # then only the snapshot served once they stop is linted, after the quiet time
        with anyio.fail_after(10):
            while not linted:
                await anyio.sleep(0.05)
        await anyio.sleep(0.5)
        assert linted == [generations[-1]]


async def test_edits_that_never_pause_are_still_linted_within_the_longest_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a hub that lints after 5 s without reloads, or at most 0.5 s after an edit
    monkeypatch.setattr(hub_module, "WARM_QUIET_S", 5.0)
    monkeypatch.setattr(hub_module, "WARM_WAIT_AT_MOST_S", 0.5)
    linted = _record_lints(monkeypatch)
    source = tmp_path / "a.mem"
    source.write_text(FACT.format(n=0), encoding="utf-8")
    hub = Hub(watch=WatchSettings(enabled=False))
    async with hub.running({"ws": str(tmp_path)}):
        host = hub.get("ws")
        assert host is not None
        # when an edit is reloaded every 0.1 s for 2 s
        begun = time.monotonic()
        n = 0
        while time.monotonic() - begun < 2.0:
            n += 1
            source.write_text(source.read_text() + FACT.format(n=n), encoding="utf-8")
            await host.reload([str(source)])
            await anyio.sleep(0.1)
        # then snapshots were linted meanwhile, never two at once for one wait
        assert linted
        assert len(linted) < n / 2
