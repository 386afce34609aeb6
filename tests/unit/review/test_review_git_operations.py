"""An approval never writes into a work tree while a git merge, rebase, cherry-pick, revert
or `git am` is stopped half-way: the operation owns the tree until it ends, and its abort
would drop the approved block while the audit says approved."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from review_helpers import fact_source, load, make_workspace, snapshot_files

from memhubd.review import ReviewStore
from memhubd.review.targets import git_operation

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_EDITOR": "true",
}


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=GIT_ENV, check=check, capture_output=True, text=True
    )


def repository(directory: Path) -> Path:
    """A repository whose `main` holds the review workspace and a `rules.mem`."""
    make_workspace(directory)
    (directory / "rules.mem").write_text('fact rule { claim: "base wording" }\n')
    (directory / ".gitignore").write_text(".memdsl/\n")
    git(directory, "init", "-q", "-b", "main")
    git(directory, "add", "-A")
    git(directory, "commit", "-qm", "init")
    return directory


def diverge(repo: Path) -> None:
    """`topic` and `main` each change rules.mem's one line differently (a conflict)."""
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "rules.mem").write_text('fact rule { claim: "topic wording" }\n')
    git(repo, "commit", "-qam", "topic")
    git(repo, "checkout", "-q", "main")
    (repo / "rules.mem").write_text('fact rule { claim: "main wording" }\n')
    git(repo, "commit", "-qam", "main")


def stop(repo: Path, operation: str) -> None:
    """Leave `operation` stopped on the rules.mem conflict."""
    if operation == "rebase":
        git(repo, "checkout", "-q", "topic")
        stopped = git(repo, "rebase", "main", check=False)
    elif operation == "merge":
        stopped = git(repo, "merge", "topic", check=False)
    elif operation == "cherry-pick":
        stopped = git(repo, "cherry-pick", "topic", check=False)
    else:  # revert main's change on top of a commit that changes the line again
        (repo / "rules.mem").write_text('fact rule { claim: "third wording" }\n')
        git(repo, "commit", "-qam", "third")
        stopped = git(repo, "revert", "HEAD~1", check=False)
    assert stopped.returncode != 0, stopped.stdout + stopped.stderr
    # The conflicted file is left with markers; the approval targets another file.
    git(repo, "checkout", "-q", "--theirs", "--", "rules.mem")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = repository(tmp_path / "ws")
    diverge(repo)
    return repo


@pytest.mark.parametrize("operation", ["rebase", "merge", "cherry-pick", "revert"])
def test_an_approval_during_a_stopped_operation_is_refused_and_writes_nothing(
    repo: Path, operation: str
) -> None:
    # Given a git operation stopped on a conflict, and a pending proposal
    stop(repo, operation)
    store = ReviewStore(str(repo))
    pid = store.propose(load(repo), fact_source("db.size"), proposer="agent").proposal_id
    before = snapshot_files(repo)

    # When a reviewer approves it into a file the operation did not touch
    decision = store.approve(pid, load(repo), "base.mem", reviewer="alice")

    # Then it is refused, naming the operation and what to do, and nothing changed
    assert (decision.ok, decision.status) == (False, "git_operation_in_progress")
    code = operation.replace("-", "_") + "_in_progress"
    assert [e.code for e in decision.errors] == [code]
    message = decision.errors[0].message
    assert f"git {operation} --continue" in message and f"git {operation} --abort" in message
    assert snapshot_files(repo) == before
    pending = store.get(pid)
    assert pending.status == "pending" and not pending.merged_into and not pending.decided_by


def test_once_the_rebase_is_aborted_the_approval_goes_through_and_stays(repo: Path) -> None:
    stop(repo, "rebase")
    store = ReviewStore(str(repo))
    pid = store.propose(load(repo), fact_source("db.size"), proposer="agent").proposal_id
    assert not store.approve(pid, load(repo), "base.mem", reviewer="alice").ok

    git(repo, "rebase", "--abort")
    decision = store.approve(pid, load(repo), "base.mem", reviewer="alice")

    assert decision.ok, decision.errors
    assert "fact db.size" in (repo / "base.mem").read_text()
    assert git(repo, "status", "--porcelain").stdout.strip() == "M base.mem"


