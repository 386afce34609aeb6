"""The daemon process: one uvicorn server on a pre-bound TCP socket and a
pre-bound Unix socket, a lifespan that owns the workspace hub, and a graceful
shutdown on SIGTERM/SIGINT that lets in-flight requests finish (review work still
waiting for a workspace's review lock gives up, so that nothing is written after).

A daemon never takes over an address another one serves: a live Unix socket or a
busy TCP port stops startup with a message naming the address; on exit it removes
only the socket file it created itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import grp
import os
import shlex
import signal
import socket
import stat
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import structlog
import uvicorn

from memhubd import __version__
from memhubd.api import ApiContext, build_app
from memhubd.api.app import import_route_modules
from memhubd.api.connection import REFUSED_ROUTE, ConnectionLimits, GuardedHttpToolsProtocol
from memhubd.auth.tokens import TokenStore
from memhubd.runtime.cache import ParseCache, discard_prefetched
from memhubd.runtime.config import ConfigError, DaemonConfig, McpConfig, is_loopback_host
from memhubd.runtime.hub import Hub, WatchSettings
from memhubd.runtime.state import (
    PARSE_CACHE_DIR,
    StateDir,
    StateFileError,
    hold_state_dir,
    merge_workspaces,
    release_state_dir,
)
from memhubd.service.access import stopping_with, views_to_save, warm_views
from memhubd.service.cowork import open_cowork

log = structlog.get_logger("memhubd.server")

# Where `memhubd.mcp` serves MCP (its MCP_PATH and ROUTE_NAME), named here so that a
# start need not import the MCP SDK to route to it.
MCP_PATH = "/mcp"
MCP_ROUTE_NAME = "mcp"
# How long after the workspaces are served the MCP SDK is imported, unless a request
# to /mcp asks for it first: the first answers of a start do not share the GIL with it.
# It also waits for the start's warm step (the views of the stored tokens' role sets),
# at most `DEFERRED_WAIT_AT_MOST_S`.
MCP_IMPORT_DELAY_S = 1.0
DEFERRED_WAIT_AT_MOST_S = 60.0
# The same for what else a start defers (the recall shelf, the route modules of recall,
# graph, cowork and diary): loaded this long after the workspaces are served, or by
# their first use if that comes sooner.
DEFERRED_IMPORT_DELAY_S = MCP_IMPORT_DELAY_S
# The pause before recall's transcript watches start again after they failed, doubled
# after each failure up to the second value (each start scans the directories again).
RECALL_WATCH_RETRY_S = 5.0
RECALL_WATCH_RETRY_AT_MOST_S = 300.0


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    """Where a started daemon listens."""

    url: str
    socket_path: str
    port: int
    workspaces: tuple[str, ...]


class AddressInUse(ConfigError):
    """Another process already serves the address this daemon was asked to use."""


def bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on such sockets (else ~40 ms stalls).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(512)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise AddressInUse(
                f"cannot listen on {_url(host, port)}: the address is already in use "
                "(another memhubd, or another program). Stop it, or choose another port: "
                "memhubd serve --port N (0 picks any free port)"
            ) from None
        if isinstance(error, socket.gaierror):  # no address: named by the caller
            raise
        raise ConfigError(
            f"cannot listen on {_url(host, port)} (host and port): {error.strerror or error}"
        ) from None
    sock.setblocking(False)
    return sock


@dataclass(frozen=True, slots=True)
class UnixListener:
    """A bound Unix socket and the identity of the file it created (to remove only that)."""

    sock: socket.socket
    path: str
    device: int
    inode: int

    def remove_file(self) -> None:
        """Unlink the socket file, unless another process has replaced it since."""
        try:
            current = os.lstat(self.path)
        except FileNotFoundError:
            return
        if (current.st_dev, current.st_ino) == (self.device, self.inode):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def bind_unix(path: str, mode: int, group: str | None) -> UnixListener:
    """The socket at `path`, made and listening; a failure names `socket_path` and why."""
    try:
        return _bind_unix(path, mode, group)
    except OSError as error:
        raise ConfigError(f"socket_path {path}: cannot listen there: {_why(error, path)}") from None


def _why(error: OSError, path: str) -> str:
    reason = error.strerror or str(error)
    place = os.fsdecode(error.filename) if error.filename else ""
    if error.errno in (errno.EEXIST, errno.ENOTDIR) and place and not os.path.isdir(place):
        return f"{place} is in the way: it is a file, not a directory"
    if error.errno == errno.ENOENT and not place and os.path.isdir(os.path.dirname(path)):
        # bind's ENOENT in a directory that exists: its file system makes no new files
        # (/proc, /sys).
        return f"{reason}: the file system of {os.path.dirname(path)} takes no socket files"
    return f"{reason} ({place})" if place else reason


def _bind_unix(path: str, mode: int, group: str | None) -> UnixListener:
    directory = os.path.dirname(path) or "."
    made = _make_directories(directory)
    if group:
        _let_group_through(directory, grp.getgrnam(group).gr_gid, group, made)
    _clear_stale_socket(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(path)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:  # another daemon won a race for the path
            raise AddressInUse(_socket_in_use(path)) from None
        raise
    finally:
        os.umask(old_umask)
    created = os.lstat(path)
    if group:
        os.chown(path, -1, grp.getgrnam(group).gr_gid)
    os.chmod(path, mode)
    sock.listen(512)
    sock.setblocking(False)
    return UnixListener(sock, path, created.st_dev, created.st_ino)


def _make_directories(directory: str) -> list[Path]:
    """Make `directory` and those above it that are missing, each mode 0700 whatever the
    umask; the ones made, outermost first."""
    missing = []
    place = Path(directory).absolute()
    while not place.is_dir():
        missing.append(place)
        place = place.parent
    made: list[Path] = []
    for place in reversed(missing):
        try:
            place.mkdir(mode=0o700)
        except FileExistsError:
            if not place.is_dir():  # a file in the way: the bind names it
                raise
            continue  # made meanwhile by someone else: not ours to open
        os.chmod(place, 0o700)
        made.append(place)
    return made


def _let_group_through(
    directory: str, gid: int, group: str, made: Sequence[Path] = ()
) -> Path | None:
    """`socket_group` reaches the socket only through directories it may search. Those
    made here for the socket (`made`) get the group and mode 0710 (search, no listing);
    one found that stops the group (this one or one above it) is named in a warning,
    since another's directory is not ours to open, and returned."""
    for place in made:
        os.chown(place, -1, gid)
        os.chmod(place, 0o710)
    for place in (Path(directory).resolve(), *Path(directory).resolve().parents):
        found = place.stat()
        if found.st_mode & 0o001 or (found.st_gid == gid and found.st_mode & 0o010):
            continue
        log.warning(
            "socket group cannot reach the socket",
            group=group,
            directory=str(place),
            fix=f"let the group search it (chgrp {group} + chmod g+x), or move the socket",
        )
        return place
    return None


