"""Ctrl-C (SIGINT) during a long memctl or memhubd command: one line on stderr saying it
was interrupted (for an ingest, what was stored by then), the error envelope with
--json, and exit 130, as `memhubd backup` does."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memctl_fakes import ONE_FILE_INGESTED, Canned, FakeDaemon, Seen

from memhubd import cli as memhubd_cli

pytestmark = pytest.mark.usefixtures("no_client_config")

WS = "/v1/workspaces/team"
HELD = 30.0  # seconds the fake daemon holds an answer: the interrupt comes first


def _start(fake: FakeDaemon, *argv: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memctl", "--url", fake.url, "-w", "team", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,  # type: ignore[arg-type]
    )


def _when_seen(fake: FakeDaemon, count: int) -> None:
    """Wait until the fake daemon was sent `count` requests (the command is then
    waiting for the last one's answer)."""
    for _ in range(6000):
        if len(fake.seen) >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"the daemon was sent {len(fake.seen)} requests, not {count}")


def _interrupt(child: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    return child.returncode, out.decode(), err.decode()


def _ingested(seen: Seen) -> Canned:
    if "b.md" in [f["name"] for f in seen.body["files"]]:  # held until the interrupt
        return Canned({}, delay=HELD)
    return Canned(ONE_FILE_INGESTED)


def test_an_interrupted_ingest_says_what_was_stored_by_then(
    fake_daemon: FakeDaemon, tmp_path: Path
) -> None:
    # Given two files sent in two requests, the daemon answering the first only
    (tmp_path / "a.md").write_text("first file\n" * 50)
    (tmp_path / "b.md").write_text("second file\n" * 50)
    fake_daemon.on("POST", WS + "/recall/ingest", _ingested)
    child = _start(
        fake_daemon, "recall", "ingest", str(tmp_path / "a.md"), str(tmp_path / "b.md"),
        "--request-bytes", "700", "--json",
    )  # fmt: skip
    _when_seen(fake_daemon, 2)
    # When Ctrl-C comes while the second waits
    code, out, err = _interrupt(child)
    # Then exit 130, one line saying so with what was stored, and the envelope
    assert code == 130
    assert err.count("\n") == 1
    assert err.startswith("memctl: interrupted; stored before it: files=1 chunks=3 ")
    error = json.loads(out)["error"]
    assert error["code"] == "interrupted"
    assert (error["detail"]["files"], error["detail"]["sources"]) == (1, ["a.md"])


def test_interrupted_events_say_so(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("GET", WS, Canned({"name": "team"}))  # -w is checked first
    fake_daemon.on("GET", "/v1/events", Canned(": connected\n\n", delay=HELD))
    child = _start(fake_daemon, "events", "--json")
    _when_seen(fake_daemon, 2)
    code, out, err = _interrupt(child)
    assert (code, err) == (130, "memctl: interrupted\n")
    assert json.loads(out)["error"]["code"] == "interrupted"


def test_an_interrupted_reindex_says_how_far_it_got(fake_daemon: FakeDaemon) -> None:
    first = {"drawers": 2000, "seconds": 1.0, "next": 2000, "total": 5000, "done": False}
    fake_daemon.on(
        "POST",
        WS + "/recall/reindex",
        lambda seen: Canned(first) if len(fake_daemon.seen) == 1 else Canned({}, delay=HELD),
    )
    child = _start(fake_daemon, "recall", "reindex")
    _when_seen(fake_daemon, 2)
    code, out, err = _interrupt(child)
    assert (code, out) == (130, "")
    assert err.startswith("memctl: interrupted; 2000 drawers re-embedded by then; ")
    assert err.count("\n") == 1


def test_an_interrupted_mcp_bridge_says_so(fake_daemon: FakeDaemon) -> None:
    reply = {"jsonrpc": "2.0", "id": 1, "result": {}}
    fake_daemon.on("POST", "/mcp", Canned(reply))
    child = _start(fake_daemon, "mcp", stdin=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
    child.stdin.flush()
    assert json.loads(child.stdout.readline()) == reply  # idle now, waiting on stdin
    child.send_signal(signal.SIGINT)
    err = child.stderr.read().decode() if child.stderr else ""
    child.stdin.close()
    assert child.wait(timeout=60) == 130
    assert err == "memctl: interrupted\n"


def test_an_interrupted_memhubd_command_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    def bench(_args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    args = argparse.Namespace(handler=bench, command="bench", json=True)
    assert memhubd_cli._run(args) == 130
    out, err = capsys.readouterr()
    assert err == "memhubd bench: error: interrupted\n"
    assert json.loads(out)["error"]["code"] == "interrupted"
