"""Which constraints a check evaluates (spec §6.2)."""

from __future__ import annotations

from workspace_loading import Loader

from memhubd.check import applicable_boundaries, applicable_constraints
from memhubd.check.applicability import COMPLIANCE_STOPWORDS

RULES = """
    boundary global.rule { rule: "Be kind" scope: global }
    boundary by.subject { rule: "Respect the owner" subject: User scope: s1 }
    boundary by.scope { rule: "Calendar hygiene" scope: calendar }
    boundary by.word { rule: "Never force push to main" scope: git }
    boundary by.trigger { rule: "Fact rule" scope: cjk guard { when_any: ["事実"] deny_any: [x] } }
    boundary stop.words { rule: "never must user before" scope: s2 }
    boundary old { rule: "Old push rule" scope: global }
    boundary new { rule: "New" scope: s3 supersedes: old }
    fact not.constraint { claim: "push" }
"""


def ids(found: list) -> list[str]:
    return [d.id for d in found]


def test_global_rules_and_one_shared_content_word_select(load: Loader) -> None:
    found = applicable_constraints(load(RULES), "push it", "")

    # The superseded global rule and the non-constraint are never selected.
    assert ids(found) == ["boundary:by.word", "boundary:global.rule"]


def test_subject_and_scope_select_by_exact_value(load: Loader) -> None:
    ws = load(RULES)

    assert ids(applicable_constraints(ws, "", "", subject="User")) == [
        "boundary:by.subject",
        "boundary:global.rule",
    ]
    assert ids(applicable_constraints(ws, "", "", scope="calendar")) == [
        "boundary:by.scope",
        "boundary:global.rule",
    ]


def test_compliance_stopwords_never_select(load: Loader) -> None:
    assert len(COMPLIANCE_STOPWORDS) == 28
    found = applicable_constraints(load(RULES), "never must", "user before")

    assert ids(found) == ["boundary:global.rule"]


def test_when_any_phrases_select_as_substrings_even_in_cjk_text(load: Loader) -> None:
    found = applicable_boundaries(load(RULES), "请检查事実", "")

    assert ids(found) == ["boundary:by.trigger", "boundary:global.rule"]


def test_applicability_never_truncates(load: Loader) -> None:
    rules = "\n".join(f'boundary r{n:02} {{ rule: "Rule {n}" scope: global }}' for n in range(60))

    assert len(applicable_constraints(load(rules), "anything", "")) == 60


def test_rules_come_in_id_order_and_a_duplicated_id_selects_its_later_declaration(
    load: Loader,
) -> None:
    # Given rules written out of id order, one id declared twice
    ws = load(
        """
        boundary zeta { rule: "Zeta push" scope: git }
        boundary alpha { rule: "First alpha push" scope: git }
        boundary mid { rule: "Mid push" scope: git }
        boundary alpha { rule: "Second alpha push" scope: git }
        """
    )

    # When a check selects them all
    found = applicable_constraints(ws, "push", "")

    # Then they come sorted by id, the duplicated id once, as its later declaration
    assert ids(found) == ["boundary:alpha", "boundary:mid", "boundary:zeta"]
    assert found[0].claim_text == "Second alpha push"
