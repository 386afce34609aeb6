"""Where memhubd listens and how to talk to it: target parsing, and one connection.

Plain request/response calls over `http://` and `unix://` go through the standard
library's `http.client` (importing httpx costs more than a whole query); `https://`
targets and streams (events) use httpx, imported only then. It sends requests and
turns connection failures into DaemonUnreachable; it must not know any route, payload
or error envelope (that is `client.py`).
"""

from __future__ import annotations

import errno
import json as jsonlib
import os
import select
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from memctl import __version__

if TYPE_CHECKING:
    import http.client

    import httpx

# Over a Unix socket there is no host; the daemon sees this one in requests.
SOCKET_BASE_URL = "http://memhub"
DEFAULT_TIMEOUT = 30.0
CONNECT_TIMEOUT = 5.0
_HINT = "is the daemon running? (make run / memhubd serve)"


class InvalidTarget(ValueError):
    """The --url (or MEMHUB_URL, or config `url`) is not something memctl can connect to."""


class DaemonUnreachable(Exception):
    """Nothing answered at the target; `line` is the one line to show the user."""

    def __init__(self, target: Target, reason: str) -> None:
        self.target = target
        self.reason = reason
        self.line = f"memctl: cannot reach memhubd at {target.url} ({reason}); {_HINT}"
        super().__init__(self.line)


@dataclass(frozen=True, slots=True)
class Target:
    """A daemon address: `url` as the user wrote it, `base_url` for requests,
    `socket_path` when the connection goes through a Unix socket."""

    url: str
    base_url: str
    socket_path: str | None = None


def parse_target(text: str) -> Target:
    """Accept `http://host:port`, `https://host[:port][/prefix]` or `unix:///abs/path.sock`."""
    text = text.strip()
    if text.startswith("unix:"):
        return _unix_target(text)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise InvalidTarget(
            f"unsupported daemon url {text!r}: use http://HOST:PORT, https://HOST "
            "or unix:///ABSOLUTE/PATH.sock"
        )
    if not parts.hostname:
        raise InvalidTarget(f"daemon url {text!r} has no host")
    try:
        parts.port  # noqa: B018 - validates the port number
    except ValueError as error:
        raise InvalidTarget(f"daemon url {text!r} has a bad port: {error}") from error
    if parts.query or parts.fragment:
        raise InvalidTarget(f"daemon url {text!r} must not carry a query or fragment")
    return Target(url=text, base_url=text.rstrip("/"))


def _unix_target(text: str) -> Target:
    if not text.startswith("unix://"):
        raise InvalidTarget(f"unix socket url {text!r} must look like unix:///ABSOLUTE/PATH.sock")
    path = text[len("unix://") :]
    if not path.startswith("/"):
        raise InvalidTarget(f"unix socket path in {text!r} must be absolute")
    if path.endswith("/"):
        raise InvalidTarget(f"unix socket url {text!r} names a directory, not a socket file")
    return Target(url=text, base_url=SOCKET_BASE_URL, socket_path=path)


def socket_url(path: str) -> str:
    """The `unix://` url of a socket path (made absolute)."""
    return "unix://" + os.path.abspath(path)


