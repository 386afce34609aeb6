"""Role sets that may read exactly the same declarations share one view of a snapshot
(its workspace, index and lint); role sets that read differently, even by a declaration
that shares its id with one they read, never do, and each answers as a view made alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from memhubd.auth.access import is_readable
from memhubd.index import build_index
from memhubd.lint import lint
from memhubd.query import build_evidence_pack
from memhubd.runtime.snapshot import build_snapshot
from memhubd.service import access

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "team-coding"
QUERIES = ["payment sdk sandbox key logs", "retry ledger billing", "review tests coverage"]

# Two declarations with one id in one file: `ops` reads the first, `qa` the second.
# Both role sets leave out one declaration of that id, but not the same one.
TWINS = """
fact shared.twin {
  claim: "The staging ledger retries twice."
  evidence { source: "runbook" quote: "twice" }
  access_policy { readers: [ops] }
}

fact shared.twin {
  claim: "The production ledger retries three times."
  evidence { source: "runbook" quote: "three times" }
  access_policy { readers: [qa] }
}
"""


def _snapshot(tmp_path: Path, extra: str = "") -> object:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    if extra:
        (root / "twins.mem").write_text(extra, encoding="utf-8")
    return build_snapshot("shared-views", str(root), None)


def _alone(snapshot: object, roles: frozenset[str]) -> object:
    """The view of `roles` made without any other role set's cut."""
    return snapshot.workspace.restricted(lambda d: is_readable(d, roles))


def _packs(ws: object) -> list[dict]:
    build_index(ws)
    return [build_evidence_pack(ws, q).as_dict() for q in QUERIES]


def test_role_sets_that_read_the_same_share_one_view_and_answer_as_alone(tmp_path) -> None:
    # Given a snapshot whose restricted bug pattern only maintainer and security read
    snapshot = _snapshot(tmp_path)
    # When three role sets that read neither (but read the rules for developers, which a
    # token without roles may not) ask for their views
    first = access._cut_of(snapshot, frozenset({"coding_agent"}))
    second = access._cut_of(snapshot, frozenset({"reviewer"}))
    third = access._cut_of(snapshot, frozenset({"developer", "coding_agent"}))
    # Then the later ones share the first one's view, and so its index
    assert first.hidden
    assert second.workspace is first.workspace and third.workspace is first.workspace
    assert second.twin is first and third.twin is first
    # And each answers, lints and counts what it may not read as a view made alone
    for cut, roles in ((second, {"reviewer"}), (third, {"developer", "coding_agent"})):
        alone = _alone(snapshot, frozenset(roles))
        assert _packs(cut.workspace) == _packs(alone)
        assert [d.as_dict() for d in cut.diagnostics()] == [d.as_dict() for d in lint(alone)]
        assert cut.hidden == first.hidden
        whole = snapshot.workspace
        assert cut.hidden_must_rules(whole) == first.hidden_must_rules(whole)


def test_role_sets_that_read_more_or_less_get_views_of_their_own(tmp_path) -> None:
    snapshot = _snapshot(tmp_path)
    agent = access._cut_of(snapshot, frozenset({"coding_agent"}))
    for roles in (frozenset({"security"}), frozenset()):
        cut = access._cut_of(snapshot, roles)
        assert cut.twin is None and cut.workspace is not agent.workspace
        assert _packs(cut.workspace) == _packs(_alone(snapshot, roles))


def test_twins_with_one_id_hidden_in_turn_are_not_taken_for_the_same_view(tmp_path) -> None:
    # Given two declarations with one id, each read by one role set only
    snapshot = _snapshot(tmp_path, TWINS)
    ops = access._cut_of(snapshot, frozenset({"ops"}))
    qa = access._cut_of(snapshot, frozenset({"qa"}))
    # Then the ids they leave out are the same, but the views are not shared
    assert ops.hidden == qa.hidden
    assert qa.twin is None and qa.workspace is not ops.workspace
    claims = {
        roles: [d.claim_text for d in cut.workspace.declarations if d.name == "shared.twin"]
        for roles, cut in (("ops", ops), ("qa", qa))
    }
    assert claims == {
        "ops": ["The staging ledger retries twice."],
        "qa": ["The production ledger retries three times."],
    }
