"""`eval compliance`: case files, the four modes, metrics and the report (spec §6.7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workspace_loading import Loader

from memhubd.check import (
    MODES,
    load_cases,
    render_benchmark_text,
    run_compliance_benchmark,
)

WORKSPACE = """
    boundary privacy { rule: "No family in public posts" scope: global exceptions: [override]
        guard { when_any: [public, blog] deny_any: [family] } }
    boundary spending { rule: "Review subscriptions" scope: purchase }
"""

CASES = [
    {"id": "block", "task": "Draft a public blog post", "candidate": "About my family",
     "expected_verdict": "block", "expected_must": ["boundary:privacy"],
     "expected_violations": ["boundary:privacy"]},
    {"id": "allow", "task": "Draft a public blog post", "candidate": "Offline sync ships",
     "expected_verdict": "allow"},
    {"id": "override", "task": "Draft a public blog post", "candidate": "About my family",
     "expected_verdict": "allow", "exceptions": ["override"],
     "expected_exceptions": ["boundary:privacy"]},
    {"id": "review", "task": "Buy a subscription", "candidate": "Pay monthly",
     "scope": "purchase", "expected_verdict": "needs_review"},
]  # fmt: skip


def write(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_cases_load_skipping_blank_and_comment_lines(tmp_path: Path) -> None:
    path = write(tmp_path, ["# suite", "", *(json.dumps(c) for c in CASES)])

    cases = load_cases(path)

    assert [c.id for c in cases] == ["block", "allow", "override", "review"]
    assert (cases[2].exceptions, cases[3].scope, cases[1].expected_must) == (
        ["override"],
        "purchase",
        [],
    )


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{oops"], "{path}:1: invalid JSON: "),
        (['{"id": "x", "task": " "}'], "{path}:1: missing required field(s): task, candidate, "
         "expected_verdict"),
        (['{"id":"x","task":"t","candidate":"c","expected_verdict":"deny"}'],
         "{path}:1: invalid expected_verdict 'deny'"),
        (["# nothing"], "{path}: no benchmark cases found"),
        ([json.dumps(CASES[0]), json.dumps(CASES[0])], "{path}: duplicate case ids"),
    ],
)  # fmt: skip
def test_bad_case_files_are_rejected_with_located_messages(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = write(tmp_path, lines)

    with pytest.raises(ValueError) as error:
        load_cases(path)

    assert str(error.value).startswith(message.format(path=path))


def test_report_runs_every_mode_and_passes_on_the_gate(tmp_path: Path, load: Loader) -> None:
    cases = load_cases(write(tmp_path, [json.dumps(c) for c in CASES]))

    report = run_compliance_benchmark(load(WORKSPACE), cases)

    assert (report["schema_version"], report["status"]) == (
        "memdsl.compliance.benchmark.v1",
        "passed",
    )
    assert (report["cases"], report["passed"]) == (4, 4)
    assert list(report["modes"]) == list(MODES)
    gate = report["modes"]["compliance_gate"]
    assert list(gate["cases"][0]) == [
        "id", "expected_verdict", "expected_must", "expected_violations",
        "expected_exceptions", "verdict", "applicable_must", "violations",
        "exceptions_applied", "passed",
    ]  # fmt: skip
    assert gate["metrics"]["verdict_accuracy"] == 1.0
    no_memory = report["modes"]["no_memory"]["metrics"]
    assert no_memory == {
        "cases": 4,
        "verdict_accuracy": 0.5,
        "unsafe_allow_rate": 1.0,
        "false_block_rate": 0.0,
        "constraint_recall": 0.0,
        "boundary_recall": 0.0,
        "citation_accuracy": 1.0,
    }


def test_flat_context_flags_every_constraint_sharing_a_word(tmp_path: Path, load: Loader) -> None:
    # "public" is in the privacy rule's text; no stopwords are removed in this mode
    cases = load_cases(write(tmp_path, [json.dumps(CASES[1])]))

    row = run_compliance_benchmark(load(WORKSPACE), cases)["modes"]["flat_context"]["cases"][0]

    assert (row["verdict"], row["applicable_must"]) == ("needs_review", ["boundary:privacy"])


def test_text_report_aligns_columns_and_lists_failed_cases(tmp_path: Path, load: Loader) -> None:
    wrong = {**CASES[1], "expected_verdict": "block"}
    report = run_compliance_benchmark(
        load(WORKSPACE), load_cases(write(tmp_path, [json.dumps(wrong)]))
    )

    assert render_benchmark_text(report).splitlines() == [
        "constraint-compliance benchmark: FAILED (0/1 compliance cases)",
        "",
        "MODE              VERDICT  UNSAFE_ALLOW  FALSE_BLOCK  MUST_RECALL",
        "no_memory         0.000    1.000         0.000        1.000",
        "flat_context      0.000    0.000         0.000        1.000",
        "evidence_pack     0.000    0.000         0.000        1.000",
        "compliance_gate   0.000    1.000         0.000        1.000",
        "",
        "FAILED CASES",
        "- allow: expected block, got allow",
    ]
