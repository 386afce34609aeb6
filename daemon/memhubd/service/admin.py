"""Administration: workspaces added and removed at run time, reloads, tokens."""

from __future__ import annotations

import os
from typing import Any

import anyio

from memhub_protocol import (
    TOKENS_SCHEMA,
    ErrorCode,
    ProtocolError,
)
from memhub_protocol.scopes import ADMIN
from memhubd.auth.identity import Identity
from memhubd.runtime.hub import Hub
from memhubd.service.access import (
    host_for,
    require_scope,
)
from memhubd.service.reads import workspace_summary

# --- administration ---------------------------------------------------------------------


async def add_workspace(hub: Hub, identity: Identity, request: Any) -> dict[str, Any]:
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
    require_scope(identity, ADMIN)
    host_for(hub, identity, name)
    await hub.remove(name)
    return {"removed": name}


async def reload_workspace(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    require_scope(identity, ADMIN)
    host = host_for(hub, identity, name)
    await host.reload()
    return workspace_summary(host)


async def list_tokens(tokens: Any, identity: Identity) -> dict[str, Any]:
    require_scope(identity, ADMIN)
    records = await anyio.to_thread.run_sync(tokens.list)
    return {"schema_version": TOKENS_SCHEMA, "tokens": [t.as_dict() for t in records]}


async def create_token(tokens: Any, identity: Identity, request: Any) -> dict[str, Any]:
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
    require_scope(identity, ADMIN)
    revoked = await anyio.to_thread.run_sync(tokens.revoke, name)
    if not revoked:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"no token named '{name}'", {"name": name})
    return {"revoked": name}


# =========================================================================================
