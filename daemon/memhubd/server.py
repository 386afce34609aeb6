"""The daemon process: one uvicorn server on a pre-bound TCP socket and a
pre-bound Unix socket, a lifespan that owns the workspace hub, and a graceful
shutdown on SIGTERM/SIGINT that lets in-flight requests finish.
"""

from __future__ import annotations

import contextlib
import grp
import os
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
import uvicorn

from memhubd import __version__
from memhubd.api import ApiContext, build_app
from memhubd.auth.tokens import TokenStore
from memhubd.runtime.config import ConfigError, DaemonConfig, is_loopback_host
from memhubd.runtime.hub import Hub, WatchSettings
from memhubd.runtime.state import StateDir, merge_workspaces

log = structlog.get_logger("memhubd.server")


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    """Where a started daemon listens."""

    url: str
    socket_path: str
    port: int
    workspaces: tuple[str, ...]


def bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on such sockets (else ~40 ms stalls).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(512)
    sock.setblocking(False)
    return sock


def bind_unix(path: str, mode: int, group: str | None) -> socket.socket:
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a stale socket left by a crash
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old_umask)
    if group:
        os.chown(path, -1, grp.getgrnam(group).gr_gid)
    os.chmod(path, mode)
    sock.listen(512)
    sock.setblocking(False)
    return sock


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals are handled by anyio in run_daemon; uvicorn must not replace them.
        yield


def check_bind_allowed(config: DaemonConfig, tokens: TokenStore) -> None:
    if not is_loopback_host(config.host) and not tokens.has_tokens():
        raise ConfigError(
            f"refusing to listen on {config.host}: no token exists yet, so anyone on the "
            "network could read memory. Create one first: memhubd token create NAME --scopes ..."
        )


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def run_daemon(
    config: DaemonConfig,
    *,
    handle_signals: bool = True,
    on_ready: Callable[[DaemonInfo], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Serve until a signal (or `stop`) arrives; return the exit code."""
    state = StateDir(config.state_dir)
    tokens = TokenStore(state.path)
    bootstrapped = tokens.bootstrap_from_env()
    if bootstrapped is not None:
        log.info("bootstrap token registered", token=bootstrapped.name)
    check_bind_allowed(config, tokens)
    membership = state.workspace_list()
    workspaces = merge_workspaces(config.workspaces, membership.load())
    watch = WatchSettings(
        debounce_ms=config.watch.debounce_ms,
        rescan_interval_s=config.watch.rescan_interval_s,
        force_polling=config.watch.force_polling,
    )
    hub = Hub(watch=watch, membership=membership, limits=config.limits)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with hub.running(workspaces):
            yield

    context = ApiContext(
        hub=hub,
        tokens=tokens,
        max_body_bytes=config.limits.max_body_bytes,
        max_result_bytes=config.limits.max_result_bytes,
        lifespan=lifespan,
    )
    from memhubd.mcp import mount_mcp

    mount_mcp(context, config.mcp)  # /mcp on both listeners unless disabled; wraps the lifespan
    app = build_app(context)
    sockets = [bind_tcp(config.host, config.port)]
    socket_path = config.socket_path
    if socket_path:
        sockets.append(bind_unix(socket_path, config.socket_mode, config.socket_group))
    port = sockets[0].getsockname()[1]
    server = _Server(
        uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            server_header=False,
            proxy_headers=False,
        )
    )
    info = DaemonInfo(_url(config.host, port), socket_path, port, tuple(sorted(workspaces)))
    try:
        async with anyio.create_task_group() as tg:
            if handle_signals:
                tg.start_soon(_stop_on_signal, server)
            if stop is not None:
                tg.start_soon(_stop_on_event, server, stop)
            tg.start_soon(_announce, server, info, on_ready)
            await server.serve(sockets=sockets)
            tg.cancel_scope.cancel()
    finally:
        for sock in sockets:
            sock.close()
        if socket_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(socket_path)
    log.info("stopped")
    return 0 if server.started else 1


async def _stop_on_signal(server: uvicorn.Server) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("shutting down", signal=signal.Signals(signum).name)
            server.should_exit = True
            return


async def _stop_on_event(server: uvicorn.Server, stop: threading.Event) -> None:
    while not stop.is_set():
        await anyio.sleep(0.05)
    server.should_exit = True


async def _announce(
    server: uvicorn.Server, info: DaemonInfo, on_ready: Callable[[DaemonInfo], None] | None
) -> None:
    while not server.started:
        await anyio.sleep(0.02)
    log.info("listening", url=info.url, socket=info.socket_path, workspaces=list(info.workspaces))
    if on_ready is not None:
        on_ready(info)


def print_banner(info: DaemonInfo, stream: Any = None) -> None:
    """The human greeting `memhubd serve` prints on a terminal (and `make run` always)."""
    out = stream or sys.stderr
        vanish_grace_ms=config.watch.vanish_grace_ms,
        settle_ms=config.watch.settle_ms,
    names = ", ".join(info.workspaces) or "(none yet)"
    lines = [
        f"memhubd {__version__}: serving {len(info.workspaces)} workspace(s): {names}",
        f"  HTTP    {info.url}    (every request needs a bearer token)",
    ]
    if info.socket_path:
        lines.append(f"  socket  unix://{info.socket_path}    (local operator: no token needed)")
        lines.append(f"  try     memctl --url unix://{info.socket_path} status")
    lines.append("  token   memhubd token create my-agent --scopes read:summary,read:search")
    lines.append("Press Ctrl-C to stop.")
    print("\n".join(lines), file=out, flush=True)
