"""The review slots kept per workspace stay bounded over a daemon's life: workspaces
come and go, and the slots of idle ones are forgotten."""

from __future__ import annotations

import anyio
import pytest

from memhubd.service import access


@pytest.mark.anyio
async def test_review_slots_of_idle_workspaces_are_forgotten(monkeypatch) -> None:
    monkeypatch.setattr(access, "_REVIEW", {})
    for n in range(10 * access.REVIEW_LIMITERS_KEPT):
        assert await access.run_review(f"ws{n}", lambda n=n: n) == n
    assert len(access._REVIEW) <= access.REVIEW_LIMITERS_KEPT


@pytest.mark.anyio
async def test_slots_in_use_are_kept(monkeypatch) -> None:
    monkeypatch.setattr(access, "_REVIEW", {})
    started, release = anyio.Event(), anyio.Event()

    async def hold() -> None:
        limiter = anyio.CapacityLimiter(access.REVIEW_SLOTS)
        access._REVIEW["busy"] = limiter
        async with limiter:
            started.set()
            await release.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(hold)
        await started.wait()
        for n in range(2 * access.REVIEW_LIMITERS_KEPT):
            await access.run_review(f"ws{n}", lambda: None)
        assert "busy" in access._REVIEW
        release.set()
