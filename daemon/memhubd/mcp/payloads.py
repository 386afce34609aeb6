"""MCP payloads in memdsl's shapes (`memdsl.mcp.*.v1`), built from what `service` returns.

Pure functions over plain dicts: they add `ok`, `status`, `boundary`, `next_actions`
and the workspace name. They must not compute memory themselves or check access.
"""

from __future__ import annotations

from typing import Any

from memhub_protocol import ProtocolError
from memhubd.mcp import text

MCP_MAP = "memdsl.mcp.map.v1"
MCP_QUERY = "memdsl.mcp.query.v1"
MCP_CHECK = "memdsl.mcp.check.v1"
MCP_TYPES = "memdsl.mcp.types.v1"
MCP_EXPLAIN = "memdsl.mcp.explain.v1"
MCP_LIST = "memdsl.mcp.list.v1"
MCP_LINT = "memdsl.mcp.lint.v1"
MCP_PROPOSE = "memdsl.mcp.propose.v1"
MCP_REVIEW_LIST = "memdsl.mcp.review_list.v1"
MCP_FILES = "memdsl.mcp.files.v1"
MCP_FILE = "memdsl.mcp.file.v1"
MCP_STATUS = "memdsl.mcp.status.v1"
MHUB_STATUS = "memhub.mcp.status.v1"
MHUB_WORKSPACES = "memhub.mcp.workspaces.v1"
MHUB_ERROR = "memhub.mcp.error.v1"

# memdsl's nine tools, in memdsl's order: they answer as memdsl's server does.
MEMDSL_TOOL_NAMES = (
    "memory_map",
    "memory_query",
    "memory_check",
    "memory_types",
    "memory_explain",
    "memory_list",
    "memory_lint",
    "memory_propose",
    "memory_review_list",
)
TOOL_NAMES = (*MEMDSL_TOOL_NAMES, "memory_status", "memory_workspaces")
TOOL_SCHEMAS = {
    "memory_map": MCP_MAP,
    "memory_query": MCP_QUERY,
    "memory_check": MCP_CHECK,
    "memory_types": MCP_TYPES,
    "memory_explain": MCP_EXPLAIN,
    "memory_list": MCP_LIST,
    "memory_lint": MCP_LINT,
    "memory_propose": MCP_PROPOSE,
    "memory_review_list": MCP_REVIEW_LIST,
    "memory_status": MHUB_STATUS,
    "memory_workspaces": MHUB_WORKSPACES,
}
RESOURCE_URIS = ("memhub://status", "memhub://workspaces")
MEMDSL_RESOURCE_URIS = ("memdsl://status", "memdsl://map", "memdsl://types", "memdsl://files")
REVIEW_STATUSES = ("pending", "approved", "rejected", "all")

QUERY_LIMIT = (1, 50, 8)
LIST_LIMIT = (1, 500, 100)


def clamp(value: Any, bounds: tuple[int, int, int]) -> int:
    """memdsl's clamping: out-of-range values are pulled in, unparsable ones get the default."""
    low, high, default = bounds
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = default
    return max(low, min(high, number))


def _head(schema: str, status: str, workspace: str | None, ok: bool = True) -> dict[str, Any]:
    head: dict[str, Any] = {"ok": ok, "schema_version": schema, "status": status}
    if workspace is not None:
        head["workspace"] = workspace
    return head


def invalid(schema: str, error: str, hint: str, workspace: str | None = None) -> dict[str, Any]:
    """memdsl's answer to a missing argument: an `ok:false` payload, not a tool error."""
    return {**_head(schema, "invalid", workspace, ok=False), "error": error, "next_actions": [hint]}


def unavailable(schema: str, error: ProtocolError, workspace: str) -> dict[str, Any]:
    """A workspace that never loaded, in the shape memdsl uses for a workspace that fails to load."""
    return {
        **_head(schema, "unavailable", workspace, ok=False),
        "error": error.message,
        "next_actions": [_next_unavailable(error)],
    }


