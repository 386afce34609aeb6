"""THE operations of memhub, as async functions over the hub and a caller.

Every door (JSON API, MCP, ...) calls these and only these. They check scopes
and workspace grants, pick the caller's view of a snapshot (access policies
applied), run the engine in a worker thread and return plain data. They know
nothing of HTTP or MCP.
"""

from __future__ import annotations

import os
import time
import weakref
from dataclasses import dataclass
from typing import Any

import anyio
import structlog

from memhub_protocol import (
    FILE_SCHEMA,
    FILES_SCHEMA,
    LINT_SCHEMA,
    LIST_SCHEMA,
    MAP_SCHEMA,
    STATUS_SCHEMA,
    TYPES_SCHEMA,
    WORKSPACES_SCHEMA,
    CheckRequest,
    ErrorCode,
    ProtocolError,
    QueryRequest,
)
from memhub_protocol.models import (
    DECISION_SCHEMA,
    PROPOSAL_SCHEMA,
    PROPOSALS_SCHEMA,
    PROPOSE_SCHEMA,
    ProposeRequest,
)
from memhub_protocol.scopes import READ_SEARCH, READ_SUMMARY, REVIEW, WRITE_CANDIDATE
from memhubd import __version__
from memhubd.auth.identity import Identity
from memhubd.model import Workspace
from memhubd.review import LIST_STATUSES, Proposal, ReviewStore, is_proposal_id
from memhubd.runtime.hub import Hub, WorkspaceHost
from memhubd.runtime.snapshot import Snapshot, SourceFile

STARTED_AT = time.time()
_ENGINE = anyio.CapacityLimiter(4)
LIST_CLAIM_CHARS = 200


@dataclass(frozen=True, slots=True)
class View:
    """What one caller may see of one snapshot."""

    snapshot: Snapshot
    workspace: Workspace  # the snapshot's workspace minus declarations hidden from the caller
    hidden: frozenset[str]  # ids of hidden declarations (never sent to the caller)


# --- access -----------------------------------------------------------------------------


def require_scope(identity: Identity, scope: str) -> None:
    if not identity.has_scope(scope):
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"scope '{scope}' is required",
            {"required_scope": scope, "token": identity.name},
        )


def visible_workspaces(hub: Hub, identity: Identity) -> list[str]:
    return [name for name in hub.names() if identity.can_use(name)]


def _host(hub: Hub, identity: Identity, name: str) -> WorkspaceHost:
    host = hub.get(name)
    allowed = visible_workspaces(hub, identity)
    if host is None or not identity.can_use(name):
        code = ErrorCode.WORKSPACE_NOT_FOUND if host is None else ErrorCode.FORBIDDEN
        message = (
            f"unknown workspace '{name}'"
            if host is None
            else f"token '{identity.name}' has no grant for workspace '{name}'"
        )
        raise ProtocolError(code, message, {"workspace": name, "available": allowed})
    return host


def _snapshot(host: WorkspaceHost) -> Snapshot:
    snapshot = host.snapshot
    if snapshot is None:
        problem = host.unavailable
        raise ProtocolError(
            ErrorCode.WORKSPACE_UNAVAILABLE,
            f"workspace '{host.name}' has not loaded: "
            + (problem.message if problem else "still loading"),
            {"workspace": host.name, "problem": problem.as_dict() if problem else None},
        )
    return snapshot


_VIEWS: weakref.WeakKeyDictionary[Snapshot, dict[frozenset[str], View]] = (
    weakref.WeakKeyDictionary()
)


def _build_view(snapshot: Snapshot, identity: Identity) -> View:
    from memhubd.auth.access import is_visible

    ws = snapshot.workspace
    if identity.sees_everything:
        return View(snapshot, ws, frozenset())
    kept = [d for d in ws.declarations if is_visible(d, identity)]
    if len(kept) == len(ws.declarations):
        return View(snapshot, ws, frozenset())
    hidden = frozenset(d.id for d in ws.declarations if not is_visible(d, identity))
    view = Workspace(declarations=kept, files=list(ws.files), registry=ws.registry)
    return View(snapshot, view, hidden)