def _clear_stale_socket(path: str) -> None:
    """Remove a socket file nobody listens on (a crash leftover); refuse anything else."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(found.st_mode):
        raise ConfigError(
            f"cannot create the socket {path}: a file that is not a socket is in the way. "
            "Move it, or choose another path: memhubd serve --socket PATH"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        # Nobody listens: a leftover of a daemon that did not exit cleanly.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    except OSError:
        # A full backlog, a timeout or no permission: someone is there; not ours to delete.
        raise AddressInUse(_socket_in_use(path)) from None
    finally:
        probe.close()
    raise AddressInUse(_socket_in_use(path))


def _socket_in_use(path: str) -> str:
    return (
        f"another daemon is already listening on unix://{path}; this one will not take it "
        f"over. Check it with: memctl --url unix://{path} status. Stop it first, or give "
        "this daemon its own socket: memhubd serve --socket PATH (and --port N)"
    )


class _Server(uvicorn.Server):
    # Run as shutdown begins, before uvicorn waits for open connections: it ends the
    # event streams and the review lock waits, which would otherwise hold the shutdown
    # until its timeout.
    on_shutdown: Callable[[], None] | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals are handled by anyio in run_daemon; uvicorn must not replace them.
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.on_shutdown is not None:
            self.on_shutdown()
        await super().shutdown(sockets)


def _bootstrap(tokens: TokenStore) -> Any:
    """The bootstrap token registered from the environment, if any; a secret that is
    refused stops the start in one line (exit 2), as a bad setting does."""
    from memhubd.auth.tokens import TokenError

    try:
        return tokens.bootstrap_from_env()
    except TokenError as error:
        raise ConfigError(str(error)) from None


def check_tokens_readable(tokens: TokenStore) -> None:
    """A token file the daemon cannot read stops the start, naming it: served anyway,
    every token would be refused while the daemon looked healthy."""
    from memhubd.auth.tokens import TokenError

    try:
        tokens.list()
        impostors = tokens.impostors()
    except TokenError as error:
        remedy = getattr(error, "remedy", "restore it from a backup, or move it aside")
        raise StateFileError(f"{error}; {remedy}") from None
    from memhubd.auth.tokens import WATCHER_NAME

    for name in impostors:
        held_by = (
            "the recall watcher writes watched drawers under this name"
            if name == WATCHER_NAME
            else "the admin audit records the operator under this name"
        )
        log.warning(
            "token refused: its name is reserved",
            token=name,
            reason=f"{held_by}; revoke it "
            "(memhubd token revoke NAME) and create one under another name",
        )


def check_addresses_free(config: DaemonConfig) -> None:
    """Raise `AddressInUse` (or the OSError) when this config's port or socket is taken,
    holding nothing afterwards: for a step that must not run when the start is going
    to be refused (`run-examples --reset` replacing the served copies)."""
    tcp = bind_tcp(config.host, config.port)
    tcp.close()
    if config.socket_path:
        unix = bind_unix(config.socket_path, config.socket_mode, config.socket_group)
        unix.sock.close()
        unix.remove_file()


def check_bind_allowed(config: DaemonConfig, tokens: TokenStore) -> None:
    if not is_loopback_host(config.host) and not tokens.has_tokens():
        raise ConfigError(
            f"refusing to listen on {config.host}: no token exists yet, so anyone on the "
            "network could read memory. Create one first: memhubd token create NAME --scopes ..."
        )


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _view_warmer(tokens: TokenStore) -> Callable[[Any], None]:
    """A hub warmer making each new snapshot's views for the role sets of the stored
    tokens (and those served last) before their callers ask."""

    def warm(snapshot: Any) -> None:
        now = dt.datetime.now(dt.UTC)
        identities = [r.identity() for r in tokens.list() if not r.is_expired(now)]
        warm_views(snapshot, identities)

    return warm


async def run_daemon(
    config: DaemonConfig,
    *,
    handle_signals: bool = True,
    on_ready: Callable[[DaemonInfo], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Serve until a signal (or `stop`) arrives; return the exit code. The state
    directory is this daemon's alone while it runs (`hold_state_dir`)."""
    state = StateDir(config.state_dir)
    hold_state_dir(state)
    try:
        return await _run(config, state, handle_signals, on_ready, stop)
    finally:
        release_state_dir(state)


