"""The recall MCP tools, with mempal's argument names under the `memory_` prefix:
memory_search, memory_get_drawer, memory_ingest, memory_delete, memory_taxonomy,
memory_wake_up and memory_recall_status.

`wing` (mempal's word) and `workspace` name the same thing. Each tool calls the same
`service.recall` function as the JSON API; access errors become tool errors.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp_types import CallToolResult
from pydantic import Field, Strict

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.recall import (
    MAX_HIT_CHARS,
    IngestRequest,
    SearchRequest,
    SourceDeleteRequest,
    TaxonomyEditRequest,
)
from memhub_protocol.scopes import READ_SEARCH, READ_SUMMARY, WRITE_RECALL
from memhubd.mcp import text
from memhubd.mcp.caller import current_caller, note_workspace, wing_or_workspace
from memhubd.mcp.tools import DESTRUCTIVE, READ_ONLY, WRITE, reply, run_tool, tool_error
from memhubd.recall.aaak import dialect_text
from memhubd.runtime.hub import Hub
from memhubd.service import access as service
from memhubd.service import recall

DOOR = "mcp"
WING = "Workspace (mempal's wing). Leave it out to use your only workspace; for "
WING_SEARCH = WING + "memory_search, leave it out to search every workspace you may use."
WING_ONE = WING + "the others, it is required when you may use several."
# How this door reads one drawer whole, as wake-up's text points to it.
READ_WHOLE = "memory_get_drawer {drawer_id}"

DESCRIBE = {
    "memory_search": (
        "Search recall: what was said in ingested transcripts, chats and notes (drawers), by "
        "BM25 + embeddings fused with RRF. Every result has drawer_id, verbatim content, wing, "
        "room, source_file and a citation: cite them. Results also carry entities, topics, flags, "
        "emotions and importance_stars (computed from the content, never stored). Rooms "
        "boost, they never filter, unless you "
        "pass `room`. Only filter by a room you have seen in memory_recall_status. Pass "
        "max_chars to cut each hit's content: a cut hit says content_truncated and "
        "content_chars, and memory_get_drawer reads it whole."
    ),
    "memory_get_drawer": (
        "Read one drawer whole by its drawer_id (from memory_search or memory_wake_up): "
        "its verbatim content, room, source_file and locator."
    ),
    "memory_ingest": (
        "Store one piece of text verbatim as a drawer (a decision with its rationale, a "
        "lesson). Leave `room` out to let the workspace taxonomy route it. Answers with "
        "drawer_id, a duplicate_warning when a very similar drawer exists, and lock_wait_ms."
    ),
    "memory_delete": (
        "Soft-delete one drawer by id, or with `source` every drawer of that source (a file "
        "ingested by mistake), audited; an admin purge removes them for good. `dry_run` with "
        "`source` only lists the drawer ids."
    ),
    "memory_taxonomy": (
        "List (action=list) or set (action=edit with room and keywords) the room keywords "
        "that route ingested text to rooms and boost matching rooms in search."
    ),
    "memory_wake_up": (
        "A bounded context refresh for the start of a session: identity text, the most "
        "important and recent drawers, and the governed memory map's header."
    ),
    "memory_recall_status": (
        "Recall store status: drawer counts per room, embedder, schema version, sizes."
    ),
}


def register_recall_tools(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=DESCRIBE["memory_search"], annotations=READ_ONLY)
    async def memory_search(
        query: Annotated[str, Field(description="what to look for, in plain words")],
        wing: Annotated[str, Field(description=WING_SEARCH)] = "",
        room: Annotated[str, Field(description="only drawers of this room")] = "",
        top_k: Annotated[int, Strict(), Field(description="number of hits (1-100)", ge=1, le=100)] = 10,
        workspace: Annotated[str, Field(description="same as wing")] = "",
        format: Annotated[str, Field(description="json, or aaak: add AAAK")] = "json",  # noqa: A002
        max_chars: Annotated[
            int | None,
            Strict(),
            Field(
                description=f"cut each hit's content to this many characters (1-{MAX_HIT_CHARS})",
                ge=1,
                le=MAX_HIT_CHARS,
            ),
        ] = None,
    ) -> CallToolResult:
        try:
            identity = current_caller()
            name = wing_or_workspace(wing, workspace) or None
            data: dict[str, Any] = {"query": query, "limit": top_k, "max_chars": max_chars}
            if room:
                data["room"] = [room]
            request = SearchRequest.from_json(data)
            answer = await recall.search_recall(hub, identity, name, request, format)
            if name is not None:
                note_workspace(name)
            # mempal's tool answers its hits as `results` (the JSON API calls them `hits`).
            return reply({k if k != "hits" else "results": v for k, v in answer.items()})
        except ProtocolError as error:
            raise tool_error(error) from None
        except Exception as error:  # as run_tool tells it: a store that cannot be used
            unusable = service.state_database_failure(error)
            if unusable is None:
                raise
            raise tool_error(unusable) from error

    @server.tool(description=DESCRIBE["memory_get_drawer"], annotations=READ_ONLY)
    async def memory_get_drawer(
        drawer_id: Annotated[str, Field(description="the drawer to read")],
        wing: Annotated[str, Field(description=WING_ONE)] = "",
        workspace: Annotated[str, Field(description="same as wing")] = "",
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            # A drawer the caller may not read is answered as one that does not exist.
            data = await recall.get_drawer(hub, identity, name, drawer_id)
            return {**data, "wing": name}

        return reply(
            await run_tool(hub, None, READ_SEARCH, wing_or_workspace(wing, workspace), work)
        )

    @server.tool(description=DESCRIBE["memory_ingest"], annotations=WRITE)
    async def memory_ingest(
        content: Annotated[str, Field(description="the text to store, verbatim")],
        wing: Annotated[str, Field(description=WING_ONE)] = "",
        room: Annotated[str, Field(description="room; leave out for taxonomy routing")] = "",
        source: Annotated[str, Field(description="citation: where the text comes from")] = "",
        dry_run: Annotated[bool, Strict(), Field(description="only answer the would-be drawer id")] = False,
        importance: Annotated[
            int | None,
            Strict(),
            Field(description="0-5 (default 0); wake-up shows high first"),
        ] = None,
        workspace: Annotated[str, Field(description="same as wing")] = "",
        readers: Annotated[
            list[str] | None,
            Field(description="roles that may read the drawer (default: everyone granted)"),
        ] = None,
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            if not content.strip():
                raise ProtocolError(
                    ErrorCode.INVALID, "'content' must not be empty", {"field": "content"}
                )
            request = IngestRequest.from_json(
                {
                    "content": content,
                    "room": room or None,
                    "source": source or None,
                    "dry_run": dry_run,
                    "importance": importance,
                    "readers": readers,
                }
            )
            summary = await recall.ingest(hub, identity, name, request, DOOR)
            return _ingest_answer(summary)

        return reply(
            await run_tool(hub, None, WRITE_RECALL, wing_or_workspace(wing, workspace), work)
        )

    @server.tool(description=DESCRIBE["memory_delete"], annotations=DESTRUCTIVE)
    async def memory_delete(
        drawer_id: Annotated[str, Field(description="the drawer to soft-delete")] = "",
        wing: Annotated[str, Field(description=WING_ONE)] = "",
        workspace: Annotated[str, Field(description="same as wing")] = "",
        source: Annotated[
            str,
            Field(description="instead of drawer_id: every drawer of this source (its citation)"),
        ] = "",
        dry_run: Annotated[
            bool, Strict(), Field(description="with source: only say which would be deleted")
        ] = False,
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            if bool(drawer_id) == bool(source):
                raise ProtocolError(
                    ErrorCode.INVALID,
                    "give exactly one of 'drawer_id' and 'source'",
                    {"field": "source" if source else "drawer_id"},
                )
            if source:
                request = SourceDeleteRequest.from_json({"source": source, "dry_run": dry_run})
                return await recall.delete_source(hub, identity, name, request, DOOR)
            if dry_run:
                raise ProtocolError(
                    ErrorCode.INVALID, "'dry_run' goes with 'source'", {"field": "dry_run"}
                )
            try:
                return await recall.delete(hub, identity, name, drawer_id, DOOR)
            except ProtocolError as error:
                if error.code is not ErrorCode.NOT_FOUND:
                    raise
                message = f"drawer {drawer_id} not found or already deleted"
                return {
                    "workspace": name,  # as a delete that took place answers
                    "drawer_id": drawer_id,
                    "deleted": False,
                    "message": message,
                }

        return reply(
            await run_tool(hub, None, WRITE_RECALL, wing_or_workspace(wing, workspace), work)
        )

    @server.tool(description=DESCRIBE["memory_taxonomy"], annotations=DESTRUCTIVE)
    async def memory_taxonomy(
        action: Annotated[str, Field(description="list or edit")] = "list",
        wing: Annotated[str, Field(description=WING_ONE)] = "",
        room: Annotated[str, Field(description="the room to edit")] = "",
        keywords: Annotated[list[str] | None, Field(description="keywords (edit)")] = None,
        workspace: Annotated[str, Field(description="same as wing")] = "",
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            if action not in ("list", "edit"):  # told once scope and grant are checked
                service.host_for(hub, identity, name)
                raise ProtocolError(ErrorCode.INVALID, "action must be list or edit")
            if action == "list":
                data = await recall.taxonomy(hub, identity, name)
            else:
                request = TaxonomyEditRequest.from_json({"room": room, "keywords": keywords})
                data = await recall.taxonomy_edit(hub, identity, name, request, DOOR)
            for entry in data.get("entries", ()):
                entry["wing"] = name  # mempal's entries name their wing
            return {"action": action, **data}

        scope = WRITE_RECALL if action == "edit" else READ_SUMMARY
        return reply(await run_tool(hub, None, scope, wing_or_workspace(wing, workspace), work))

    @server.tool(description=DESCRIBE["memory_wake_up"], annotations=READ_ONLY)
    async def memory_wake_up(
        wing: Annotated[str, Field(description=WING_ONE)] = "",
        limit: Annotated[int, Strict(), Field(description="drawers to show (1-50)", ge=1, le=50)] = 5,
        budget: Annotated[int, Strict(), Field(description="most characters of text", ge=200)] = 4000,
        workspace: Annotated[str, Field(description="same as wing")] = "",
        format: Annotated[str, Field(description="text, or aaak: one zettel")] = "text",  # noqa: A002
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            return await recall.wake_up(hub, identity, name, limit, budget, format, READ_WHOLE)

        return reply(
            await run_tool(hub, None, READ_SUMMARY, wing_or_workspace(wing, workspace), work)
        )

    @server.tool(description=DESCRIBE["memory_recall_status"], annotations=READ_ONLY)
    async def memory_recall_status(
        wing: Annotated[str, Field(description=WING_ONE)] = "",
        workspace: Annotated[str, Field(description="same as wing")] = "",
    ) -> CallToolResult:
        async def work(identity: Any, name: str) -> dict[str, Any]:
            data = await recall.status(hub, identity, name)
            # mempal's status fields beside memhub's: counts by `scopes` (wing and room),
            # the AAAK dialect and the memory protocol.
            data["scopes"] = [
                {"wing": name, "room": r["room"], "drawer_count": r["drawer_count"]}
                for r in data["rooms"]
            ]
            data["aaak_spec"] = dialect_text()
            data["memory_protocol"] = text.INSTRUCTIONS
            return data

        return reply(
            await run_tool(hub, None, READ_SUMMARY, wing_or_workspace(wing, workspace), work)
        )


def _ingest_failure(reason: str) -> ProtocolError:
    """A content ingest that failed, coded by its cause: a lock another ingest holds is a
    conflict (send it again later), an embedder or the daemon failing is not the text's
    fault (`workspace_unavailable`, `internal`); only the rest asks for another text."""
    if reason.startswith(recall.LOCK_FAILED):
        return ProtocolError(ErrorCode.CONFLICT, f"{reason}; send it again once that ingest ends")
    if reason.startswith(recall.EMBEDDER_FAILED):
        return ProtocolError(ErrorCode.WORKSPACE_UNAVAILABLE, reason)
    if reason.startswith(recall.INTERNAL_FAILED):
        return ProtocolError(ErrorCode.INTERNAL, reason)
    return ProtocolError(ErrorCode.INVALID, reason)


def _ingest_answer(summary: dict[str, Any]) -> dict[str, Any]:
    """mempal's ingest answer: the drawer id, a duplicate warning, lock_wait_ms; and
    memhub's `warnings` of the source when it has any (e.g. stored without a vector)."""
    source = summary["sources"][0]
    if source["status"] == "failed":
        raise _ingest_failure(source.get("reason") or "ingest failed")
    ids = source["drawer_ids"]
    answer: dict[str, Any] = {
        "drawer_id": ids[0] if ids else None,
        "status": source["status"],
        "room": source["room"],
    }
    if source["lock_wait_ms"] is not None:  # as mempal: none when no lock was taken
        answer["lock_wait_ms"] = source["lock_wait_ms"]
    if source.get("near_duplicates"):
        answer["duplicate_warning"] = source["near_duplicates"][0]
    if source.get("warnings"):
        answer["warnings"] = list(source["warnings"])
    if source["status"] in ("unchanged",) or source.get("deleted"):
        answer["message"] = "this content is already stored" + (
            " (as a deleted drawer)" if source.get("deleted") else ""
        )
    return answer
