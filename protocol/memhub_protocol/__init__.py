"""The wire contract shared by memhubd and memctl: payload schema ids, scopes,
error codes, the route table and request models.

It depends on nothing of the daemon, so the thin client can import it alone.
"""

from __future__ import annotations

from memhub_protocol.errors import (
    MCP_REFUSED,
    ErrorCode,
    ProtocolError,
    error_envelope,
    jsonrpc_refusal,
)
from memhub_protocol.models import (
    DECISION_SCHEMA,
    PROPOSAL_SCHEMA,
    PROPOSALS_SCHEMA,
    PROPOSE_SCHEMA,
    ApproveRequest,
    CheckRequest,
    ProposeRequest,
    QueryRequest,
    RejectRequest,
    TokenCreateRequest,
    WorkspaceAddRequest,
)
from memhub_protocol.routes import ROUTES, Route, route_by_name
from memhub_protocol.scopes import (
    ADMIN,
    ALL_SCOPES,
    READ_SEARCH,
    READ_SUMMARY,
    REVIEW,
    WRITE_CANDIDATE,
    WRITE_RECALL,
)

__version__ = "0.1.0"

# Payload schema ids, kept from memdsl 0.5.1 so that its clients keep working.
WORKSPACE_SCHEMA = "memdsl.workspace.v1"
EVIDENCE_PACK_SCHEMA = "memdsl.evidence_pack.v1"
MAP_SCHEMA = "memdsl.map.v1"
TYPES_SCHEMA = "memdsl.types.v1"
COMPLIANCE_BENCHMARK_SCHEMA = "memdsl.compliance.benchmark.v1"

# memhub's own payloads.
LINT_SCHEMA = "memhub.lint.v1"
STATUS_SCHEMA = "memhub.status.v1"
WORKSPACES_SCHEMA = "memhub.workspaces.v1"
LIST_SCHEMA = "memhub.list.v1"
FILES_SCHEMA = "memhub.files.v1"
FILE_SCHEMA = "memhub.file.v1"
TOKENS_SCHEMA = "memhub.tokens.v1"

DEFAULT_PORT = 8377

__all__ = [
    "ADMIN",
    "ALL_SCOPES",
    "COMPLIANCE_BENCHMARK_SCHEMA",
    "DEFAULT_PORT",
    "EVIDENCE_PACK_SCHEMA",
    "FILES_SCHEMA",
    "FILE_SCHEMA",
    "LINT_SCHEMA",
    "LIST_SCHEMA",
    "MAP_SCHEMA",
    "READ_SEARCH",
    "READ_SUMMARY",
    "REVIEW",
    "ROUTES",
    "STATUS_SCHEMA",
    "TOKENS_SCHEMA",
    "TYPES_SCHEMA",
    "WORKSPACES_SCHEMA",
    "WORKSPACE_SCHEMA",
    "WRITE_CANDIDATE",
    "WRITE_RECALL",
    "DECISION_SCHEMA",
    "PROPOSALS_SCHEMA",
    "PROPOSAL_SCHEMA",
    "PROPOSE_SCHEMA",
    "ApproveRequest",
    "CheckRequest",
    "ProposeRequest",
    "RejectRequest",
    "ErrorCode",
    "MCP_REFUSED",
    "ProtocolError",
    "QueryRequest",
    "Route",
    "TokenCreateRequest",
    "WorkspaceAddRequest",
    "error_envelope",
    "jsonrpc_refusal",
    "route_by_name",
]
