"""Approval targets stay inside the workspace: traversal, symlinks and non-.mem files are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from review_helpers import fact_source, load, snapshot_files

from memhubd.review import ReviewStore
from memhubd.review.durable import read_bytes


@pytest.fixture
def pid(store: ReviewStore, root: Path) -> str:
    return store.propose(load(root), fact_source("db.version"), proposer="agent").proposal_id


def assert_refused(
    store: ReviewStore, root: Path, pid: str, into: str, code: str, outside: Path
) -> None:
    before, before_outside = snapshot_files(root), snapshot_files(outside)

    decision = store.approve(pid, load(root), into, reviewer="alice")

    assert (decision.ok, decision.status) == (False, "invalid")
    assert [e.code for e in decision.errors] == [code]
    assert snapshot_files(root) == before
    assert snapshot_files(outside) == before_outside
    assert store.get(pid).status == "pending"


@pytest.mark.parametrize(
    ("into", "code"),
    [
        ("../x.mem", "target_outside_workspace"),
        ("sub/../../x.mem", "target_outside_workspace"),
        ("notes.txt", "target_not_mem"),
        ("approved.mem.bak", "target_not_mem"),
        (".mem", "target_not_mem"),
        ("", "target_required"),
        (".memdsl/proposals/x.mem", "target_in_staging"),
        ("bad\0name.mem", "target_invalid"),
        ("nl\nfile.mem", "target_invalid"),
        ("sub\tdir/x.mem", "target_invalid"),
        ("x\u2028y.mem", "target_invalid"),
        ("esc\x1b[2J.mem", "target_invalid"),
        (".", "target_not_mem"),
        ("sub/..", "target_not_mem"),
    ],
)
def test_relative_targets_outside_or_not_mem_are_refused(
    store: ReviewStore, root: Path, pid: str, into: str, code: str
) -> None:
    assert_refused(store, root, pid, into, code, root.parent)


@pytest.mark.parametrize(
    "into",
    [".git/memory.mem", ".git/info/x.mem", "sub/.hg/x.mem", ".svn/x.mem", ".GIT/x.mem"],
)
def test_targets_in_version_controls_own_directory_are_refused(
    store: ReviewStore, root: Path, pid: str, into: str
) -> None:
    # Given a workspace that is a repository: what lies in .git is never versioned
    (root / ".git" / "info").mkdir(parents=True)

    # Then neither the diff nor the approval takes such a target, and nothing is written
    diff = store.diff(pid, into)
    assert (diff.ok, [e.code for e in diff.errors]) == (False, ["target_in_vcs_dir"])
    assert_refused(store, root, pid, into, "target_in_vcs_dir", root.parent)


def test_a_symlink_into_the_git_directory_is_refused(
    store: ReviewStore, root: Path, pid: str
) -> None:
    (root / ".git").mkdir()
    (root / "meta").symlink_to(root / ".git")

    assert_refused(store, root, pid, "meta/x.mem", "target_in_vcs_dir", root.parent)


def test_a_file_merely_named_like_a_vcs_directory_is_a_target(
    store: ReviewStore, root: Path, pid: str
) -> None:
    decision = store.approve(pid, load(root), "git/.github.mem", reviewer="alice")

    assert decision.ok, decision.errors


def test_absolute_path_outside_the_workspace_is_refused(
    store: ReviewStore, root: Path, pid: str, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    assert_refused(store, root, pid, str(outside / "x.mem"), "target_outside_workspace", outside)


def test_symlink_pointing_outside_is_refused(
    store: ReviewStore, root: Path, pid: str, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "victim.mem").write_text("# not yours\n")
    (root / "link.mem").symlink_to(outside / "victim.mem")
    (root / "linkdir").symlink_to(outside)

    assert_refused(store, root, pid, "link.mem", "target_outside_workspace", outside)
    assert_refused(store, root, pid, "linkdir/new.mem", "target_outside_workspace", outside)


def test_symlink_to_a_non_mem_file_inside_is_refused(
    store: ReviewStore, root: Path, pid: str
) -> None:
    (root / "notes.txt").write_text("# plain notes\n")
    (root / "notes.mem").symlink_to(root / "notes.txt")

    assert_refused(store, root, pid, "notes.mem", "target_not_mem", root.parent)


def test_directory_named_like_a_mem_file_is_refused(
    store: ReviewStore, root: Path, pid: str
) -> None:
    (root / "folder.mem").mkdir()

    assert_refused(store, root, pid, "folder.mem", "target_not_file", root.parent)


@pytest.mark.parametrize(
    "into",
    [
        "a" * 300 + ".mem",
        "new/" + "a" * 300 + ".mem",
        "b" * 300 + "/x.mem",
        "base.mem/x.mem",
        "base.mem/sub/x.mem",
    ],
    ids=["long-name", "long-name-in-new-dir", "long-dir", "through-a-file", "deep-through-a-file"],
)
def test_a_target_no_file_can_have_is_invalid_for_diff_and_approval(
    store: ReviewStore, root: Path, pid: str, into: str
) -> None:
    # Given a target whose name is longer than the file system allows, or whose parent
    # is a file: the caller's mistake, never the disk's
    # When it is diffed, and approved
    diff = store.diff(pid, into)

    # Then both refuse it as invalid, and nothing is written
    assert (diff.ok, diff.status) == (False, "invalid")
    assert [e.code for e in diff.errors] == ["target_invalid"]
    assert_refused(store, root, pid, into, "target_invalid", root.parent)


def test_reading_a_path_no_file_can_have_finds_no_file(root: Path) -> None:
    assert read_bytes(str(root / "base.mem" / "x.mem")) is None
    assert read_bytes(str(root / ("a" * 300 + ".mem"))) is None


def test_symlink_inside_the_workspace_writes_through_to_its_file(
    store: ReviewStore, root: Path, pid: str
) -> None:
    (root / "alias.mem").symlink_to(root / "base.mem")

    decision = store.approve(pid, load(root / "base.mem"), "alias.mem", reviewer="alice")

    assert decision.ok and decision.merged_into == str(root / "base.mem")
    assert (root / "alias.mem").is_symlink()
    assert "fact db.version" in (root / "base.mem").read_text()


def test_workspace_reached_through_a_symlink_accepts_its_own_files(
    root: Path, tmp_path: Path
) -> None:
    link = tmp_path / "ws-link"
    link.symlink_to(root)
    store = ReviewStore(str(link))
    pid = store.propose(load(link), fact_source("db.version"), proposer="a").proposal_id

    decision = store.approve(pid, load(link), str(link / "approved.mem"), reviewer="alice")

    assert decision.ok and os.path.exists(root / "approved.mem")
