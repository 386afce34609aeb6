"""Process-wide logging: structlog on top of the standard library, one root handler
rendering JSON lines (not a terminal) or readable console lines (a terminal), with
uvicorn's records and every other library's going through the same formatter.

Every record passes a redaction step last, so bearer tokens and `mh_` secrets never
reach the output. The access log (one line per request) has a direct path that writes
the same JSON line without the processor chain. It must not decide what is logged,
only how.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict, Processor, WrappedLogger

from memhubd.runtime.config import LOG_FORMATS, LOG_LEVELS

REDACTED = "[REDACTED]"
# Keys whose values are secrets whatever they look like.
SECRET_KEYS = frozenset(
    {"secret", "password", "authorization", "api_key", "access_token", "bearer", "cookie"}
)
# `token=` carries a token's *name* (1-64 characters, never shaped like mh_ secrets), so
# it is logged. A bootstrap secret may have any shape: the daemon names it when it reads
# it (`remember_secret`), and it is redacted wherever it shows, under any key or in text.
_KNOWN_SECRETS: set[str] = set()
_SECRET_PATTERNS = (
    # memhub secrets: mh_<id>_<random>, and any other mh_ string long enough to be one
    (re.compile(r"\bmh_[A-Za-z0-9_-]{8,}"), REDACTED),
    # an Authorization header value or a "Bearer ..." in free text
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+"), r"\1 " + REDACTED),
    # secrets in URL queries or key=value text
    (
        re.compile(r"(?i)\b(token|access_token|api_key|password|secret)=[^&\s\"']+"),
        r"\1=" + REDACTED,
    ),
)
_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
# Libraries that log every request or session at INFO.
_CHATTY_LOGGERS = (
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore2",
    "watchfiles",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.client.streamable_http",
)


def remember_secret(secret: str) -> None:
    """Redact `secret` wherever it shows in a log line from now on (a bootstrap secret,
    whose shape tells it from nothing else)."""
    if secret:
        _KNOWN_SECRETS.add(secret)


def redact_text(text: str) -> str:
    for secret in _KNOWN_SECRETS:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _is_secret_item(key: Any, value: Any) -> bool:
    if not isinstance(key, str) or not value:
        return False
    return key.lower() in SECRET_KEYS


def _redact(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if depth > 8:  # exception dicts nest a few levels; nothing legitimate goes deeper
        return value
    if isinstance(value, Mapping):
        return {
            key: REDACTED if _is_secret_item(key, item) else _redact(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(_redact(item, depth + 1) for item in value)
    return value


def redact_secrets(_logger: WrappedLogger, _name: str, event_dict: EventDict) -> EventDict:
    """structlog processor: replace secrets in every value, and every value of a secret key."""
    return _redact(event_dict)


def _redact_access_value(key: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if _is_secret_item(key, value):
        return REDACTED
    # Only a string holding one of these can match a secret pattern: skip the regexes.
    if "mh_" in value or "=" in value or "bearer" in value.lower():
        return redact_text(value)
    if _KNOWN_SECRETS and any(secret in value for secret in _KNOWN_SECRETS):
        return redact_text(value)
    return value


class AccessLog:
    """One line per request, as cheap as it can be at the default settings.

    With JSON output the line is the one the processor chain would write (same keys,
    redaction included), rendered directly onto the handler's stream: the chain took
    about as long as a cached query. Console output, or logging not configured here,
    goes through structlog as any other record.
    """

    def __init__(self, name: str = "memhubd.access") -> None:
        self.name = name
        self._logger = logging.getLogger(name)
        self._handler: logging.StreamHandler[TextIO] | None = None

    def configure(self, handler: logging.StreamHandler[TextIO] | None) -> None:
        """Write JSON lines straight to `handler`'s stream (None: through structlog)."""
        self._handler = handler

    def enabled(self) -> bool:
        return self._logger.isEnabledFor(logging.INFO)

    def write(self, event: str, **fields: Any) -> None:
        if not self._logger.isEnabledFor(logging.INFO):
            return
        handler = self._handler
        if handler is None or logging.getLogger().handlers != [handler]:
            structlog.get_logger(self.name).info(event, **fields)
            return
        record = {key: _redact_access_value(key, value) for key, value in fields.items()}
        record.update(
            event=_redact_access_value("event", event),
            level="info",
            logger=self.name,
            timestamp=datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        )
        line = _access_json(record) + handler.terminator
        handler.acquire()
        try:
            handler.stream.write(line)
            handler.flush()
        except Exception:
            handler.handleError(logging.makeLogRecord({"msg": event}))
        finally:
            handler.release()


