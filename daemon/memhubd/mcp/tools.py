"""The twelve MCP tools: memdsl's nine plus `memory_review_show`, `memory_status` and
`memory_workspaces`.

Each tool checks the caller's scope, picks the workspace, calls the same `service`
function as the JSON API and shapes the answer with `payloads`. Access errors become
tool errors; memdsl's `ok:false` answers (empty query, unknown id, a proposal refused
by validation) stay payloads with `isError=false`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Hashable
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, PlainValidator

from memhub_protocol import CheckRequest, ErrorCode, ProtocolError, QueryRequest
from memhub_protocol.models import ProposeRequest
from memhub_protocol.scopes import READ_SEARCH, READ_SUMMARY, WRITE_CANDIDATE
from memhubd import service
from memhubd.auth.identity import Identity
from memhubd.mcp import payloads, text
from memhubd.mcp.caller import (
    choose_workspace,
    current_caller,
    describe_error,
    note_workspace,
)
from memhubd.mcp.kept import Splice, current_splice, keepable, kept_texts
from memhubd.runtime.hub import Hub
from memhubd.service.encoding import AnswerTooLarge, Raw, dumps_text

# Recorded as the proposal's `client`, beside the token name as its proposer.
MCP_CLIENT = "mcp"

WorkspaceArg = Annotated[str, Field(description=text.WORKSPACE_ARGUMENT)]
Payload = dict[str, Any]
Outcome = TypeVar("Outcome")

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
# A write that takes away what no door gives back (a deleted drawer, a room's keywords
# replaced): clients may ask the user before it runs.
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


def reply(payload: Payload, *, error: bool = False) -> CallToolResult:
    """The payload as one JSON text content, as memdsl's tools answer.

    No structured copy beside it: an evidence pack can weigh 100 KB, and sending it
    twice (and validating it on both ends) took a query from 5 to 9 ms at 10k
    declarations. Compact separators for the same reason.
    """
    body = dumps_text(payload)  # an evidence pack comes as its already-encoded bytes
    return CallToolResult(content=[TextContent(type="text", text=body)], is_error=error)


def kept_reply(
    hub: Hub, splice: Splice, key: Hashable, build: Callable[[], Payload]
) -> CallToolResult:
    """`reply(build())`, its text kept under `key` and handed over to the fast path.

    For answers fully named by `key`: met again, the text is neither built nor escaped.
    A text too short or not plain ASCII is answered as `reply` does, and not kept.
    """
    texts = kept_texts(hub)
    kept = texts.get(key)
    if kept is None:
        body = dumps_text(build())
        kept = keepable(body)
        if kept is None:
            return CallToolResult(content=[TextContent(type="text", text=body)], is_error=False)
        texts.put(key, kept)
    marker = splice.hand_over(kept)
    return CallToolResult(content=[TextContent(type="text", text=marker)], is_error=False)


def tool_error(error: ProtocolError) -> ToolError:
    line = describe_error(error)
    # A review refusal's message starts with its status, which may be the code itself
    # (`too_many`, `conflict`): said once.
    prefix = f"{error.code.value}: "
    if line.startswith(prefix * 2):
        line = line.removeprefix(prefix)
    return ToolError(line)


async def run_tool(
    hub: Hub,
    schema: str | None,
    scope: str,
    requested: str,
    work: Callable[[Identity, str], Awaitable[Outcome]],
) -> Outcome | Payload:
    """Resolve caller and workspace, run `work`, and turn protocol errors into tool errors.

    With a memdsl payload `schema`, a workspace that has not loaded answers memdsl's
    `unavailable` payload; without one (memhub's own tools) it is a tool error too.
    """
    name = requested
    chosen = False
    try:
        identity = current_caller()
        name = choose_workspace(hub, identity, requested, scope)
        chosen = True
        note_workspace(name)
        try:
            return await work(identity, name)
        except Exception as error:
            unusable = service.state_database_failure(error)
            if unusable is None:
                raise
            raise unusable from error
    except ProtocolError as error:
        if schema is not None and error.code is ErrorCode.WORKSPACE_UNAVAILABLE:
            return payloads.unavailable(schema, error, name)
        if chosen and _memdsls(schema) and error.code in (ErrorCode.INVALID, ErrorCode.TOO_LARGE):
            # An argument the caller can fix (over a length or item limit memhub sets):
            # memdsl's tools answer what the caller can fix with `ok:false`. Which
            # workspace to use is an access question, answered as a tool error.
            message = f"{error.code.value}: {error.message}"
            return payloads.invalid(schema, message, text.NEXT_FIX_ARGUMENT, name)
        raise tool_error(error) from None


def pack_budget(body: bytes) -> dict[str, Any] | None:
    """The `budget` object an encoded evidence pack ends with (None without one).

    Read from the bytes (the last key of the pack, after every layer) rather than by
    decoding a pack that may weigh 100 KB.
    """
    at = body.rfind(b',"budget":{')
    if at < 0:
        return None
    try:
        found, _end = json.JSONDecoder().raw_decode(body[at + len(b',"budget":') :].decode())
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _memdsls(schema: str | None) -> bool:
    """Whether `schema` is one of memdsl's payloads (memhub's own tools answer an invalid
    request with a tool error)."""
    return schema is not None and schema.startswith("memdsl.")


async def served_tool_names(server: MCPServer) -> list[str]:
    """The tools this server serves: memdsl's nine first, then every other registered one."""
    names = [tool.name for tool in await server.list_tools()]
    first = [name for name in payloads.TOOL_NAMES if name in names]
    return first + [name for name in names if name not in first]


