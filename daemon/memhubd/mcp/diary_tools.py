"""The diary and recall -> proposal MCP tools: memory_diary (action write or read, as
mempal's diary convention) and memory_propose_from_recall.

Each tool calls the same `service` function as the JSON API; access errors become tool
errors, and a proposal refused by validation is memdsl's `ok:false` payload, as
memory_propose answers.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp_types import CallToolResult
from pydantic import Field, Strict

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.scopes import READ_SUMMARY, WRITE_CANDIDATE, WRITE_RECALL
from memhubd.mcp import payloads
from memhubd.mcp.caller import named_as_argument
from memhubd.mcp.tools import MCP_CLIENT, WRITE, reply, run_tool
from memhubd.runtime.hub import Hub
from memhubd.service import access as service
from memhubd.service import diary, recall_review

DOOR = "mcp"
WORKSPACE = "Workspace. Leave it out to use your only workspace; required when you may use several."

DESCRIBE = {
    "memory_diary": (
        "Your agent diary: behavioural notes about how you work, not project facts. "
        "action=write stores `content` typed OBSERVATION, LESSON or PATTERN (private to you "
        "and reviewers unless shared=true); action=read lists a diary newest first (yours, "
        "or another identity's shared entries; reviewers see all), or best first with "
        "`query`. Write one at the end of a session."
    ),
    "memory_propose_from_recall": (
        "Turn what was said into a proposal: builds one declaration (`type`, `id`, "
        "`fields`) whose evidence quotes the drawer verbatim (the sentence that best "
        "supports the claim, or your `quote`, which must be an exact substring) and cites "
        "the drawer and its file. It is a pending proposal for human review (answers "
        "proposal_id, or ok:false with the validation errors), never memory until a person "
        "approves it."
    ),
}


def register_diary_tools(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=DESCRIBE["memory_diary"], annotations=WRITE)
    async def memory_diary(
        action: Annotated[str, Field(description="write or read")] = "read",
        content: Annotated[str, Field(description="the entry (write)")] = "",
        entry_type: Annotated[
            str, Field(description="OBSERVATION, LESSON or PATTERN (write; a filter on read)")
        ] = "",
        shared: Annotated[bool, Strict(), Field(description="visible to everyone here (write)")] = False,
        identity: Annotated[str, Field(description="whose diary (read; default yours)")] = "",
        query: Annotated[str, Field(description="only entries matching these words (read)")] = "",
        limit: Annotated[int, Strict(), Field(description="most entries (read)", ge=1, le=100)] = 20,
        workspace: Annotated[str, Field(description=WORKSPACE)] = "",
    ) -> CallToolResult:
        async def work(caller: Any, name: str) -> dict[str, Any]:
            if action not in ("write", "read"):  # told once scope and grant are checked
                service.host_for(hub, caller, name)
                raise ProtocolError(ErrorCode.INVALID, "action must be write or read")
            try:
                if action == "write":
                    return await diary.write(
                        hub, caller, name, entry_type or "OBSERVATION", content, shared=shared,
                        door=DOOR,
                    )  # fmt: skip
                return await diary.read(
                    hub, caller, name, identity or None, entry_type or None, query or None, limit
                )
            except ProtocolError as error:
                # The service names the JSON API's field (`type`); this tool's is `entry_type`.
                raise named_as_argument(error, "type", "entry_type") from None

        scope = WRITE_RECALL if action == "write" else READ_SUMMARY
        return reply(await run_tool(hub, None, scope, workspace.strip(), work))

    @server.tool(description=DESCRIBE["memory_propose_from_recall"], annotations=WRITE)
    async def memory_propose_from_recall(
        drawer_id: Annotated[str, Field(description="the drawer to quote (from memory_search)")],
        type: Annotated[str, Field(description="memory type, e.g. decision")],  # noqa: A002
        id: Annotated[str, Field(description="declaration name (type:name also works)")],  # noqa: A002
        fields: Annotated[
            dict[str, str] | None,
            Field(description="field values, e.g. {claim, subject}; a.b makes a block"),
        ] = None,
        quote: Annotated[str, Field(description="an exact substring of the drawer")] = "",
        reason: Annotated[str, Field(description="why this belongs in memory")] = "",
        workspace: Annotated[str, Field(description=WORKSPACE)] = "",
    ) -> CallToolResult:
        async def work(caller: Any, name: str) -> dict[str, Any]:
            try:  # a bad type, id or fields is answered as memory_propose answers it
                request = recall_review.DrawerProposal.from_json(
                    {"type": type, "id": id, "fields": fields or {}, "quote": quote or None,
                     "reason": reason}
                )  # fmt: skip
                data = await recall_review.propose_from_drawer(
                    hub, caller, name, drawer_id, request, MCP_CLIENT
                )
            except ProtocolError as error:
                if error.code not in (ErrorCode.INVALID, ErrorCode.TOO_LARGE):
                    raise
                return payloads.propose_invalid(error, name)
            return {
                **payloads.propose_payload(data, name),
                "source": data["source"],
                "drawer": data["drawer"],
            }

        return reply(await run_tool(hub, None, WRITE_CANDIDATE, workspace.strip(), work))
