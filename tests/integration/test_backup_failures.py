"""A `memhubd backup` that cannot finish leaves nothing under its destination: the copy
is made in a private directory named as partial and takes the destination's name only
once whole. Its one line says which side failed: the destination (full, a file too
large) or the state directory (a store that cannot be read)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memhubd.auth.audit import AdminAudit
from tests.integration.conftest import copy_examples, start_daemon

WS = "assistant"
BIG = f"recall/{WS}.db"  # grown past LIMIT below
LIMIT = 1 << 20  # bytes a file of the copy may reach


@pytest.fixture(scope="module")
def live_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state directory a daemon wrote (tokens, a recall store, locks), the daemon
    stopped; its recall store larger than LIMIT."""
    root = tmp_path_factory.mktemp("live")
    workspaces = copy_examples(root / "ws", [WS, "team-coding"])
    with start_daemon(root, workspaces) as daemon, daemon.http(daemon.admin_token) as client:
        for i in range(60):
            text = f"note {i}: the harbour crane {i} lifts containers at dawn. " * 400
            answer = client.post(
                f"/v1/workspaces/{WS}/recall/ingest", json={"content": text, "source": f"n{i}"}
            )
            assert answer.status_code == 201, answer.text
    assert (daemon.state_dir / BIG).stat().st_size > LIMIT
    return daemon.state_dir


@pytest.fixture
def state(live_state: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "state"
    shutil.copytree(live_state, copy)  # the daemon is stopped: a plain copy will do
    return copy


def backup(*argv: str, file_size: int | None = None) -> subprocess.CompletedProcess[str]:
    """`memhubd backup`; with `file_size`, no file it writes may grow past it: a write
    beyond fails (EFBIG), as on a destination that fills up."""

    def limited() -> None:
        if file_size is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a killed process
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return subprocess.run(
        [sys.executable, "-m", "memhubd", "backup", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limited,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


def left_beside(destination: Path) -> list[str]:
    """What a backup left in the destination's parent, besides the state directory."""
    return sorted(p.name for p in destination.parent.iterdir() if p.name != "state")


FULL_DISK = """
import json, subprocess, sys
from pathlib import Path
from typing import Any
disk, destination, state = map(Path, sys.argv[1:])
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk]).returncode:
    sys.exit(77)
done = subprocess.run(
    [sys.executable, "-m", "memhubd", "backup", destination, "--state-dir", state],
    capture_output=True, text=True,
)
left = sorted(str(p.relative_to(disk)) for p in disk.rglob("*"))
print(json.dumps({"returncode": done.returncode, "stderr": done.stderr, "left": left}))
"""


def backup_onto_a_full_disk(state: Path, disk: Path, destination: Path) -> dict[str, Any]:
    """`memhubd backup` onto a 1 MiB file system mounted at `disk` (in a mount namespace
    of its own, gone afterwards): what it said and what it left there."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount a small file system")
    disk.mkdir(exist_ok=True)
    done = subprocess.run(
        ["unshare", "--mount", sys.executable, "-c", FULL_DISK, disk, destination, state],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.strip()[-200:]}")
    return json.loads(done.stdout)


@pytest.mark.parametrize("place", ["in-it", "its-mount-point"])
def test_a_destination_whose_disk_fills_up_is_named_and_left_without_a_copy(
    state: Path, tmp_path: Path, place: str
) -> None:
    disk = tmp_path / "disk"
    destination = disk / "backup" if place == "in-it" else disk

    done = backup_onto_a_full_disk(state, disk, destination)

    assert done["returncode"] == 2, done["stderr"]
    assert done["stderr"].startswith(
        f"memhubd backup: error: {destination}: the destination's disk is full ("
        f"cannot write {BIG}: database or disk is full); the partial copy is removed, "
        "nothing is left under the destination"
    ), done["stderr"]
    assert len(done["stderr"].splitlines()) == 1
    assert done["left"] == []


@pytest.mark.parametrize(
    ("grown", "problem"),
    [(BIG, "disk I/O error"), ("audit/admin.jsonl", "file too large")],
    ids=["store", "log"],
)
def test_a_file_too_large_for_the_destination_names_the_destination(
    state: Path, tmp_path: Path, grown: str, problem: str
) -> None:
    if grown == "audit/admin.jsonl":  # copied before the stores
        for i in range(12):
            AdminAudit(state).record(
                "token.create", identity="admin", via="cli", outcome="ok", note=str(i) * 100_000
            )
    destination = tmp_path / "backup"

    done = backup(str(destination), "--state-dir", str(state), file_size=LIMIT)

    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"memhubd backup: error: {destination}: cannot write {grown}: {problem}; "
        "the partial copy is removed, nothing is left under the destination"
    ), done.stderr
    assert str(state) not in done.stderr, "the state directory is not what failed"
    assert left_beside(destination) == []


def test_a_store_that_cannot_be_read_names_the_state_directory(state: Path, tmp_path: Path) -> None:
    store = state / BIG
    store.write_bytes(store.read_bytes()[:100] + b"\xff" * 8192)  # its header, then junk
    destination = tmp_path / "backup"

    done = backup(str(destination), "--state-dir", str(state))

    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"memhubd backup: error: {store}: cannot be read: "), done.stderr
    assert "nothing is left under the destination" in done.stderr
    assert left_beside(destination) == []


# `memhubd backup` that stops for a minute once it has copied a store.
STALLED = """
import os, sys, time
from pathlib import Path
from memhubd import cli
from memhubd.runtime import backup
marker = Path(sys.argv[1])
copy_database = backup._copy_database
def stalled(source, target):
    copied = copy_database(source, target)
    marker.write_text(str(target))
    time.sleep(60)
    return copied
backup._copy_database = stalled
os.umask(0o022)
sys.exit(cli.main(["backup", *sys.argv[2:]]))
"""


def stopped_midway(state: Path, destination: Path, signum: int) -> tuple[int, str]:
    """Start a backup, send it `signum` while it is copying the stores; its exit status
    and error output."""
    marker = destination.parent / "copying"
    running = subprocess.Popen(
        [sys.executable, "-c", STALLED, marker, destination, "--state-dir", state],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert running.poll() is None, running.communicate()[1]
            assert time.monotonic() < deadline, "the backup never reached a store"
            time.sleep(0.05)
        running.send_signal(signum)
        _out, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    marker.unlink()
    return running.returncode, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["term", "ctrl-c"])
def test_an_interrupted_backup_removes_its_partial_copy(
    state: Path, tmp_path: Path, signum: int
) -> None:
    destination = tmp_path / "backup"

    status, err = stopped_midway(state, destination, signum)

    assert status == 128 + signum, err
    assert err == (
        "memhubd backup: error: interrupted; the partial copy is removed, "
        "nothing is left under the destination\n"
    )
    assert left_beside(destination) == []


def test_a_killed_backup_leaves_only_a_private_directory_named_partial(
    state: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "backup"

    stopped_midway(state, destination, signal.SIGKILL)

    [left] = left_beside(destination)
    assert left.startswith(".backup.partial-"), left
    partial = destination.parent / left
    assert stat.S_IMODE(partial.stat().st_mode) == 0o700
    for path in partial.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path.relative_to(partial)
    assert (partial / BIG).is_file()
