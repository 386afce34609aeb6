"""The access log's direct path writes the line the structlog chain would write
(same keys, order and redaction), and nothing below its level."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

import memhubd.runtime.logging as memhub_logging
from memhubd.runtime.logging import access_log, configure_logging, remember_secret

FIELDS = {
    "request_id": "0123abcd",
    "method": "POST",
    "route": "query",
    "path": "/v1/workspaces/w/files/mh_abcdefghijklmnopqrstuvwxyz",
    "status": 200,
    "duration_ms": 1.5,
    "token": "agent-1",
    "workspace": "w",
    "transport": "tcp",
}


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    access_log.configure(None)
    configure_logging("console", "warning")


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_the_direct_line_is_the_processor_chains_line(restore_logging) -> None:
    # Given JSON logging at the default level
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    handler = logging.getLogger().handlers[0]

    # When one request is logged directly, then through structlog
    access_log.write("request", **FIELDS)
    access_log.configure(None)
    access_log.write("request", **FIELDS)
    access_log.configure(handler)  # type: ignore[arg-type]

    # Then both lines hold the same keys in the same order, the secret redacted
    direct, chained = lines(stream)
    assert list(direct) == list(chained)
    direct.pop("timestamp"), chained.pop("timestamp")
    assert direct == chained
    assert direct["path"] == "/v1/workspaces/w/files/[REDACTED]"


def test_a_long_token_name_is_logged_and_a_bootstrap_secret_never(
    restore_logging, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memhub_logging, "_KNOWN_SECRETS", set())
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    name = "ci-deploy-bot-production-eu-west-1-blue"  # 39 characters, a valid name
    secret = "Zq8" * 12  # a bootstrap secret may have any shape
    remember_secret(secret)

    access_log.write("request", token=name)
    access_log.write("request", token=secret, path=f"/x?{secret}")

    named, leaked = lines(stream)
    assert named["token"] == name
    assert leaked["token"] == "[REDACTED]"
    assert leaked["path"] == "/x?[REDACTED]"


def test_nothing_is_written_below_the_level(restore_logging) -> None:
    stream = io.StringIO()
    configure_logging("json", "warning", stream=stream)

    access_log.write("request", **FIELDS)

    assert not access_log.enabled()
    assert stream.getvalue() == ""
