"""The hub applies held-back changes by itself once they are due, with no file event."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from memhubd.runtime.hub import Hub, WatchSettings

pytestmark = pytest.mark.anyio

FACT = 'fact notes.kept {\n  claim: "Kept."\n  evidence { source: "t" quote: "q" }\n}\n'


def served_ids(hub: Hub) -> set[str]:
    host = hub.get("ws")
    assert host is not None and host.snapshot is not None
    return {d.id for d in host.snapshot.workspace.declarations}


async def wait_until(predicate, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


async def test_a_deletion_is_applied_when_its_grace_ends_without_another_event(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.mem").write_text(FACT, encoding="utf-8")
    # No watcher: only the reload below and the hub's own re-check can apply anything.
    settings = WatchSettings(enabled=False, vanish_grace_ms=300, settle_ms=50)
    hub = Hub(watch=settings)
    async with hub.running({"ws": str(tmp_path)}):
        host = hub.get("ws")
        assert host is not None and served_ids(hub) == {"fact:notes.kept"}
        (tmp_path / "a.mem").unlink()
        deleted_at = time.monotonic()
        await host.reload()
        assert served_ids(hub) == {"fact:notes.kept"}  # within the grace period
        await wait_until(lambda: served_ids(hub) == set())
        assert time.monotonic() - deleted_at >= 0.3


async def test_fresh_bytes_are_served_once_settled_without_another_event(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.mem").write_text(FACT, encoding="utf-8")
    hub = Hub(watch=WatchSettings(enabled=False, vanish_grace_ms=300, settle_ms=200))
    async with hub.running({"ws": str(tmp_path)}):
        host = hub.get("ws")
        assert host is not None
        (tmp_path / "a.mem").write_text(FACT.replace("kept", "newer"), encoding="utf-8")
        await host.reload()
        assert served_ids(hub) == {"fact:notes.kept"}  # not settled yet
        await wait_until(lambda: served_ids(hub) == {"fact:notes.newer"})


async def test_a_write_by_the_daemon_itself_is_served_at_once(tmp_path: Path) -> None:
    (tmp_path / "a.mem").write_text(FACT, encoding="utf-8")
    hub = Hub(watch=WatchSettings(enabled=False, vanish_grace_ms=5000, settle_ms=5000))
    async with hub.running({"ws": str(tmp_path)}):
        host = hub.get("ws")
        assert host is not None
        async with host.reloads_held():
            (tmp_path / "a.mem").write_text(FACT + FACT.replace("kept", "more"), "utf-8")
            await host.reload_held()
        assert served_ids(hub) == {"fact:notes.kept", "fact:notes.more"}
