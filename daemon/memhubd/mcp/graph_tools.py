"""The knowledge-graph MCP tools, with mempal's argument names under the `memory_`
prefix: memory_kg (actions add, query, invalidate, timeline, stats), memory_tunnels
and memory_fact_check.

`wing` (mempal's word) and `workspace` name the same thing. Each tool calls the same
`service.graph` function as the JSON API; access errors become tool errors.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp_types import CallToolResult
from pydantic import Field, PlainValidator, Strict, StrictInt, StrictStr
from pydantic_core import PydanticCustomError

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.scopes import READ_SEARCH, WRITE_RECALL
from memhubd.mcp.caller import current_caller, wing_or_workspace
from memhubd.mcp.tools import READ_ONLY, WRITE, reply, run_tool, tool_error
from memhubd.runtime.hub import Hub
from memhubd.service import access as service
from memhubd.service import graph

DOOR = "mcp"
ACTIONS = ("add", "query", "invalidate", "timeline", "stats")
WING = (
    "Workspace (mempal's wing). Leave it out to use your only workspace; required when "
    "you may use several."
)

OFFSET = (
    "query: triples to skip (0-10000): the next_offset of the previous page, whose "
    "answer says truncated=true"
)
AS_OF = "query: valid at this instant (RFC 3339 / ISO 8601, or epoch seconds)"
NOW = "check as of this instant (RFC 3339 / ISO 8601, or epoch seconds)"


def _instant(value: object) -> str | int | None:
    """A time as the JSON API takes it: a string, or whole epoch seconds (no float, no
    boolean). One check rather than a union of strict types, whose refusal names the
    argument once per member ('as_of.str', 'as_of.int')."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # The JSON API's words for a time it cannot read.
    raise PydanticCustomError("instant_type", "must be epoch seconds or ISO 8601")


Instant = Annotated[
    StrictStr | StrictInt | None,
    PlainValidator(_instant, json_schema_input_type=StrictStr | StrictInt | None),
]

DESCRIBE = {
    "memory_kg": (
        "Temporal knowledge graph. action=add (subject, predicate, object, optional "
        "source_drawer to cite), query (optional subject/predicate/object; valid triples "
        "only unless active_only=false; as_of for any past instant; limit triples from "
        "offset: truncated=true says more follow, from next_offset), invalidate "
        "(triple_id: ends its validity, never deletes), timeline (subject: the entity, "
        "oldest first), stats. Answers include read-only triples derived from governed "
        "declarations (derived=true, source_declaration): those change only through a "
        "proposal, never through invalidate."
    ),
    "memory_tunnels": (
        "Rooms shared by several of your workspaces (recall rooms, governed modules or "
        "entity symbols): where the same topic lives in more than one place."
    ),
    "memory_fact_check": (
        "Before saving a note that states relations between named things, check it: names "
        "close to a known entity (typo or a different person?), relations that contradict "
        "a valid triple, facts whose validity has ended, and agreed MUST rules the text "
        "would break. Read-only and deterministic; each issue cites its triple, drawer or "
        "declaration. Confirm with the user before saving when it reports anything."
    ),
}


async def _invalidate(hub: Hub, identity: Any, name: str, triple_id: str) -> dict[str, Any]:
    """mempal's answer: the outcome as a sentence in `action`, the triple in `triples`."""
    try:
        return await graph.kg_invalidate(hub, identity, name, triple_id, DOOR)
    except ProtocolError as error:
        if error.code is ErrorCode.NOT_FOUND:
            return {
                "schema_version": graph.KG_SCHEMA,  # the shape of every other kg answer
                "workspace": name,
                "action": f"triple {triple_id} not found or already invalidated",
                "triples": [],
                "invalidated": False,
            }
        if error.code is ErrorCode.CONFLICT and error.detail.get("derived"):
            return {
                "schema_version": graph.KG_SCHEMA,
                "workspace": name,
                "action": error.message,
                "triples": [],
                "invalidated": False,
                "derived": True,
                "declaration_id": error.detail.get("declaration_id"),
            }
        raise