def register_tools(server: MCPServer, hub: Hub) -> None:
    _register_summaries(server, hub)
    _register_searches(server, hub)
    _register_proposals(server, hub)
    _register_daemon(server, hub)


def _register_summaries(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=text.DESCRIBE["memory_map"], annotations=READ_ONLY)
    async def memory_map(workspace: WorkspaceArg = "") -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            data, rendered = await service.memory_map(hub, identity, name)
            return payloads.map_payload(data, rendered, name)

        return reply(await run_tool(hub, payloads.MCP_MAP, READ_SUMMARY, workspace, work))

    @server.tool(description=text.DESCRIBE["memory_types"], annotations=READ_ONLY)
    async def memory_types(workspace: WorkspaceArg = "") -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            data, _rendered = await service.types(hub, identity, name)
            return payloads.types_payload(data, name)

        return reply(await run_tool(hub, payloads.MCP_TYPES, READ_SUMMARY, workspace, work))

    @server.tool(description=text.DESCRIBE["memory_list"], annotations=READ_ONLY)
    async def memory_list(
        kind: Annotated[str, Field(description="legacy name of memory_type")] = "",
        memory_type: Annotated[str, Field(description="only declarations of this type")] = "",
        subject: Annotated[str, Field(description="only declarations about this symbol")] = "",
        include_inactive: bool = False,
        limit: int = 100,
        workspace: WorkspaceArg = "",
    ) -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            total, items = await service.reads.list_encoded(
                hub,
                identity,
                name,
                memory_type=memory_type or kind,
                subject=subject,
                include_inactive=include_inactive,
                limit=payloads.clamp(limit, payloads.LIST_LIMIT),
            )
            # The items come as their already-encoded bytes, spliced into the payload.
            return payloads.list_payload({"total": total, "items": Raw(items)}, name)

        return reply(await run_tool(hub, payloads.MCP_LIST, READ_SUMMARY, workspace, work))

    @server.tool(description=text.DESCRIBE["memory_lint"], annotations=READ_ONLY)
    async def memory_lint(workspace: WorkspaceArg = "") -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            data, _rendered = await service.lint(hub, identity, name)
            return payloads.lint_payload(data, name)

        return reply(await run_tool(hub, payloads.MCP_LINT, READ_SUMMARY, workspace, work))


def _as_sent(value: object) -> object:
    return value


# An integer argument the JSON API's request model checks, whatever was sent: its
# schema says integer, and a boolean, float or text is refused as `-1` is.
AsSent = Annotated[int | None, PlainValidator(_as_sent, json_schema_input_type=int | None)]