class Response:
    """A complete answer: what `client.py` reads of one (as httpx's Response names it)."""

    def __init__(
        self, status_code: int, reason_phrase: str, headers: Mapping[str, str], content: bytes
    ) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode(_charset(self.headers.get("content-type", "")), "replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)


def _charset(content_type: str) -> str:
    for item in content_type.split(";")[1:]:
        name, _, value = item.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip('"')
    return "utf-8"


class Transport:
    """One connection to the daemon: sends requests, never interprets answers."""

    def __init__(
        self, target: Target, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.target = target
        self.timeout = timeout
        self._headers = {"User-Agent": f"memctl/{__version__}"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._connection: http.client.HTTPConnection | None = None
        self._httpx: httpx.Client | None = None
        parts = urlsplit(target.base_url)
        self._prefix = parts.path.rstrip("/")
        self._plain = target.socket_path is not None or parts.scheme == "http"

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        accept: str = "application/json",
    ) -> Any:
        """The complete answer (a `Response`, or httpx's for an https target)."""
        self._check_socket()
        if not self._plain:
            return self._httpx_request(method, path, params, json, accept)
        url = self._prefix + path + (f"?{urlencode(params)}" if params else "")
        headers = {**self._headers, "Accept": accept}
        body = None
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        connection = self._open()
        try:
            connection.request(method, url, body=body, headers=headers)
            answer = connection.getresponse()
            content = answer.read()
        except (OSError, _http_errors()) as error:
            self._drop()
            raise self.unreachable(error) from error
        if answer.will_close:
            self._drop()
        return Response(answer.status, answer.reason, answer.headers, content)

    def _open(self) -> http.client.HTTPConnection:
        connection = self._connection
        if connection is not None and _closed_by_peer(connection):
            self._drop()  # the daemon closed an idle keep-alive connection
            connection = None
        if connection is None:
            connection = _connection(self.target, self.timeout)
            try:
                connection.connect()
            except OSError as error:
                raise self.unreachable(_ConnectFailure(error)) from error
            if connection.sock is not None:
                connection.sock.settimeout(self.timeout)
            self._connection = connection
        return connection

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _client(self) -> httpx.Client:
        import httpx

        if self._httpx is None:
            socket_path = self.target.socket_path
            self._httpx = httpx.Client(
                base_url=self.target.base_url,
                headers=self._headers,
                timeout=httpx.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT, self.timeout)),
                transport=httpx.HTTPTransport(uds=socket_path) if socket_path else None,
            )
        return self._httpx

    def _httpx_request(
        self, method: str, path: str, params: Any, json: Any, accept: str
    ) -> httpx.Response:
        import httpx

        try:
            return self._client().request(
                method, path, params=params, json=json, headers={"Accept": accept}
            )
        except httpx.TransportError as error:
            raise self.unreachable(error) from error

    @contextmanager
    def stream(self, method: str, path: str, *, accept: str) -> Iterator[httpx.Response]:
        """A response whose body is read as it arrives; no read timeout (events may be rare)."""
        import httpx

        self._check_socket()
        timeout = httpx.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT, self.timeout), read=None)
        try:
            with self._client().stream(
                method, path, headers={"Accept": accept}, timeout=timeout
            ) as response:
                yield response
        except httpx.TransportError as error:
            raise self.unreachable(error) from error

    def unreachable(self, error: BaseException) -> DaemonUnreachable:
        return DaemonUnreachable(self.target, describe_failure(error, self.timeout))

    def close(self) -> None:
        self._drop()
        if self._httpx is not None:
            self._httpx.close()
            self._httpx = None

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_socket(self) -> None:
        # A missing socket file is the common case of "daemon not running": say so plainly
        # rather than relying on the errno the connect attempt happens to raise.
        path = self.target.socket_path
        if path is not None and not os.path.exists(path):
            raise DaemonUnreachable(self.target, "no such socket")


class _ConnectFailure(Exception):
    """A failed connect, so that a timeout there reads "connection timed out"."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.__cause__ = error


def _http_errors() -> type[Exception]:
    import http.client

    return http.client.HTTPException


def _connection(target: Target, timeout: float) -> http.client.HTTPConnection:
    import http.client

    connect_timeout = min(CONNECT_TIMEOUT, timeout)
    if target.socket_path is None:
        parts = urlsplit(target.base_url)
        return http.client.HTTPConnection(
            parts.hostname or "", parts.port or 80, timeout=connect_timeout
        )
    path = target.socket_path

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(connect_timeout)
            try:
                sock.connect(path)
            except OSError:
                sock.close()
                raise
            self.sock = sock

    return UnixConnection("memhub", timeout=connect_timeout)


def _closed_by_peer(connection: http.client.HTTPConnection) -> bool:
    """An idle connection the other end has closed reads as ready (EOF) at once."""
    sock = connection.sock
    if sock is None:
        return True
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def describe_failure(error: BaseException, timeout: float) -> str:
    """A few words on why a connection failed, from the exception chain."""
    if isinstance(error, _ConnectFailure) and isinstance(error.__cause__, TimeoutError):
        return "connection timed out"
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g}s"
    if type(error).__module__.startswith("httpx"):
        import httpx  # only an https target or a stream got this far with httpx

        if isinstance(error, httpx.ConnectTimeout):
            return "connection timed out"
        if isinstance(error, httpx.TimeoutException):
            return f"no answer within {timeout:g}s"
        if isinstance(error, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return "connection closed by the daemon"
    elif _closed(error):
        return "connection closed by the daemon"
    words = {
        errno.ENOENT: "no such socket",
        errno.ECONNREFUSED: "connection refused",
        errno.EACCES: "permission denied",
        errno.ENOTSOCK: "not a socket",
        errno.EHOSTUNREACH: "host unreachable",
        errno.ENETUNREACH: "network unreachable",
    }
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno in words:
            return words[cause.errno]
        cause = cause.__cause__ or cause.__context__
    text = str(error).strip()
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return text.splitlines()[0] if text else type(error).__name__


def _closed(error: BaseException) -> bool:
    if isinstance(error, ConnectionResetError | BrokenPipeError | ConnectionAbortedError):
        return True
    # RemoteDisconnected, BadStatusLine, IncompleteRead: the answer was cut short.
    return type(error).__module__ == "http.client"