async def _run(
    config: DaemonConfig,
    state: StateDir,
    handle_signals: bool,
    on_ready: Callable[[DaemonInfo], None] | None,
    stop: threading.Event | None,
) -> int:
    tokens = TokenStore(state.path)
    check_tokens_readable(tokens)
    bootstrapped = _bootstrap(tokens)
    if bootstrapped is not None:
        log.info("bootstrap token registered", token=bootstrapped.name)
    check_bind_allowed(config, tokens)
    membership = state.workspace_list()
    workspaces = merge_workspaces(
        config.workspaces, membership.load(), config.limits.max_workspaces
    )
    watch = WatchSettings(
        debounce_ms=config.watch.debounce_ms,
        rescan_interval_s=config.watch.rescan_interval_s,
        force_polling=config.watch.force_polling,
        vanish_grace_ms=config.watch.vanish_grace_ms,
        settle_ms=config.watch.settle_ms,
    )
    hub = Hub(watch=watch, membership=membership, limits=config.limits)
    shelf = OnDemandShelf(state.recall_dir, config.recall)
    hub.recall = shelf
    hub.cowork = open_cowork(state.path / "cowork", tokens)
    try:
        hub.cache = ParseCache(state.path / PARSE_CACHE_DIR)
    except OSError as error:  # a cache that can always be rebuilt never stops a start
        log.warning("parse cache unavailable: every start parses everything", error=str(error))
    hub.warmers.append(_view_warmer(tokens))
    hub.views_to_save = views_to_save

    mcp: DeferredMcp | None = None

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        # Closes every recall store and cowork inbox on shutdown.
        with contextlib.closing(shelf), contextlib.closing(hub.cowork):
            async with (
                hub.running(workspaces),
                _recall_watching(hub, config.recall.watch),
                anyio.create_task_group() as tg,
            ):
                # Every workspace's first build has read its snapshot file by now: a
                # mapping checked early for one that did not is let go.
                discard_prefetched()
                tg.start_soon(_load_deferred, shelf, hub)
                try:
                    if mcp is None:
                        yield
                        return
                    async with mcp.running():
                        yield
                finally:
                    tg.cancel_scope.cancel()  # the deferred loading, if still waiting

    context = ApiContext(
        hub=hub,
        tokens=tokens,
        max_body_bytes=config.limits.max_body_bytes,
        max_result_bytes=config.limits.max_result_bytes,
        lifespan=lifespan,
    )
    if config.mcp.enabled:  # /mcp on both listeners, the SDK imported after the start
        mcp = DeferredMcp(context, config.mcp)
        context.extra_routes.append(mcp.route())
        context.jsonrpc_paths.add(MCP_PATH)
    app = build_app(context)
    sockets = [bind_tcp(config.host, config.port)]
    socket_path = config.socket_path
    unix: UnixListener | None = None
    if socket_path:
        try:
            unix = bind_unix(socket_path, config.socket_mode, config.socket_group)
        except BaseException:
            sockets[0].close()
            raise
        sockets.append(unix.sock)
    port = sockets[0].getsockname()[1]
    limits = config.limits
    connection_limits = ConnectionLimits(
        max_header_bytes=limits.max_header_bytes,
        max_headers=limits.max_headers,
        read_timeout_s=limits.read_timeout_s,
        write_timeout_s=limits.write_timeout_s,
        on_refused=lambda status: hub.metrics.requests.inc(REFUSED_ROUTE, str(status)),
    )
    server = _Server(
        uvicorn.Config(
            app,
            http=GuardedHttpToolsProtocol.with_limits(connection_limits),
            timeout_keep_alive=limits.keep_alive_timeout_s,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            server_header=False,
            proxy_headers=False,
        )
    )
    stopping = threading.Event()

    def on_shutdown() -> None:
        # Review work not yet holding its lock gives up now, not after the graceful
        # timeout: its thread cannot be cancelled and would write after "stopped".
        stopping.set()
        hub.events.close()

    server.on_shutdown = on_shutdown
    info = DaemonInfo(_url(config.host, port), socket_path, port, tuple(sorted(workspaces)))
    try:
        async with anyio.create_task_group() as tg:
            if handle_signals:
                tg.start_soon(_stop_on_signal, server)
            if stop is not None:
                tg.start_soon(_stop_on_event, server, stop)
            tg.start_soon(_announce, server, info, on_ready)
            with stopping_with(stopping):  # for the requests, started from here
                await server.serve(sockets=sockets)
            tg.cancel_scope.cancel()
    finally:
        for sock in sockets:
            sock.close()
        if unix is not None:
            unix.remove_file()
    log.info("stopped")
    return 0 if server.started else 1


