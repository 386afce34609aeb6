"""Where memhubd listens and how to talk to it: target parsing, and one connection.

Plain request/response calls over `http://` and `unix://` are one HTTP/1.1 exchange
on a socket, written here: importing httpx, or even `http.client` (email, ssl), costs
more than the whole query. `https://` targets and streams (events) use httpx, imported
only then. It sends requests and turns connection failures into DaemonUnreachable; it
must not know any route, payload or error envelope (that is `client.py`).
"""

from __future__ import annotations

import errno
import json as jsonlib
import os
import select
import socket
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from memctl import __version__
from memhub_protocol.record import Record

TYPE_CHECKING = False  # typing itself is not imported: every command would pay for it
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    import httpx

# Over a Unix socket there is no host; the daemon sees this one in requests.
SOCKET_BASE_URL = "http://memhub"
DEFAULT_TIMEOUT = 30.0
# The longest --timeout taken: a day. Sockets and timers refuse far larger values (a
# time past what the platform's time_t holds), and no request should wait longer.
MAX_TIMEOUT = 86400.0
CONNECT_TIMEOUT = 5.0
_HINT = "is the daemon running? (make run / memhubd serve)"
_NO_ANSWER = "no answer within"


class InvalidTarget(ValueError):
    """The --url (or MEMHUB_URL, or config `url`) is not something memctl can connect to."""


class DaemonUnreachable(Exception):
    """Nothing answered at the target; `line` is the one line to show the user."""

    def __init__(self, target: Target, reason: str) -> None:
        self.target = target
        if reason == "connection refused" and target.socket_path is not None:
            reason = _not_a_socket(target.socket_path) or reason
        self.reason = reason
        self.timed_out = reason.startswith(_NO_ANSWER)
        if self.timed_out:
            # The daemon took the request and did not answer in time: it may yet do it.
            self.line = (
                f"memctl: memhubd at {target.url} gave {reason}; the request was sent and "
                "may still be carried out: look before repeating a write (or give --timeout)"
            )
        else:
            self.line = f"memctl: cannot reach memhubd at {target.url} ({reason}); {_HINT}"
        super().__init__(self.line)


