"""`mount_mcp` wiring: one exact /mcp route, the session manager inside the app's
own lifespan, authentication by the API middleware, nothing when disabled."""

from __future__ import annotations

import contextlib

import httpx
import pytest

from memhubd.api import ApiContext, build_app
from memhubd.auth.tokens import TokenStore
from memhubd.mcp import MCP_PATH, mount_mcp
from memhubd.mcp.payloads import TOOL_NAMES
from memhubd.runtime.config import McpConfig
from memhubd.runtime.hub import Hub

pytestmark = pytest.mark.anyio
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"accept": "application/json, text/event-stream"}


def context_with(tmp_path, events: list[str]) -> tuple[ApiContext, str]:
    store = TokenStore(tmp_path)
    _record, secret = store.create("agent", "read:summary")

    @contextlib.asynccontextmanager
    async def hub_lifespan(app):
        events.append("hub up")
        yield
        events.append("hub down")

    return ApiContext(hub=Hub(), tokens=store, lifespan=hub_lifespan), secret


def test_mounting_twice_adds_one_route_at_exactly_mcp(tmp_path):
    context, _secret = context_with(tmp_path, [])
    mount_mcp(context)
    mount_mcp(context)
    assert [route.path for route in context.extra_routes] == [MCP_PATH]


def test_disabled_mcp_mounts_nothing(tmp_path):
    context, _secret = context_with(tmp_path, [])
    lifespan = context.lifespan
    mount_mcp(context, McpConfig(enabled=False))
    assert context.extra_routes == [] and context.lifespan is lifespan


async def test_mounted_endpoint_answers_inside_the_hub_lifespan(tmp_path):
    events: list[str] = []
    context, secret = context_with(tmp_path, events)
    mount_mcp(context)
    app = build_app(context)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app):
        assert events == ["hub up"]
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8377") as http:
            anonymous = await http.post(MCP_PATH, json=TOOLS_LIST, headers=HEADERS)
            auth = {**HEADERS, "authorization": f"Bearer {secret}"}
            listed = await http.post(MCP_PATH, json=TOOLS_LIST, headers=auth)
    assert events == ["hub up", "hub down"]
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["data"]["error"]["code"] == "unauthorized"
    assert listed.status_code == 200
    names = {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert names >= set(TOOL_NAMES)