class OnDemandShelf:
    """The recall shelf (`memhubd.recall.shelf.RecallShelf`), opened by its first use:
    opening it imports recall (its store, search and ingest), which a start does not
    need to answer governed memory. Every attribute but `close` is the opened shelf's,
    so the services use it as they would the shelf itself."""

    def __init__(self, directory: Any, config: Any) -> None:
        self._directory = directory
        self._config = config  # memhubd.runtime.config.RecallConfig
        self._shelf: Any = None
        self._lock = threading.Lock()

    def opened(self) -> Any:
        """The shelf, opened first if needed (from any thread)."""
        shelf = self._shelf
        if shelf is None:
            with self._lock:
                if self._shelf is None:
                    from memhubd.service.recall import open_shelf

                    self._shelf = open_shelf(self._directory, self._config)
                shelf = self._shelf
        return shelf

    def __getattr__(self, name: str) -> Any:
        # Only called for names this class does not define.
        return getattr(self.opened(), name)

    def forget(self, workspace: str) -> None:
        """Close a removed workspace's store, if the shelf ever opened one (a shelf
        never opened is not opened for it)."""
        with self._lock:
            shelf = self._shelf
        if shelf is not None:
            shelf.forget(workspace)

    def close(self) -> None:
        """Close the stores of an opened shelf; one never opened has none."""
        with self._lock:
            shelf = self._shelf
        if shelf is not None:
            shelf.close()


