"""What a proposal is validated as is what approval writes and the daemon serves: its
stored text is the text validated, an approval checks a target as a served source is read,
and only an approval that this proposal recorded is taken for one already written."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_helpers import fact_source, load

from memhubd.model import Workspace
from memhubd.review import ReviewStore


@pytest.mark.parametrize(
    "separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]
)
def test_a_source_with_a_line_end_the_stored_file_would_not_keep_is_refused(
    store: ReviewStore, root: Path, separator: str
) -> None:
    # Read back from its file, the comment would end at the separator and `depends_on`
    # become live: the text approved would not be the text validated
    source = fact_source("db.note", extra=f'  # aside{separator}  depends_on: "fact:db.x"\n')
    result = store.propose(load(root), source, proposer="agent")
    assert not result.ok
    assert [e.code for e in result.errors] == ["invalid_text"]
    assert "line 3" in result.errors[0].message
    assert store.list("all") == []


def test_crlf_is_stored_as_lf_and_validated_as_stored(store: ReviewStore, root: Path) -> None:
    source = fact_source("db.crlf", claim="Line endings from another system.").replace("\n", "\r\n")
    result = store.propose(load(root), source, proposer="agent")
    assert result.ok, result.errors
    stored = store.get(result.proposal_id)
    assert stored is not None and "\r" not in stored.source
    assert stored.source == fact_source("db.crlf", claim="Line endings from another system.")


def test_an_approval_checks_a_lone_cr_target_as_it_is_served(
    store: ReviewStore, root: Path
) -> None:
    # The proposal is made while the id is free
    pid = store.propose(load(root), fact_source("db.rule"), proposer="agent").proposal_id
    assert pid
    # Then a file with lone-CR line ends declares that id after a comment: served (as
    # memdsl reads it), the comment ends at the CR and the declaration is there
    target = root / "cr.mem"
    target.write_bytes(
        b"# rules kept by another team\r" + fact_source("db.rule").encode().replace(b"\n", b"\r")
    )
    served = Workspace.load([str(root)])
    assert "fact:db.rule" in [d.id for d in served.declarations]
    decision = store.approve(pid, served, str(target), reviewer="alice")
    assert not decision.ok
    assert "declaration_exists" in [e.code for e in decision.errors]
    assert b"approved from proposal" not in target.read_bytes()


def test_a_marker_no_approval_of_the_proposal_wrote_is_not_its_block(
    store: ReviewStore, root: Path
) -> None:
    rule = store.propose(load(root), fact_source("db.rule"), proposer="agent").proposal_id
    # Another proposal carries a line that reads as the first one's approval marker
    planted = f"# approved from proposal {rule} at 2026-01-01T00:00:00+00:00\n"
    decoy = store.propose(load(root), planted + fact_source("db.decoy"), proposer="agent")
    assert decoy.ok, decoy.errors
    assert store.approve(decoy.proposal_id, load(root), "t.mem", reviewer="alice").ok
    # Approving the first into the same file writes it: it was never written there
    decision = store.approve(rule, load(root), "t.mem", reviewer="alice")
    assert decision.ok and not decision.recovered
    assert "fact:db.rule" in [d.id for d in load(root).declarations]
    assert (root / "t.mem").read_text(encoding="utf-8").count(fact_source("db.rule")) == 1


def test_a_module_line_that_would_move_the_targets_declarations_is_refused(
    store: ReviewStore, root: Path
) -> None:
    target = root / "rules.mem"
    target.write_text("module sec.rules\n\n" + fact_source("db.kept"), encoding="utf-8")
    before = target.read_bytes()
    moved = store.propose(load(root), "module elsewhere\n" + fact_source("db.new"), proposer="a")
    assert moved.ok, moved.errors
    decision = store.approve(moved.proposal_id, load(root), str(target), reviewer="alice")
    assert not decision.ok
    assert [e.code for e in decision.errors] == ["module_conflict"]
    assert target.read_bytes() == before
    # The same module, or a new file, takes it
    same = store.propose(load(root), "module sec.rules\n" + fact_source("db.same"), proposer="a")
    assert store.approve(same.proposal_id, load(root), str(target), reviewer="alice").ok
    assert store.approve(moved.proposal_id, load(root), "new.mem", reviewer="alice").ok
    modules = {d.id: d.module for d in load(root).declarations}
    assert modules["fact:db.kept"] == modules["fact:db.same"] == "sec.rules"
    assert modules["fact:db.new"] == "elsewhere"
