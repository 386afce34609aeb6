"""The cowork MCP tools, with mempal's argument names under the `memory_` prefix:
memory_cowork_push (`content`, `target_tool`) and memory_peek_partner (`tool`, `limit`,
`since`).

In memhub the partner is an identity (a token name) sharing the workspace, on any
machine, not a local tool: `target_tool` and `tool` take that name. Each tool calls the
same `service.cowork` function as the JSON API; access errors become tool errors.
Draining stays with memctl (a prompt hook), not with the model.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp_types import CallToolResult
from pydantic import Field, Strict

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.scopes import READ_SEARCH, WRITE_RECALL
from memhubd.mcp.caller import named_as_argument
from memhubd.mcp.tools import READ_ONLY, WRITE, reply, run_tool, tool_error
from memhubd.runtime.hub import Hub
from memhubd.service import cowork

DOOR = "mcp"
WORKSPACE = (
    "Workspace the partner shares with you. Leave it out to use your only workspace; "
    "required when you may use several."
)

DESCRIBE = {
    "memory_cowork_push": (
        "Send a short plain-text message to a partner (another identity of this workspace, "
        "on any machine); it is delivered once, at the partner's next prompt, not in real "
        "time. Use it for a hand-off or a heads-up, never for what must persist (propose or "
        "ingest that instead), never to yourself, at most 8 KB. On inbox_full stop and wait: "
        "do not retry."
    ),
    "memory_peek_partner": (
        "A partner's recent activity in this workspace as the daemon saw it: its last "
        "queries, checks, recall searches, proposals and pushes, with counts, never the "
        "answers it got. Use it when the user refers to the other agent; for settled history "
        "search instead. tool='auto' picks whoever else acted last here."
    ),
}


def register_cowork_tools(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=DESCRIBE["memory_cowork_push"], annotations=WRITE)
    async def memory_cowork_push(
        content: Annotated[str, Field(description="the message, plain text, at most 8 KB")],
        target_tool: Annotated[
            str, Field(description="the partner: its identity (token name)")
        ] = "",
        to: Annotated[str, Field(description="same as target_tool")] = "",
        workspace: Annotated[str, Field(description=WORKSPACE)] = "",
        cwd: Annotated[
            str,
            Field(
                description="mempal's project directory, accepted and not used: "
                "the inbox is the workspace's"
            ),
        ] = "",
    ) -> CallToolResult:
        del cwd  # mempal found the inbox by directory; memhub's is the workspace's
        if target_tool and to and target_tool != to:
            error = ProtocolError(
                ErrorCode.INVALID, "'target_tool' and 'to' name different partners"
            )
            raise tool_error(error)
        target = target_tool or to
        if not target.strip() or target.strip() == cowork.AUTO:
            error = ProtocolError(
                ErrorCode.INVALID,
                "name the partner in 'target_tool' (an identity of this workspace); "
                "memhub does not infer it",
                {"field": "target_tool"},
            )
            raise tool_error(error)

        async def work(identity: Any, name: str) -> dict[str, Any]:
            try:
                data = await cowork.push(hub, identity, name, target, content, DOOR)
            except ProtocolError as error:
                raise _as_named_here(error) from None
            return {"target_tool": data["to"], **data}

        return reply(await run_tool(hub, cowork.PUSH_SCHEMA, WRITE_RECALL, workspace, work))

    @server.tool(description=DESCRIBE["memory_peek_partner"], annotations=READ_ONLY)
    async def memory_peek_partner(
        tool: Annotated[
            str, Field(description="the partner's identity (token name), or auto")
        ] = "auto",
        limit: Annotated[int, Strict(), Field(description="most entries, the latest (1-50)")] = 30,
        since: Annotated[
            str | None, Field(description="only entries after this RFC 3339 time")
        ] = None,
        workspace: Annotated[str, Field(description=WORKSPACE)] = "",
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            try:
                data = await cowork.peek(hub, identity, name, tool, limit, since)
            except ProtocolError as error:
                raise _peek_named_here(error) from None
            return {"partner_tool": data["partner"], **data}

        return reply(await run_tool(hub, cowork.PEEK_SCHEMA, READ_SEARCH, workspace, work))


def _as_named_here(error: ProtocolError) -> ProtocolError:
    """`error` naming the partner as this tool's argument does (`target_tool`), where the
    service names the API's field (`to`)."""
    return named_as_argument(error, "to", "target_tool")


def _peek_named_here(error: ProtocolError) -> ProtocolError:
    """`error` naming the partner as this tool's argument does (`tool`), where the
    service names the API route's (`identity`)."""
    return named_as_argument(error, "identity", "tool")
