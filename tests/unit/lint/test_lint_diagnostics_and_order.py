"""Diagnostic shape, renderings and the order lint reports in (spec §3)."""

from __future__ import annotations

import datetime as dt

from lint_fixtures import codes, lint_text, load

from memhubd.lang import parse_text
from memhubd.lint import MODULE_MAX_DECLARATIONS, STALE_STATE_DAYS, Diagnostic, has_errors, lint
from memhubd.model import Workspace
from memhubd.schema import TypeRegistry


def test_constants() -> None:
    assert (STALE_STATE_DAYS, MODULE_MAX_DECLARATIONS) == (180, 50)


def test_render_is_the_cli_line() -> None:
    diag = Diagnostic("stale_state", "warning", "old", "m.mem", 7, "state:s")

    assert diag.render() == "m.mem:7: warning[stale_state] old"


def test_as_dict_carries_the_location_with_the_column() -> None:
    diag = Diagnostic("x", "error", "msg", "m.mem", 3, None, 5)

    assert list(diag.as_dict().items()) == [
        ("code", "x"),
        ("severity", "error"),
        ("message", "msg"),
        ("file", "m.mem"),
        ("line", 3),
        ("column", 5),
        ("decl_id", None),
    ]


def test_has_errors_looks_for_error_severity_only() -> None:
    warning = Diagnostic("w", "warning", "", "f", 1)
    error = Diagnostic("e", "error", "", "f", 1)

    assert not has_errors([warning])
    assert has_errors([warning, error])
    assert not has_errors([])


def test_an_empty_workspace_has_no_diagnostics() -> None:
    assert lint(Workspace()) == []


def test_diagnostics_sort_by_file_then_line_then_code() -> None:
    # Given b.mem loaded before a.mem, and a declaration with three problems
    documents = [
        parse_text("fact later { }", file="b.mem"),
        parse_text('\nboundary b { force: soft rule: "r" }', file="a.mem"),
    ]
    ws = Workspace.from_documents(documents, TypeRegistry.standard())

    diags = lint(ws)

    assert [(d.file, d.line, d.code) for d in diags] == [
        ("a.mem", 2, "boundary_without_exception"),
        ("a.mem", 2, "missing_evidence"),
        ("a.mem", 2, "type_force_mismatch"),
        ("b.mem", 1, "missing_evidence"),
    ]


def test_ties_keep_emission_order() -> None:
    diags = lint_text("fact f { evidence { s: x } supports: [zz, aa] relations { supports: mm } }")

    assert [d.message.split("'")[-2] for d in diags] == ["zz", "aa", "mm"]


def test_today_defaults_to_the_current_date() -> None:
    old = dt.date.today() - dt.timedelta(days=STALE_STATE_DAYS + 1)
    ws = load(f"state s {{ evidence {{ s: x }} as_of: {old.isoformat()} }}")

    assert codes(lint(ws)) == ["stale_state"]


def test_columns_point_at_the_declaration_or_the_field_at_fault() -> None:
    source = '\n  fact f {\n    subject: Ghost\n    claim: "c"\n  }\n'
    ws = Workspace.from_documents([parse_text(source, "a.mem")], TypeRegistry.standard())

    evidence, subject = lint(ws)

    assert (evidence.code, evidence.line, evidence.column) == ("missing_evidence", 2, 3)
    assert (subject.code, subject.line, subject.column) == ("unresolved_symbol", 2, 5)
    assert subject.as_dict()["column"] == 5


def test_diagnostics_compare_by_value() -> None:
    first, second = lint_text("fact f { }"), lint_text("fact f { }")

    assert first == second
    assert len({*first, *second}) == 1
