"""Guard blocks (compliance data) and access policies, as the linter sees them."""

from __future__ import annotations

import re

import pytest
from lint_fixtures import codes, lint_text

BOUNDARY = 'boundary b {{ evidence {{ s: x }} exceptions: [] rule: "r" {body} }}'


def lint_boundary(body: str) -> list:
    return lint_text(BOUNDARY.format(body=body))


def regex_error(pattern: str) -> str:
    with pytest.raises(re.error) as caught:
        re.compile(pattern)
    return str(caught.value)


def test_a_guard_on_a_type_without_the_capability_is_an_error() -> None:
    diags = lint_text("fact f { evidence { s: x } guard { deny_any: [x] } }")

    (diag,) = diags
    assert (diag.code, diag.severity) == ("unsupported_type_capability", "error")
    assert diag.message == "memory type 'fact' does not support guard"


def test_unsupported_guard_is_still_checked_for_its_shape() -> None:
    diags = lint_text("fact f { evidence { s: x } guard: always }")

    assert codes(diags) == ["invalid_guard", "unsupported_type_capability"]


def test_a_guard_must_be_a_block() -> None:
    (diag,) = lint_boundary("guard: [deny]")

    assert (diag.code, diag.severity) == ("invalid_guard", "error")
    assert diag.message == "memory 'boundary:b' guard must be a nested block"


def test_unknown_guard_fields_are_listed_sorted() -> None:
    (diag,) = lint_boundary("guard { deny_any: [x] notify: a alert: b }")

    assert (diag.code, diag.severity) == ("unknown_guard_field", "warning")
    assert diag.message == "memory 'boundary:b' guard has unknown field(s): alert, notify"


@pytest.mark.parametrize(
    "guard", ["guard { when_any: [x] }", 'guard { deny_any: [] require_any: "" }', "guard { }"]
)
def test_a_guard_without_any_deny_or_require_condition_warns(guard: str) -> None:
    (diag,) = lint_boundary(guard)

    assert (diag.code, diag.severity) == ("guard_without_rule", "warning")
    assert diag.message == "memory 'boundary:b' guard has no deny or require condition"


def test_each_invalid_regex_is_reported_with_its_python_repr_and_re_error() -> None:
    diags = lint_boundary('guard {\n deny_regex: ["ok", "(?P<t", "["]\n require_regex: "a{2,1}" }')

    assert [(d.code, d.severity) for d in diags] == [("invalid_guard_regex", "error")] * 3
    assert [d.message for d in diags] == [
        f"memory 'boundary:b' deny_regex pattern '(?P<t' is invalid: {regex_error('(?P<t')}",
        f"memory 'boundary:b' deny_regex pattern '[' is invalid: {regex_error('[')}",
        f"memory 'boundary:b' require_regex pattern 'a{{2,1}}' is invalid: {regex_error('a{2,1}')}",
    ]
    assert [d.column for d in diags] == [2, 2, 2]


def test_pattern_repr_may_use_double_quotes() -> None:
    (diag,) = lint_boundary('guard { deny_regex: "it\'s [" }')

    assert diag.message.startswith("memory 'boundary:b' deny_regex pattern \"it's [\" is invalid:")


@pytest.mark.parametrize("pattern", ["(" * 3000 + ")" * 3000, "a{99999999999999999999}"])
def test_patterns_that_break_the_regex_compiler_are_reported_not_raised(pattern: str) -> None:
    (diag,) = lint_boundary(f'guard {{ deny_regex: "{pattern}" }}')

    assert diag.code == "invalid_guard_regex"
    assert diag.message.startswith("memory 'boundary:b' deny_regex pattern '")


def test_access_policy_must_be_a_block() -> None:
    (diag,) = lint_text("entity e { access_policy: public }")

    assert (diag.code, diag.severity) == ("invalid_access_policy", "error")
    assert diag.message == "memory 'entity:e' access policy must be a nested block"


def test_legacy_access_is_checked_only_without_access_policy() -> None:
    assert codes(lint_text("entity e { access: public }")) == ["invalid_access_policy"]
    assert lint_text("entity e { access_policy { readers: [a] } access: public }") == []


def test_unknown_access_policy_fields_are_listed_sorted() -> None:
    (diag,) = lint_text("entity e { access { readers: [a] zed: 1 audience: x export: no } }")

    assert (diag.code, diag.severity) == ("unknown_access_policy_field", "warning")
    assert diag.message == "memory 'entity:e' access policy has unknown field(s): audience, zed"