def _register_searches(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=text.DESCRIBE["memory_query"], annotations=READ_ONLY)
    async def memory_query(
        query: Annotated[str, Field(description="the question or task, in key nouns")],
        kinds: list[str] | None = None,
        types: Annotated[list[str] | None, Field(description="only these memory types")] = None,
        subject: Annotated[str, Field(description="only this subject symbol")] = "",
        limit: int = 8,
        workspace: WorkspaceArg = "",
        # memhub's own arguments, read by the JSON API's request (memdsl's above keep
        # memdsl's lax reading): a wrong value is refused in its words, as `-1` is.
        max_bytes: Annotated[
            AsSent, Field(description="cut MUST to fit this many bytes of pack JSON")
        ] = None,
        max_must: Annotated[AsSent, Field(description="show at most this many MUST")] = None,
    ) -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload | CallToolResult:
            text_ = query.strip()
            if not text_:
                return payloads.invalid(
                    payloads.MCP_QUERY, "query_required", text.NEXT_QUERY_REQUIRED, name
                )
            request = QueryRequest.from_json(
                {
                    "query": text_,
                    "kinds": list(kinds) if kinds else None,
                    "types": list(types) if types else None,
                    "subject": subject or None,
                    "limit": payloads.clamp(limit, payloads.QUERY_LIMIT),
                    "max_bytes": max_bytes,
                    "max_must": max_must,
                }
            )
            # The payload holds the pack's JSON and its text: either one over the limit
            # is refused before the payload is built (the text's before it is joined).
            ceiling = int(hub.limits.max_result_bytes)
            try:
                answer, view = await service.query(
                    hub, identity, name, request, as_text=True, max_result_bytes=ceiling
                )
            except AnswerTooLarge as error:
                return payloads.too_large(
                    "memory_query", error.size, ceiling, at_least=True, workspace=name
                )
            known = len(answer.body) + len(answer.text)
            if known > ceiling:
                return payloads.too_large(
                    "memory_query", known, ceiling, at_least=True, workspace=name
                )
            facts = answer.facts()
            if request.max_bytes is not None or request.max_must is not None:
                facts["budget"] = pack_budget(answer.body)
            vocabulary = None
            if not payloads.is_match(facts):
                vocabulary = await service.vocabulary(view)

            def payload() -> Payload:
                built = payloads.query_payload(facts, answer.text, name, vocabulary)
                built["evidence_pack"] = Raw(answer.body)
                return built

            splice = current_splice()
            if splice is not None and vocabulary is None:
                # The answer key names the snapshot, the view and the request: with the
                # workspace, all that a matched payload is made of.
                return kept_reply(hub, splice, (answer.key, name), payload)
            return payload()

        outcome = await run_tool(hub, payloads.MCP_QUERY, READ_SEARCH, workspace, work)
        return outcome if isinstance(outcome, CallToolResult) else reply(outcome)

    @server.tool(description=text.DESCRIBE["memory_check"], annotations=READ_ONLY)
    async def memory_check(
        task: Annotated[str, Field(description="what is being attempted")],
        candidate: Annotated[str, Field(description="the action, command or draft to check")],
        subject: str = "",
        scope: str = "",
        exceptions: Annotated[
            list[str] | None, Field(description="exceptions you assert apply, by name")
        ] = None,
        workspace: WorkspaceArg = "",
    ) -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            task_, candidate_ = task.strip(), candidate.strip()
            if not task_ or not candidate_:
                return payloads.invalid(
                    payloads.MCP_CHECK, "task_and_candidate_required", text.NEXT_CHECK_INPUT, name
                )
            request = CheckRequest.from_json(
                {
                    "task": task_,
                    "candidate": candidate_,
                    "subject": subject or None,
                    "scope": scope or None,
                    "exceptions": list(exceptions or []),
                }
            )
            raw, findings, rendered = await service.reads.check_encoded(
                hub, identity, name, request
            )
            payload = payloads.check_payload(findings, rendered, name)
            payload["compliance_pack"] = Raw(raw)
            return payload

        return reply(await run_tool(hub, payloads.MCP_CHECK, READ_SEARCH, workspace, work))

    @server.tool(description=text.DESCRIBE["memory_explain"], annotations=READ_ONLY)
    async def memory_explain(
        id: Annotated[str, Field(description="declaration id: type:name or the bare name")],
        workspace: WorkspaceArg = "",
    ) -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            ref = id.strip()
            if not ref:
                return payloads.invalid(
                    payloads.MCP_EXPLAIN, "id_required", text.NEXT_ID_REQUIRED, name
                )
            try:
                data = await service.explain(hub, identity, name, ref)
            except ProtocolError as error:
                if error.code is ErrorCode.NOT_FOUND:
                    return payloads.explain_not_found(ref, name)
                raise
            return payloads.explain_payload(data, name)

        return reply(await run_tool(hub, payloads.MCP_EXPLAIN, READ_SEARCH, workspace, work))


