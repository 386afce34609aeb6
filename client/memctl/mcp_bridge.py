"""`memctl mcp`: a stdio MCP server for clients that only speak stdio, forwarding every
JSON-RPC message to the daemon's `/mcp` endpoint and writing each reply to stdout.

It relays bytes and adds the HTTP headers streamable HTTP needs; it must not interpret
tools or payloads (and must not import the MCP SDK). Failures become JSON-RPC errors
on stdout for the request that failed, with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from memctl import __version__
from memctl.config import ConfigError, resolve_settings
from memctl.transport import (
    CONNECT_TIMEOUT,
    DaemonUnreachable,
    InvalidTarget,
    Target,
    describe_failure,
    parse_target,
)
from memhub_protocol.errors import MCP_REFUSED

if TYPE_CHECKING:
    import httpx

MCP_PATH = "/mcp"
READ_TIMEOUT = 300.0  # a tool call may take long; the client has its own timeouts
WORKERS = 8
INPUT_CHUNK = 64 * 1024
# The longest line relayed: far above any body the daemon accepts (`max_body_bytes`).
MAX_LINE_BYTES = 64 * 1024 * 1024
PARSE_ERROR = -32700
DAEMON_UNREACHABLE = -32000
DAEMON_REFUSED = MCP_REFUSED  # the daemon's code for a request refused before MCP
META_VERSION = "io.modelcontextprotocol/protocolVersion"
# The method -> params key mirrored in the Mcp-Name header (modern protocol routing).
NAMED_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


@dataclass
class Relay:
    """One daemon connection and what the HTTP side remembers between messages.

    A reply that cannot be written (stdout closed, its reader gone, a full disk) ends
    the relay: `output_error` keeps why, and `wake_fd`, when set, wakes the stdin reader.
    """

    target: Target
    client: httpx.Client
    stdout: BinaryIO
    stderr: TextIO
    protocol_version: str | None = None  # negotiated by `initialize`
    session_id: str | None = None  # only when the daemon runs stateful sessions
    lock: threading.Lock = field(default_factory=threading.Lock)
    output_error: OSError | None = None
    wake_fd: int | None = None

    def write(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.lock:
            if self.output_error is not None:
                return  # the output is gone: the relay is stopping
            try:
                self.stdout.write(line.encode("utf-8"))
                self.stdout.flush()
            except OSError as error:
                self.output_error = error
                if self.wake_fd is not None:
                    os.write(self.wake_fd, b"x")

    @property
    def stopped(self) -> bool:
        return self.output_error is not None

    def warn(self, text: str) -> None:
        with self.lock:
            print(f"memctl mcp: {text}", file=self.stderr, flush=True)


def open_client(target: Target, token: str | None) -> httpx.Client:
    import httpx  # here, not at the top: every memctl command imports this module

    headers: dict[str, str | bytes] = {
        "User-Agent": f"memctl/{__version__} (mcp bridge)",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if token:
        # As bytes: a token of any header-safe character (up to U+00FF, as the other
        # commands send it) reaches the daemon, which refuses it with a JSON-RPC error,
        # where httpx would raise on a text value that is not ASCII.
        headers["Authorization"] = f"Bearer {token}".encode("latin-1")
    transport = httpx.HTTPTransport(uds=target.socket_path) if target.socket_path else None
    return httpx.Client(
        base_url=target.base_url,
        headers=headers,
        timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
        transport=transport,
    )


def encode_header_value(value: str) -> str:
    """Header-safe text: printable ASCII as is, anything else as `=?base64?...?=`."""
    import base64

    printable = all(" " <= ch <= "~" for ch in value) and value == value.strip()
    if printable and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def routing_headers(message: Any, relay: Relay) -> dict[str, str]:
    """The headers streamable HTTP expects beside the body, derived from the message."""
    headers: dict[str, str] = {}
    if relay.session_id:
        headers["Mcp-Session-Id"] = relay.session_id
    if not isinstance(message, dict):
        return headers
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    method = message.get("method")
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    if isinstance(version, str):
        # A per-request envelope (protocol 2026-07-28 and later) also routes by method and name.
        headers["MCP-Protocol-Version"] = version
        if isinstance(method, str):
            headers["Mcp-Method"] = method
            name = params.get(NAMED_PARAM.get(method, ""))  # type: ignore[union-attr]
            if isinstance(name, str):
                headers["Mcp-Name"] = encode_header_value(name)
    elif relay.protocol_version and method != "initialize":
        headers["MCP-Protocol-Version"] = relay.protocol_version
    return headers


def error_reply(message: Any, code: int, text: str, data: Any = None) -> dict[str, Any] | None:
    """A JSON-RPC error for `message`, or None when it was a notification (no id)."""
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return None
    error: dict[str, Any] = {"code": code, "message": text}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": message["id"], "error": error}


def replies_from(response: httpx.Response) -> list[Any]:
    """The JSON-RPC messages in a response: one JSON body, or the data of SSE events."""
    if not response.content:
        return []
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        return _sse_messages(response.text)
    try:
        body = response.json()
    except ValueError:
        return []
    if isinstance(body, list):
        return [item for item in body if _is_jsonrpc(item)]
    return [body] if _is_jsonrpc(body) else []


def _is_jsonrpc(value: Any) -> bool:
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0"


def _sse_messages(stream: str) -> list[Any]:
    messages, data = [], []
    for line in [*stream.splitlines(), ""]:
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line and data:
            try:
                item = json.loads("\n".join(data))
            except ValueError:
                item = None
            if _is_jsonrpc(item):
                messages.append(item)
            data = []
    return messages


def forward(relay: Relay, raw: bytes) -> None:
    """Send one line from stdin to the daemon and write what comes back."""
    import httpx

    try:
        message = json.loads(raw)
    except ValueError as error:
        relay.write(
            {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": str(error)}}
        )
        return
    try:
        response = relay.client.post(MCP_PATH, content=raw, headers=routing_headers(message, relay))
    except httpx.TransportError as error:
        problem = DaemonUnreachable(relay.target, describe_failure(error, READ_TIMEOUT))
        relay.warn(problem.line.removeprefix("memctl: "))
        reply = error_reply(message, DAEMON_UNREACHABLE, problem.line.removeprefix("memctl: "))
        if reply is not None:
            relay.write(reply)
        return
    replies = replies_from(response)
    _remember(relay, message, response, replies)
    refusal = _daemon_refusal(response, replies)
    if refusal is not None:
        _refused(relay, message, response, refusal)
    elif replies:
        for reply in replies:
            relay.write(reply)
    elif response.status_code >= 400:
        _refused(relay, message, response)


def _remember(relay: Relay, message: Any, response: httpx.Response, replies: list[Any]) -> None:
    session = response.headers.get("mcp-session-id")
    if session:
        relay.session_id = session
    if isinstance(message, dict) and message.get("method") == "initialize":
        for reply in replies:
            version = (reply.get("result") or {}).get("protocolVersion")
            if isinstance(version, str):
                relay.protocol_version = version


def _daemon_refusal(response: httpx.Response, replies: list[Any]) -> dict[str, Any] | None:
    """The daemon's JSON-RPC error for a request it refused before MCP (its 401, 413...)."""
    if response.status_code < 400 or len(replies) != 1:
        return None
    error = replies[0].get("error")
    if isinstance(error, dict) and error.get("code") == DAEMON_REFUSED:
        return error
    return None


