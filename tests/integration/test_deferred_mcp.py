"""The daemon mounts /mcp after its start: a request that comes before the mount waits
for it and is answered as one that comes after."""

from __future__ import annotations

from pathlib import Path

import pytest

import memhubd.server as server_module
from tests.integration.conftest import copy_examples, start_daemon
from tests.integration.test_mcp import TEAM, mcp_client


@pytest.mark.anyio
async def test_mcp_answers_the_same_before_and_after_its_deferred_mount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a daemon that would mount /mcp itself only long after its start
    monkeypatch.setattr(server_module, "MCP_IMPORT_DELAY_S", 3600.0)
    workspaces = copy_examples(tmp_path / "ws", [TEAM])
    with start_daemon(tmp_path, workspaces) as daemon:
        # When MCP is asked first (mounted by that request), then again
        async with mcp_client(daemon, daemon.admin_token) as client:
            first = await client.list_tools()
            query = await client.call_tool("memory_query", {"workspace": TEAM, "query": "deploy"})
        async with mcp_client(daemon, daemon.admin_token) as client:
            again = await client.list_tools()
            query_again = await client.call_tool(
                "memory_query", {"workspace": TEAM, "query": "deploy"}
            )

    # Then both answer, and alike
    assert [tool.name for tool in first.tools] == [tool.name for tool in again.tools]
    assert "memory_query" in [tool.name for tool in first.tools]
    assert query.model_dump() == query_again.model_dump()
