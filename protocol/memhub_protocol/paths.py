"""Where the daemon keeps its state and socket by default.

Both sides need the same answer (memhubd binds the socket, memctl connects to
it), so it is part of the contract rather than computed twice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

STATE_DIR_ENV = "MEMHUB_STATE_DIR"
RUNTIME_DIR_ENV = "XDG_RUNTIME_DIR"
SOCKET_NAME = "memhubd.sock"


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def default_state_dir(env: Mapping[str, str] | None = None) -> str:
    """`$MEMHUB_STATE_DIR`, else `~/.local/share/memhub` (absolute)."""
    env = os.environ if env is None else env
    configured = env.get(STATE_DIR_ENV, "").strip()
    if not configured:
        return os.path.join(_home(env), ".local", "share", "memhub")
    if configured == "~" or configured.startswith("~/"):
        configured = _home(env) + configured[1:]
    return os.path.abspath(configured)


def default_socket_path(state_dir: str, env: Mapping[str, str] | None = None) -> str:
    """`$XDG_RUNTIME_DIR/memhub/memhubd.sock`, else the socket sits in the state dir."""
    env = os.environ if env is None else env
    runtime_dir = env.get(RUNTIME_DIR_ENV, "").strip()
    if runtime_dir:
        return os.path.join(os.path.abspath(runtime_dir), "memhub", SOCKET_NAME)
    return os.path.join(state_dir, SOCKET_NAME)
