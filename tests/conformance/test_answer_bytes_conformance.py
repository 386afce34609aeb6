"""Answers joined from per-declaration pieces are byte for byte the JSON API's encoding
of the packs (`json.dumps(..., ensure_ascii=False, separators=(",", ":"))`), on every
query and check case of the goldens."""

from __future__ import annotations

import json

import pytest
from conformance_goldens import case_by_id, cases_by_workspace, load_workspace

from memhubd import check, query
from memhubd.check.pack import constraint_json
from memhubd.query.pack import declaration_json

QUERY_CASES = cases_by_workspace("query_cases.json")
CHECK_CASES = cases_by_workspace("check_cases.json")


def api_bytes(data: dict) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@pytest.mark.parametrize(("key", "case_id"), QUERY_CASES)
def test_query_pack_from_pieces_equals_its_full_encoding(key: str, case_id: str) -> None:
    # Given a golden query's pack
    case = case_by_id("query_cases.json")[case_id]
    pack = query.build_evidence_pack(
        load_workspace(key),
        case["query"],
        kinds=case.get("kinds"),
        subject=case.get("subject"),
        limit=case.get("limit", 8),
        types=case.get("types"),
    )

    # When it is joined from pieces (with and without extra keys)
    joined = b"".join(pack.json_parts(declaration_json))
    extra = b"".join(pack.json_parts(declaration_json, {"budget": {"must_omitted": 0}}))

    # Then the bytes are those of the whole dict's encoding
    assert joined == api_bytes(pack.as_dict())
    assert extra == api_bytes({**pack.as_dict(), "budget": {"must_omitted": 0}})


@pytest.mark.parametrize(("key", "case_id"), CHECK_CASES)
def test_check_pack_from_pieces_equals_its_full_encoding(key: str, case_id: str) -> None:
    case = case_by_id("check_cases.json")[case_id]
    pack = check.check_compliance(
        load_workspace(key),
        case["task"],
        case["candidate"],
        subject=case.get("subject"),
        scope=case.get("scope"),
        exceptions=case.get("exceptions"),
    )

    joined = b"".join(pack.json_parts(constraint_json))

    assert joined == api_bytes(pack.as_dict())
