"""`socket_group` gives a group the local operator's socket: the group must be able to
reach it. A directory the daemon makes for the socket lets the group search it; one that
stops the group is named in a warning."""

from __future__ import annotations

import grp
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memhubd.runtime.config import ConfigError
from memhubd.server import _let_group_through, bind_unix

GROUP = grp.getgrgid(os.getgid()).gr_name


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A short directory everyone may search (socket paths are limited to ~100 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="mh-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def bound(path: Path, group: str | None) -> None:
    listener = bind_unix(str(path), 0o660, group)
    listener.sock.close()


def test_a_directory_made_for_the_socket_lets_its_group_through(open_base: Path) -> None:
    bound(open_base / "run" / "d.sock", GROUP)

    made = (open_base / "run").stat()
    assert made.st_gid == os.getgid()
    assert stat.S_IMODE(made.st_mode) == 0o710
    assert _let_group_through(str(open_base / "run"), os.getgid(), GROUP) is None


def test_a_directory_that_stops_the_group_is_named(open_base: Path) -> None:
    (open_base / "closed").mkdir(mode=0o700)
    bound(open_base / "closed" / "d.sock", GROUP)

    stopping = _let_group_through(str(open_base / "closed"), os.getgid(), GROUP)

    assert stopping == open_base / "closed"
    assert stat.S_IMODE((open_base / "closed").stat().st_mode) == 0o700  # not ours to open


def test_without_a_group_the_directory_stays_private(open_base: Path) -> None:
    bound(open_base / "run" / "d.sock", None)

    assert stat.S_IMODE((open_base / "run").stat().st_mode) == 0o700


def test_every_directory_made_for_the_socket_lets_its_group_through(open_base: Path) -> None:
    old = os.umask(0o077)  # as the bundled systemd unit sets it
    try:
        bound(open_base / "a" / "b" / "c" / "d.sock", GROUP)
    finally:
        os.umask(old)

    for made in ("a", "a/b", "a/b/c"):
        found = (open_base / made).stat()
        assert (found.st_gid, stat.S_IMODE(found.st_mode)) == (os.getgid(), 0o710), made
    assert _let_group_through(str(open_base / "a" / "b" / "c"), os.getgid(), GROUP) is None


def test_without_a_group_every_directory_made_is_private(open_base: Path) -> None:
    bound(open_base / "a" / "b" / "d.sock", None)

    for made in ("a", "a/b"):
        assert stat.S_IMODE((open_base / made).stat().st_mode) == 0o700, made


def test_a_file_where_the_socket_directory_should_be_is_left_as_it_is(open_base: Path) -> None:
    (open_base / "notes.txt").write_text("mine")
    (open_base / "notes.txt").chmod(0o644)

    with pytest.raises(ConfigError, match="notes.txt is in the way: it is a file"):
        bound(open_base / "notes.txt" / "d.sock", GROUP)

    assert stat.S_IMODE((open_base / "notes.txt").stat().st_mode) == 0o644
