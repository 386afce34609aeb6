"""read_confined and observe: bytes only from regular files inside the workspace's real path,
checked on the open file rather than on the name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memhubd.runtime.confine import Refused, observe, read_confined


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.mem").write_text("inside", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    return workspace


def test_a_regular_file_inside_is_read_with_its_stat(root: Path) -> None:
    found = read_confined(str(root / "a.mem"), str(root))
    assert found is not None
    data, stat = found
    assert data == b"inside"
    info = os.stat(root / "a.mem")
    assert stat == (info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns)


def test_a_link_out_is_refused_when_opened_even_if_never_observed(root: Path) -> None:
    # As if the link were swapped in between the walk and the read.
    (root / "x.mem").symlink_to(root.parent / "secret.txt")
    with pytest.raises(Refused) as refused:
        read_confined(str(root / "x.mem"), str(root))
    assert refused.value.kind == "outside_workspace"


def test_a_directory_swapped_for_a_link_out_is_refused(root: Path) -> None:
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.mem").write_text("outside", encoding="utf-8")
    (root / "sub").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(Refused):
        read_confined(str(root / "sub" / "b.mem"), str(root))


def test_a_sibling_directory_sharing_the_prefix_is_outside(root: Path) -> None:
    sibling = root.parent / (root.name + "-other")
    sibling.mkdir()
    (sibling / "c.mem").write_text("outside", encoding="utf-8")
    (root / "c.mem").symlink_to(sibling / "c.mem")
    with pytest.raises(Refused):
        read_confined(str(root / "c.mem"), str(root))
    with pytest.raises(Refused):
        observe(str(root / "c.mem"), str(root))


def test_a_fifo_is_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "p.mem")
    with pytest.raises(Refused) as refused:
        read_confined(str(root / "p.mem"), str(root))
    assert refused.value.kind == "read_error"


def test_missing_files_and_dangling_links_are_simply_absent(root: Path) -> None:
    (root / ".#a.mem").symlink_to("user@host.1:1")
    assert read_confined(str(root / "gone.mem"), str(root)) is None
    assert observe(str(root / "gone.mem"), str(root)) == (None, None)
    assert observe(str(root / ".#a.mem"), str(root)) == (None, None)


def test_a_link_inside_is_observed_with_its_target(root: Path) -> None:
    (root / "b.mem").symlink_to("a.mem")
    stat, real = observe(str(root / "b.mem"), str(root))
    assert real == os.path.realpath(root / "a.mem")
    assert stat is not None and stat[2] == os.stat(root / "a.mem").st_ino


def test_a_file_there_but_not_readable_is_a_read_error_not_a_deletion(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Permissions cannot refuse root (the tests' usual user), so the open is made to fail
    # as it fails for a daemon without read permission on the file.
    target = str(root / "a.mem")
    real_open = os.open

    def denied(path: str, flags: int, *args: object) -> int:
        if path == target:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(Refused) as refused:
        read_confined(target, str(root))
    assert refused.value.kind == "read_error"
    assert refused.value.message == "cannot read: Permission denied"
    # while a file that is gone is missing, as before
    assert read_confined(str(root / "gone.mem"), str(root)) is None
    (root / "loop.mem").symlink_to(root / "loop.mem")
    assert read_confined(str(root / "loop.mem"), str(root)) is None


def test_a_file_that_fails_as_it_is_read_is_a_read_error(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int, size: int) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "read", failing)
    with pytest.raises(Refused) as refused:
        read_confined(str(root / "a.mem"), str(root))
    assert (refused.value.kind, refused.value.message) == (
        "read_error",
        "cannot read: Input/output error",
    )