def register_graph_tools(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=DESCRIBE["memory_kg"], annotations=WRITE)
    async def memory_kg(
        action: Annotated[str, Field(description="add, query, invalidate, timeline or stats")],
        subject: Annotated[str, Field(description="subject (timeline: the entity)")] = "",
        predicate: Annotated[str, Field(description="predicate, e.g. works_at")] = "",
        object: Annotated[str, Field(description="object")] = "",  # noqa: A002 (mempal's name)
        triple_id: Annotated[str, Field(description="the triple to invalidate")] = "",
        active_only: Annotated[
            bool, Strict(), Field(description="query: valid triples only")
        ] = True,
        source_drawer: Annotated[str, Field(description="add: the drawer it rests on")] = "",
        as_of: Annotated[Instant, Field(description=AS_OF)] = None,
        limit: Annotated[int, Strict(), Field(description="query: most triples (1-1000)")] = 100,
        offset: Annotated[int, Strict(), Field(description=OFFSET)] = 0,
        wing: Annotated[str, Field(description=WING)] = "",
        workspace: Annotated[str, Field(description="same as wing")] = "",
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            if action not in ACTIONS:  # told once the caller's scope and grant are checked
                service.host_for(hub, identity, name)
                message = f"action must be one of {', '.join(ACTIONS)}"
                raise ProtocolError(ErrorCode.INVALID, message, {"field": "action"})
            if action == "add":
                return await graph.kg_add(
                    hub,
                    identity,
                    name,
                    subject or None,
                    predicate or None,
                    object or None,
                    DOOR,
                    source_drawer=source_drawer or None,
                )
            if action == "query":
                return await graph.kg_query(
                    hub,
                    identity,
                    name,
                    subject=subject or None,
                    predicate=predicate or None,
                    obj=object or None,
                    as_of=as_of,
                    active_only=active_only,
                    limit=limit,
                    offset=offset,
                )
            if action == "invalidate":
                return await _invalidate(hub, identity, name, triple_id)
            if action == "timeline":
                if not subject.strip():  # the API's `entity`, named as this tool names it
                    raise ProtocolError(
                        ErrorCode.INVALID,
                        "'subject' (the entity) is required for a timeline",
                        {"field": "subject"},
                    )
                return await graph.kg_timeline(hub, identity, name, subject)
            return await graph.kg_stats(hub, identity, name)

        scope = WRITE_RECALL if action in ("add", "invalidate") else READ_SEARCH
        return reply(await run_tool(hub, None, scope, wing_or_workspace(wing, workspace), work))

    @server.tool(description=DESCRIBE["memory_tunnels"], annotations=READ_ONLY)
    async def memory_tunnels() -> CallToolResult:
        try:
            return reply(await graph.tunnels(hub, current_caller()))
        except ProtocolError as error:
            raise tool_error(error) from None

    @server.tool(description=DESCRIBE["memory_fact_check"], annotations=READ_ONLY)
    async def memory_fact_check(
        text: Annotated[str, Field(description="the draft to check")],
        wing: Annotated[str, Field(description=WING)] = "",
        room: Annotated[str, Field(description="only drawers of this room count")] = "",
        now: Annotated[Instant, Field(description=NOW)] = None,
        workspace: Annotated[str, Field(description="same as wing")] = "",
    ) -> CallToolResult:
        # A room is a room of the workspace the call is about: named, or the caller's
        # only one (mempal, with every wing in one store, needed the wing named).
        requested = wing_or_workspace(wing, workspace)

        async def work(identity: Any, name: str) -> dict[str, Any]:
            return await graph.fact_check(hub, identity, name, text, room=room or None, now=now)

        return reply(await run_tool(hub, None, READ_SEARCH, requested, work))