def view_for(hub: Hub, identity: Identity, name: str, scope: str) -> View:
    """The caller's view of a workspace, after the scope and grant checks."""
    require_scope(identity, scope)
    snapshot = _snapshot(_host(hub, identity, name))
    per_snapshot = _VIEWS.setdefault(snapshot, {})
    key = frozenset({"*"}) if identity.sees_everything else identity.roles
    view = per_snapshot.get(key)
    if view is None:
        view = per_snapshot[key] = _build_view(snapshot, identity)
    return view


def _check_length(hub: Hub, field: str, text: str) -> None:
    limit = hub.limits.max_query_chars
    if len(text) > limit:
        raise ProtocolError(
            ErrorCode.TOO_LARGE, f"'{field}' is longer than {limit} characters", {"field": field}
        )


async def _run(function: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(function, *args, limiter=_ENGINE)


# --- status -----------------------------------------------------------------------------


def workspace_summary(host: WorkspaceHost) -> dict[str, Any]:
    snapshot = host.snapshot
    if snapshot is None:
        return {
            "name": host.name,
            "root": host.root,
            "health": "unavailable",
            "generation": 0,
            "declarations": 0,
            "files": 0,
            "problems": [host.unavailable.as_dict()] if host.unavailable else [],
            "last_reload_at": host.last_reload_at,
        }
    return {
        "name": host.name,
        "root": host.root,
        "health": snapshot.health,
        "generation": snapshot.generation,
        "declarations": len(snapshot.workspace.declarations),
        "files": len(snapshot.files),
        "problems": [p.as_dict() for p in snapshot.problems],
        "last_reload_at": host.last_reload_at,
    }


async def status(hub: Hub, identity: Identity) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    names = visible_workspaces(hub, identity)
    return {
        "schema_version": STATUS_SCHEMA,
        "server": "memhub",
        "version": __version__,
        "uptime_s": round(time.time() - STARTED_AT, 3),
        "identity": {
            "name": identity.name,
            "scopes": sorted(identity.scopes),
            "workspaces": sorted(identity.workspaces),
            "roles": sorted(identity.roles),
            "local": identity.local,
        },
        "workspaces": [workspace_summary(hub.hosts[name]) for name in names],
    }


async def workspaces(hub: Hub, identity: Identity) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    names = visible_workspaces(hub, identity)
    return {
        "schema_version": WORKSPACES_SCHEMA,
        "workspaces": [workspace_summary(hub.hosts[name]) for name in names],
    }


async def workspace(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    return workspace_summary(_host(hub, identity, name))


# --- reads ------------------------------------------------------------------------------


async def memory_map(hub: Hub, identity: Identity, name: str) -> tuple[dict[str, Any], str]:
    from memhubd.query import build_memory_map, render_memory_map_text

    view = view_for(hub, identity, name, READ_SUMMARY)
    data = await _run(build_memory_map, view.workspace)
    return {"schema_version": MAP_SCHEMA, **data}, render_memory_map_text(data)


async def types(hub: Hub, identity: Identity, name: str) -> tuple[dict[str, Any], str]:
    view = view_for(hub, identity, name, READ_SUMMARY)
    registry = view.workspace.registry
    items = [descriptor.as_dict() for descriptor in registry.descriptors()]
    lines = []
    for item in items:
        required = ",".join(item["required_fields"]) or "-"
        capabilities = ",".join(item["capabilities"]) or "-"
        lines.append(
            f"{item['name']}  role={item['runtime_role']}  "
            f"required={required}  capabilities={capabilities}"
        )
    payload = {
        "schema_version": TYPES_SCHEMA,
        "schema_files": list(registry.schema_files),
        "types": items,
    }
    return payload, "\n".join(lines)


def _list_item(d: Any) -> dict[str, Any]:
    claim = d.claim_text
    if len(claim) > LIST_CLAIM_CHARS:
        claim = claim[: LIST_CLAIM_CHARS - 1] + "…"
    return {
        "id": d.id,
        "type": d.kind,
        "kind": d.kind,
        "runtime_role": d.runtime_role,
        "capabilities": sorted(d.capabilities),
        "subject": d.subject,
        "scope": d.scope,
        "status": d.status,
        "claim": claim,
        "file": d.file,
        "line": d.line,
        "has_evidence": bool(d.evidence),
    }


async def list_declarations(
    hub: Hub,
    identity: Identity,
    name: str,
    *,
    memory_type: str = "",
    subject: str = "",
    include_inactive: bool = False,
    limit: int = 100,
) -> dict[str, Any]:
    view = view_for(hub, identity, name, READ_SUMMARY)
    limit = max(1, min(500, limit))

    def work() -> dict[str, Any]:
        ws = view.workspace
        pool = ws.declarations if include_inactive else ws.active()
        selected = [
            d
            for d in pool
            if (not memory_type or d.kind == memory_type) and (not subject or d.subject == subject)
        ]
        return {
            "schema_version": LIST_SCHEMA,
            "total": len(selected),
            "items": [_list_item(d) for d in selected[:limit]],
        }

    return await _run(work)


def _trace_additions(view: View, full_pack: Any | None, pack: dict[str, Any]) -> None:
    trace = pack.get("search_trace")
    if not isinstance(trace, dict):
        return
    if view.hidden and full_pack is not None:
        trace["hidden_by_access_policy"] = _count_hidden(view, full_pack)
    problems = view.snapshot.problems
    if problems:
        trace["source_problems"] = [p.as_dict() for p in problems]


def _count_hidden(view: View, full: dict[str, Any]) -> int:
    seen: set[str] = set()
    for layer in ("must", "should", "context"):
        seen.update(item["id"] for item in full.get(layer, []))
    seen.update(item["id"] for item in full.get("conflicts", []))
    for item in full.get("search_trace", {}).get("excluded_by_filters", []):
        seen.add(item["id"])
    return len(seen & view.hidden)


async def query(
    hub: Hub, identity: Identity, name: str, request: QueryRequest, *, as_text: bool = False
) -> tuple[dict[str, Any], str, View]:
    """The EvidencePack as JSON data, and its text rendering when `as_text` (else "")."""
    from memhubd.query import build_evidence_pack

    view = view_for(hub, identity, name, READ_SEARCH)
    _check_length(hub, "query", request.query)
    kinds = list(request.kinds) if request.kinds is not None else None
    types_ = list(request.types) if request.types is not None else None

    def work() -> tuple[dict[str, Any], str]:
        pack = build_evidence_pack(
            view.workspace,
            request.query,
            kinds=kinds,
            subject=request.subject,
            limit=request.limit,
            types=types_,
        )
        data = pack.as_dict()
        full = None
        if view.hidden:
            full = build_evidence_pack(
                view.snapshot.workspace,
                request.query,
                kinds=kinds,
                subject=request.subject,
                limit=request.limit,
                types=types_,
            ).as_dict()
        _trace_additions(view, full, data)
        return data, pack.render_text() if as_text else ""

    data, text = await _run(work)
    return data, text, view


async def explain(hub: Hub, identity: Identity, name: str, decl_id: str) -> dict[str, Any]:
    """memdsl's explain payload (as `memhubd explain --json` prints it), with `rendered_text`."""
    from memhubd.query import explain_payload

    view = view_for(hub, identity, name, READ_SEARCH)
    if not decl_id.strip():
        raise ProtocolError(ErrorCode.INVALID, "a declaration id is required", {"field": "id"})

    def work() -> dict[str, Any]:
        if view.workspace.by_id(decl_id) is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"declaration '{decl_id}' not found",
                {"id": decl_id, "workspace": name},
            )
        return explain_payload(view.workspace, decl_id)

    return await _run(work)


async def check(
    hub: Hub, identity: Identity, name: str, request: CheckRequest
) -> tuple[dict[str, Any], str]:
    from memhubd.check import check_compliance

    view = view_for(hub, identity, name, READ_SEARCH)
    _check_length(hub, "task", request.task)
    _check_length(hub, "candidate", request.candidate)

    def work() -> tuple[dict[str, Any], str]:
        pack = check_compliance(
            view.workspace,
            request.task,
            request.candidate,
            subject=request.subject,
            scope=request.scope,
            exceptions=list(request.exceptions),
            regex_timeout=hub.limits.regex_timeout_ms / 1000.0,
        )
        return pack.as_dict(), pack.render_text()

    return await _run(work)


async def lint(hub: Hub, identity: Identity, name: str) -> tuple[dict[str, Any], str]:
    view = view_for(hub, identity, name, READ_SUMMARY)

    def work() -> tuple[dict[str, Any], str]:
        diagnostics = [
            d
            for d in view.snapshot.diagnostics()
            if d.decl_id is None or d.decl_id not in view.hidden
        ]
        errors = sum(1 for d in diagnostics if d.severity == "error")
        warnings = len(diagnostics) - errors
        problems = [p.as_dict() for p in view.snapshot.problems]
        payload = {
            "schema_version": LINT_SCHEMA,
            "ok": errors == 0 and not problems,
            "declarations": len(view.workspace.declarations),
            "errors": errors,
            "warnings": warnings,
            "diagnostics": [d.as_dict() for d in diagnostics],
            "source_problems": problems,
        }
        lines = [f"{p['file']}:{p['line']}: error[{p['kind']}] {p['message']}" for p in problems]
        lines += [d.render() for d in diagnostics]
        lines.append(
            f"\n{len(view.workspace.declarations)} declarations, {errors} error(s), "
            f"{warnings} warning(s)"
        )
        return payload, "\n".join(lines)

    return await _run(work)


# --- raw sources ------------------------------------------------------------------------


def _file_id(snapshot: Snapshot, source: SourceFile) -> str:
    return os.path.relpath(source.path, snapshot.root)


async def files(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    view = view_for(hub, identity, name, READ_SUMMARY)
    counts: dict[str, int] = {}
    for d in view.workspace.declarations:
        counts[d.file] = counts.get(d.file, 0) + 1
    return {
        "schema_version": FILES_SCHEMA,
        "workspace": name,
        "files": [
            {
                "file_id": _file_id(view.snapshot, source),
                "path": source.path,
                "declarations": counts.get(source.path, 0),
                "status": source.problem.kind if source.problem else "ok",
            }
            for source in view.snapshot.files
        ],
    }


def _find_file(snapshot: Snapshot, file_id: str) -> SourceFile | None:
    sources = snapshot.files
    for source in sources:
        if _file_id(snapshot, source) == file_id:
            return source
    if file_id.isdigit() and int(file_id) < len(sources):
        return sources[int(file_id)]
    for source in sources:
        if os.path.basename(source.path) == file_id:
            return source
    return None


def _real_position(text: str, offset: int) -> tuple[int, int]:
    """The real 1-based (line, column) of a character offset."""
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


async def file_content(hub: Hub, identity: Identity, name: str, file_id: str) -> dict[str, Any]:
    from memhubd.auth.access import redact_source

    view = view_for(hub, identity, name, READ_SUMMARY)
    source = _find_file(view.snapshot, file_id)
    if source is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no source file '{file_id}' in workspace '{name}'",
            {"file_id": file_id, "workspace": name},
        )
    text = source.text
    hidden_here = []
    if view.hidden and source.document is not None:
        for raw in source.document.declarations:
            if raw.id in view.hidden:
                start, end = raw.span
                hidden_here.append((*_real_position(text, start), *_real_position(text, end - 1)))
    if hidden_here:
        text = redact_source(text, hidden_here)
    return {
        "schema_version": FILE_SCHEMA,
        "file_id": _file_id(view.snapshot, source),
        "path": source.path,
        "content": text,
        "stale": source.problem is not None,
        "hidden_declarations": len(hidden_here),
    }


# --- administration ---------------------------------------------------------------------


async def add_workspace(hub: Hub, identity: Identity, request: Any) -> dict[str, Any]:
    from memhub_protocol.scopes import ADMIN

    require_scope(identity, ADMIN)
    if hub.get(request.name) is not None:
        raise ProtocolError(
            ErrorCode.CONFLICT,
            f"workspace '{request.name}' already exists",
            {"workspace": request.name},
        )
    if len(hub.hosts) >= hub.limits.max_workspaces:
        raise ProtocolError(
            ErrorCode.CONFLICT,
            f"already serving {len(hub.hosts)} workspaces (limits.max_workspaces)",
            {"limit": hub.limits.max_workspaces},
        )
    root = os.path.abspath(os.path.expanduser(request.path))
    if not os.path.isdir(root):
        raise ProtocolError(
            ErrorCode.INVALID, f"not a directory: {root}", {"field": "path", "path": root}
        )
    host = await hub.add(request.name, root)
    return workspace_summary(host)


async def remove_workspace(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    from memhub_protocol.scopes import ADMIN

    require_scope(identity, ADMIN)
    _host(hub, identity, name)
    await hub.remove(name)
    return {"removed": name}


async def reload_workspace(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    from memhub_protocol.scopes import ADMIN

    require_scope(identity, ADMIN)
    host = _host(hub, identity, name)
    await host.reload()
    return workspace_summary(host)


async def create_token(tokens: Any, identity: Identity, request: Any) -> dict[str, Any]:
    from memhub_protocol.scopes import ADMIN
    from memhubd.auth.tokens import TokenError

    require_scope(identity, ADMIN)
    try:
        record, secret = await anyio.to_thread.run_sync(
            lambda: tokens.create(
                request.name,
                request.scopes,
                workspaces=request.workspaces,
                roles=request.roles,
                expires=request.expires,
            )
        )
    except TokenError as error:
        raise ProtocolError(ErrorCode.INVALID, str(error), {"name": request.name}) from error
    return {**record.as_dict(), "token": secret}


async def revoke_token(tokens: Any, identity: Identity, name: str) -> dict[str, Any]:
    from memhub_protocol.scopes import ADMIN

    require_scope(identity, ADMIN)
    revoked = await anyio.to_thread.run_sync(tokens.revoke, name)
    if not revoked:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"no token named '{name}'", {"name": name})
    return {"revoked": name}


# =========================================================================================
# --- review: proposals and decisions ------------------------------------------------------
#
# Agents propose (write:candidate), people decide (review). The engine (memhubd.review)
# does the file work under its lock, in a worker thread. This section validates against
# the whole snapshot (declarations hidden from the caller still exist), keeps hidden
# content out of what it answers, reloads after approvals and publishes review events.

log = structlog.get_logger("memhubd.review")

# A refused review result's status -> the error code it travels with (docs/review.md).
_REFUSAL_CODES = {
    "invalid": ErrorCode.INVALID,
    "not_found": ErrorCode.NOT_FOUND,
    "already_approved": ErrorCode.CONFLICT,
    "already_rejected": ErrorCode.CONFLICT,
    "stale_or_invalid": ErrorCode.CONFLICT,
    "conflict": ErrorCode.CONFLICT,
}
WITHHELD = "details withheld: they concern a declaration hidden from this caller"


def review_host(hub: Hub, identity: Identity, name: str, scope: str) -> WorkspaceHost:
    """The scope and grant checks of a review operation, made before its input is read."""
    require_scope(identity, scope)
    return _host(hub, identity, name)


def _review_store(hub: Hub, host: WorkspaceHost) -> ReviewStore:
    limit = hub.limits.max_proposal_bytes
    return ReviewStore(host.root, max_bytes=limit)


def _redacted(
    issues: list[dict[str, Any]], hidden: frozenset[str], decl_id: str, own: set[str]
) -> list[dict[str, Any]]:
    """Issues that name no hidden declaration but the caller's own ids (`decl_id`, `own`)
    and never say where a hidden one lives."""
    others = hidden - own - {decl_id}
    out = []
    for issue in issues:
        message = issue["message"]
        if issue["code"] == "declaration_exists" and decl_id in hidden:
            message = f"'{decl_id}' already exists in this workspace; propose a new name"
        elif any(hidden_id in message for hidden_id in others):
            message = WITHHELD
        out.append({**issue, "message": message})
    return out


def _answer(result: Any, view: View, *own: str) -> dict[str, Any]:
    """`result.as_dict()` with its errors and warnings redacted for the caller."""
    data = result.as_dict()
    if view.hidden:
        decl_id = str(data.get("declaration_id") or "")
        for key in ("errors", "warnings"):
            if key in data:
                data[key] = _redacted(data[key], view.hidden, decl_id, set(own))
    return data


def _refusal(data: dict[str, Any], name: str) -> ProtocolError:
    """The error envelope of a refused review result (`data` is its redacted dict)."""
    status = str(data["status"])
    errors = data.get("errors") or []
    code = _REFUSAL_CODES.get(status, ErrorCode.INVALID)
    if errors and errors[0]["code"] == "too_large":
        code = ErrorCode.TOO_LARGE
    if errors:
        message = f"{errors[0]['code']}: {errors[0]['message']}"
    elif status == "not_found":
        message = f"no proposal '{data['proposal_id']}' in workspace '{name}'"
    else:
        decided_by = data.get("decided_by")
        message = f"proposal {data['proposal_id']} was {status.removeprefix('already_')}"
        message += f" by {decided_by}" if decided_by else ""
    if status not in ("invalid", "not_found"):
        message = f"{status}: {message}"
    if data.get("hint"):
        message += f" ({data['hint']})"
    return ProtocolError(code, message, {**data, "workspace": name})


def _not_found(proposal_id: str, name: str) -> ProtocolError:
    return _refusal({"status": "not_found", "proposal_id": proposal_id}, name)


def _hidden_proposal(view: View, identity: Identity, proposal: Proposal) -> bool:
    """True when the proposed declaration would be hidden from the caller once served."""
    from memhubd.auth.access import is_visible
    from memhubd.lang import ParseError, parse_text
    from memhubd.model import Declaration

    if identity.sees_everything:
        return False
    try:
        doc = parse_text(proposal.source, file="<proposal>")
    except ParseError:
        return False
    resolve = view.workspace.registry.resolve
    return any(
        not is_visible(Declaration.from_raw(raw, resolve(raw.kind)), identity)
        for raw in doc.declarations
    )


def _visible_proposal(
    store: ReviewStore, view: View, identity: Identity, proposal_id: str
) -> Proposal | None:
    """The proposal, or None when there is none or the caller may not see it (blocking)."""
    proposal = store.get(proposal_id) if is_proposal_id(proposal_id) else None
    if proposal is None or _hidden_proposal(view, identity, proposal):
        return None
    return proposal


async def propose(
    hub: Hub, identity: Identity, name: str, request: ProposeRequest
) -> dict[str, Any]:
    """Validate against the served snapshot and store a pending proposal by this caller."""
    view = view_for(hub, identity, name, WRITE_CANDIDATE)
    store = _review_store(hub, _host(hub, identity, name))
    snapshot = view.snapshot
    result = await _run(
        lambda: store.propose(
            snapshot.workspace,
            request.source,
            proposer=identity.name,
            client=request.client,
            reason=request.reason,
            generation=snapshot.generation,
            supersedes=request.supersedes,
        )
    )
    data = _answer(result, view, request.supersedes or "")
    if not result.ok:
        raise _refusal(data, name)
    proposal = result.proposal
    hub.events.publish(
        "proposal_created",
        workspace=name,
        proposal_id=proposal.id,
        proposer=identity.name,
        generation=snapshot.generation,
    )
    return {
        "schema_version": PROPOSE_SCHEMA,
        "workspace": name,
        **data,
        "generation": snapshot.generation,
        "proposal": proposal.summary(),
    }


async def list_proposals(
    hub: Hub, identity: Identity, name: str, status: str = "pending", limit: int | None = None
) -> dict[str, Any]:
    """Proposals with `status` (or "all") in creation order; hidden ones are only counted."""
    view = view_for(hub, identity, name, READ_SUMMARY)
    if status not in LIST_STATUSES:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"status must be one of {', '.join(LIST_STATUSES)}",
            {"field": "status", "status": status},
        )
    store = _review_store(hub, _host(hub, identity, name))

    def work() -> tuple[list[Proposal], int]:
        found = store.list(status)
        shown = [p for p in found if not _hidden_proposal(view, identity, p)]
        return shown, len(found) - len(shown)

    shown, hidden = await _run(work)
    return {
        "schema_version": PROPOSALS_SCHEMA,
        "workspace": name,
        "filter": status,
        "total": len(shown),
        "hidden_by_access_policy": hidden,
        "proposals": [p.summary() for p in shown[:limit]],
    }


async def show_proposal(
    hub: Hub, identity: Identity, name: str, proposal_id: str, into: str | None = None
) -> dict[str, Any]:
    """One proposal: its source, its validation now (when pending) and the approval's diff."""
    view = view_for(hub, identity, name, READ_SUMMARY)
    store = _review_store(hub, _host(hub, identity, name))

    def work() -> dict[str, Any]:
        proposal = _visible_proposal(store, view, identity, proposal_id)
        if proposal is None:
            raise _not_found(proposal_id, name)
        validation = None
        if proposal.status == "pending":
            checked = store.validate(
                view.snapshot.workspace, proposal.source, supersedes=proposal.supersedes or None
            )
            validation = _answer(checked, view, proposal.supersedes)
        shown = {"target": "", "diff": "", "diff_withheld": False}
        if proposal.status != "rejected" and (into or proposal.status == "approved"):
            shown = _shown_diff(store, view, proposal, into, name)
        return {
            "schema_version": PROPOSAL_SCHEMA,
            "workspace": name,
            "proposal": proposal.as_dict(),
            "validation": validation,
            **shown,
        }

    return await _run(work)


def _shown_diff(
    store: ReviewStore, view: View, proposal: Proposal, into: str | None, name: str
) -> dict[str, Any]:
    """The approval's diff, withheld when the target holds declarations hidden from the caller
    (its context lines could show them)."""
    diff = store.diff(proposal.id, into)
    if not diff.ok:
        raise _refusal(_answer(diff, view), name)
    target = os.path.relpath(diff.target, store.root)
    withheld = bool(view.hidden) and any(
        d.id in view.hidden and os.path.realpath(d.file) == diff.target
        for d in view.snapshot.workspace.declarations
    )
    return {"target": target, "diff": "" if withheld else diff.diff, "diff_withheld": withheld}


async def approve_proposal(
    hub: Hub, identity: Identity, name: str, proposal_id: str, into: str
) -> dict[str, Any]:
    """Approve into `into`, then answer with the generation that serves the declaration.

    The host's reload lock is held from the reload before the approval to the one after
    it, so no other reload slips between them: the generation written to the audit is
    exactly the one that first serves the change.
    """
    host = review_host(hub, identity, name, REVIEW)
    store = _review_store(hub, host)
    async with host.reloads_held():
        await host.reload_held()  # validate against the sources as they are now
        view = view_for(hub, identity, name, REVIEW)
        current = view.snapshot

        def work() -> Any:
            proposal = _visible_proposal(store, view, identity, proposal_id)
            if proposal is None and is_proposal_id(proposal_id):
                raise _not_found(proposal_id, name)
            # Already served: an interrupted approval being finished; else the next generation.
            served = proposal is not None and current.workspace.by_id(proposal.declaration)
            expected = current.generation + (0 if served else 1)
            return store.approve(
                proposal_id,
                current.workspace,
                into,
                reviewer=identity.name,
                generation=expected,
            )

        decision = await _run(work)
        data = _answer(decision, view)
        if not decision.ok:
            raise _refusal(data, name)
        after = await host.reload_held()
    generation = _served_generation(after, decision.declaration_id, decision.merged_into)
    file_id = os.path.relpath(decision.merged_into, store.root)
    hub.events.publish(
        "proposal_approved",
        workspace=name,
        proposal_id=decision.proposal_id,
        reviewer=decision.decided_by,
        file_id=file_id,
        served_generation=generation,
    )
    return {
        "schema_version": DECISION_SCHEMA,
        "workspace": name,
        **data,
        "file_id": file_id,
        "served_generation": generation,
    }


def _served_generation(snapshot: Snapshot | None, decl_id: str, path: str) -> int | None:
    """The snapshot's generation if it serves `decl_id` from `path`; None (and a log) if not."""
    served = snapshot.workspace.by_id(decl_id) if snapshot is not None else None
    if served is not None and os.path.realpath(served.file) == path:
        return snapshot.generation  # type: ignore[union-attr]
    log.error(
        "approved declaration is not served",
        declaration=decl_id,
        file=path,
        generation=snapshot.generation if snapshot is not None else None,
    )
    return None


async def reject_proposal(
    hub: Hub, identity: Identity, name: str, proposal_id: str, reason: str = ""
) -> dict[str, Any]:
    """Reject a pending proposal; the workspace's sources are not touched."""
    view = view_for(hub, identity, name, REVIEW)
    store = _review_store(hub, _host(hub, identity, name))

    def work() -> Any:
        if is_proposal_id(proposal_id) and not _visible_proposal(
            store, view, identity, proposal_id
        ):
            raise _not_found(proposal_id, name)
        return store.reject(proposal_id, reviewer=identity.name, reason=reason)

    decision = await _run(work)
    data = _answer(decision, view)
    if not decision.ok:
        raise _refusal(data, name)
    hub.events.publish(
        "proposal_rejected",
        workspace=name,
        proposal_id=decision.proposal_id,
        reviewer=decision.decided_by,
    )
    return {"schema_version": DECISION_SCHEMA, "workspace": name, **data}