def _not_a_socket(path: str) -> str | None:
    """Why a socket path refused a connection when it is no socket at all (a directory
    or file given by mistake), else None (a socket nobody listens on)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISSOCK(mode):
        return None
    return "a directory, not a socket" if stat.S_ISDIR(mode) else "not a socket"


class Target(Record):
    """A daemon address: `url` as the user wrote it, `base_url` for requests,
    `socket_path` when the connection goes through a Unix socket."""

    __slots__ = ("url", "base_url", "socket_path")
    url: str
    base_url: str
    socket_path: str | None

    def __init__(self, url: str, base_url: str, socket_path: str | None = None) -> None:
        self._set(url=url, base_url=base_url, socket_path=socket_path)


def parse_target(text: str) -> Target:
    """Accept `http://host:port`, `https://host[:port][/prefix]` or `unix:///abs/path.sock`."""
    text = text.strip()
    if text.startswith("unix:"):
        return _unix_target(text)
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
    except ValueError as error:  # e.g. "http://[::1": an unclosed IPv6 bracket
        raise InvalidTarget(f"daemon url {text!r} is malformed: {error}") from error
    if "@" in parts.netloc:
        raise _with_credentials()
    if parts.scheme not in ("http", "https"):
        raise InvalidTarget(
            f"unsupported daemon url {text!r}: use http://HOST:PORT, https://HOST "
            "or unix:///ABSOLUTE/PATH.sock"
        )
    if not parts.hostname:
        raise InvalidTarget(f"daemon url {text!r} has no host")
    try:
        # As the resolver will be handed it: an empty or over-long label (a..b) fails here
        # as a UnicodeError, which no connection failure handling would catch.
        parts.hostname.encode("idna")
    except UnicodeError:
        raise InvalidTarget(f"daemon url {text!r} has an invalid host name") from None
    try:
        parts.port  # noqa: B018 - validates the port number
    except ValueError as error:
        raise InvalidTarget(f"daemon url {text!r} has a bad port: {error}") from error
    if parts.query or parts.fragment:
        raise InvalidTarget(f"daemon url {text!r} must not carry a query or fragment")
    if "/v1/" in parts.path + "/":
        # A route pasted from the docs: every request would go to /v1/v1/..., not found.
        raise InvalidTarget(
            f"daemon url {text!r} names a route: give the daemon's address without /v1 "
            "(memctl adds the routes)"
        )
    return Target(url=text, base_url=text.rstrip("/"))


def _with_credentials() -> InvalidTarget:
    # Never echoed: what stands before the @ may be a password. memctl would not
    # send it anyway; the daemon takes a bearer token.
    return InvalidTarget(
        "the daemon url must not carry a user or password (user@host): memctl "
        "authenticates with --token (or MEMHUB_TOKEN)"
    )


def _unix_target(text: str) -> Target:
    rest = text[len("unix:") :]
    if "@" in rest.removeprefix("//").split("/", 1)[0]:  # unix://user:pw@/PATH
        raise _with_credentials()
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
        self,
        status_code: int,
        reason_phrase: str,
        headers: Mapping[str, str],
        content: bytes,
        *,
        will_close: bool = False,
    ) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers
        self.content = content
        self.will_close = will_close  # the daemon ends the connection after this answer

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
        self._connection: _Connection | None = None
        self._httpx: httpx.Client | None = None
        if target.socket_path is not None:
            self._prefix, self._plain = "", True
        else:
            from urllib.parse import urlsplit

            parts = urlsplit(target.base_url)
            self._prefix = parts.path.rstrip("/")
            self._plain = parts.scheme == "http"

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
        url = self._prefix + path
        if params:
            from urllib.parse import urlencode

            url += f"?{urlencode(params)}"
        headers = {**self._headers, "Accept": accept}
        body = b""
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        connection = self._open()
        try:
            answer = connection.exchange(method, url, headers, body)
        except (OSError, BadAnswer) as error:
            self._drop()
            raise self.unreachable(error) from error
        if answer.will_close:
            self._drop()
        return answer

    def _open(self) -> _Connection:
        connection = self._connection
        if connection is not None and _closed_by_peer(connection.sock):
            self._drop()  # the daemon closed an idle keep-alive connection
            connection = None
        if connection is None:
            try:
                sock = _connect(self.target, min(CONNECT_TIMEOUT, self.timeout))
            except OSError as error:
                raise self.unreachable(_ConnectFailure(error)) from error
            sock.settimeout(self.timeout)
            connection = self._connection = _Connection(sock, _host_header(self.target))
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


class BadAnswer(Exception):
    """What came back is not an HTTP/1.1 answer, or it stopped before its end."""


class Headers(dict[str, str]):
    """Response headers by lower-case name (`get` takes any case), repeats joined by ", "."""

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())


# Bounds on what one answer's head may hold, as http.client has them.
_MAX_LINE = 65536
_MAX_HEADERS = 100


class _Connection:
    """One HTTP/1.1 connection: a request written whole, a complete answer read back.

    The answer's length comes from Content-Length or chunked transfer coding, else it
    runs to the end of the connection (HTTP/1.0 servers).
    """

    def __init__(self, sock: socket.socket, host: str) -> None:
        self.sock = sock
        self.host = host
        self._reader: BinaryIO = sock.makefile("rb")

    def exchange(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Response:
        if any(char.isspace() for char in url):
            raise ValueError(f"the request path {url!r} holds white space")
        lines = [f"{method} {url} HTTP/1.1", f"Host: {self.host}", "Accept-Encoding: identity"]
        for name, value in headers.items():
            # A line break would end the header and start another (a token is user text).
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise ValueError(f"the {name} header holds a line break")
            lines.append(f"{name}: {value}")
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock.sendall(head + body)
        while True:
            status, reason, version = self._status_line()
            found = self._headers()
            if status != 100:  # an interim answer (100 Continue) is followed by the real one
                break
        content, delimited = self._body(method, status, found)
        connection = (found.get("connection") or "").lower()
        will_close = not delimited or "close" in connection
        if version == "HTTP/1.0" and "keep-alive" not in connection:
            will_close = True
        return Response(status, reason, found, content, will_close=will_close)

    def close(self) -> None:
        self._reader.close()
        self.sock.close()

    def _line(self) -> bytes:
        line = self._reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise BadAnswer("answer line too long")
        return line

    def _status_line(self) -> tuple[int, str, str]:
        line = self._line()
        if not line:
            raise BadAnswer("connection closed before an answer")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
            raise BadAnswer(f"not an HTTP status line: {line[:40]!r}")
        return int(code), reason.strip(), version

    def _headers(self) -> Headers:
        found = Headers()
        for _ in range(_MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return found
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise BadAnswer(f"not a header line: {line[:40]!r}")
            key, value = name.strip().lower(), value.strip()
            found[key] = f"{dict.get(found, key)}, {value}" if key in found else value
        raise BadAnswer(f"more than {_MAX_HEADERS} headers")

    def _body(self, method: str, status: int, found: Headers) -> tuple[bytes, bool]:
        """The body, and whether its end was marked (else the connection ended it)."""
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return b"", True
        if "chunked" in (found.get("transfer-encoding") or "").lower():
            return self._chunks(), True
        length = found.get("content-length")
        if length is None:
            return self._reader.read(), False
        if not length.isdigit():
            raise BadAnswer(f"bad Content-Length {length!r}")
        return self._exactly(int(length)), True

    def _exactly(self, size: int) -> bytes:
        data = self._reader.read(size)
        if len(data) < size:
            raise BadAnswer(f"answer cut short: {len(data)} of {size} bytes")
        return data

    def _chunks(self) -> bytes:
        parts = []
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise BadAnswer(f"bad chunk size {size_text[:20]!r}") from None
            if size == 0:
                break
            parts.append(self._exactly(size))
            self._exactly(2)  # the CRLF after each chunk
        while self._line() not in (b"\r\n", b"\n", b""):  # trailers: not used
            pass
        return b"".join(parts)


def _connect(target: Target, timeout: float) -> socket.socket:
    if target.socket_path is None:
        from urllib.parse import urlsplit

        parts = urlsplit(target.base_url)
        sock = socket.create_connection((parts.hostname or "", parts.port or 80), timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(target.socket_path)
    except OSError:
        sock.close()
        raise
    return sock


def _host_header(target: Target) -> str:
    if target.socket_path is not None:
        return "memhub"
    from urllib.parse import urlsplit

    parts = urlsplit(target.base_url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port else host


def _closed_by_peer(sock: socket.socket) -> bool:
    """An idle connection the other end has closed reads as ready (EOF) at once."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def describe_failure(error: BaseException, timeout: float) -> str:
    """A few words on why a connection failed, from the exception chain."""
    if isinstance(error, _ConnectFailure) and isinstance(error.__cause__, TimeoutError):
        return "connection timed out"
    if isinstance(error, TimeoutError):
        return f"{_NO_ANSWER} {timeout:g}s"
    if type(error).__module__.startswith("httpx"):
        import httpx  # only an https target or a stream got this far with httpx

        if isinstance(error, httpx.ConnectTimeout):
            return "connection timed out"
        if isinstance(error, httpx.TimeoutException):
            return f"{_NO_ANSWER} {timeout:g}s"
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
    return isinstance(error, BadAnswer)  # no answer, or one cut short
