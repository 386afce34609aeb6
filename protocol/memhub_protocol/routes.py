"""The route table of the JSON API: one entry per operation, with its scope.

The daemon mounts these and documents them in OpenAPI; memctl builds its URLs
from them. Paths use Starlette's `{name}` placeholders.
"""

from __future__ import annotations

from dataclasses import dataclass

from memhub_protocol.scopes import ADMIN, READ_SEARCH, READ_SUMMARY, REVIEW, WRITE_CANDIDATE


@dataclass(frozen=True, slots=True)
class Route:
    name: str
    method: str
    path: str
    scope: str | None  # None: no token needed
    summary: str
    request_model: str | None = None  # name of a memhub_protocol.models class

    def url(self, **params: str) -> str:
        from urllib.parse import quote

        path = self.path
        for key, value in params.items():
            path = path.replace("{" + key + "}", quote(str(value), safe=""))
            path = path.replace("{" + key + ":path}", quote(str(value), safe=""))
        return path


_WS = "/v1/workspaces/{workspace}"

ROUTES: tuple[Route, ...] = (
    Route("healthz", "GET", "/healthz", None, "Liveness: the process answers."),
    Route("readyz", "GET", "/readyz", None, "Readiness: every workspace has loaded once."),
    Route("metrics", "GET", "/metrics", READ_SUMMARY, "Prometheus metrics."),
    Route("openapi", "GET", "/v1/openapi.json", None, "This API as OpenAPI 3.1."),
    Route("status", "GET", "/v1/status", READ_SUMMARY, "Daemon and workspace status."),
    Route("events", "GET", "/v1/events", READ_SUMMARY, "Server-sent events: reloads, health."),
    Route("workspaces", "GET", "/v1/workspaces", READ_SUMMARY, "Workspaces the caller may use."),
    Route(
        "workspace_add",
        "POST",
        "/v1/workspaces",
        ADMIN,
        "Add a workspace at run time (persisted).",
        "WorkspaceAddRequest",
    ),
    Route("workspace", "GET", _WS, READ_SUMMARY, "One workspace's status."),
    Route("workspace_remove", "DELETE", _WS, ADMIN, "Stop serving a workspace (files stay)."),
    Route("workspace_reload", "POST", _WS + "/reload", ADMIN, "Re-scan a workspace now."),
    Route("map", "GET", _WS + "/map", READ_SUMMARY, "Memory map (memdsl.map.v1)."),
    Route("types", "GET", _WS + "/types", READ_SUMMARY, "Loaded memory types (memdsl.types.v1)."),
    Route("list", "GET", _WS + "/declarations", READ_SUMMARY, "List declarations with filters."),
    Route(
        "explain",
        "GET",
        _WS + "/declarations/{decl_id}",
        READ_SEARCH,
        "One declaration with relations and evidence.",
    ),
    Route(
        "query",
        "POST",
        _WS + "/query",
        READ_SEARCH,
        "Query into an EvidencePack (memdsl.evidence_pack.v1).",
        "QueryRequest",
    ),
    Route(
        "check",
        "POST",
        _WS + "/check",
        READ_SEARCH,
        "Preflight a draft against MUST rules (CompliancePack).",
        "CheckRequest",
    ),
    Route("lint", "GET", _WS + "/lint", READ_SUMMARY, "Lint diagnostics (memhub.lint.v1)."),
    Route("files", "GET", _WS + "/files", READ_SUMMARY, "Source files of a workspace."),
    Route(
        "file",
        "GET",
        _WS + "/files/{file_id}",
        READ_SUMMARY,
        "Raw source of one file, minus declarations hidden from the caller.",
    ),
    Route("tokens", "GET", "/v1/tokens", ADMIN, "List tokens (never their secrets)."),
    Route(
        "token_create",
        "POST",
        "/v1/tokens",
        ADMIN,
        "Create a token; the secret is shown once.",
        "TokenCreateRequest",
    ),
    Route("token_revoke", "DELETE", "/v1/tokens/{token_name}", ADMIN, "Revoke a token."),
    Route(
        "proposal_create",
        "POST",
        _WS + "/proposals",
        WRITE_CANDIDATE,
        "Propose one declaration for review; it is not served until approved.",
        "ProposeRequest",
    ),
    Route(
        "proposals",
        "GET",
        _WS + "/proposals",
        READ_SUMMARY,
        "List proposals; `?status=pending|approved|rejected|all&limit=N`.",
    ),
    Route(
        "proposal",
        "GET",
        _WS + "/proposals/{proposal_id}",
        READ_SUMMARY,
        "One proposal: source, current validation, and a diff (`?into=FILE`).",
    ),
    Route(
        "proposal_approve",
        "POST",
        _WS + "/proposals/{proposal_id}/approve",
        REVIEW,
        "Approve a proposal into a .mem file; answers when it is served.",
        "ApproveRequest",
    ),
    Route(
        "proposal_reject",
        "POST",
        _WS + "/proposals/{proposal_id}/reject",
        REVIEW,
        "Reject a proposal; nothing is written to the workspace.",
        "RejectRequest",
    ),
)

_BY_NAME = {route.name: route for route in ROUTES}


def route_by_name(name: str) -> Route:
    return _BY_NAME[name]