def _next_unavailable(error: ProtocolError) -> str:
    """What to do, by cause: lint fixes a workspace whose sources do not load; the
    workspace's or the daemon's files that cannot be read or written need their
    permissions or disk fixed; a search index being built or a daemon stopping, a retry."""
    if error.detail.get("problem"):
        return text.NEXT_UNAVAILABLE
    if "problem" in error.detail or error.detail.get("status") in (
        "index_building",
        "stopping",
        "closed",
    ):
        return text.NEXT_RETRY  # still loading, or soon over
    return text.NEXT_STATE_UNAVAILABLE


def too_large(
    tool: str, size: int, limit: int, *, at_least: bool = False, workspace: str | None = None
) -> dict[str, Any]:
    """An answer over the limit, as memdsl answers a request it cannot serve: `ok:false`.

    `at_least`: refused before the whole answer was built, from the size of a part of it.
    `workspace`: the one the refused answer was about, as every answer about one names it.
    """
    measure = f"at least {size}" if at_least else str(size)
    return {
        **_head(TOOL_SCHEMAS.get(tool, MHUB_ERROR), "too_large", workspace, ok=False),
        "error": "result_too_large",
        "message": (
            f"the answer of {tool} is {measure} bytes, larger than {limit} bytes "
            "(limits.max_result_bytes)"
        ),
        "limit": limit,
        "size": size,
        "next_actions": [text.NEXT_TOO_LARGE],
    }


def map_payload(data: dict[str, Any], rendered: str, workspace: str) -> dict[str, Any]:
    return {
        **_head(MCP_MAP, "ok", workspace),
        "declarations": data["declarations"],
        "modules": data["modules"],
        "vocabulary": data["vocabulary"],
        "rendered_text": rendered,
        "boundary": text.MAP_BOUNDARY,
        "next_actions": list(text.NEXT_MAP),
    }


def types_payload(data: dict[str, Any], workspace: str) -> dict[str, Any]:
    return {
        **_head(MCP_TYPES, "ok", workspace),
        "total": len(data["types"]),
        "schema_files": data["schema_files"],
        "types": data["types"],
        "next_actions": [text.NEXT_TYPES],
    }


def is_match(pack: dict[str, Any]) -> bool:
    """memdsl counts a query as answered when MUST, SHOULD or CONTEXT holds anything.

    MUST as it was before a `budget` cut it: rules left out by the caller's `max_must`
    or `max_bytes` still apply, and the answer says so rather than "no match".
    """
    before_cut = (pack.get("budget") or {}).get("must_total", 0)
    return bool(pack.get("must") or before_cut or pack.get("should") or pack.get("context"))


def omitted_must(pack: dict[str, Any]) -> int:
    """How many MUST rules the pack's `budget` left out (0 without a budget)."""
    return int((pack.get("budget") or {}).get("must_omitted", 0) or 0)


