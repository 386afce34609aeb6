"""A removed workspace is let go at once: nothing the hub runs keeps its snapshot."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import anyio
import pytest

from memhubd.runtime.hub import Hub, WatchSettings

pytestmark = pytest.mark.anyio

FACT = 'fact notes.kept {\n  claim: "Kept."\n  evidence { source: "t" quote: "q" }\n}\n'


async def test_a_removed_workspaces_snapshot_is_freed_before_its_warm_wait_ends(
    tmp_path: Path,
) -> None:
    for name in ("stays", "goes"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.mem").write_text(FACT, encoding="utf-8")
    hub = Hub(watch=WatchSettings(enabled=False))
    async with hub.running({"stays": str(tmp_path / "stays")}):
        host = await hub.add("goes", str(tmp_path / "goes"))
        assert host.snapshot is not None
        gone = weakref.ref(host.snapshot)
        # Reloads keep coming elsewhere, so the warm step's wait for quiet would last
        # its full 30 s; the removal must end it
        await hub.remove("goes")
        del host
        with anyio.fail_after(10):
            while gone() is not None:
                await hub.get("stays").reload()  # type: ignore[union-attr]
                await anyio.sleep(0.05)
                gc.collect()
        assert gone() is None
