"""`memctl mcp` whose output is gone stops, as every memctl command does: a stdout
closed (`>&-`) or full is `memctl: cannot write output: <reason>` and exit 1, a reader
that went away (`| head -c 1`) is exit 1 quietly; in both cases while stdin is still
open, without waiting for the MCP client to close it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("no_user_config")

# A line that is not JSON: the bridge answers it with a parse error without the daemon.
NOT_JSON = b"{nope\n"
WAIT = 30  # seconds: far more than stopping takes, far less than a hang


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bridge(stdout: str) -> tuple[int, str, float]:
    """Run `memctl mcp` with stdout "closed", "full" or "gone", and a stdin that stays
    open; (exit code, stderr, seconds it took to stop)."""
    argv = [sys.executable, "-m", "memctl", "mcp", "--url", f"http://127.0.0.1:{closed_port()}"]
    out: Any
    reader = None
    if stdout == "closed":
        out = subprocess.DEVNULL
    elif stdout == "full":
        out = open("/dev/full", "wb")  # noqa: SIM115 - closed below
    else:
        reader, out = os.pipe()
    child = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=out,
        stderr=subprocess.PIPE,
        preexec_fn=(lambda: os.close(1)) if stdout == "closed" else None,
    )
    try:
        if reader is not None:
            os.close(out)
            os.close(reader)  # the reader goes away before the first reply
        elif stdout == "full":
            out.close()
        assert child.stdin is not None and child.stderr is not None
        started = time.monotonic()
        child.stdin.write(NOT_JSON)
        child.stdin.flush()  # and stdin stays open
        code = child.wait(timeout=WAIT)
        took = time.monotonic() - started
        return code, child.stderr.read().decode(), took
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdin, child.stderr):
            if stream is not None:
                stream.close()


def test_a_closed_stdout_stops_the_bridge_with_one_line_and_exit_1() -> None:
    code, err, took = bridge("closed")
    assert (code, err) == (1, "memctl: cannot write output: standard output is closed\n")
    assert took < WAIT


def test_a_full_stdout_stops_the_bridge_with_one_line_and_exit_1() -> None:
    code, err, _took = bridge("full")
    assert (code, err) == (1, "memctl: cannot write output: No space left on device\n")


def test_a_reader_gone_stops_the_bridge_quietly_with_exit_1() -> None:
    code, err, _took = bridge("gone")
    assert (code, err) == (1, "")
