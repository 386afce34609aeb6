"""What `memctl recall ingest` reports against a real daemon whose `[recall]
max_file_bytes` is below memctl's: a file refused part-way through its upload is
reported once with the daemon's reason; a FIFO or device named on the command line is
skipped as no regular file; per-source warnings show in the text summary too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
DAEMON_MAX_FILE_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("ingest-reports")
    workspaces = copy_examples(root / "ws", [TEAM])
    with start_daemon(root, workspaces, **{"recall.max_file_bytes": DAEMON_MAX_FILE_BYTES}) as live:
        yield live


def memctl(daemon: LiveDaemon, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", daemon.admin_token,
         "-w", TEAM, *argv],
        capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )  # fmt: skip


def notes(lines: int) -> str:
    return "".join(
        f"note {n}: the ledger rounding rule, restated once more\n" for n in range(lines)
    )


@pytest.mark.parametrize(
    "request_bytes",
    [16 * 1024, 100 * 1024],  # refused at a later part; refused at the first
)
def test_a_file_the_daemon_refuses_part_way_is_reported_once_with_its_reason(
    daemon: LiveDaemon, tmp_path: Path, request_bytes: int
) -> None:
    # Given a file over the daemon's limit but under memctl's, sent in parts
    big = tmp_path / "big.txt"
    big.write_text(notes(8000))
    assert big.stat().st_size > 3 * max(request_bytes, DAEMON_MAX_FILE_BYTES)

    # When it is ingested
    done = memctl(daemon, "recall", "ingest", str(big), "--request-bytes", str(request_bytes),
                  "--json")  # fmt: skip

    # Then the file is one file, skipped once with the daemon's reason, as a whole file
    # over the limit is
    summary = json.loads(done.stdout)
    assert summary["files"] == 1 and summary["chunks"] == 0, summary
    assert summary["failed"] == []
    assert summary["skipped"] == [
        {"source": "big.txt", "reason": f"larger than {DAEMON_MAX_FILE_BYTES} bytes"}
    ]
    assert done.returncode == 0 and "does not continue" not in done.stdout


def test_a_fifo_or_device_named_is_skipped_as_no_regular_file(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = memctl(daemon, "recall", "ingest", str(fifo), "/dev/null")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"skipped {fifo}: not a regular file" in done.stdout
    assert "skipped /dev/null: not a regular file" in done.stdout
    assert "failed" not in done.stdout.split("\n", 1)[1]


def test_the_text_summary_shows_each_sources_warnings(daemon: LiveDaemon, tmp_path: Path) -> None:
    # Given notes that start with transcript lines and go on in prose
    said = [
        {"type": "user", "message": {"role": "user", "content": f"why does batch {n} drift?"}}
        for n in range(6)
    ]
    mixed = tmp_path / "mixed.md"
    mixed.write_text(
        "".join(json.dumps(line) + "\n" for line in said) + "# Follow-up\n\nround after\n"
    )

    # When they are ingested with the text summary
    done = memctl(daemon, "recall", "ingest", str(mixed), "--dry-run")

    # Then the lines left out are said, as with --json
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stdout.splitlines() if line.startswith("warning ")]
    assert warned and warned[0].startswith("warning mixed.md: 2 line(s) not JSON, left out")
