"""Staleness of temporal memories: expired, old and undated (spec §3, §12.26)."""

from __future__ import annotations

import datetime as dt

import pytest
from lint_fixtures import TODAY, codes, lint_text, registry_with

from memhubd.lint import STALE_STATE_DAYS
from memhubd.schema import TypeDescriptor


def days_ago(days: int) -> str:
    return (TODAY - dt.timedelta(days=days)).isoformat()


def lint_state(fields: str) -> list:
    return lint_text(f"state s {{ evidence {{ s: x }} {fields} }}")


def test_an_as_of_older_than_the_limit_asks_for_reconfirmation() -> None:
    as_of = days_ago(STALE_STATE_DAYS + 1)

    (diag,) = lint_state(f"as_of: {as_of}")

    assert (diag.code, diag.severity, diag.decl_id) == ("stale_state", "warning", "state:s")
    assert diag.message == (
        f"temporal memory 'state:s' as_of {as_of} is older than 180 days; "
        "re-confirm or supersede it"
    )


def test_the_limit_itself_is_not_stale() -> None:
    assert lint_state(f"lifecycle {{ as_of: {days_ago(STALE_STATE_DAYS)} }}") == []


def test_an_expired_item_warns_and_suppresses_the_old_as_of_warning() -> None:
    valid_until = days_ago(1)

    (diag,) = lint_state(f"lifecycle {{ as_of: {days_ago(400)} valid_until: {valid_until} }}")

    assert diag.message == f"temporal memory 'state:s' expired on {valid_until}"


def test_an_item_valid_until_today_has_not_expired() -> None:
    assert lint_state(f"as_of: {days_ago(0)} valid_until: {days_ago(0)}") == []


def test_an_expired_item_can_also_be_undated() -> None:
    diags = lint_state(f"valid_until: {days_ago(3)}")

    assert [d.message for d in diags] == [
        f"temporal memory 'state:s' expired on {days_ago(3)}",
        "temporal memory 'state:s' has no as_of date",
    ]


@pytest.mark.parametrize("as_of", ["2026/01/01", "2026-02-30", "26-01-01", '""', "[2020-01-01]"])
def test_an_unparsable_as_of_is_silent_because_the_key_exists(as_of: str) -> None:
    assert lint_state(f"as_of: {as_of}") == []


def test_surrounding_whitespace_is_stripped_before_parsing() -> None:
    assert codes(lint_state(f'as_of: " {days_ago(365)} "')) == ["stale_state"]


@pytest.mark.parametrize("status", ["candidate", "superseded", "other"])
def test_only_active_items_are_checked(status: str) -> None:
    assert lint_state(f"status: {status} valid_until: {days_ago(5)}") == []


def test_the_check_follows_the_temporal_capability_and_its_code_remapping() -> None:
    plain = TypeDescriptor(
        name="dom.t", runtime_role="assertion", capabilities=frozenset({"temporal"})
    )
    renamed = TypeDescriptor(
        name="dom.r",
        runtime_role="assertion",
        capabilities=frozenset({"temporal"}),
        diagnostic_codes={"stale": "too_old"},
        defaults={"as_of": days_ago(500)},
    )

    diags = lint_text("dom.t a { }\ndom.r b { }", registry=registry_with(plain, renamed))

    assert [(d.code, d.line) for d in diags] == [("stale_memory", 1), ("too_old", 2)]
    assert diags[0].message == "temporal memory 'dom.t:a' has no as_of date"
    assert diags[1].message.startswith(f"temporal memory 'dom.r:b' as_of {days_ago(500)} is older")


def test_types_without_the_temporal_capability_are_never_stale() -> None:
    assert lint_text(f"fact f {{ evidence {{ s: x }} valid_until: {days_ago(9)} }}") == []
