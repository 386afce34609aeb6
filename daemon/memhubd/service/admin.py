"""Administration: workspaces added and removed at run time, reloads, tokens, and the
daemon-wide probes (readiness, metrics) as each caller may see them.

The admin model, enforced here for every door: the `admin` scope is needed for any
of it; a token creates, lists and revokes only tokens whose grants are within its
own (the subset rule, see `memhubd.auth.identity.grants_beyond`); only a token
granted every workspace (`*`) adds or removes workspaces. Every admin action is
written to the admin audit with its outcome. Nothing here knows about HTTP.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog

from memhub_protocol import (
    TOKENS_SCHEMA,
    ErrorCode,
    ProtocolError,
)
from memhub_protocol.scopes import ADMIN, READ_SUMMARY
from memhubd.auth.audit import FAILED, OK, REFUSED, AdminAudit
from memhubd.auth.identity import Identity
from memhubd.auth.tokens import TokenError, TokenFileError, TokenRefused, TokenStore
from memhubd.runtime.archive import StateNotArchived
from memhubd.runtime.hub import Hub
from memhubd.runtime.state import StateFileError, WorkspaceConflict, within
from memhubd.service.access import host_for, require_scope
from memhubd.service.reads import workspace_summary

log = structlog.get_logger(__name__)

VIA = "api"  # how the daemon's own doors are named in the audit; offline commands say "cli"


# --- the audit --------------------------------------------------------------------------


@asynccontextmanager
async def audited(
    audit: AdminAudit, identity: Identity, action: str, **details: Any
) -> AsyncIterator[dict[str, Any]]:
    """Record `action` by `identity` once its outcome is known.

    The block may add details (e.g. what was created) to the yielded dict. A
    ProtocolError of the 4xx kind is a refusal, anything else a failure; both are
    recorded with a reason and re-raised. An audit that cannot be written is
    logged at error level and does not undo or fail the action.
    """
    recorded = dict(details)
    try:
        yield recorded
    except ProtocolError as error:
        outcome = REFUSED if error.code.http_status < 500 else FAILED
        await _write(audit, identity, action, outcome, reason=error.message, **recorded)
        raise
    except Exception as error:
        await _write(audit, identity, action, FAILED, reason=type(error).__name__, **recorded)
        raise
    await _write(audit, identity, action, OK, **recorded)


async def _write(
    audit: AdminAudit, identity: Identity, action: str, outcome: str, **details: Any
) -> None:
    def write() -> None:
        audit.record(action, identity=identity.name, via=VIA, outcome=outcome, **details)

    try:
        await anyio.to_thread.run_sync(write)
    except OSError as error:
        log.error(
            "admin_audit_write_failed",
            path=str(audit.path),
            action=action,
            identity=identity.name,
            error=str(error),
        )


def _require_all_workspaces(identity: Identity, action: str) -> None:
    if not identity.manages_all_workspaces:
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"token '{identity.name}' may not {action}: only a token granted every "
            "workspace (*) adds or removes workspaces",
            {"token": identity.name, "required_workspaces": "*"},
        )


# --- workspaces -------------------------------------------------------------------------


async def add_workspace(
    hub: Hub, identity: Identity, request: Any, audit: AdminAudit
) -> dict[str, Any]:
    require_scope(identity, ADMIN)
    async with audited(audit, identity, "workspace.add", workspace=request.name) as details:
        _require_all_workspaces(identity, "add workspaces")
        if not os.path.isabs(request.path):
            # Relative to what? The daemon's directory and home are not the caller's
            # (memctl makes a path absolute where it runs).
            raise ProtocolError(
                ErrorCode.INVALID,
                f"'path' must be absolute (a directory on the daemon's machine): "
                f"{request.path!r}",
                {"field": "path"},
            )
        root = os.path.abspath(request.path)
        details["path"] = root
        try:
            # One add at a time: each is checked against those added before it (the
            # name, the limit, overlapping directories) once they are served.
            async with _adding(hub):
                _check_addable(hub, request.name, root)
                host = await hub.add(request.name, root)
        except (WorkspaceConflict, ValueError) as error:
            raise ProtocolError(
                ErrorCode.CONFLICT, str(error), {"workspace": request.name}
            ) from error
        except OSError as error:
            raise _list_not_saved(request.name, error, "not added") from error
    return await _summary(host, identity)


async def _summary(host: Any, identity: Identity) -> dict[str, Any]:
    # Summaries may lint the snapshot the first time: off the event loop.
    return await anyio.to_thread.run_sync(lambda: workspace_summary(host, identity))


_ADDING: weakref.WeakKeyDictionary[Hub, anyio.Lock] = weakref.WeakKeyDictionary()


def _adding(hub: Hub) -> anyio.Lock:
    """The lock that serialises workspace adds to `hub`."""
    lock = _ADDING.get(hub)
    if lock is None:
        lock = _ADDING[hub] = anyio.Lock()
    return lock


def _check_addable(hub: Hub, name: str, root: str) -> None:
    if hub.get(name) is not None:
        raise ProtocolError(
            ErrorCode.CONFLICT, f"workspace '{name}' already exists", {"workspace": name}
        )
    if len(hub.hosts) >= hub.limits.max_workspaces:
        raise ProtocolError(
            ErrorCode.CONFLICT,
            f"already serving {len(hub.hosts)} workspaces (limits.max_workspaces)",
            {"limit": hub.limits.max_workspaces},
        )
    if not os.path.isdir(root):
        raise ProtocolError(
            ErrorCode.INVALID, f"not a directory: {root}", {"field": "path", "path": root}
        )
    # One directory under two names would let a grant for the new name read the old one.
    # A directory inside another served one (or holding one) is the same files under two
    # review queues, each with its own lock and audit: one declaration approved twice.
    real = os.path.realpath(root)
    for other, host in hub.hosts.items():
        served = host.review_root
        if served == real:
            raise ProtocolError(
                ErrorCode.CONFLICT,
                f"{root} is already served as workspace '{other}'",
                {"workspace": name, "served_as": other},
            )
        if within(real, served) or within(served, real):
            where = "is inside" if within(real, served) else "holds"
            raise ProtocolError(
                ErrorCode.CONFLICT,
                f"{root} {where} workspace '{other}' ({served}): workspaces may not nest",
                {"workspace": name, "served_as": other},
            )


async def remove_workspace(
    hub: Hub, identity: Identity, name: str, audit: AdminAudit
) -> dict[str, Any]:
    require_scope(identity, ADMIN)
    async with audited(audit, identity, "workspace.remove", workspace=name):
        if identity.manages_all_workspaces and hub.get(name) is None:
            # Registered at run time but not served (it overlaps a configured one): an
            # admin of every workspace may still forget it, and so free its name.
            try:
                if await hub.forget_unserved(name):
                    return {"removed": name, "served": False}
            except (OSError, StateFileError) as error:
                raise _list_not_saved(name, error, "still registered") from error
        host_for(hub, identity, name)  # the usual grant check and error first
        _require_all_workspaces(identity, "remove workspaces")
        try:
            await hub.remove(name)
        except StateNotArchived as error:
            # Its recall and cowork state could not be set aside: it stays served with
            # them rather than leave them for a later workspace of its name.
            raise ProtocolError(
                ErrorCode.INTERNAL,
                f"{error}: workspace '{name}' is still served",
                {"workspace": name},
            ) from error
        except (OSError, StateFileError) as error:
            raise _list_not_saved(name, error, "still served") from error
    return {"removed": name}


def _list_not_saved(name: str, error: Exception, outcome: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.INTERNAL,
        f"the workspace list in the state directory could not be saved ({error}): "
        f"workspace '{name}' is {outcome}",
        {"workspace": name},
    )


async def reload_workspace(
    hub: Hub, identity: Identity, name: str, audit: AdminAudit
) -> dict[str, Any]:
    """A scoped admin may reload its own workspaces: a reload changes nothing on disk."""
    require_scope(identity, ADMIN)
    async with audited(audit, identity, "workspace.reload", workspace=name) as details:
        host = host_for(hub, identity, name)
        snapshot = await host.reload()
        details["generation"] = None if snapshot is None else snapshot.generation
    return await _summary(host, identity)


# --- tokens -----------------------------------------------------------------------------


async def list_tokens(tokens: TokenStore, identity: Identity) -> dict[str, Any]:
    """The tokens the caller manages: those whose grants are all within its own."""
    require_scope(identity, ADMIN)
    async with audited(tokens.audit, identity, "token.list") as details:
        with _token_file_failures():
            records = await anyio.to_thread.run_sync(tokens.list)
        shown = [record.as_dict() for record in records if record.within(identity)]
        details["count"] = len(shown)
    return {"schema_version": TOKENS_SCHEMA, "tokens": shown}


async def create_token(tokens: TokenStore, identity: Identity, request: Any) -> dict[str, Any]:
    require_scope(identity, ADMIN)
    asked = {
        "name": request.name,
        "scopes": list(request.scopes),
        "workspaces": list(request.workspaces),
        "roles": list(request.roles),
        "expires": request.expires,
    }
    async with audited(tokens.audit, identity, "token.create", token=asked) as details:
        try:
            record, secret = await anyio.to_thread.run_sync(
                lambda: tokens.create(
                    request.name,
                    request.scopes,
                    workspaces=request.workspaces,
                    roles=request.roles,
                    expires=request.expires,
                    issuer=identity,
                )
            )
        except TokenRefused as error:
            raise ProtocolError(ErrorCode.FORBIDDEN, str(error), {"name": request.name}) from error
        except (TokenFileError, OSError) as error:
            raise _token_file_failure(error) from error
        except TokenError as error:
            raise ProtocolError(ErrorCode.INVALID, str(error), {"name": request.name}) from error
        details["token"] = record.as_dict()  # the public view: never the secret
    return {**record.as_dict(), "token": secret}


async def revoke_token(tokens: TokenStore, identity: Identity, name: str) -> dict[str, Any]:
    require_scope(identity, ADMIN)
    async with audited(tokens.audit, identity, "token.revoke", token={"name": name}):
        try:
            revoked = await anyio.to_thread.run_sync(lambda: tokens.revoke(name, by=identity))
        except TokenRefused:
            revoked = False  # as unknown: the caller does not see that token in its list
        except (TokenFileError, OSError) as error:
            raise _token_file_failure(error) from error
        if not revoked:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"no token named '{name}' among the tokens '{identity.name}' manages",
                {"name": name},
            )
    return {"revoked": name}


@contextlib.contextmanager
def _token_file_failures() -> Iterator[None]:
    try:
        yield
    except (TokenFileError, OSError) as error:
        raise _token_file_failure(error) from error


def _token_file_failure(error: Exception) -> ProtocolError:
    """A token file that cannot be read or written, said as such (naming it) rather
    than as an unexplained internal error; audited as a failure."""
    if isinstance(error, TokenFileError):
        return ProtocolError(ErrorCode.INTERNAL, f"{error}; {error.remedy}")
    # A write that failed (a full disk, a read-only state dir): the file is as it was.
    where = getattr(error, "filename", None) or "the token file"
    reason = getattr(error, "strerror", None) or str(error)
    return ProtocolError(
        ErrorCode.INTERNAL,
        f"token file not written ({where}: {reason}); it is unchanged: check the state "
        "directory's permissions and disk, then retry",
    )


# --- probes and metrics -----------------------------------------------------------------


def readiness(hub: Hub, identity: Identity | None) -> tuple[dict[str, Any], bool]:
    """Whether every workspace has loaded (or failed) once.

    Without a token the answer is the status alone; with one, it names only the
    still-loading and unavailable workspaces the caller is granted.
    """
    loading = [n for n, h in hub.hosts.items() if h.snapshot is None and h.unavailable is None]
    ready = not loading
    body: dict[str, Any] = {"status": "ready" if ready else "loading"}
    if identity is not None:
        unavailable = [n for n, h in hub.hosts.items() if h.snapshot is None and h.unavailable]
        body["loading"] = [name for name in loading if identity.can_use(name)]
        body["unavailable"] = [name for name in unavailable if identity.can_use(name)]
    return body, ready


def metrics_text(hub: Hub, identity: Identity) -> str:
    """The Prometheus text the caller may see: series of workspaces it is granted only;
    declaration counts only for a caller who sees every declaration (role `*`), since
    a count would include declarations hidden from it; and the HTTP requests' counts
    and latencies, which are by route over every workspace (MCP and recall included),
    only for a caller granted every workspace the daemon serves."""
    require_scope(identity, READ_SUMMARY)
    return hub.metrics.render(
        workspace_visible=identity.can_use,
        with_declarations=identity.sees_everything,
        with_requests=all(identity.can_use(name) for name in hub.hosts),
    )
