"""Property: the indexed engines answer exactly like straightforward linear scans.

The linear references (`memhubd.query.reference`, `memhubd.check.reference`) are the
plain reading of the contract; any difference in the full JSON is an index bug.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st
from random_workspaces import check_arguments, query_arguments, text, workspaces

from memhubd.check import applicable_constraints, check_compliance
from memhubd.check.benchmark import _flat_context_ids
from memhubd.check.reference import applicable_constraints_linear, check_compliance_linear
from memhubd.index.tokens import word_tokens
from memhubd.model import Workspace
from memhubd.query import build_evidence_pack, engine
from memhubd.query.reference import build_evidence_pack_linear


@given(workspaces(), st.lists(query_arguments(), min_size=1, max_size=4), st.booleans())
def test_indexed_evidence_pack_equals_linear_scan(
    ws: Workspace, queries: list[dict[str, Any]], words_of_hits: bool
) -> None:
    # Given a random workspace and several queries (the index is built once), the hits'
    # matched terms read from the postings (a small workspace) or from their words
    with patch.object(engine, "BIT_TEST_BYTES", -1 if words_of_hits else engine.BIT_TEST_BYTES):
        for args in queries:
            # When both engines answer
            indexed = build_evidence_pack(ws, **args)
            linear = build_evidence_pack_linear(ws, **args)

            # Then the JSON and the text are identical
            assert indexed.as_dict() == linear.as_dict()
            assert indexed.render_text() == linear.render_text()


@given(workspaces(), st.lists(check_arguments(), min_size=1, max_size=4))
def test_indexed_compliance_equals_linear_scan(ws: Workspace, checks: list[dict[str, Any]]) -> None:
    for args in checks:
        indexed = check_compliance(ws, **args)
        linear = check_compliance_linear(ws, **args)

        assert indexed.as_dict() == linear.as_dict()
        assert indexed.render_text() == linear.render_text()


@given(workspaces(), check_arguments())
def test_applicability_of_unstripped_text_equals_linear_scan(
    ws: Workspace, args: dict[str, Any]
) -> None:
    # Given task and candidate passed without the gate's stripping
    task, candidate = f" {args['task']}\n", f"{args['candidate']} "
    where = {"subject": args.get("subject"), "scope": args.get("scope")}

    found = applicable_constraints(ws, task, candidate, **where)

    assert [d.id for d in found] == [
        d.id for d in applicable_constraints_linear(ws, task, candidate, **where)
    ]
    assert all(
        a is b
        for a, b in zip(
            found, applicable_constraints_linear(ws, task, candidate, **where), strict=True
        )
    )


@given(workspaces(), text(0, 8))
def test_flat_context_ids_equal_linear_word_overlap(ws: Workspace, words: str) -> None:
    # Given the benchmark's stopword-free overlap rule, read linearly
    wanted = set(word_tokens(words))
    hidden = ws.superseded_ids()
    expected = sorted(
        d.id
        for d in ws.active()
        if d.runtime_role == "constraint"
        and d.id not in hidden
        and d.name not in hidden
        and wanted & set(word_tokens(d.searchable_text()))
    )

    assert _flat_context_ids(ws, words) == expected
