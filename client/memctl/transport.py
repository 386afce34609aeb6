"""Where memhubd listens and how to talk to it: target parsing and one httpx client.

It sends requests and turns connection failures into DaemonUnreachable; it must not
know any route, payload or error envelope (that is `client.py`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from memctl import __version__

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


class Transport:
    """One connection to the daemon: sends requests, never interprets answers."""

    def __init__(
        self, target: Target, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.target = target
        self.timeout = timeout
        headers = {"User-Agent": f"memctl/{__version__}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        transport = httpx.HTTPTransport(uds=target.socket_path) if target.socket_path else None
        self._http = httpx.Client(
            base_url=target.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout)),
            transport=transport,
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        accept: str = "application/json",
    ) -> httpx.Response:
        self._check_socket()
        try:
            return self._http.request(
                method, path, params=params, json=json, headers={"Accept": accept}
            )
        except httpx.TransportError as error:
            raise self.unreachable(error) from error

    @contextmanager
    def stream(self, method: str, path: str, *, accept: str) -> Iterator[httpx.Response]:
        """A response whose body is read as it arrives; no read timeout (events may be rare)."""
        self._check_socket()
        timeout = httpx.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT, self.timeout), read=None)
        try:
            with self._http.stream(
                method, path, headers={"Accept": accept}, timeout=timeout
            ) as response:
                yield response
        except httpx.TransportError as error:
            raise self.unreachable(error) from error

    def unreachable(self, error: BaseException) -> DaemonUnreachable:
        return DaemonUnreachable(self.target, describe_failure(error, self.timeout))

    def close(self) -> None:
        self._http.close()

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


def describe_failure(error: BaseException, timeout: float) -> str:
    """A few words on why a connection failed, from the exception chain."""
    if isinstance(error, httpx.ConnectTimeout):
        return "connection timed out"
    if isinstance(error, httpx.TimeoutException):
        return f"no answer within {timeout:g}s"
    if isinstance(error, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
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