def _access_encoder() -> Any:
    """`json.dumps(value, default=repr)` with the C encoder made once, not per line."""
    try:
        from _json import make_encoder
    except ImportError:  # an interpreter without the C accelerator
        return lambda value: json.dumps(value, default=repr)
    encode = make_encoder(
        None, repr, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True
    )
    return lambda value: "".join(encode(value, 0))


_access_json = _access_encoder()

access_log = AccessLog()


def _uvicorn_access_fields(_logger: WrappedLogger, _name: str, event_dict: EventDict) -> EventDict:
    """Turn uvicorn's access-log line into fields (needs `pass_foreign_args=True`)."""
    record = event_dict.get("_record")
    args = event_dict.pop("positional_args", None)
    event_dict.pop("color_message", None)  # an ANSI copy of the message uvicorn adds
    is_access = record is not None and record.name == "uvicorn.access"
    if is_access and isinstance(args, tuple) and len(args) == 5:
        client, method, path, http_version, status = args
        event_dict.update(
            event="http_request",
            client=client,
            method=method,
            path=path,
            http_version=http_version,
            status=status,
        )
    return event_dict


def _renderer(json_output: bool, colors: bool) -> list[Processor]:
    if json_output:
        return [
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            redact_secrets,
            structlog.processors.JSONRenderer(),
        ]
    # Tracebacks become text before redaction, so a secret in one is caught too.
    return [
        structlog.processors.format_exc_info,
        redact_secrets,
        structlog.dev.ConsoleRenderer(
            colors=colors, exception_formatter=structlog.dev.plain_traceback
        ),
    ]


class _AcceptFailures(logging.Filter):
    """At most one asyncio "socket.accept() out of system resource" line per
    `every_s`, saying how many were left out: out of file descriptors, asyncio logs one
    with its traceback for each connection waiting in the backlog, thousands a second,
    and the log (and the CPU writing it) would grow without bound."""

    PREFIX = "socket.accept() out of system resource"

    def __init__(self, every_s: float = 10.0) -> None:
        super().__init__()
        self.every_s = every_s
        self.last: float | None = None
        self.left_out = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.PREFIX):
            return True
        now = time.monotonic()
        if self.last is not None and now - self.last < self.every_s:
            self.left_out += 1
            return False
        if self.left_out:
            record.msg = f"{record.msg}\n({self.left_out} more like it in {self.every_s:g} s)"
        self.last, self.left_out = now, 0
        return True


_ACCEPT_FAILURES = _AcceptFailures()


def configure_logging(
    format: str = "auto", level: str = "info", *, stream: TextIO | None = None
) -> None:
    """Route structlog and standard-library logging to one handler on `stream` (stderr).

    `format`: "json", "console", or "auto" (JSON unless the stream is a terminal).
    Run it before building the uvicorn config (`log_config=None`) or the MCP server,
    which would otherwise install handlers of their own.
    """
    if format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {format!r}")
    if level.lower() not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    stream = stream or sys.stderr
    json_output = format == "json" or (format == "auto" and not stream.isatty())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder(), _uvicorn_access_fields],
        pass_foreign_args=True,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            *_renderer(json_output, colors=stream.isatty()),
        ],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    access_log.configure(handler if json_output else None)
    root.setLevel(level.upper())
    for name in _UVICORN_LOGGERS:
        # uvicorn's own handlers (if any) would print a second, unredacted copy.
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    asyncio_logger = logging.getLogger("asyncio")
    if _ACCEPT_FAILURES not in asyncio_logger.filters:
        asyncio_logger.addFilter(_ACCEPT_FAILURES)
    quiet = "DEBUG" if level.lower() == "debug" else "WARNING"
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