@contextlib.asynccontextmanager
async def _recall_watching(hub: Hub, watched: dict[str, tuple[str, ...]]) -> AsyncIterator[None]:
    """Recall's transcript watches for the duration of the block, in a task of their
    own: their failure must not unwind the block around them (the hub's reloads, MCP)."""
    if not watched:
        yield
        return
    async with anyio.create_task_group() as tg:
        tg.start_soon(_keep_watching, hub, watched)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


async def _keep_watching(hub: Hub, watched: dict[str, tuple[str, ...]]) -> None:
    """`memhubd.service.recall.watching` (imported only when a directory is watched),
    started again after a pause whenever it fails: a bug or an unforeseen error in one
    directory's watch stops the transcript ingest for a while, never the daemon."""
    pause = RECALL_WATCH_RETRY_S
    while True:
        started = anyio.current_time()
        try:
            from memhubd.service.recall import watching

            async with watching(hub, watched):
                await anyio.sleep_forever()
        except Exception:
            if anyio.current_time() - started > RECALL_WATCH_RETRY_AT_MOST_S:
                pause = RECALL_WATCH_RETRY_S  # it ran well for a while: a new failure
            log.exception(
                "recall watch failed: transcripts are not ingested until it starts again",
                directories={name: list(roots) for name, roots in watched.items()},
                retry_in_s=pause,
            )
        await anyio.sleep(pause)
        pause = min(pause * 2, RECALL_WATCH_RETRY_AT_MOST_S)


async def _load_deferred(shelf: OnDemandShelf, hub: Hub) -> None:
    """Open the recall shelf and import the deferred route modules once the start's
    first answers are out, so that their first callers do not wait for them."""
    await anyio.sleep(DEFERRED_IMPORT_DELAY_S)

    def load() -> None:
        shelf.opened()
        import_route_modules()

    try:
        async with hub.lint_limiter:  # before the start's lint, as the MCP SDK's import
            await hub.wait_warmed(DEFERRED_WAIT_AT_MOST_S)
            await anyio.to_thread.run_sync(load)
    except Exception:  # their first use tries again, and fails visibly
        log.exception("deferred modules not loaded")


