"""Load problems for callers who do not see everything: positions stay, text that may
quote a hidden declaration goes."""

from __future__ import annotations

import pytest

from memhubd.auth.access import is_readable, redact_problem
from memhubd.model import Workspace
from tests.workspace_loading import load_workspace

PARSE_ERROR = {
    "kind": "parse_error",
    "file": "/w/secret.mem",
    "line": 4,
    "column": 3,
    "message": "expected ':' or '{' after 'claim', got 'zebra-4417'",
}


def test_a_parse_error_keeps_its_position_and_loses_its_quote() -> None:
    redacted = redact_problem(PARSE_ERROR)
    assert {k: redacted[k] for k in ("kind", "file", "line", "column")} == {
        "kind": "parse_error",
        "file": "/w/secret.mem",
        "line": 4,
        "column": 3,
    }
    assert "zebra" not in redacted["message"]
    assert "does not parse" in redacted["message"]
    assert PARSE_ERROR["message"].endswith("'zebra-4417'")  # the input is left alone


@pytest.mark.parametrize(
    "problem",
    [
        {
            "kind": "schema_error",
            "file": "/w/memdsl.json",
            "line": 0,
            "column": 0,
            "message": "schemas[0]: no such file",
        },
        {
            "kind": "read_error",
            "file": "/w",
            "line": 0,
            "column": 0,
            "message": "workspace directory is missing; its last good version is served until it is back",
        },
    ],
)
def test_messages_that_quote_no_declaration_are_kept(problem) -> None:
    assert redact_problem(problem) == problem


def test_an_unknown_kind_is_redacted_too() -> None:
    problem = {**PARSE_ERROR, "kind": "read_error", "message": "not UTF-8: byte 0xff"}
    assert "0xff" not in redact_problem(problem)["message"]


def test_readable_by_roles() -> None:
    ws: Workspace = load_workspace(
        """
        fact open { claim: "c" }
        fact ops_only { claim: "c" access_policy { readers: [ops] } }
        """
    )
    open_, ops_only = ws.declarations
    assert is_readable(open_, frozenset())
    assert not is_readable(ops_only, frozenset())
    assert not is_readable(ops_only, frozenset({"finance"}))
    assert is_readable(ops_only, frozenset({"ops", "finance"}))
    assert is_readable(ops_only, frozenset({"*"}))