def _refused(
    relay: Relay, message: Any, response: httpx.Response, refusal: dict[str, Any] | None = None
) -> None:
    """An HTTP error the daemon refused with (its JSON-RPC `refusal`, or an envelope from
    a daemon before those), or one without a JSON-RPC body, answered for `message`.

    The line names the daemon's address, as an unreachable daemon's does: a client's
    log then shows which daemon refused (a token meant for another one, say)."""
    if refusal is not None:
        envelope, text = refusal.get("data"), refusal.get("message")
    else:
        try:
            envelope = response.json()
        except ValueError:
            envelope = {"body": response.text[:500]}
        detail = envelope.get("error", {}) if isinstance(envelope, dict) else {}
        text = detail.get("message") if isinstance(detail, dict) else None
    line = (
        f"memhubd at {relay.target.url} answered {response.status_code}: "
        f"{text or response.reason_phrase}"
    )
    relay.warn(line)
    reply = error_reply(message, DAEMON_REFUSED, line, envelope)
    if reply is not None:
        relay.write(reply)


def run_bridge(
    target: Target | str,
    token: str | None,
    *,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Relay newline-delimited JSON-RPC from stdin to the daemon until stdin closes: 0.

    A reply that cannot be written stops the relay: nothing more is read or sent, and
    the write's OSError is raised once the requests already sent are answered (memctl
    says `cannot write output`, or stops quietly when the reader went away: exit 1).
    """
    target = parse_target(target) if isinstance(target, str) else target
    source = stdin or sys.stdin.buffer
    relay = Relay(
        target, open_client(target, token), stdout or sys.stdout.buffer, stderr or sys.stderr
    )
    # Requests run side by side (a slow query must not hold up a ping); the replies
    # carry their ids, so their order on stdout does not matter.
    with relay.client, ThreadPoolExecutor(WORKERS, thread_name_prefix="mcp-bridge") as pool:
        for raw in _input_lines(source, relay):
            if relay.stopped:
                break
            if raw.strip():
                pool.submit(_forward_safely, relay, raw)
        if relay.stopped:
            pool.shutdown(cancel_futures=True)  # what was not sent yet is not sent
    if relay.output_error is not None:
        raise relay.output_error
    return 0


def _input_lines(source: BinaryIO, relay: Relay) -> Iterator[bytes]:
    """The lines of `source`, until its end or until the relay stops.

    A real descriptor is read directly, waiting on it and on a wake-up pipe together,
    so that output lost while stdin is idle ends the relay at once rather than at the
    client's next message. A stream without one (a test's BytesIO) is read by lines.
    """
    try:
        fd = source.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: no descriptor
        fd = None
    if fd is None or not hasattr(select, "poll"):
        dropping = False
        for raw in iter(lambda: source.readline(MAX_LINE_BYTES + 1), b""):
            if relay.stopped:
                return
            if dropping or len(raw) > MAX_LINE_BYTES:
                if not dropping:
                    _too_long(relay)
                dropping = not raw.endswith(b"\n")
                continue
            yield raw
        return
    wake_read, wake_write = os.pipe()
    with relay.lock:
        relay.wake_fd = wake_write
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(wake_read, select.POLLIN)
        pending = bytearray()
        dropping = False  # the rest of a line too long to relay, up to its newline
        while not relay.stopped:
            if any(ready == wake_read for ready, _ in poller.poll()):
                return
            chunk = os.read(fd, INPUT_CHUNK)
            if not chunk:
                break
            if dropping:
                if b"\n" not in chunk:
                    continue
                chunk = chunk.split(b"\n", 1)[1]
                dropping = False
            pending += chunk
            if b"\n" in chunk:
                *lines, rest = bytes(pending).split(b"\n")
                pending = bytearray(rest)
                for line in lines:
                    if len(line) > MAX_LINE_BYTES:
                        _too_long(relay)
                        continue
                    yield line + b"\n"
            if len(pending) > MAX_LINE_BYTES:
                _too_long(relay)
                pending.clear()
                dropping = True
        if pending and not dropping and not relay.stopped:
            yield bytes(pending)
    finally:
        with relay.lock:  # no write may reach the pipe's descriptor once it is closed
            relay.wake_fd = None
        os.close(wake_read)
        os.close(wake_write)


def _too_long(relay: Relay) -> None:
    """Answer a line too long to relay (the daemon refuses far shorter bodies) instead
    of holding it: a JSON-RPC parse error, as its id cannot be known."""
    message = f"message longer than {MAX_LINE_BYTES} bytes; not sent"
    relay.write({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": message}})


def _forward_safely(relay: Relay, raw: bytes) -> None:
    if relay.stopped:
        return
    try:
        forward(relay, raw)
    except Exception as error:  # a worker must never die silently
        relay.warn(f"internal error: {error!r}")


def cmd_mcp(session: Any, args: argparse.Namespace) -> int:
    """The `memctl mcp` handler: the url and token come from memctl's usual settings."""
    from memctl.commands import STDIN_CLOSED, CommandFailure

    if sys.stdin is None:  # started with stdin closed: there is nothing to relay
        raise CommandFailure(STDIN_CLOSED)
    return run_bridge(session.client.transport.target, session.settings.token)


