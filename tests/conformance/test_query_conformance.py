"""Query conformance: EvidencePacks equal memdsl 0.5.1's, layer by layer, then in full.

CONTEXT matched terms are compared as sorted lists (memdsl emits them in set
order); everything else, key order and float scores included, must match.
"""

from __future__ import annotations

import functools
import json

import pytest
from conformance_goldens import (
    as_json_text,
    case_by_id,
    cases_by_workspace,
    expected_evidence_pack,
    golden,
    load_workspace,
    run_cli,
    sorted_context_terms,
    split_key,
)

# The module, not its names: a missing engine then fails each test loudly.
from memhubd import query

CASES = cases_by_workspace("query_cases.json")


@functools.cache
def our_pack(key: str, case_id: str) -> dict:
    case = case_by_id("query_cases.json")[case_id]
    pack = query.build_evidence_pack(
        load_workspace(key),
        case["query"],
        kinds=case.get("kinds"),
        subject=case.get("subject"),
        limit=case.get("limit", 8),
        types=case.get("types"),
    )
    return {
        "json": sorted_context_terms(json.loads(pack.render_json())),
        "text": pack.render_text(),
    }


def layer_ids(pack: dict) -> dict:
    return {layer: [item["id"] for item in pack[layer]] for layer in ("must", "should", "context")}


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_layers_hold_reference_ids_in_order(key: str, case_id: str) -> None:
    # Given memdsl's pack for the query
    expected = expected_evidence_pack(key, case_id)

    # When we answer the same query
    got = our_pack(key, case_id)["json"]

    # Then MUST, SHOULD and CONTEXT hold the same ids in the same order
    assert layer_ids(got) == layer_ids(expected)


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_conflicts_missing_and_subjects_match_reference(key: str, case_id: str) -> None:
    expected = expected_evidence_pack(key, case_id)

    got = our_pack(key, case_id)["json"]

    assert got["conflicts"] == expected["conflicts"]
    assert got["missing"] == expected["missing"]
    assert got["resolved_subjects"] == expected["resolved_subjects"]


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_search_trace_matches_reference(key: str, case_id: str) -> None:
    expected = expected_evidence_pack(key, case_id)["search_trace"]

    got = our_pack(key, case_id)["json"]["search_trace"]

    excluded = [e["id"] for e in got["excluded_by_filters"]]
    assert excluded == [e["id"] for e in expected["excluded_by_filters"]]
    assert got == expected


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_evidence_pack_json_matches_reference(key: str, case_id: str) -> None:
    expected = expected_evidence_pack(key, case_id)

    got = our_pack(key, case_id)["json"]

    assert as_json_text(got) == as_json_text(expected)


@pytest.mark.parametrize(("key", "case_id"), CASES)
def test_evidence_pack_text_matches_reference(key: str, case_id: str) -> None:
    expected = golden(f"query/{key}.json")["cases"][case_id]["text"]

    assert our_pack(key, case_id)["text"] == expected


# A handful through the CLI: arguments (--type/--kind/--subject/--limit) and printing.
CLI_CASES = [
    "tc-force-push-main",
    "tc-types-override-kinds",
    "tc-limit-negative",
    "rt-subject-filter-with-type",
    "rt-kinds-legacy",
    "un-cjk-alias",
]


def cli_argv(name: str, case: dict) -> list[str]:
    argv = ["query", name, "-q", case["query"]]
    for flag, values in (("--type", case.get("types")), ("--kind", case.get("kinds"))):
        if case.get("types") is not None and flag == "--kind":
            continue  # the CLI has one list for both flags
        for value in values or []:
            argv += [flag, value]
    if case.get("subject") is not None:
        argv += ["--subject", case["subject"]]
    if "limit" in case:
        argv += ["--limit", str(case["limit"])]
    return argv


@pytest.mark.parametrize("case_id", CLI_CASES)
def test_cli_query_text_matches_reference(case_id: str) -> None:
    case = case_by_id("query_cases.json")[case_id]
    base, name = split_key(case["workspace"])

    result = run_cli(cli_argv(name, case), base)

    expected = golden(f"query/{case['workspace']}.json")["cases"][case_id]["text"]
    assert (result["exit_code"], result["stdout"]) == (0, expected + "\n")


@pytest.mark.parametrize("case_id", CLI_CASES)
def test_cli_query_json_matches_reference(case_id: str) -> None:
    case = case_by_id("query_cases.json")[case_id]
    base, name = split_key(case["workspace"])

    result = run_cli(cli_argv(name, case) + ["--json"], base)

    got = sorted_context_terms(json.loads(result["stdout"]))
    assert as_json_text(got) == as_json_text(expected_evidence_pack(case["workspace"], case_id))
