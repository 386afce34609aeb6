"""The HTTP/1.1 connection: uvicorn's httptools protocol with bounds on what a client may
hold. The request head is capped in bytes and in header fields before the parser buffers
more, a request must arrive within a deadline, and refusals are the JSON error envelope.

Transport only: nothing here knows routes, tokens or workspaces.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import secrets
import sys
import termios
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from memhub_protocol import ErrorCode, error_envelope

log = structlog.get_logger("memhubd.connection")
# The `route` label of requests refused before they reach the app (400, 408, 431).
REFUSED_ROUTE = "refused"


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one connection may hold: head size, header count, time to send a request."""

    max_header_bytes: int = 32 * 1024
    max_headers: int = 100
    read_timeout_s: float = 10.0
    # Writing paused and nothing of the answer seen read in this long (the client reads
    # nothing) drops the connection and the unsent rest.
    write_timeout_s: float = 30.0
    # Told the status of each request refused here, before the app (which counts the
    # rest): the daemon's request metrics count these too.
    on_refused: Callable[[int], None] | None = None


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing a request that breaks a limit."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that refuses oversized heads (431) and slow requests (408).

    Two counters bound the head. Complete fields are counted exactly in the parser
    callbacks (`_field_bytes`, `_header_count`). A field still being received is
    buffered inside the parser, out of sight, so raw bytes received while a head is
    open are counted too (`_head_bytes`); that bound holds to within one socket read.
    """

    limits = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._field_bytes = 0
        self._header_count = 0
        self._deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        self._unsent = 0  # the unsent bytes when the write deadline was last armed
        self._one_send: OneSendTransport | None = None

    @classmethod
    def with_limits(cls, limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
        """A protocol class for one server (uvicorn instantiates it per connection)."""
        return type(cls.__name__, (cls,), {"limits": limits})

    # -- connection lifecycle -------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Armed at once: a connection that never sends a byte is cut off too.
        self._arm_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        self._cancel_write_deadline()
        super().connection_lost(exc)

    # -- flow control: an answer nobody reads -----------------------------------------------

    def pause_writing(self) -> None:
        # The transport holds more than its high-water mark: the client reads slowly,
        # or not at all.
        super().pause_writing()
        if self._write_deadline is None:
            self._arm_write_deadline()

    def _arm_write_deadline(self) -> None:
        self._unsent = self._unsent_bytes()
        self._write_deadline = self.loop.call_later(
            self.limits.write_timeout_s, self._write_deadline_passed
        )

    def resume_writing(self) -> None:
        self._cancel_write_deadline()
        super().resume_writing()

    def _cancel_write_deadline(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _unsent_bytes(self) -> int:
        """What the client has yet to take of what was written: the transport's buffer,
        and the socket's send queue (several MB on a fast link, which a slow reader
        drains long before the transport's buffer moves)."""
        unsent = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        try:
            queued = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
        except (AttributeError, OSError, ValueError):  # no such query here, or closed
            return unsent
        return unsent + int.from_bytes(queued, sys.byteorder, signed=True)

    def _write_deadline_passed(self) -> None:
        self._write_deadline = None
        # Any of it read counts: the kernel shows reads in steps (a TCP window update, a
        # Unix socket's freed buffer: tens of KB), so a slow reader may show none for a
        # while.
        if self._unsent_bytes() < self._unsent:
            self._arm_write_deadline()  # read slowly, but read: another period
            return
        log.info(
            "answer not read",
            client=self.client,
            unsent_bytes=self.transport.get_write_buffer_size(),
            seconds=self.limits.write_timeout_s,
        )
        # abort, not close: close would keep the unsent bytes until they are read.
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(
                ErrorCode.HEADERS_TOO_LARGE,
                f"request head is larger than {self.limits.max_header_bytes} bytes",
            )

    # -- parser callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._field_bytes = 0
        self._header_count = 0
        if self._deadline is None:  # between keep-alive requests: the clock starts now
            self._arm_deadline()

    def on_url(self, url: bytes) -> None:
        self._count_field_bytes(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            raise _Refused(
                ErrorCode.HEADERS_TOO_LARGE,
                f"request has more than {self.limits.max_headers} header fields",
            )
        self._count_field_bytes(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        super().on_headers_complete()
        if self.cycle is not None:  # its task has not run yet: no write made
            if self._one_send is None or self._one_send.transport is not self.transport:
                self._one_send = OneSendTransport(self.transport, self.loop)
            self.cycle.transport = self._one_send  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self._cancel_deadline()
        self._in_head = True  # whatever arrives next belongs to the next request's head
        self._head_bytes = 0
        super().on_message_complete()

    def _count_field_bytes(self, size: int) -> None:
        self._field_bytes += size
        if self._field_bytes > self.limits.max_header_bytes:
            raise _Refused(
                ErrorCode.HEADERS_TOO_LARGE,
                f"request head is larger than {self.limits.max_header_bytes} bytes",
            )

    # -- refusals -------------------------------------------------------------------------

    def send_400_response(self, msg: str) -> None:
        # uvicorn calls this for every parser error; a callback's _Refused arrives here too.
        error = _refusal_being_handled()
        if error is not None:
            self._refuse(error.code, error.message)
        else:
            self._refuse(ErrorCode.INVALID, "malformed HTTP request", status=400)

    def _refuse(self, code: ErrorCode, message: str, *, status: int | None = None) -> None:
        # A request id as the API middleware gives every answer it sends (these never
        # reach it): the answer's `x-request-id` finds this log line.
        if self.transport.is_closing():  # refused already: one line, one count
            return
        request_id = secrets.token_hex(8)
        log.info(
            "request refused",
            code=code.value,
            reason=message,
            client=self.client,
            request_id=request_id,
        )
        self._write_error(status or code.http_status, code, message, request_id)

    def _write_error(self, status: int, code: ErrorCode, message: str, request_id: str) -> None:
        if self.transport.is_closing():
            return
        # In a request's head, the cycle is the last request's (kept alive), its answer
        # done; in its body, the cycle is its own, which may have been answered already
        # (a body refused by its declared length, its rest passed over).
        cycle = self.cycle
        if (
            cycle is not None
            and cycle.response_started
            and (not self._in_head or not cycle.response_complete)
        ):
            # A response is already on the wire: another status line would corrupt it.
            self.transport.close()
            return
        # The request the app runs, refused in its body; a pipelined one's head is not it.
        begun = self.cycle is not None and not self.cycle.response_complete and not self._in_head
        if self.limits.on_refused is not None and not begun:
            # A request the app has begun (its body too slow) is counted by the app.
            self.limits.on_refused(status)
        body = json.dumps(error_envelope(code, message)).encode("ascii")
        head = [
            STATUS_LINE[status],
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"x-request-id: " + request_id.encode("ascii") + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()

    # -- the read deadline ----------------------------------------------------------------

    def _arm_deadline(self) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(self.limits.read_timeout_s, self._deadline_passed)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        started = self._head_bytes > 0 or not self._in_head
        if not started:
            self.transport.close()  # an idle connection gets no answer, only a close
            return
        self._refuse(
            ErrorCode.REQUEST_TIMEOUT,
            f"request not received within {self.limits.read_timeout_s:g} seconds",
        )


class OneSendTransport:
    """The transport as a request's cycle sees it: the response head is held until the
    body's first write, so that an answer leaves in one send (one loopback segment and
    one wake-up of the client) instead of two. Whatever is held is written before any
    other write and before a close, and at the latest at the end of the loop's current
    step (a stream's head, a `100 Continue`).
    """

    __slots__ = ("transport", "_loop", "_held")

    # Longer bodies go out on their own: copying them to join the head costs more
    # than the send it saves.
    JOIN_MAX_BYTES = 256 * 1024

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if len(data) <= self.JOIN_MAX_BYTES:
                self.transport.write(held + data)
                return
            self.transport.write(held)
        elif data[:5] == b"HTTP/" and data[-4:] == b"\r\n\r\n":
            self._held = data
            self._loop.call_soon(self.flush)
            return
        self.transport.write(data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self.transport.is_closing():
            self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def _refusal_being_handled() -> _Refused | None:
    """The _Refused behind the parser error being handled, if a callback raised one.

    httptools re-raises a callback's exception as HttpParserCallbackError with the
    original as its context, and uvicorn reports it from inside its except block.
    """
    error = sys.exc_info()[1]
    for _ in range(4):  # the chain is short; a bound keeps a cyclic one harmless
        if error is None or isinstance(error, _Refused):
            return error
        error = error.__context__
    return None
