"""An approved correction marks what it supersedes `status: superseded`, and approvals
without a target get a suggestion: the file of the superseded declaration, else of
the same module, type or subject."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from review_helpers import fact_source, load

from memhubd.lang.writer import set_status
from memhubd.lint import lint
from memhubd.model import Workspace
from memhubd.review import ReviewStore
from memhubd.review.targets import suggest_target

CORRECTION = fact_source(
    "db.engine.v2",
    claim="The database is MySQL since the migration.",
    extra='  supersedes: "fact:db.engine"\n',
)


def codes(root: Path) -> list[str]:
    return [d.code for d in lint(load(root))]


def test_approved_supersede_marks_the_old_declaration_in_the_same_write(
    store: ReviewStore, root: Path
) -> None:
    pid = store.propose(load(root), CORRECTION, proposer="agent", supersedes="fact:db.engine")
    assert pid.ok and "unmarked_supersede_status" not in codes(root)

    decision = store.approve(pid.proposal_id, load(root), "base.mem", reviewer="alice")

    assert decision.ok and decision.marked_superseded == ("fact:db.engine",)
    workspace = load(root)
    assert workspace.by_id("fact:db.engine").status == "superseded"
    assert workspace.by_id("fact:db.engine.v2").status == "active"
    assert "unmarked_supersede_status" not in codes(root)
    text = (root / "base.mem").read_text()
    # One write: the mark and the block share the hash the audit recorded.
    entry = json.loads((root / ".memdsl/audit.log").read_text().splitlines()[-1])
    assert entry["marked_superseded"] == ["fact:db.engine"]
    assert entry["target_sha256_after"] == decision.target_sha256_after
    assert text.index("status: superseded") < text.index("# approved from proposal")


def test_superseded_declaration_in_another_file_is_marked_too(
    store: ReviewStore, root: Path
) -> None:
    pid = store.propose(load(root), CORRECTION, proposer="agent").proposal_id

    decision = store.approve(pid, load(root), "corrections.mem", reviewer="alice")

    assert decision.ok and decision.marked_superseded == ("fact:db.engine",)
    assert load(root).by_id("fact:db.engine").status == "superseded"
    assert "db.engine.v2" in (root / "corrections.mem").read_text()
    assert "unmarked_supersede_status" not in codes(root)


def test_already_inactive_declaration_keeps_its_status(store: ReviewStore, root: Path) -> None:
    base = root / "base.mem"
    base.write_text(
        base.read_text().replace(
            '  subject: db\n  claim: "The database is Post',
            '  subject: db\n  status: retracted\n  claim: "The database is Post',
        )
    )
    pid = store.propose(load(root), CORRECTION, proposer="agent").proposal_id

    decision = store.approve(pid, load(root), "base.mem", reviewer="alice")

    assert decision.ok and decision.marked_superseded == ()
    assert load(root).by_id("fact:db.engine").status == "retracted"


def test_diff_shows_the_mark_the_approval_adds(store: ReviewStore, root: Path) -> None:
    pid = store.propose(load(root), CORRECTION, proposer="agent").proposal_id

    diff = store.diff(pid, "base.mem", workspace=load(root))

    assert "+  status: superseded" in diff.diff.splitlines()


def test_set_status_rewrites_only_the_status_and_keeps_comments() -> None:
    text = (
        "# notes\n"
        'fact a { claim: "x" status: active }  # inline\n\n'
        "decision b {\n"
        '  decision: "y"\n'
        "  lifecycle { status: active as_of: 2026-10-28 }\n"
        "}\n"
        "fact c {\n"
        '  claim: "status: active"\n'
        "}\n"
    )

    assert set_status(text, "fact", "a", "superseded") == text.replace(
        "status: active }  # inline", "status: superseded }  # inline"
    )
    assert "lifecycle { status: superseded as_of" in set_status(text, "decision", "b", "superseded")
    assert set_status(text, "fact", "c", "superseded").endswith(
        'fact c {\n  status: superseded\n  claim: "status: active"\n}\n'
    )
    assert set_status(text, "fact", "missing", "superseded") is None
    assert set_status('fact d { status: [a, b] claim: "x" }', "fact", "d", "superseded") is None


def test_suggested_target_is_the_superseded_declarations_file(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.mem").write_text('entity db { }\nfact db.engine { subject: db claim: "x" }\n')
    (root / "b.mem").write_text('fact other.one { claim: "y" }\nfact other.two { claim: "z" }\n')
    workspace = load(root)
    real = str(root.resolve())

    assert suggest_target(real, workspace, CORRECTION) == "a.mem"
    # No supersedes: the file with most declarations of the same type.
    assert suggest_target(real, workspace, fact_source("db.size")) == "b.mem"
    assert suggest_target(real, workspace, 'decision nothing.alike { decision: "q" }') is None
    assert suggest_target(real, workspace, "not a declaration") is None


def test_no_target_inside_the_git_directory_is_suggested(tmp_path: Path) -> None:
    # Given declarations served from .git (loaded as memdsl loads them), most of them facts
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "a.mem").write_text('entity db { }\nfact db.engine { subject: db claim: "x" }\n')
    (root / ".git" / "b.mem").write_text('fact one { claim: "y" }\nfact two { claim: "z" }\n')
    workspace = load(root)
    real = str(root.resolve())

    # Then neither a correction of one of them nor a fact of its type is sent there
    correction = 'fact one_v2 { claim: "w" supersedes: "fact:one" }\n'
    assert suggest_target(real, workspace, correction) == "a.mem"
    assert suggest_target(real, workspace, 'fact three { claim: "w" }\n') == "a.mem"


def test_suggested_target_follows_the_module_before_the_type(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.mem").write_text('module ops\nfact one { claim: "x" }\n')
    (root / "b.mem").write_text('fact two { claim: "y" }\nfact three { claim: "z" }\n')
    workspace = load(root)
    source = 'module ops\nfact four { claim: "w" }\n'

    assert suggest_target(str(root.resolve()), workspace, source) == "a.mem"


def test_a_workspace_loaded_from_a_relative_path_is_marked_too(
    store: ReviewStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root.parent)
    relative = Workspace.load([root.name])  # file labels relative to the working directory
    pid = store.propose(relative, CORRECTION, proposer="agent").proposal_id

    decision = store.approve(pid, Workspace.load([root.name]), "corrections.mem", reviewer="a")

    assert decision.ok and decision.marked_superseded == ("fact:db.engine",)
    assert load(root).by_id("fact:db.engine").status == "superseded"
