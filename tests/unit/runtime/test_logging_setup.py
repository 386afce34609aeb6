"""configure_logging: one formatter for structlog and stdlib records, JSON lines off a
terminal, and secrets redacted from everything that is written."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

import memhubd.runtime.logging as memhub_logging
from memhubd.runtime.logging import configure_logging, redact_text

SECRET = "mh_3f9a1c2b7d4e_Zq8vN2kLmP0xR7tY5wB1cD9eF3gH6jK4"


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_structlog_events_are_json_lines_off_a_terminal() -> None:
    stream = io.StringIO()
    configure_logging("auto", "info", stream=stream)

    structlog.get_logger("memhubd.test").info("workspace_reloaded", workspace="team", generation=3)
    structlog.get_logger("memhubd.test").debug("not shown at info")

    [line] = json_lines(stream)
    assert line["event"] == "workspace_reloaded"
    assert (line["workspace"], line["generation"]) == ("team", 3)
    assert (line["level"], line["logger"]) == ("info", "memhubd.test")
    assert line["timestamp"].endswith("Z")


def test_a_terminal_gets_console_lines() -> None:
    stream = FakeTerminal()
    configure_logging("auto", "info", stream=stream)

    structlog.get_logger("memhubd.test").info("listening", port=8377)

    text = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())  # colours on a terminal
    assert "listening" in text and "port=8377" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_uvicorn_access_records_become_request_fields() -> None:
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)

    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/v1/status", "1.1", 200
    )

    [line] = json_lines(stream)
    assert line["event"] == "http_request" and line["logger"] == "uvicorn.access"
    assert (line["method"], line["path"], line["status"]) == ("GET", "/v1/status", 200)


def test_secrets_never_reach_the_output(monkeypatch: pytest.MonkeyPatch) -> None:
    # The daemon names the bootstrap secret to the log when it reads it.
    monkeypatch.setattr(memhub_logging, "_KNOWN_SECRETS", {"x" * 40})
    stream = io.StringIO()
    configure_logging("json", "debug", stream=stream)
    log = structlog.get_logger("memhubd.test")

    log.info(f"request with Authorization: Bearer {SECRET}")
    log.info("token created", token="ci-agent", detail={"secret": "hunter2", "nested": [SECRET]})
    log.info("bootstrap", token="x" * 40)
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "10.0.0.1:1", "GET", f"/mcp?token={SECRET}", "1.1", 401
    )
    try:
        raise ValueError(f"bad credential {SECRET}")
    except ValueError:
        log.exception("request_failed")

    output = stream.getvalue()
    assert SECRET not in output and "hunter2" not in output and "x" * 40 not in output
    lines = json_lines(stream)
    assert lines[0]["event"] == "request with Authorization: Bearer [REDACTED]"
    assert lines[1]["token"] == "ci-agent"  # a token's name is not a secret
    assert lines[1]["detail"] == {"secret": "[REDACTED]", "nested": ["[REDACTED]"]}
    assert lines[3]["path"] == "/mcp?token=[REDACTED]"
    assert "[REDACTED]" in lines[4]["exception"][0]["exc_value"]


def test_console_tracebacks_are_redacted_too() -> None:
    stream = FakeTerminal()
    configure_logging("console", "info", stream=stream)

    try:
        raise ValueError(f"bad credential {SECRET}")
    except ValueError:
        structlog.get_logger("memhubd.test").exception("request_failed")

    assert "ValueError: bad credential [REDACTED]" in re.sub(
        r"\x1b\[[0-9;]*m", "", stream.getvalue()
    )
    assert SECRET not in stream.getvalue()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Bearer {SECRET}", "Bearer [REDACTED]"),
        ("authorization: bearer abc.def-ghi", "authorization: bearer [REDACTED]"),
        (f"token {SECRET} leaked", "token [REDACTED] leaked"),
        ("GET /x?api_key=abc&y=1", "GET /x?api_key=[REDACTED]&y=1"),
        ("mh_short", "mh_short"),
        ("nothing to hide", "nothing to hide"),
    ],
)
def test_redact_text(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_unknown_format_or_level_is_refused() -> None:
    with pytest.raises(ValueError, match="log format"):
        configure_logging("xml", "info")
    with pytest.raises(ValueError, match="log level"):
        configure_logging("json", "loud")


def test_asyncio_accept_failures_out_of_descriptors_are_one_line_per_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given asyncio failing to accept connections for want of file descriptors: one
    # error per connection waiting in the backlog, thousands a second
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    clock = [1000.0]
    monkeypatch.setattr(memhub_logging.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(memhub_logging._ACCEPT_FAILURES, "last", None)
    monkeypatch.setattr(memhub_logging._ACCEPT_FAILURES, "left_out", 0)
    failing = logging.getLogger("asyncio")
    for second in range(25):
        clock[0] = 1000.0 + second
        for _ in range(100):
            failing.error("socket.accept() out of system resource\nsocket: <fd=7>")
    failing.error("Task exception was never retrieved")

    # Then the log holds one such line every 10 s, each saying how many it stands for,
    # and asyncio's other errors as they come
    lines = [line["event"] for line in json_lines(stream)]
    accepts = [line for line in lines if line.startswith("socket.accept()")]
    assert len(accepts) == 3
    assert "(999 more like it in 10 s)" in accepts[1]
    assert lines[-1] == "Task exception was never retrieved"
