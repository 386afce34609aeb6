"""What one reader sees of a workspace keeps the whole workspace's supersession: a
hidden newer declaration never revives the older one."""

from __future__ import annotations

from memhubd.check import applicable_constraints
from memhubd.query import build_evidence_pack

SOURCE = """
fact pricing.old { claim: "The starter plan costs 10 euros." }
fact pricing.new {
  claim: "The starter plan costs 12 euros."
  supersedes: "pricing.old"
  access_policy { readers: [finance] }
}
boundary deploy.old { scope: global claim: "Deploy only on weekdays." }
boundary deploy.new {
  scope: global
  claim: "Deploy only on Tuesdays."
  supersedes: "boundary:deploy.old"
  access_policy { readers: [ops] }
}
"""


def public(decl) -> bool:
    return "readers" not in decl.access_policy


def test_a_restricted_workspace_keeps_the_whole_supersession(load) -> None:
    whole = load(SOURCE)
    seen = whole.restricted(public)
    assert [d.name for d in seen.declarations] == ["pricing.old", "deploy.old"]
    assert seen.superseded_ids() == whole.superseded_ids()
    assert seen.whole is whole and whole.whole is whole


def test_a_query_over_a_restricted_workspace_skips_what_hidden_declarations_supersede(
    load,
) -> None:
    seen = load(SOURCE).restricted(public)
    pack = build_evidence_pack(seen, "starter plan costs euros").as_dict()
    assert pack["context"] == [] and pack["must"] == []


def test_a_constraint_superseded_by_a_hidden_one_no_longer_applies(load) -> None:
    seen = load(SOURCE).restricted(public)
    assert applicable_constraints(seen, "deploy on weekdays") == []


def test_restricting_twice_keeps_both_supersessions(load) -> None:
    seen = load(SOURCE).restricted(lambda d: d.name != "pricing.new").restricted(public)
    assert {"pricing.old", "boundary:deploy.old"} <= seen.superseded_ids()