def _register_proposals(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=text.DESCRIBE["memory_propose"], annotations=WRITE)
    async def memory_propose(
        source: Annotated[str, Field(description="exactly one .mem declaration")],
        reason: str = "",
        workspace: WorkspaceArg = "",
    ) -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            request = ProposeRequest(source=source, reason=reason, client=MCP_CLIENT)
            try:
                data = await service.propose(hub, identity, name, request)
            except ProtocolError as error:
                if error.code not in (ErrorCode.INVALID, ErrorCode.TOO_LARGE):
                    raise
                return payloads.propose_invalid(error, name)
            return payloads.propose_payload(data, name)

        # A refusal by validation is memdsl's `ok:false` payload, not a tool error.
        return reply(await run_tool(hub, payloads.MCP_PROPOSE, WRITE_CANDIDATE, workspace, work))

    @server.tool(description=text.DESCRIBE["memory_review_list"], annotations=READ_ONLY)
    async def memory_review_list(
        status: Annotated[str, Field(description="pending, approved, rejected or all")] = (
            "pending"
        ),
        limit: Annotated[int, Field(description="at most this many (1-200)")] = 50,
        workspace: WorkspaceArg = "",
        # memhub's own, read as the JSON API reads it (memdsl's above keep memdsl's lax
        # reading): a wrong value is refused in its words.
        offset: Annotated[
            AsSent, Field(description="skip this many, oldest first (the newest are last)")
        ] = None,
    ) -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            await service.workspace(hub, identity, name)
            if status not in payloads.REVIEW_STATUSES:
                return payloads.review_invalid_status(name)
            clamped = max(1, min(200, limit))
            data = await service.list_proposals(
                hub, identity, name, status, limit=clamped, offset=offset
            )
            return payloads.review_list_payload(data, name, clamped)

        return reply(await run_tool(hub, payloads.MCP_REVIEW_LIST, READ_SUMMARY, workspace, work))

    @server.tool(description=text.DESCRIBE["memory_review_show"], annotations=READ_ONLY)
    async def memory_review_show(
        id: Annotated[str, Field(description="proposal id (p-YYYYMMDD-HHMMSS-xxxxxx)")],
        workspace: WorkspaceArg = "",
    ) -> CallToolResult:
        async def work(identity: Identity, name: str) -> Payload:
            if not id.strip():
                raise ProtocolError(ErrorCode.INVALID, "'id' must not be empty", {"field": "id"})
            data = await service.show_proposal(hub, identity, name, id.strip())
            return {**data, "next_actions": [text.NEXT_REVIEW]}

        return reply(await run_tool(hub, None, READ_SUMMARY, workspace, work))


def _register_daemon(server: MCPServer, hub: Hub) -> None:
    @server.tool(description=text.DESCRIBE["memory_status"], annotations=READ_ONLY)
    async def memory_status(
        workspace: Annotated[str, Field(description="narrow the answer to this workspace")] = "",
    ) -> CallToolResult:
        try:
            identity = current_caller()
            data = await service.status(hub, identity)
            if workspace.strip():
                await service.workspace(hub, identity, workspace.strip())
                note_workspace(workspace.strip())
            tools = await served_tool_names(server)
            payload = payloads.status_payload(data, workspace.strip() or None, tools)
            # The server's instructions again, for clients that do not show them.
            payload["memory_protocol"] = text.INSTRUCTIONS
            return reply(payload)
        except ProtocolError as error:
            raise tool_error(error) from None

    @server.tool(description=text.DESCRIBE["memory_workspaces"], annotations=READ_ONLY)
    async def memory_workspaces(
        workspace: Annotated[str, Field(description="describe only this workspace")] = "",
    ) -> CallToolResult:
        try:
            identity = current_caller()
            if workspace.strip():
                items = [await service.workspace(hub, identity, workspace.strip())]
            else:
                items = (await service.workspaces(hub, identity))["workspaces"]
            return reply(payloads.workspaces_payload(items))
        except ProtocolError as error:
            raise tool_error(error) from None
