"""The hook commands as an agent runs them: a usage error exits 0 with one line (Claude
Code blocks the user's prompt on exit 2), session-end reads its whole input however
large, and refuses a transcript that is not a regular file at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memctl_fakes import Canned, FakeDaemon

from memctl.cli import main


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["cowork", "drain", "--format", "plain", "-w", "-dash"], "cowork drain"),
        (["cowork", "drain", "--timeout", "soon"], "cowork drain"),
        (["hooks", "session-end", "--no-such-option"], "hooks session-end"),
        (["-w", "alpha", "hooks", "session-end", "extra"], "hooks session-end"),
    ],
)
def test_a_usage_error_of_a_hook_command_exits_0_with_one_line(
    argv: list[str], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"memctl {name}: ")


@pytest.mark.parametrize(
    "argv", [["cowork", "push", "--no-such-option"], ["hooks", "install", "--no-such-option"]]
)
def test_a_usage_error_of_any_other_command_still_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2


def end_hook(daemon_url: str, *argv: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.update(MEMHUB_URL=daemon_url, MEMHUB_TOKEN="mh_test_token")
    command = [sys.executable, "-m", "memctl", "hooks", "session-end", "-w", "team", *argv]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )


def test_session_end_reads_an_input_over_a_mebibyte_to_its_end_and_ingests(
    fake_daemon: FakeDaemon, tmp_path: Path
) -> None:
    # Given a Stop event whose last message makes it 3 MiB, its transcript path last
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hello"}}\n')
    fake_daemon.on("POST", "/v1/workspaces/team/recall/ingest", Canned({"chunks": 1}))
    event = {
        "hook_event_name": "Stop",
        "last_assistant_message": "m" * (3 * 1024 * 1024),
        "transcript_path": str(transcript),
    }

    # When the agent writes it to the hook with raw writes, as an agent CLI does
    hook = end_hook(fake_daemon.url)
    assert hook.stdin is not None
    data = json.dumps(event).encode()
    for start in range(0, len(data), 65536):
        hook.stdin.write(data[start : start + 65536])  # BrokenPipeError if the hook stopped
    hook.stdin.close()
    hook.stdin = None
    out, err = hook.communicate(timeout=60)

    # Then the transcript is ingested
    assert hook.returncode == 0 and out == b"", err
    assert b"session.jsonl: 1 new chunk(s)" in err
    assert [seen.path for seen in fake_daemon.seen] == ["/v1/workspaces/team/recall/ingest"]


def test_session_end_refuses_a_transcript_that_is_a_fifo_at_once(
    fake_daemon: FakeDaemon, tmp_path: Path
) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()

    hook = end_hook(fake_daemon.url, "--timeout", "20")
    out, err = hook.communicate(json.dumps({"transcript_path": str(fifo)}).encode(), timeout=15)

    assert hook.returncode == 0 and out == b""
    assert b"is not a regular file" in err and len(err.splitlines()) == 1
    assert time.monotonic() - started < 10
    assert fake_daemon.seen == []


@pytest.mark.parametrize(
    "argv", [["cowork", "push", "--to", "bob", b"bad \xff byte"], ["cowork", "peek", b"\xff"]]
)
def test_an_argument_that_is_not_utf8_is_one_line_not_a_traceback(argv: list[str | bytes]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", "http://127.0.0.1:9", "--token", "mh_x_y"]
        + ["-w", "w", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (2, "memctl: an argument is not valid UTF-8 text\n")
