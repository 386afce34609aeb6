"""Rules a caller may not read still bind it: the gate judges them and counts their
findings, and a pack without hidden findings is exactly what it was before."""

from __future__ import annotations

import json

from memhubd.check import check_compliance

RULES = """
boundary deploy.freeze {
  scope: global
  claim: "Never deploy during the freeze."
  guard { deny_any: ["deploy now"] }
  evidence { source: "s" quote: "q" }
  access_policy { readers: [ops] }
}
boundary refunds.manager {
  scope: component("billing")
  claim: "Refunds above the quota need a manager."
  evidence { source: "s" quote: "q" }
  access_policy { readers: [ops] }
}
boundary merges.review {
  scope: global
  claim: "Every merge needs one approving review."
  guard { deny_any: ["merge without review"] }
  evidence { source: "s" quote: "q" }
}
"""


def hidden_to_nobody(decl) -> bool:
    return "readers" in decl.access_policy


def test_a_hidden_violation_blocks_with_its_id_and_text_withheld(load) -> None:
    pack = check_compliance(load(RULES), "ship", "deploy now", hidden=hidden_to_nobody)
    data = pack.as_dict()
    assert pack.verdict == "block"
    assert data["violations"] == [] and data["unknowns"] == []
    assert [d["id"] for d in data["applicable_must"]] == ["boundary:merges.review"]
    assert data["withheld"] == {
        "violations": 1,
        "unknowns": 0,
        "message": "blocked by 1 rule you cannot read; ask a reviewer",
    }
    text = pack.render_text()
    assert text.startswith("VERDICT: BLOCK")
    assert text.endswith("WITHHELD\n- blocked by 1 rule you cannot read; ask a reviewer")
    for shown in (json.dumps(data), text):
        assert "freeze" not in shown


def test_an_unguarded_hidden_rule_needs_review(load) -> None:
    pack = check_compliance(
        load(RULES), "handle the refunds above quota", "refund it", hidden=hidden_to_nobody
    )
    assert pack.verdict == "needs_review"
    assert pack.withheld_message() == "1 rule you cannot read needs review; ask a reviewer"


def test_a_visible_violation_and_hidden_findings_are_both_reported(load) -> None:
    pack = check_compliance(
        load(RULES),
        "refunds above quota, then merge",
        "deploy now and merge without review",
        hidden=hidden_to_nobody,
    )
    assert pack.verdict == "block"
    assert [v["id"] for v in pack.violations] == ["boundary:merges.review"]
    assert pack.withheld_message() == (
        "blocked by 1 rule you cannot read; 1 rule you cannot read needs review; ask a reviewer"
    )


def test_hidden_rules_that_pass_leave_no_trace(load) -> None:
    pack = check_compliance(load(RULES), "tidy up", "rename a variable", hidden=hidden_to_nobody)
    assert pack.verdict == "allow"
    assert "withheld" not in pack.as_dict()
    assert "WITHHELD" not in pack.render_text()


def test_without_hidden_rules_the_pack_is_unchanged(load) -> None:
    ws = load(RULES)
    plain = check_compliance(ws, "ship", "deploy now")
    nothing_hidden = check_compliance(ws, "ship", "deploy now", hidden=lambda decl: False)
    assert plain.as_dict() == nothing_hidden.as_dict()
    assert plain.render_text() == nothing_hidden.render_text()
    assert "withheld" not in plain.as_dict()
    assert [v["id"] for v in plain.violations] == ["boundary:deploy.freeze"]
