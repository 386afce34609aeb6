"""Who may see what: scope and grant checks, and each caller's view of a snapshot.

The one place where access policies turn a snapshot into what a caller sees.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Any

import anyio

from memhub_protocol import (
    ErrorCode,
    ProtocolError,
)
from memhubd.auth.identity import Identity
from memhubd.model import Workspace
from memhubd.runtime.hub import Hub, WorkspaceHost
from memhubd.runtime.snapshot import Snapshot

STARTED_AT = time.time()
_ENGINE = anyio.CapacityLimiter(4)


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


def host_for(hub: Hub, identity: Identity, name: str) -> WorkspaceHost:
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


def snapshot_of(host: WorkspaceHost) -> Snapshot:
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
    kept: list[Any] = []
    hidden_ids: set[str] = set()
    for d in ws.declarations:
        if is_visible(d, identity):
            kept.append(d)
        else:
            hidden_ids.add(d.id)
    if not hidden_ids:
        return View(snapshot, ws, frozenset())
    hidden = frozenset(hidden_ids)
    view = Workspace(declarations=kept, files=list(ws.files), registry=ws.registry)
    return View(snapshot, view, hidden)


def view_for(hub: Hub, identity: Identity, name: str, scope: str) -> View:
    """The caller's view of a workspace, after the scope and grant checks."""
    require_scope(identity, scope)
    snapshot = snapshot_of(host_for(hub, identity, name))
    per_snapshot = _VIEWS.setdefault(snapshot, {})
    key = frozenset({"*"}) if identity.sees_everything else identity.roles
    view = per_snapshot.get(key)
    if view is None:
        view = per_snapshot[key] = _build_view(snapshot, identity)
    return view


def event_for(identity: Identity, name: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """What one subscriber may see of a change event: None to skip it, else its data.

    Events of workspaces the caller has no grant for are never delivered.
    """
    workspace = data.get("workspace")
    if workspace is not None and not identity.can_use(str(workspace)):
        return None
    return data


def check_length(hub: Hub, field: str, text: str) -> None:
    limit = hub.limits.max_query_chars
    if len(text) > limit:
        raise ProtocolError(
            ErrorCode.TOO_LARGE, f"'{field}' is longer than {limit} characters", {"field": field}
        )


async def run_indexed(workspace: Workspace, function: Any) -> Any:
    """Run a query-sized engine call inline once the workspace is indexed.

    Such calls take about a millisecond, less than a hop to a worker thread and
    back; only a call that would first build the index is sent to a thread.
    """
    from memhubd.index.workspace import is_indexed

    if is_indexed(workspace):
        return function()
    return await run_engine(function)


async def run_engine(function: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(function, *args, limiter=_ENGINE)
