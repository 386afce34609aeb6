"""Who is calling an MCP tool or resource, and which workspace the call is about.

The HTTP wrapper in `server.py` stores the caller's Identity in a context variable
before the SDK runs; tools and resources read it here. It must not authenticate
anyone itself: identities come from the API middleware only.
"""

from __future__ import annotations

from contextvars import ContextVar

from memhub_protocol import ErrorCode, ProtocolError
from memhubd import service
from memhubd.auth.identity import Identity
from memhubd.runtime.hub import Hub

_CALLER: ContextVar[Identity | None] = ContextVar("memhub_mcp_caller", default=None)
# The workspace the tool call in progress is about, once chosen: a list the server
# binds per call and the tool fills (shared, so a tool run in a copied context fills it).
_ABOUT: ContextVar[list[str] | None] = ContextVar("memhub_mcp_workspace", default=None)


def set_caller(identity: Identity | None) -> object:
    """Bind the caller for the current request; returns the token to reset it with."""
    return _CALLER.set(identity)


def reset_caller(token: object) -> None:
    _CALLER.reset(token)  # type: ignore[arg-type]


def current_caller() -> Identity:
    identity = _CALLER.get()
    if identity is None:
        # Only reachable when the MCP app is served without the authenticating wrapper.
        raise ProtocolError(ErrorCode.UNAUTHORIZED, "no authenticated caller for this request")
    return identity


def watch_workspace() -> tuple[list[str], object]:
    """Bind an empty record of the workspace the coming tool call is about; returns it
    (`note_workspace` fills it) and the token to reset it with."""
    noted: list[str] = []
    return noted, _ABOUT.set(noted)


def stop_watching(token: object) -> None:
    _ABOUT.reset(token)  # type: ignore[arg-type]


def note_workspace(name: str) -> None:
    """Record that the tool call in progress is about workspace `name`."""
    noted = _ABOUT.get()
    if noted is not None:
        noted[:] = [name]


def visible_names(hub: Hub) -> list[str] | None:
    """The current caller's workspaces, or None when no caller is bound."""
    identity = _CALLER.get()
    return None if identity is None else service.visible_workspaces(hub, identity)


def choose_workspace(hub: Hub, identity: Identity, requested: str, scope: str) -> str:
    """The workspace a call is about: the one named, else the caller's only one.

    The scope is checked first so that a caller without it hears about the scope,
    not about a workspace it could not use anyway. A named workspace is checked by
    the service call that follows (unknown or forbidden both list the usable ones).
    """
    service.require_scope(identity, scope)
    requested = requested.strip()
    if requested:
        return requested
    visible = service.visible_workspaces(hub, identity)
    if len(visible) == 1:
        return visible[0]
    if not visible:
        message = f"token '{identity.name}' may use no workspace on this server"
    else:
        message = "the 'workspace' argument is required when you may use several workspaces"
    raise ProtocolError(ErrorCode.INVALID, message, {"field": "workspace", "available": visible})


def wing_or_workspace(wing: str, workspace: str) -> str:
    """The workspace a mempal-style tool names: `wing` (mempal's word) or `workspace`."""
    wing, workspace = wing.strip(), workspace.strip()
    if wing and workspace and wing != workspace:
        # A tool error with its message: called before a tool's own error handling.
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError(
            describe_error(
                ProtocolError(
                    ErrorCode.INVALID,
                    "'wing' and 'workspace' name different workspaces",
                    {"field": "wing"},
                )
            )
        )
    return workspace or wing


def only_workspace(hub: Hub, identity: Identity, scope: str) -> str:
    """For memdsl's single-workspace resources: the caller's one workspace, or an error."""
    service.require_scope(identity, scope)
    visible = service.visible_workspaces(hub, identity)
    if len(visible) != 1:
        raise ProtocolError(
            ErrorCode.INVALID,
            "memdsl:// resources serve a caller with exactly one workspace; you may use "
            f"{len(visible)}: read memhub://{{workspace}}/... instead",
            {"available": visible},
        )
    return visible[0]


def describe_error(error: ProtocolError) -> str:
    """One line for a tool or resource error, listing usable workspaces when relevant."""
    line = f"{error.code.value}: {error.message}"
    available = error.detail.get("available")
    if isinstance(available, list):
        names = ", ".join(available) if available else "(none)"
        line += f". Workspaces you may use: {names}"
    return line


def named_as_argument(error: ProtocolError, field: str, argument: str) -> ProtocolError:
    """`error` naming the tool's `argument` where the service names the JSON API's
    `field` (in its message and `detail.field`); any other error as it is."""
    detail = dict(error.detail or {})
    if detail.get("field") != field:
        return error
    detail["field"] = argument
    message = error.message.replace(f"'{field}'", f"'{argument}'", 1)
    return ProtocolError(error.code, message, detail)
