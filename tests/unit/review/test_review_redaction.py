"""What a reviewer without a role is told of review findings about hidden declarations."""

from __future__ import annotations

from memhubd.service.review import WITHHELD, _redacted

HIDDEN = frozenset({"entity:A", "entity:Project.Zebra", "fact:launch.codes"})


def said(messages: list[str], *, blocking: bool) -> list[str]:
    issues = [{"code": "c", "message": m} for m in messages]
    return [i["message"] for i in _redacted(issues, HIDDEN, "fact:mine", set(), blocking=blocking)]


def test_an_error_naming_a_hidden_declaration_is_withheld_by_id_or_bare_name() -> None:
    messages = [
        "alias 'the launch' resolves to: Aa.Third, Project.Zebra",
        "relation points to A.",
        "conflicts with fact:launch.codes",
        "see Project.Zebras and A.b and Aa",
    ]
    assert said(messages, blocking=True) == [WITHHELD, WITHHELD, WITHHELD, messages[3]]


def test_a_warning_naming_a_hidden_declaration_is_left_out() -> None:
    assert said(["resolves to Project.Public, Project.Zebra", "plain finding"], blocking=False) == [
        "plain finding"
    ]
