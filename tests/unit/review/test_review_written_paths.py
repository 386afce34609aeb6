"""An approval tells which workspace files it wrote (the target, and the files where it
marked a declaration superseded): the daemon serves those at once, and only those."""

from __future__ import annotations

import os
from pathlib import Path

from review_helpers import fact_source, load

from memhubd.review import ReviewStore

CORRECTION = fact_source(
    "db.engine.v2",
    claim="The database is MySQL since the migration.",
    extra='  supersedes: "fact:db.engine"\n',
)


def test_an_approval_names_the_target_and_the_files_it_marked(
    store: ReviewStore, root: Path
) -> None:
    pid = store.propose(load(root), CORRECTION, proposer="agent").proposal_id

    decision = store.approve(pid, load(root), "corrections.mem", reviewer="alice")

    assert decision.ok
    real = os.path.realpath(root)
    assert decision.written == (f"{real}/corrections.mem", f"{real}/base.mem")
    assert "written" not in decision.as_dict()


def test_an_approval_that_marks_nothing_elsewhere_names_only_its_target(
    store: ReviewStore, root: Path
) -> None:
    pid = store.propose(load(root), fact_source("db.pool"), proposer="agent").proposal_id

    decision = store.approve(pid, load(root), "base.mem", reviewer="alice")

    assert decision.ok and decision.written == (f"{os.path.realpath(root)}/base.mem",)
