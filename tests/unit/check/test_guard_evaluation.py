"""How the gate judges each applicable constraint, and the verdict (spec §6.3-6.6)."""

from __future__ import annotations

import re

from workspace_loading import Loader

from memhubd.check import check_compliance
from memhubd.schema import TypeDescriptor, TypeRegistry


def test_rule_without_guard_needs_review_unless_a_declared_exception_is_asserted(
    load: Loader,
) -> None:
    ws = load('boundary spend { rule: "Review purchases" scope: global exceptions: [approved] }')

    unguarded = check_compliance(ws, "buy", "a thing")
    excepted = check_compliance(ws, "buy", "a thing", exceptions=[" approved ", "other"])

    assert unguarded.verdict == "needs_review"
    assert unguarded.unknowns[0]["reason"] == "constraint has no executable guard"
    assert excepted.verdict == "allow"
    assert excepted.asserted_exceptions == ["approved", "other"]
    assert excepted.exceptions_applied[0]["exceptions"] == ["approved"]
    assert excepted.evaluated[0]["status"] == "exception_applied"


GUARDED = """
    boundary privacy { rule: "No family in public" scope: global exceptions: [override]
        guard { when_any: [public, blog] deny_any: [family, son] } }
"""


def test_untriggered_rule_ignores_exceptions_and_triggered_one_applies_them(
    load: Loader,
) -> None:
    ws = load(GUARDED)

    quiet = check_compliance(ws, "write a note", "my family", exceptions=["override"])
    excepted = check_compliance(ws, "public post", "my family", exceptions=["override"])

    assert (quiet.verdict, quiet.evaluated[0]["status"]) == ("allow", "not_triggered")
    assert quiet.exceptions_applied == []
    assert (excepted.verdict, excepted.evaluated[0]["status"]) == ("allow", "exception_applied")


def test_denied_phrases_match_as_case_insensitive_substrings(load: Loader) -> None:
    pack = check_compliance(load(GUARDED), "Blog post", "A PERSON and their Family")

    assert pack.verdict == "block"
    (violation,) = pack.violations
    assert violation["reason"] == "candidate contains a denied phrase"
    assert violation["matched"] == ["family", "son"]
    assert (violation["file"], violation["line"]) == ("memory.mem", 2)
    assert list(violation) == [
        "id", "type", "runtime_role", "boundary_id", "rule", "reason", "matched", "file", "line",
    ]  # fmt: skip


def test_required_phrase_violation_lists_every_required_phrase(load: Loader) -> None:
    ws = load(
        """
        boundary disclose { rule: "Disclose AI help" scope: global
            evidence { source: "policy" }
            guard { when_any: publish require_any: ["AI-generated", "AI assisted"]
                    require_regex: "^disclaimer" deny_regex: "\\\\bdraft\\\\b" } }
        """
    )

    pack = check_compliance(ws, "Publish", "Launch DRAFT\nDisclaimer: none")

    (violation,) = pack.violations
    assert violation["reason"] == (
        "candidate matches a denied pattern; candidate is missing a required phrase"
    )
    assert violation["matched"] == ["AI assisted", "AI-generated", "\\bdraft\\b"]
    assert violation["evidence"] == {"source": "policy"}


def test_guard_that_denies_and_requires_nothing_needs_review(load: Loader) -> None:
    ws = load('boundary vague { rule: "Be careful" scope: global guard { when_any: [x] } }')

    pack = check_compliance(ws, "x", "y")

    assert pack.unknowns[0]["reason"] == "guard has no deny or require condition"


def test_invalid_regex_needs_review_and_quotes_the_re_error(load: Loader) -> None:
    ws = load('boundary broken { rule: "r" scope: global guard { deny_regex: ["ok", "("] } }')

    pack = check_compliance(ws, "t", "c")

    try:
        re.compile("(")
    except re.error as exc:
        expected = f"invalid guard regex: deny_regex='(': {exc}"
    assert pack.unknowns[0]["reason"] == expected


def test_types_without_enforceable_and_guardable_are_not_executed(load: Loader) -> None:
    registry = TypeRegistry.standard()
    registry.register(TypeDescriptor(name="dom.rule", runtime_role="constraint"))
    ws = load('dom.rule soft { claim: "c" scope: global guard { deny_any: [c] } }', registry)

    pack = check_compliance(ws, "t", "c")

    assert pack.unknowns[0]["reason"] == (
        "memory type 'dom.rule' is a constraint but does not declare enforceable + "
        "guardable capabilities"
    )


def test_a_violation_outranks_another_rules_needs_review(load: Loader) -> None:
    ws = load(GUARDED + 'boundary open { rule: "Think" scope: global }')

    pack = check_compliance(ws, "blog", "family")

    assert pack.verdict == "block"
    assert [e["status"] for e in pack.evaluated] == ["needs_review", "violated"]


def test_pack_json_and_text_layout(load: Loader) -> None:
    ws = load(GUARDED + 'boundary open { rule: "Think" scope: global exceptions: [ok] }')

    pack = check_compliance(ws, " blog ", "family", subject=None, exceptions=["ok"])
    data = pack.as_dict()

    assert list(data) == [
        "task", "candidate", "subject", "scope", "asserted_exceptions", "verdict",
        "applicable_must", "applicable_constraints", "evaluated", "violations",
        "exceptions_applied", "unknowns",
    ]  # fmt: skip
    assert (data["task"], data["subject"], data["scope"]) == ("blog", "", "")
    assert data["applicable_must"] == data["applicable_constraints"]
    assert list(data["applicable_must"][0]) == [
        "id", "type", "kind", "runtime_role", "capabilities", "rule", "force", "scope",
        "subject", "file", "line",
    ]  # fmt: skip
    assert pack.render_text().splitlines() == [
        "VERDICT: BLOCK",
        "",
        "APPLICABLE MUST",
        "- [boundary:open] Think",
        "- [boundary:privacy] No family in public",
        "",
        "VIOLATIONS",
        "- [boundary:privacy] candidate contains a denied phrase (matched: family)",
        "",
        "EXCEPTIONS APPLIED",
        "- [boundary:open] ok",
    ]
