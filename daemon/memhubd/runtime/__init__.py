"""The daemon's runtime plumbing: configuration, state directory, workspace
watching and logging (and, beside them, the snapshot builder and workspace hub).

Nothing here answers a query; it keeps the sources loaded and the process running.
"""

from memhubd.runtime.config import (
    ConfigError,
    DaemonConfig,
    Limits,
    McpConfig,
    WatchConfig,
    add_serve_arguments,
    config_from_args,
    is_loopback_host,
    load_config,
    overrides_from_args,
    parse_workspace_flag,
)
from memhubd.runtime.logging import configure_logging, redact_text
from memhubd.runtime.state import (
    StateDir,
    StateFileError,
    WorkspaceConflict,
    WorkspaceList,
    file_lock,
    merge_workspaces,
    write_file_atomic,
)
from memhubd.runtime.watcher import watch_workspace, workspace_signature

__all__ = [
    "ConfigError",
    "DaemonConfig",
    "Limits",
    "McpConfig",
    "StateDir",
    "StateFileError",
    "WatchConfig",
    "WorkspaceConflict",
    "WorkspaceList",
    "add_serve_arguments",
    "config_from_args",
    "configure_logging",
    "file_lock",
    "is_loopback_host",
    "load_config",
    "merge_workspaces",
    "overrides_from_args",
    "parse_workspace_flag",
    "redact_text",
    "watch_workspace",
    "workspace_signature",
    "write_file_atomic",
]
