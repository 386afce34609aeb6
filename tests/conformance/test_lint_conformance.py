"""Linter conformance: the same diagnostics (code, severity, message, place) and exit codes."""

from __future__ import annotations

import pytest
from conformance_goldens import (
    TODAY,
    load_workspace,
    run_cli,
    split_key,
    workspace_golden,
    workspace_keys,
)

from memhubd.lint import has_errors, lint

KEYS = workspace_keys()
FIELDS = ("code", "severity", "message", "file", "line", "decl_id")
# Every code the reference linter can emit, under its default name.
ALL_CODES = {
    "ambiguous_alias", "boundary_without_exception", "duplicate_declaration",
    "duplicate_declaration_id", "guard_without_rule", "invalid_access_policy", "invalid_guard",
    "invalid_guard_regex", "missing_evidence", "missing_recommended_exceptions",
    "missing_required_field", "module_too_large", "stale_memory", "stale_state",
    "type_force_mismatch", "unknown_access_policy_field", "unknown_guard_field",
    "unknown_memory_type", "unknown_type_field", "unmarked_supersede_status",
    "unresolved_symbol", "unsupported_type_capability",
}  # fmt: skip


def our_diagnostics(key: str) -> list[dict]:
    diags = lint(load_workspace(key), today=TODAY)
    return [{field: getattr(d, field) for field in FIELDS} for d in diags]


def render(diag: dict) -> str:
    return f"{diag['file']}:{diag['line']}: {diag['severity']}[{diag['code']}] {diag['message']}"


def cli_stdout(expected: dict) -> str:
    lines = [render(d) for d in expected["diagnostics"]]
    summary = (
        f"{expected['declarations']} declarations, "
        f"{expected['errors']} error(s), {expected['warnings']} warning(s)"
    )
    return "".join(line + "\n" for line in lines) + "\n" + summary + "\n"


@pytest.mark.parametrize("key", KEYS)
def test_lint_codes_and_lines_match_reference(key: str) -> None:
    # Given memdsl's diagnostics for the workspace on the fixed date
    expected = workspace_golden(key)["lint"]["diagnostics"]

    # When we lint the same workspace on the same date
    got = our_diagnostics(key)

    # Then codes, places and order agree before anything else is compared
    assert [(d["file"], d["line"], d["code"]) for d in got] == [
        (d["file"], d["line"], d["code"]) for d in expected
    ]


@pytest.mark.parametrize("key", KEYS)
def test_lint_diagnostics_match_reference(key: str) -> None:
    assert our_diagnostics(key) == workspace_golden(key)["lint"]["diagnostics"]


@pytest.mark.parametrize("key", KEYS)
def test_lint_error_status_matches_reference(key: str) -> None:
    expected = workspace_golden(key)["lint"]

    diags = lint(load_workspace(key), today=TODAY)

    assert has_errors(diags) == bool(expected["errors"])
    assert len(load_workspace(key).declarations) == expected["declarations"]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_cli_lint_matches_reference(key: str, strict: bool) -> None:
    # Given the recorded lint outcome; the CLI lints against the real date, so a
    # workspace whose staleness warnings move with the date only pins its errors
    expected = workspace_golden(key)["lint"]
    base, name = split_key(key)
    argv = ["lint", name] + (["--strict"] if strict else [])

    # When memhubd lint runs on the same folder
    result = run_cli(argv, base)

    # Then exit code and printed diagnostics agree
    if expected["date_sensitive"]:
        errors = [render(d) for d in expected["diagnostics"] if d["severity"] == "error"]
        printed = [line for line in result["stdout"].splitlines() if "error[" in line]
        assert printed == errors
        if not strict or expected["errors"]:
            assert result["exit_code"] == expected["strict_exit_code" if strict else "exit_code"]
        return
    assert result["stdout"] == cli_stdout(expected)
    assert result["exit_code"] == expected["strict_exit_code" if strict else "exit_code"]


CLEAN_EXAMPLES = [k for k in KEYS if k.startswith("examples/") and k != "examples/broken"]


@pytest.mark.parametrize("key", CLEAN_EXAMPLES)
def test_example_workspace_lints_without_errors(key: str) -> None:
    assert not has_errors(lint(load_workspace(key), today=TODAY))


def test_broken_example_shows_every_lint_code() -> None:
    codes = {d["code"] for d in our_diagnostics("examples/broken")}

    assert codes == ALL_CODES


def test_lint_fixtures_cover_every_lint_code() -> None:
    recorded = {d["code"] for key in KEYS for d in workspace_golden(key)["lint"]["diagnostics"]}

    assert recorded >= ALL_CODES