def test_a_workspace_below_the_repository_root_is_guarded_too(tmp_path: Path) -> None:
    # Given a workspace in a subdirectory of a repository stopped in a merge
    top = tmp_path / "repo"
    make_workspace(top / "memory")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "init")
    (top / ".git" / "MERGE_HEAD").write_text(git(top, "rev-parse", "HEAD").stdout)
    store = ReviewStore(str(top / "memory"))
    pid = store.propose(load(top / "memory"), fact_source("db.size"), proposer="agent")

    decision = store.approve(pid.proposal_id, load(top / "memory"), "base.mem", reviewer="alice")

    assert decision.status == "git_operation_in_progress"
    assert str(top) in decision.errors[0].message


def test_a_linked_worktree_is_judged_by_its_own_state(repo: Path, tmp_path: Path) -> None:
    # Given a linked worktree (its .git is a `gitdir:` file) with a stopped cherry-pick,
    # while the main checkout is idle
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked), "main")
    assert (linked / ".git").is_file()
    stop(linked, "cherry-pick")
    idle, busy = ReviewStore(str(repo)), ReviewStore(str(linked))
    first = idle.propose(load(repo), fact_source("db.size"), proposer="agent").proposal_id
    second = busy.propose(load(linked), fact_source("db.size"), proposer="agent").proposal_id

    # Then only the worktree with the stopped operation refuses
    assert idle.approve(first, load(repo), "base.mem", reviewer="alice").ok
    refused = busy.approve(second, load(linked), "base.mem", reviewer="alice")
    assert refused.status == "git_operation_in_progress"
    assert [e.code for e in refused.errors] == ["cherry_pick_in_progress"]


def test_a_correction_marking_a_file_in_a_busy_nested_repository_is_refused(
    tmp_path: Path,
) -> None:
    # Given a workspace whose superseded declaration lives in a nested repository
    # (a submodule's checkout, say) stopped in a merge
    root = make_workspace(tmp_path / "ws")
    nested = root / "vendor"
    nested.mkdir()
    (nested / "old.mem").write_text(fact_source("old.rule"))
    (nested / ".git").mkdir()
    (nested / ".git" / "MERGE_HEAD").write_text("0" * 40 + "\n")
    store = ReviewStore(str(root))
    source = fact_source("old.rule_v2", extra='  supersedes: "fact:old.rule"\n')
    proposed = store.propose(load(root), source, proposer="agent")
    assert proposed.ok, proposed.errors
    pid = proposed.proposal_id

    # When it is approved into the idle top-level directory
    decision = store.approve(pid, load(root), "base.mem", reviewer="alice")

    # Then the marking it would write there refuses it
    assert decision.status == "git_operation_in_progress"
    assert str(nested) in decision.errors[0].message


@pytest.mark.parametrize(
    ("leftover", "code"),
    [
        ("rebase-merge/", "rebase_in_progress"),
        ("rebase-apply/", "rebase_in_progress"),
        ("rebase-apply/applying", "am_in_progress"),
        ("MERGE_HEAD", "merge_in_progress"),
        ("CHERRY_PICK_HEAD", "cherry_pick_in_progress"),
        ("REVERT_HEAD", "revert_in_progress"),
        ("BISECT_LOG", None),
        ("index.lock", None),
    ],
)
def test_what_git_leaves_in_its_dir_decides(tmp_path: Path, leftover: str, code: str) -> None:
    git_dir = tmp_path / "wt" / ".git"
    path = git_dir / leftover.rstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if leftover.endswith("/"):
        path.mkdir()
    else:
        path.write_text("")

    found = git_operation(str(tmp_path / "wt" / "new" / "x.mem"))

    assert (found.code if found else None) == code


def test_a_gitdir_file_is_followed_relative_to_its_directory(tmp_path: Path) -> None:
    (tmp_path / "store" / "modules" / "sub").mkdir(parents=True)
    (tmp_path / "store" / "modules" / "sub" / "MERGE_HEAD").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".git").write_text("gitdir: ../store/modules/sub\n")

    assert git_operation(str(tmp_path / "sub" / "x.mem")).code == "merge_in_progress"
    # A `.git` file that names no git dir is no repository, as for git
    (tmp_path / "sub" / ".git").write_text("not a pointer\n")
    assert git_operation(str(tmp_path / "sub" / "x.mem")) is None


def test_outside_any_repository_nothing_is_refused(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 30)
    deep.mkdir(parents=True)
    assert git_operation(str(deep / "x.mem")) is None