def query_payload(
    pack: dict[str, Any],
    rendered: str,
    workspace: str,
    vocabulary: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`vocabulary` is required (and only used) when the pack has no match.

    A pack whose `budget` left MUST rules out is a match (they apply): its next actions
    carry the budget's `next_step`, and its text does not call the emptied MUST layer
    unconstrained.
    """
    matched = is_match(pack)
    actions = [text.NEXT_EXPLAIN_BEFORE_CITING] if matched else []
    omitted = omitted_must(pack)
    if omitted:
        actions.append(str(pack["budget"]["next_step"]))
        if not pack.get("must"):
            rendered = text.must_left_out(rendered)
    if pack.get("missing"):
        actions.append(text.NEXT_MISSING)
    payload = {
        **_head(MCP_QUERY, "ok" if matched else "no_match", workspace),
        "evidence_pack": pack,
        "rendered_text": rendered,
        "boundary": text.QUERY_BOUNDARY,
        "next_actions": actions,
    }
    if not matched:
        excluded = pack.get("search_trace", {}).get("excluded_by_filters_total", 0)
        if excluded:
            actions.append(text.next_excluded(excluded))
        actions.append(text.NEXT_NO_MATCH)
        payload["vocabulary"] = vocabulary if vocabulary is not None else {}
    return payload


def check_payload(pack: dict[str, Any], rendered: str, workspace: str) -> dict[str, Any]:
    verdict = str(pack.get("verdict", ""))
    return {
        **_head(MCP_CHECK, verdict, workspace),
        "compliance_pack": pack,
        "rendered_text": rendered,
        "boundary": text.CHECK_BOUNDARY,
        "next_actions": [text.NEXT_CHECK.get(verdict, text.NEXT_CHECK["needs_review"])],
    }


def explain_payload(data: dict[str, Any], workspace: str) -> dict[str, Any]:
    declaration = data["declaration"]
    if "schema_version" in declaration and "declaration" in declaration:
        # Given a whole explain payload rather than the declaration: take the declaration.
        declaration = declaration["declaration"]
    return {
        **_head(MCP_EXPLAIN, "ok", workspace),
        "declaration": declaration,
        "rendered_text": data["rendered_text"],
        "boundary": text.EXPLAIN_BOUNDARY,
    }


def explain_not_found(ref: str, workspace: str) -> dict[str, Any]:
    return {
        **_head(MCP_EXPLAIN, "not_found", workspace, ok=False),
        "id": ref,
        "next_actions": [text.NEXT_BROWSE_IDS],
    }


def list_payload(data: dict[str, Any], workspace: str) -> dict[str, Any]:
    return {
        **_head(MCP_LIST, "ok", workspace),
        "total": data["total"],
        "items": data["items"],
        "next_actions": [text.NEXT_EXPLAIN_ITEM],
    }


def lint_payload(data: dict[str, Any], workspace: str) -> dict[str, Any]:
    ok = bool(data["ok"])
    return {
        **_head(MCP_LINT, "ok" if ok else "errors", workspace, ok=ok),
        "declarations": data["declarations"],
        "errors": data["errors"],
        "warnings": data["warnings"],
        "diagnostics": data["diagnostics"],
        "source_problems": data["source_problems"],
        "boundary": text.LINT_BOUNDARY,
    }


def propose_payload(data: dict[str, Any], workspace: str) -> dict[str, Any]:
    """memdsl's success answer: pending review, with how a person decides it."""
    proposal_id = data["proposal_id"]
    return {
        **_head(MCP_PROPOSE, "pending_review", workspace),
        "proposal_id": proposal_id,
        "declaration_id": data.get("declaration_id"),
        "path": data.get("path"),
        "warnings": data.get("warnings", []),
        "boundary": text.PROPOSE_BOUNDARY,
        "next_actions": [text.next_propose(workspace, proposal_id)],
    }


def propose_invalid(error: Any, workspace: str) -> dict[str, Any]:
    """memdsl's refusal: what failed validation, and that nothing was stored.

    memhub refuses an existing id with `declaration_exists` before memdsl's lint
    findings; memdsl reports it as the lint's `duplicate_declaration_id`. The payload
    keeps memdsl's codes and adds memhub's refusal text (how to correct the existing
    declaration) as a second next action.
    """
    detail = error.detail or {}
    errors = detail.get("errors") or [{"code": error.code.value, "message": error.message}]
    actions = [text.NEXT_PROPOSE_INVALID]
    exists = [e for e in errors if e.get("code") == "declaration_exists"]
    if exists:
        actions.append(str(exists[0]["message"]))
        errors = [e for e in errors if e.get("code") != "declaration_exists"]
        if not any(e.get("code") == "duplicate_declaration_id" for e in errors):
            # The lint cannot see the declaration holding the id (hidden from the caller):
            # memdsl's code, memhub's message, which does not say where it is.
            errors = [{**exists[0], "code": "duplicate_declaration_id"}, *errors]
    return {
        **_head(MCP_PROPOSE, "invalid", workspace, ok=False),
        "errors": errors,
        "warnings": detail.get("warnings", []),
        "boundary": text.PROPOSE_BOUNDARY,
        "next_actions": actions,
    }


def review_list_payload(data: dict[str, Any], workspace: str, limit: int = 50) -> dict[str, Any]:
    """memdsl's answer; asked with an `offset` (memhub's), also where the page starts and
    where the next one does, with the call that reads it (`limit`: the page's size)."""
    payload = {
        **_head(MCP_REVIEW_LIST, "ok", workspace),
        "filter": data["filter"],
        "total": data["total"],
        "proposals": data["proposals"],
        "hidden_by_access_policy": data.get("hidden_by_access_policy", 0),
        "boundary": text.PROPOSE_BOUNDARY,
        "next_actions": [text.NEXT_REVIEW],
    }
    if "offset" in data:
        following = data["next_offset"]
        payload["offset"] = data["offset"]
        payload["next_offset"] = following
        if following is not None:
            more = data["total"] - following
            hint = text.next_review_page(more, following, data["filter"], limit, workspace)
            payload["next_actions"].append(hint)
    return payload


def review_invalid_status(workspace: str) -> dict[str, Any]:
    return {
        **_head(MCP_REVIEW_LIST, "invalid", workspace, ok=False),
        "error": "status must be pending, approved, rejected, or all",
    }


def status_payload(
    data: dict[str, Any], workspace: str | None = None, tools: list[str] | None = None
) -> dict[str, Any]:
    """memhub's own status: the caller's identity and the workspaces it may use.

    `tools`: the names the server serves (default: memdsl's nine and memhub's two).
    """
    workspaces = data["workspaces"]
    if workspace is not None:
        workspaces = [w for w in workspaces if w["name"] == workspace]
    return {
        **_head(MHUB_STATUS, "ok", workspace),
        "server": data["server"],
        "version": data["version"],
        "uptime_s": data["uptime_s"],
        "identity": data["identity"],
        "workspaces": workspaces,
        "tools": list(tools or TOOL_NAMES),
        "resources": list(RESOURCE_URIS),
        "boundary": text.STATUS_BOUNDARY,
        "next_actions": [text.NEXT_STATUS],
    }


def workspaces_payload(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        **_head(MHUB_WORKSPACES, "ok", None),
        "total": len(items),
        "workspaces": items,
        "next_actions": [text.NEXT_STATUS],
    }


def memdsl_status_payload(
    summary: dict[str, Any],
    counts: dict[str, Any],
    identity: dict[str, Any],
    version: str,
    tools: list[str] | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """memdsl's `memdsl://status` for the caller's one workspace.

    `counts` holds what the caller can see: `declarations`, `active`, `kinds`
    (type -> count), `registered_types`, `schema_files` and `pending_proposals`
    (None when the review files cannot be read: `warnings` say why, after memdsl's keys).
    """
    kinds = dict(sorted(counts["kinds"].items()))
    payload = {
        "ok": True,
        "schema_version": MCP_STATUS,
        "server": "memhub",
        "version": version,
        "workspace": summary["name"],
        "workspace_paths": [summary["root"]],
        "files": summary["files"],
        "declarations": counts["declarations"],
        "active_declarations": counts["active"],
        "kinds": kinds,
        "types": dict(kinds),
        "registered_types": sorted(counts["registered_types"]),
        "schema_files": list(counts["schema_files"]),
        "scopes": sorted(identity["scopes"]),
        "resources": list(MEMDSL_RESOURCE_URIS),
        "tools": list(tools or TOOL_NAMES),
        "pending_proposals": counts["pending_proposals"],
        "boundary": text.STATUS_BOUNDARY,
    }
    if warnings:
        payload["warnings"] = list(warnings)
    return payload


def files_payload(data: dict[str, Any], workspace: str, numbered: bool) -> dict[str, Any]:
    """`numbered` gives memdsl's index file ids ("0", "1", ...) instead of relative paths."""
    files = [
        {**item, "file_id": str(index)} if numbered else dict(item)
        for index, item in enumerate(data["files"])
    ]
    hint = text.NEXT_MEMDSL_FILES if numbered else text.NEXT_FILES
    return {**_head(MCP_FILES, "ok", workspace), "files": files, "next_actions": [hint]}


def file_not_found(file_id: str, workspace: str) -> dict[str, Any]:
    return {
        **_head(MCP_FILE, "not_found", workspace, ok=False),
        "file_id": file_id,
        "next_actions": [text.NEXT_FILE_NOT_FOUND],
    }
