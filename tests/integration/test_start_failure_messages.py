"""A start stopped by a socket or state directory it cannot use says so in one line
naming the setting, the path and the reason (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def serve(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "memhubd", "serve", "--port", "0", *flags]
    env = {**os.environ, "MEMHUB_STATE_DIR": str(tmp_path / "state")}
    env.pop("MEMHUB_CONFIG", None)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_a_socket_path_under_a_file_names_the_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    socket_path = tmp_path / "plain" / "d.sock"

    done = serve(tmp_path, "--socket", str(socket_path))

    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"memhubd: socket_path {socket_path}: cannot listen there: "
        f"{tmp_path / 'plain'} is in the way: it is a file, not a directory"
    )


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_socket_path_where_no_file_can_be_made_names_the_key_and_path(tmp_path: Path) -> None:
    done = serve(tmp_path, "--socket", "/proc/memhubd-test.sock")

    assert done.returncode == 2
    assert done.stderr.startswith("memhubd: socket_path /proc/memhubd-test.sock: cannot listen")
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_state_dir_that_is_a_file_is_named_as_the_state_dir(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")

    done = serve(tmp_path, "--state-dir", str(tmp_path / "plain"), "--socket", "")

    assert done.returncode == 2
    assert done.stderr.strip() == f"memhubd: state_dir {tmp_path / 'plain'}: is not a directory"


def test_a_tcp_address_that_cannot_be_bound_names_it(tmp_path: Path) -> None:
    from memhubd.auth.tokens import TokenStore

    TokenStore(tmp_path / "state").create("t", "read:summary")  # a non-loopback host needs one
    # 192.0.2.1 (TEST-NET-1) is no address of this machine
    done = serve(tmp_path, "--host", "192.0.2.1", "--socket", "")

    assert done.returncode == 2
    assert done.stderr.startswith("memhubd: cannot listen on http://192.0.2.1:0 (host and port): ")
    assert len(done.stderr.strip().splitlines()) == 1
