"""What a start defers (the recall shelf and route modules, the MCP SDK) waits for the
start's warm step, in which the stored tokens' role-limited views are made: loaded
beside a view, each took the GIL from the other, and a role-limited token's first
answer waited longer. A request that needs them meanwhile does not wait."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

import memhubd.server as server_module
from memhubd.runtime.hub import Hub
from tests.integration.conftest import copy_examples, start_daemon
from tests.integration.test_mcp import TEAM, mcp_client
from tests.integration.test_start_imports_routes import loading_at_once


@pytest.fixture
def held_warm(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """(warming, release): the view warmer signals `warming` and blocks until `release`."""
    warming, release = threading.Event(), threading.Event()

    def warm_views(snapshot: Any, identities: Any = ()) -> None:
        warming.set()
        assert release.wait(60)

    monkeypatch.setattr(server_module, "warm_views", warm_views)
    return warming, release


def test_deferred_modules_load_after_the_warm_step(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    held_warm: tuple[threading.Event, threading.Event],
) -> None:
    warming, release = held_warm
    # Given a daemon that would load its deferred modules at once, its warm step held
    loaded = loading_at_once(monkeypatch)
    monkeypatch.setattr(server_module, "MCP_IMPORT_DELAY_S", 3600.0)
    with start_daemon(tmp_path, copy_examples(tmp_path / "ws", [TEAM])):
        try:
            assert warming.wait(30)
            # When the warm step is still under way, they are not loaded
            assert not loaded.wait(1.0)
        finally:
            release.set()
        # Then once it is done, they are
        assert loaded.wait(30)


@pytest.mark.anyio
async def test_mcp_answers_while_the_warm_step_is_under_way(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    held_warm: tuple[threading.Event, threading.Event],
) -> None:
    warming, release = held_warm
    # Given a daemon that would mount /mcp at once, its warm step held
    monkeypatch.setattr(server_module, "MCP_IMPORT_DELAY_S", 0.0)
    monkeypatch.setattr(server_module, "DEFERRED_IMPORT_DELAY_S", 3600.0)
    with start_daemon(tmp_path, copy_examples(tmp_path / "ws", [TEAM])) as daemon:
        try:
            assert await anyio.to_thread.run_sync(warming.wait, 30)
            # When an MCP client asks meanwhile, it is answered
            with anyio.fail_after(60):
                async with mcp_client(daemon, daemon.admin_token) as client:
                    found = await client.call_tool(
                        "memory_query", {"workspace": TEAM, "query": "deploy"}
                    )
        finally:
            release.set()  # before the daemon stops: it waits for its warm step
    assert not found.is_error
    assert "deploy" in str(found.content).lower()


@pytest.mark.anyio
async def test_waiting_for_the_warm_step_gives_up_after_its_limit() -> None:
    hub = Hub()
    # Given no warm step under way, the wait returns at once
    with anyio.fail_after(1):
        await hub.wait_warmed(30)
    # And given one that never ends, it returns after its limit
    hub.warming = 1
    with anyio.fail_after(5):
        await hub.wait_warmed(0.2)