class DeferredMcp:
    """/mcp as `memhubd.mcp.mount_mcp` serves it, mounted after the start: the MCP SDK
    costs about 2 s of CPU to import, so it is imported `MCP_IMPORT_DELAY_S` after the
    workspaces are served, or by the first request to /mcp if that comes sooner (which
    then waits for it). Answers are the mounted endpoint's, whichever mounted it."""

    def __init__(self, context: ApiContext, settings: McpConfig) -> None:
        self._context = context
        self._settings = settings
        self._endpoint: Any = None
        self._lock: anyio.Lock | None = None
        self._tg: Any = None
        self._stopping: anyio.Event | None = None

    def route(self) -> Any:
        from starlette.routing import Route

        return Route(MCP_PATH, self, name=MCP_ROUTE_NAME)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Mounts /mcp soon and runs the SDK's session manager until the block ends."""
        self._lock, self._stopping = anyio.Lock(), anyio.Event()
        soon = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._mount_soon, soon)
            try:
                yield
            finally:
                # The session manager ends by itself once told to (not cancelled midway).
                soon.cancel()
                self._stopping.set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        endpoint = self._endpoint
        if endpoint is None:
            endpoint = await self.mounted()
        await endpoint(scope, receive, send)

    async def mounted(self) -> Any:
        """The mounted endpoint, mounting it first if needed."""
        assert self._lock is not None and self._tg is not None, "not running"
        async with self._lock:
            if self._endpoint is None:
                scratch = await anyio.to_thread.run_sync(self._mount)
                if scratch.lifespan is not None:
                    await self._tg.start(self._serve_sessions, scratch.lifespan)
                self._endpoint = scratch.extra_routes[0].endpoint
                log.debug("mcp mounted")
        return self._endpoint

    def _mount(self) -> ApiContext:
        from memhubd.mcp import mount_mcp

        scratch = dataclasses.replace(self._context, extra_routes=[], lifespan=None)
        mount_mcp(scratch, self._settings)
        return scratch

    async def _serve_sessions(self, lifespan: Any, *, task_status: Any) -> None:
        assert self._stopping is not None
        async with lifespan(None):
            task_status.started()
            await self._stopping.wait()

    async def _mount_soon(self, scope: anyio.CancelScope) -> None:
        with scope:
            await anyio.sleep(MCP_IMPORT_DELAY_S)
            hub = self._context.hub
            try:
                # Taken before the start's lint can take it (that lint begins once the
                # warm step is done): side by side each would take twice as long. A
                # request to /mcp meanwhile mounts it at once, without waiting for this.
                async with hub.lint_limiter:
                    await hub.wait_warmed(DEFERRED_WAIT_AT_MOST_S)
                    await self.mounted()
            except Exception:  # the first request to /mcp tries again, and fails visibly
                log.exception("mcp not mounted")


async def _stop_on_signal(server: uvicorn.Server) -> None:
    # SIGHUP too: a terminal closed under a foreground daemon, or an operator expecting a
    # reload, gets the graceful stop (the configuration is read only at start) - unless
    # it was started ignoring SIGHUP (`nohup`), which asked to outlive the terminal.
    stops = [signal.SIGTERM, signal.SIGINT]
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        stops.append(signal.SIGHUP)
    with anyio.open_signal_receiver(*stops) as signals:
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


def print_banner(info: DaemonInfo, stream: Any = None, state_dir: str | None = None) -> None:
    """The human greeting `memhubd serve` prints on a terminal (and `make run` always).
    `state_dir`: the daemon's, named in the token command unless it is the one that
    command would find by itself."""
    out = stream or sys.stderr
    names = ", ".join(info.workspaces) or "(none yet)"
    lines = [
        f"memhubd {__version__}: serving {len(info.workspaces)} workspace(s): {names}",
        f"  HTTP    {info.url}    (every request needs a bearer token)",
    ]
    if info.socket_path:
        lines.append(f"  socket  unix://{info.socket_path}    (local operator: no token needed)")
        lines.append(f"  try     memctl --url unix://{info.socket_path} status")
    where = ""
    if state_dir is not None:
        from memhub_protocol import paths

        if os.path.abspath(state_dir) != os.path.abspath(paths.default_state_dir()):
            where = f" --state-dir {shlex.quote(state_dir)}"
    lines.append(
        f"  token   memhubd token create my-agent --scopes read:summary,read:search{where}"
    )
    lines.append("Press Ctrl-C to stop.")
    print("\n".join(lines), file=out, flush=True)
