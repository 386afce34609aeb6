"""With --json, every failure of memctl (and of `memhubd token`) prints one error
envelope on stdout, `{"error": {"code", "message", "detail"}}` as the daemon's, besides
its line on stderr; the exit codes stay what they were."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DOWN = "http://127.0.0.1:9"


pytestmark = pytest.mark.usefixtures("no_user_config")


@pytest.fixture
def silent_daemon() -> Iterator[str]:
    """An address that takes connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def run(module: str, *argv: str, stdin: str = "") -> tuple[int, Any, str]:
    result = subprocess.run(
        [sys.executable, "-m", module, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    return result.returncode, json.loads(result.stdout), result.stderr


def memctl(*argv: str, stdin: str = "") -> tuple[int, Any, str]:
    return run("memctl", *argv, stdin=stdin)


def error_of(answer: Any) -> tuple[str, str]:
    error = answer["error"]
    assert set(error) == {"code", "message", "detail"}
    return error["code"], error["message"]


def test_an_unreachable_daemon(tmp_path: Path) -> None:
    code, answer, err = memctl("--url", DOWN, "--token", "x", "status", "--json")
    assert code == 2 and err.startswith("memctl: cannot reach memhubd")
    assert error_of(answer)[0] == "unreachable"
    assert answer["error"]["detail"] == {"url": DOWN, "reason": "connection refused"}


def test_a_daemon_that_does_not_answer_in_time(silent_daemon: str) -> None:
    argv = ["--url", silent_daemon, "--token", "x", "status", "--json", "--timeout", "0.5"]
    code, answer, err = memctl(*argv)
    assert code == 2 and "gave no answer within 0.5s" in err
    assert error_of(answer)[0] == "timeout"


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--json", "--bogus"],
        ["--json", "status", "--timeout", "1e12"],
        ["--json", "stauts"],
        ["--url", "ftp://x", "status", "--json"],
    ],
)
def test_a_usage_error(argv: list[str]) -> None:
    code, answer, err = memctl(*argv)
    assert code == 2 and err
    assert error_of(answer)[0] == "usage"


def test_an_invalid_client_toml(tmp_path: Path) -> None:
    config = tmp_path / "config" / "memhub"
    config.mkdir(parents=True)
    (config / "client.toml").write_text("url = [\n")
    code, answer, err = memctl("status", "--json")
    assert code == 2 and "not valid TOML" in err
    assert error_of(answer)[0] == "config"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["propose", "/no/such/file.mem"], "cannot read /no/such/file.mem"),
        (["propose", "/"], "cannot read /"),
        (["propose", "-"], "the proposal is empty"),
    ],
)
def test_a_local_failure(argv: list[str], said: str) -> None:
    code, answer, err = memctl("--url", DOWN, "-w", "team", "--json", *argv)
    assert code == 2 and said in err
    assert error_of(answer)[0] == "local"
    assert said in error_of(answer)[1]


def test_hooks_install_refused(tmp_path: Path) -> None:
    argv = ["hooks", "install", "--claude-code", "--project", str(tmp_path / "none"), "--json"]
    code, answer, err = memctl(*argv)
    assert code == 2 and "no such directory" in err
    assert error_of(answer)[0] == "local"


def test_hooks_session_end_without_a_transcript_still_exits_0() -> None:
    code, answer, err = memctl("--url", DOWN, "hooks", "session-end", "--json", stdin="{}")
    assert code == 0 and "no transcript_path" in err
    assert error_of(answer) == ("local", "no transcript_path in the hook input")


def test_a_drain_that_timed_out_says_so_and_exits_0(silent_daemon: str) -> None:
    argv = ["--url", silent_daemon, "--token", "x", "-w", "team", "cowork", "drain"]
    code, answer, _ = memctl(*argv, "--json", "--timeout", "0.5")
    assert code == 0
    assert answer["messages"] == [] and answer["remaining"] == 0
    assert answer["error"]["code"] == "timeout"


def test_memhubd_token_refusal(tmp_path: Path) -> None:
    argv = ["token", "revoke", "nobody", "--state-dir", str(tmp_path), "--json"]
    code, answer, err = run("memhubd.cli", *argv)
    assert code == 2 and "no token named 'nobody'" in err
    assert error_of(answer) == (
        "invalid",
        f"no token named 'nobody' in {tmp_path} (which holds no tokens.json: is --state-dir / "
        "MEMHUB_STATE_DIR the daemon's?)",
    )
