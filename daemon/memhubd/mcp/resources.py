"""MCP resources (`memhub://...`, and memdsl's `memdsl://...` for a one-workspace caller)
and memdsl's two prompts.

Resources serve the same payloads as the tools, as JSON text, and raw `.mem` source
through `service.file_content` (which already cuts out declarations the caller may
not see). They must not read files or workspaces themselves.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.scopes import READ_SUMMARY
from memhubd import __version__, service
from memhubd.auth.identity import Identity
from memhubd.lang import as_read
from memhubd.mcp import payloads, text
from memhubd.mcp.caller import current_caller, describe_error, only_workspace
from memhubd.mcp.tools import served_tool_names
from memhubd.runtime.hub import Hub

JSON = "application/json"
MEM_SOURCE = "text/plain"
_NOT_FOUND = (ErrorCode.NOT_FOUND, ErrorCode.WORKSPACE_NOT_FOUND)


def dump(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, indent=2)


async def read_guarded(work: Callable[[Identity], Awaitable[str]]) -> str:
    """Run a resource read as the current caller; protocol errors become resource errors."""
    try:
        try:
            return await work(current_caller())
        except Exception as error:  # a state file that cannot be used, as the tools say it
            unusable = service.state_database_failure(error)
            if unusable is None:
                raise
            raise unusable from error
    except ProtocolError as error:
        if error.code in _NOT_FOUND:
            raise ResourceNotFoundError(describe_error(error)) from None
        raise ResourceError(describe_error(error)) from None


def register_resources(server: MCPServer, hub: Hub) -> None:
    _register_daemon(server, hub)
    _register_workspace(server, hub)
    _register_memdsl(server, hub)
    _register_prompts(server)


async def status_json(server: MCPServer, hub: Hub, identity: Identity) -> str:
    data = await service.status(hub, identity)
    return dump(payloads.status_payload(data, None, await served_tool_names(server)))


async def map_json(hub: Hub, identity: Identity, name: str) -> str:
    data, rendered = await service.memory_map(hub, identity, name)
    return dump(payloads.map_payload(data, rendered, name))


async def types_json(hub: Hub, identity: Identity, name: str) -> str:
    data, _rendered = await service.types(hub, identity, name)
    return dump(payloads.types_payload(data, name))


async def files_json(hub: Hub, identity: Identity, name: str, numbered: bool) -> str:
    data = await service.files(hub, identity, name)
    return dump(payloads.files_payload(data, name, numbered))


def _register_daemon(server: MCPServer, hub: Hub) -> None:
    @server.resource(
        "memhub://status",
        mime_type=JSON,
        description="Your identity on this server and the health of your workspaces.",
    )
    async def memhub_status() -> str:
        return await read_guarded(lambda who: status_json(server, hub, who))

    @server.resource(
        "memhub://workspaces", mime_type=JSON, description="The workspaces you may use."
    )
    async def memhub_workspaces() -> str:
        async def work(who: Identity) -> str:
            items = (await service.workspaces(hub, who))["workspaces"]
            return dump(payloads.workspaces_payload(items))

        return await read_guarded(work)


def _register_workspace(server: MCPServer, hub: Hub) -> None:
    @server.resource(
        "memhub://{workspace}/map",
        mime_type=JSON,
        description="Index of a workspace's active memory; the same as the memory_map tool.",
    )
    async def memhub_map(workspace: str) -> str:
        return await read_guarded(lambda who: map_json(hub, who, workspace))

    @server.resource(
        "memhub://{workspace}/types",
        mime_type=JSON,
        description="Memory types loaded in a workspace; the same as the memory_types tool.",
    )
    async def memhub_types(workspace: str) -> str:
        return await read_guarded(lambda who: types_json(hub, who, workspace))

    @server.resource(
        "memhub://{workspace}/files",
        mime_type=JSON,
        description="The .mem source files of a workspace, with their file ids.",
    )
    async def memhub_files(workspace: str) -> str:
        return await read_guarded(lambda who: files_json(hub, who, workspace, False))

    @server.resource(
        "memhub://{workspace}/file/{+file_id}",
        mime_type=MEM_SOURCE,
        description="Raw .mem source of one file (declarations hidden from you are cut out).",
    )
    async def memhub_file(workspace: str, file_id: str) -> str:
        async def work(who: Identity) -> str:
            data = await service.file_content(hub, who, workspace, file_id)
            return str(data["content"])

        return await read_guarded(work)


def _register_memdsl(server: MCPServer, hub: Hub) -> None:
    """memdsl's resource names, for a caller who may use exactly one workspace."""

    def one(work: Callable[[Identity, str], Awaitable[str]]) -> Callable[[], Awaitable[str]]:
        async def read() -> str:
            return await read_guarded(lambda who: work(who, only_workspace(hub, who, READ_SUMMARY)))

        return read

    async def status(who: Identity, name: str) -> str:
        return dump(await memdsl_status(hub, who, name, await served_tool_names(server)))

    static: list[tuple[str, str, Callable[[Identity, str], Awaitable[str]]]] = [
        ("status", "Status of your one workspace.", status),
        ("map", "Index of your workspace's active memory.", lambda w, n: map_json(hub, w, n)),
        ("types", "Memory types of your workspace.", lambda w, n: types_json(hub, w, n)),
        ("files", ".mem files by index.", lambda w, n: files_json(hub, w, n, True)),
    ]
    for key, description, work in static:
        server.resource(
            f"memdsl://{key}", name=f"memdsl_{key}", mime_type=JSON, description=description
        )(one(work))

    # `{+file_id}` (as memhub's) takes a path with its slashes: `memdsl://file/sub/a.mem`.
    @server.resource(
        "memdsl://file/{+file_id}", mime_type=MEM_SOURCE, description="Raw .mem source."
    )
    async def memdsl_file(file_id: str) -> str:
        async def work(who: Identity) -> str:
            name = only_workspace(hub, who, READ_SUMMARY)
            try:
                data = await service.file_content(hub, who, name, file_id)
            except ProtocolError as error:
                if error.code is not ErrorCode.NOT_FOUND:
                    raise
                # memdsl answers an unknown file id with its JSON error payload as the text.
                return dump(payloads.file_not_found(file_id, name))
            return memdsl_text(str(data["content"]))

        return await read_guarded(work)


