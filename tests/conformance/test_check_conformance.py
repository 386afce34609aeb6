"""Compliance conformance: CompliancePacks, CLI exit codes and `eval compliance` reports
equal memdsl 0.5.1's."""

from __future__ import annotations

import functools
import json

import pytest
from conformance_goldens import (
    HERE,
    as_json_text,
    case_by_id,
    cases_by_workspace,
    expected_compliance_pack,
    golden,
    inside,
    load_workspace,
    run_cli,
    split_key,
)

# The module, not its names: a missing engine then fails each test loudly.
from memhubd import check

CASES = cases_by_workspace("check_cases.json")
EVAL = golden("eval.json")
EVAL_ERRORS = golden("eval_errors.json")


@functools.cache
def our_pack(key: str, case_id: str) -> dict:
    case = case_by_id("check_cases.json")[case_id]
    pack = check.check_compliance(
        load_workspace(key),
        case["task"],
        case["candidate"],
        subject=case.get("subject"),
        scope=case.get("scope"),
        exceptions=case.get("exceptions"),
    )
    return {
        "verdict": pack.verdict,
        "json": json.loads(pack.render_json()),
        "text": pack.render_text(),
    }


def recorded(key: str, case_id: str) -> dict:
    return golden(f"check/{key}.json")["cases"][case_id]


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_verdict_matches_reference(key: str, case_id: str) -> None:
    assert our_pack(key, case_id)["verdict"] == recorded(key, case_id)["verdict"]


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_applicable_and_violated_ids_match_reference(key: str, case_id: str) -> None:
    # Given memdsl's applicable constraints, evaluations and violations
    expected = expected_compliance_pack(key, case_id)

    # When we check the same task and candidate
    got = our_pack(key, case_id)["json"]

    # Then the same constraints apply, evaluate the same way and are violated
    assert [c["id"] for c in got["applicable_must"]] == [
        c["id"] for c in expected["applicable_must"]
    ]
    assert got["evaluated"] == expected["evaluated"]
    assert [v["id"] for v in got["violations"]] == [v["id"] for v in expected["violations"]]


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_compliance_pack_json_matches_reference(key: str, case_id: str) -> None:
    expected = expected_compliance_pack(key, case_id)

    assert as_json_text(our_pack(key, case_id)["json"]) == as_json_text(expected)


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_compliance_pack_text_matches_reference(key: str, case_id: str) -> None:
    assert our_pack(key, case_id)["text"] == recorded(key, case_id)["text"]


def check_argv(name: str, case: dict) -> list[str]:
    argv = ["check", name, "-t", case["task"], "-c", case["candidate"]]
    for flag in ("subject", "scope"):
        if case.get(flag) is not None:
            argv += [f"--{flag}", case[flag]]
    for exception in case.get("exceptions") or []:
        argv += ["--exception", exception]
    return argv


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_cli_check_exit_code_and_output_match_reference(key: str, case_id: str) -> None:
    # Given the exit code memdsl's CLI gave (0 allow, 1 block, 2 needs_review or bad input)
    expected = recorded(key, case_id)
    base, name = split_key(key)

    # When memhubd check runs with the same arguments
    result = run_cli(check_argv(name, case_by_id("check_cases.json")[case_id]), base)

    # Then exit code and printed pack (or the input error) agree
    assert result["exit_code"] == expected["cli_exit_code"]
    assert result["stderr"] == expected["cli_stderr"]
    if not expected["cli_stderr"]:
        assert result["stdout"] == expected["text"] + "\n"


# ---- eval compliance ---------------------------------------------------------


@functools.cache
def our_report(key: str) -> dict:
    base, _ = split_key(key)
    with inside(base):
        cases = check.load_cases(EVAL[key]["cases"])
    return check.run_compliance_benchmark(load_workspace(key), cases)


@pytest.mark.parametrize("key", sorted(EVAL))
def test_eval_gate_rows_match_reference(key: str) -> None:
    expected = EVAL[key]["report"]["modes"]["compliance_gate"]["cases"]

    got = our_report(key)["modes"]["compliance_gate"]["cases"]

    assert [(r["id"], r["verdict"], r["passed"]) for r in got] == [
        (r["id"], r["verdict"], r["passed"]) for r in expected
    ]


@pytest.mark.parametrize("key", sorted(EVAL))
def test_eval_report_json_matches_reference(key: str) -> None:
    assert as_json_text(our_report(key)) == as_json_text(EVAL[key]["report"])


@pytest.mark.parametrize("key", sorted(EVAL))
def test_eval_report_text_matches_reference(key: str) -> None:
    assert check.render_benchmark_text(our_report(key)) == EVAL[key]["text"]


@pytest.mark.parametrize("key", sorted(EVAL))
def test_cli_eval_matches_reference(key: str) -> None:
    base, name = split_key(key)

    result = run_cli(["eval", "compliance", name, "--cases", EVAL[key]["cases"]], base)

    assert (result["exit_code"], result["stdout"]) == (
        EVAL[key]["exit_code"],
        EVAL[key]["text"] + "\n",
    )


@pytest.mark.parametrize("key", [k for k in sorted(EVAL) if k.startswith("examples/")])
def test_example_cases_all_pass_the_gate(key: str) -> None:
    report = our_report(key)

    assert (report["status"], report["passed"]) == ("passed", report["cases"])


@pytest.mark.parametrize("name", sorted(n for n, e in EVAL_ERRORS.items() if e["error"]))
def test_case_file_error_matches_reference(name: str) -> None:
    with inside(HERE), pytest.raises(ValueError) as caught:
        check.load_cases(f"eval_errors/{name}")

    assert str(caught.value) == EVAL_ERRORS[name]["error"]


@pytest.mark.parametrize("name", sorted(n for n, e in EVAL_ERRORS.items() if not e["error"]))
def test_case_file_values_are_coerced_like_reference(name: str) -> None:
    with inside(HERE):
        cases = check.load_cases(f"eval_errors/{name}")

    fields = list(EVAL_ERRORS[name]["cases"][0])
    got = [{field: getattr(case, field) for field in fields} for case in cases]
    assert got == EVAL_ERRORS[name]["cases"]
