"""MCP `memory_query` under `limits.max_result_bytes`: an answer whose pack JSON or text
alone is over the limit is refused before the tool's payload is built, with the same
`ok:false` payload as any answer over the limit; answers within it are unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.test_mcp import TEAM, call, mcp_client, mcp_mounted

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def limited_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("mcp-query-limit")
    with mcp_mounted():
        workspaces = copy_examples(root / "ws", [TEAM])
        with start_daemon(root, workspaces, **{"limits.max_result_bytes": 3000}) as live:
            yield live


async def test_a_query_whose_pack_is_over_the_limit_is_refused_from_its_size(
    limited_daemon: LiveDaemon,
) -> None:
    async with mcp_client(limited_daemon, limited_daemon.admin_token) as client:
        # Given a question whose evidence pack alone is larger than the limit
        payload = await call(client, "memory_query", {"query": "api version deploy"})
        # When it is asked again (the refusal's size was noted)
        again = await call(client, "memory_query", {"query": "api version deploy"})

    # Then both answers are the ok:false refusal, sized from what was known
    for answer in (payload, again):
        assert answer["ok"] is False and answer["status"] == "too_large"
        assert answer["schema_version"] == "memdsl.mcp.query.v1"
        assert answer["limit"] == 3000 and answer["size"] > 3000
        assert "at least" in answer["message"] and "max_result_bytes" in answer["message"]


async def test_a_query_within_the_limit_is_answered(limited_daemon: LiveDaemon) -> None:
    async with mcp_client(limited_daemon, limited_daemon.admin_token) as client:
        payload = await call(client, "memory_query", {"query": "zebra crossing", "limit": 1})

    assert payload["schema_version"] == "memdsl.mcp.query.v1"
    assert payload["status"] in ("ok", "no_match")
