"""memctl and memhubd run by a script with a standard stream closed or unwritable: a
stdout closed (`>&-`), a full disk (`>/dev/full`), a reader gone (`| true`), a stdin
closed (`<&-`), and a --timeout too large for the platform. Each is one line on stderr
and a plain exit code, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
MEMCTL = [sys.executable, "-m", "memctl"]
MEMHUBD = [sys.executable, "-m", "memhubd.cli"]
FULL = "No space left on device"


pytestmark = pytest.mark.usefixtures("no_user_config")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("streams")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        yield live


def _closing(*fds: int) -> Callable[[], None]:
    def close() -> None:
        for fd in fds:
            os.close(fd)

    return close


def run(
    argv: list[str],
    *,
    stdout: str = "closed",
    stdin: str = "null",
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """Run `argv` with stdout "closed", "full" (/dev/full) or "gone" (a pipe whose
    reader is closed), and stdin "null" or "closed"; (exit code, stderr)."""
    closed = []
    out: Any = subprocess.DEVNULL
    reader = None
    if stdout == "closed":
        closed.append(1)
    elif stdout == "full":
        out = open("/dev/full", "wb")  # noqa: SIM115 - closed below
    elif stdout == "gone":
        reader, out = os.pipe()
        os.close(reader)
    if stdin == "closed":
        closed.append(0)
    try:
        result = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={**os.environ, **(env or {})},
            preexec_fn=_closing(*closed),
        )
    finally:
        if stdout == "full":
            out.close()
        elif stdout == "gone":
            os.close(out)
    return result.returncode, result.stderr


def at(daemon: LiveDaemon) -> list[str]:
    return [*MEMCTL, "--url", daemon.socket_url, "-w", WS]


# -- stdout --------------------------------------------------------------------------------


def test_a_closed_stdout_is_said_in_one_line_and_exit_1(daemon: LiveDaemon) -> None:
    code, err = run([*at(daemon), "status"], stdout="closed")
    assert (code, err) == (1, "memctl: cannot write output: standard output is closed\n")


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_full_disk_is_said_in_one_line_and_exit_1(daemon: LiveDaemon, unbuffered: str) -> None:
    # A large answer (written as it is printed) and a small one (written at the end).
    for command in (["list", "--json"], ["status"]):
        code, err = run(
            [*at(daemon), *command], stdout="full", env={"PYTHONUNBUFFERED": unbuffered}
        )
        assert (code, err) == (1, f"memctl: cannot write output: {FULL}\n"), command


def test_a_reader_gone_still_ends_quietly_with_exit_1(daemon: LiveDaemon) -> None:
    assert run([*at(daemon), "list", "--json"], stdout="gone") == (1, "")


def test_memhubd_lint_with_stdout_closed(tmp_path: Path) -> None:
    workspace = copy_examples(tmp_path, [WS])[WS]
    code, err = run([*MEMHUBD, "lint", workspace], stdout="closed")
    assert (code, err) == (1, "memhubd: cannot write output: standard output is closed\n")


def test_memhubd_token_list_to_a_full_disk(tmp_path: Path) -> None:
    code, err = run([*MEMHUBD, "token", "list", "--state-dir", str(tmp_path)], stdout="full")
    assert (code, err) == (1, f"memhubd: cannot write output: {FULL}\n")


def test_memhubd_token_list_to_a_reader_gone_unbuffered(tmp_path: Path) -> None:
    # The Dockerfile sets PYTHONUNBUFFERED=1: the broken pipe comes from print itself.
    code, err = run(
        [*MEMHUBD, "token", "list", "--state-dir", str(tmp_path)],
        stdout="gone",
        env={"PYTHONUNBUFFERED": "1"},
    )
    assert (code, err) == (1, "")


@pytest.mark.parametrize("stdout", ["gone", "full"])
def test_a_token_whose_secret_is_lost_is_named_for_revoking(tmp_path: Path, stdout: str) -> None:
    argv = [*MEMHUBD, "token", "create", "bot", "--scopes", "all", "--state-dir", str(tmp_path)]
    code, err = run(argv, stdout=stdout, env={"PYTHONUNBUFFERED": "1"})
    assert code == 1
    assert "Traceback" not in err and "error: " not in err
    assert "the token 'bot' was created but its secret could not be written out" in err
    assert "memhubd token revoke bot" in err


# -- stdin ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["propose"],
        ["fact-check"],
        ["cowork", "push", "--to", "bob", "-"],
        ["mcp"],
    ],
)
def test_a_closed_stdin_is_one_line_and_exit_2(daemon: LiveDaemon, command: list[str]) -> None:
    code, err = run([*at(daemon), *command], stdout="null", stdin="closed")
    assert (code, err) == (2, "memctl: standard input is closed\n")


def test_recall_ingest_reports_a_closed_stdin_as_a_failed_source(daemon: LiveDaemon) -> None:
    argv = [*at(daemon), "recall", "ingest", "-", "--dry-run"]
    code, err = run(argv, stdout="null", stdin="closed")
    assert code == 1
    assert err.startswith("memctl: failed  stdin: ") and err.count("\n") == 1, err


def test_the_session_end_hook_with_stdin_closed_exits_0(daemon: LiveDaemon) -> None:
    code, err = run([*at(daemon), "hooks", "session-end"], stdout="null", stdin="closed")
    assert (code, err) == (0, "memctl hooks session-end: standard input is closed\n")


# -- --timeout -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["status"], ["events"]])
def test_a_timeout_past_a_day_is_a_usage_error(command: list[str]) -> None:
    argv = [*MEMCTL, "--url", "http://127.0.0.1:9", *command, "--timeout", "1e12"]
    code, err = run(argv, stdout="null")
    assert code == 2
    assert "argument --timeout: must be at most 86400 seconds" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", [["cowork", "drain"], ["hooks", "session-end"]])
def test_a_hook_with_a_timeout_past_a_day_still_exits_0(command: list[str]) -> None:
    argv = [*MEMCTL, "--url", "http://127.0.0.1:9", *command, "--timeout", "1e12"]
    code, err = run(argv, stdout="null")
    assert code == 0
    assert "must be at most 86400 seconds" in err and "(the hook does nothing)" in err


def test_a_timeout_of_a_day_is_taken(daemon: LiveDaemon) -> None:
    code, err = run([*at(daemon), "status", "--timeout", "86400"], stdout="null")
    assert (code, err) == (0, "")
