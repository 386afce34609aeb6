"""THE operations of memhub, as async functions over the hub and a caller.

Every door (JSON API, MCP, ...) calls these and only these. They check scopes
and workspace grants, pick the caller's view of a snapshot (access policies
applied), run the engine in a worker thread and return plain data. They know
nothing of HTTP or MCP.
"""

from memhubd.service.access import (
    View,
    awaited_view_for,
    require_scope,
    state_database_failure,
    view_for,
    visible_workspaces,
)
from memhubd.service.admin import (
    add_workspace,
    create_token,
    list_tokens,
    reload_workspace,
    remove_workspace,
    revoke_token,
)
from memhubd.service.reads import (
    check,
    explain,
    file_content,
    files,
    lint,
    list_declarations,
    memory_map,
    query,
    status,
    types,
    vocabulary,
    workspace,
    workspace_summary,
    workspaces,
)
from memhubd.service.review import (
    approve_proposal,
    list_proposals,
    propose,
    reject_proposal,
    review_host,
    show_proposal,
)

__all__ = [
    "View",
    "state_database_failure",
    "add_workspace",
    "approve_proposal",
    "check",
    "create_token",
    "explain",
    "file_content",
    "files",
    "lint",
    "list_declarations",
    "list_proposals",
    "list_tokens",
    "memory_map",
    "propose",
    "query",
    "reject_proposal",
    "reload_workspace",
    "remove_workspace",
    "require_scope",
    "review_host",
    "revoke_token",
    "show_proposal",
    "status",
    "types",
    "view_for",
    "awaited_view_for",
    "vocabulary",
    "visible_workspaces",
    "workspace",
    "workspace_summary",
    "workspaces",
]