def memdsl_text(content: str) -> str:
    """The source as memdsl reads it (text mode): CRLF and lone CR line ends become LF."""
    return as_read(content)


async def memdsl_status(
    hub: Hub, identity: Identity, name: str, tools: list[str] | None = None
) -> dict[str, Any]:
    """memdsl's status payload, counted over what the caller can see."""
    summary = await service.workspace(hub, identity, name)
    view = await service.awaited_view_for(hub, identity, name, READ_SUMMARY)
    ws = view.workspace
    kinds: dict[str, int] = {}
    for declaration in ws.declarations:
        kinds[declaration.kind] = kinds.get(declaration.kind, 0) + 1
    # Pending proposals the caller may see (one whose declaration is hidden is not counted).
    # Review files that cannot be read leave the count unknown, not the status.
    pending: int | None = None
    warnings: list[str] = []
    try:
        pending = (await service.list_proposals(hub, identity, name, "pending", limit=0))["total"]
    except Exception as error:
        unusable = (
            error if isinstance(error, ProtocolError) else service.state_database_failure(error)
        )
        if unusable is None or unusable.code is not ErrorCode.WORKSPACE_UNAVAILABLE:
            raise
        warnings.append(f"pending_proposals unknown: {unusable.message}")
    counts = {
        "pending_proposals": pending,
        "declarations": len(ws.declarations),
        "active": len(ws.active()),
        "kinds": kinds,
        "registered_types": ws.registry.names(),
        "schema_files": list(ws.registry.schema_files),
    }
    whoami = {"scopes": sorted(identity.scopes)}
    return payloads.memdsl_status_payload(summary, counts, whoami, __version__, tools, warnings)


def _register_prompts(server: MCPServer) -> None:
    @server.prompt(
        name="memdsl_task_brief",
        description="How to use this memory server while working on a task.",
    )
    def memdsl_task_brief(task: str = "") -> str:
        return text.task_brief(task)

    @server.prompt(
        name="memdsl_write_declaration",
        description="How to turn an observation into one lint-clean .mem declaration.",
    )
    def memdsl_write_declaration(fact: str = "") -> str:
        return text.write_declaration(fact)