def add_mcp_command(
    subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser] | None = None
) -> argparse.ArgumentParser:
    summary = "serve MCP on stdin/stdout, relayed to the daemon's /mcp endpoint"
    parser = subparsers.add_parser(
        "mcp",
        parents=parents or [],
        help=summary,
        description=summary,
        epilog="--url and --token choose the daemon and the identity. -w and --timeout change "
        "nothing here: each tool call names its workspace, and a request waits up to "
        f"{READ_TIMEOUT:g} seconds. --json only adds the error envelope on stdout to a failure "
        "before relaying starts.",
    )
    parser.set_defaults(handler=cmd_mcp)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python -m memctl.mcp_bridge [--url URL] [--token TOKEN]`."""
    parser = argparse.ArgumentParser(prog="memctl mcp", description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="daemon address (env MEMHUB_URL; default: the local socket)")
    parser.add_argument("--token", help="bearer token (env MEMHUB_TOKEN)")
    args = parser.parse_args(argv)
    try:
        settings = resolve_settings(url=args.url, token=args.token)
        target = parse_target(settings.url)
    except (ConfigError, InvalidTarget) as error:
        print(f"memctl: {error}", file=sys.stderr)
        return 2
    if sys.stdin is None:
        print("memctl: standard input is closed", file=sys.stderr)
        return 2
    from memhub_protocol.commandline import exit_quietly_on_closed_stdout

    return exit_quietly_on_closed_stdout(lambda: run_bridge(target, settings.token), "memctl")


if __name__ == "__main__":
    sys.exit(main())
