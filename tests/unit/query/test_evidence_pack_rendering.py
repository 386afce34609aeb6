"""EvidencePack JSON and text forms (spec §4.9-4.10)."""

from __future__ import annotations

import json

from workspace_loading import Loader

from memhubd.query import build_evidence_pack

WORKSPACE = """
    boundary privacy.public { rule: "No family names in public posts" scope: global
                              exceptions: [user_explicit_override] }
    boundary schedule.mornings { rule: "No meetings before ten" scope: global exceptions: [] }
    boundary plain { rule: "Plain rule" scope: global }
    principle tone { claim: "Write plainly about the café" }
    state beta.progress { claim: "Beta is 60% done" confidence: high
                          lifecycle { status: active as_of: 2026-06-20 }
                          evidence { source: "standup" quote: "60%" } }
    fact beta.note { claim: "Beta notes" evidence { } }
    fact beta.clash { claim: "Beta clash" conflicts_with: beta.note }
"""


def test_json_keys_come_in_contract_order(load: Loader) -> None:
    data = build_evidence_pack(load(WORKSPACE), "beta plainly").as_dict()

    assert list(data) == [
        "schema_version", "query", "resolved_subjects", "must", "should", "context",
        "conflicts", "missing", "search_trace",
    ]  # fmt: skip
    assert data["schema_version"] == "memdsl.evidence_pack.v1"
    assert list(data["context"][0]) == [
        "id", "type", "kind", "runtime_role", "capabilities", "claim", "force", "scope",
        "subject", "confidence", "lifecycle", "access_policy", "status", "file", "line",
        "evidence", "score", "matched_terms",
    ]  # fmt: skip
    assert list(data["search_trace"]) == [
        "query_terms", "matched_aliases", "filters", "candidates_considered", "hits",
        "excluded_by_filters_total", "excluded_by_filters",
    ]  # fmt: skip


def test_scores_are_floats_and_evidence_appears_only_when_non_empty(load: Loader) -> None:
    context = build_evidence_pack(load(WORKSPACE), "beta").as_dict()["context"]

    by_id = {item["id"]: item for item in context}
    assert by_id["state:beta.progress"]["score"] == 1.25
    assert isinstance(by_id["fact:beta.note"]["score"], float)
    assert by_id["state:beta.progress"]["evidence"] == {"source": "standup", "quote": "60%"}
    assert "evidence" not in by_id["fact:beta.note"]
    assert by_id["state:beta.progress"]["lifecycle"] == {"status": "active", "as_of": "2026-06-20"}
    assert by_id["state:beta.progress"]["capabilities"] == [
        "requires_evidence",
        "searchable",
        "temporal",
    ]


def test_text_shows_exceptions_as_python_lists_and_as_of_for_temporal_types(
    load: Loader,
) -> None:
    text = build_evidence_pack(load(WORKSPACE), "beta plainly").render_text()

    assert text == "\n".join(
        [
            "MUST",
            "- [boundary:privacy.public] No family names in public posts"
            " (exceptions: ['user_explicit_override'])",
            "- [boundary:schedule.mornings] No meetings before ten (exceptions: [])",
            "- [boundary:plain] Plain rule",
            "",
            "SHOULD",
            "- [principle:tone] Write plainly about the café",
            "",
            "CONTEXT",
            "- [state:beta.progress] Beta is 60% done (as_of 2026-06-20)",
            "- [fact:beta.note] Beta notes",
            "- [fact:beta.clash] Beta clash",
            "",
            "CONFLICT",
            "- [fact:beta.clash] conflicts_with [beta.note]",
        ]
    )


def test_text_of_an_empty_answer_names_the_resolved_subjects_and_gaps(load: Loader) -> None:
    ws = load('entity User { aliases: [me] }\nfact f { claim: "x" }')

    text = build_evidence_pack(ws, "about me").render_text()

    assert text.splitlines() == [
        "# resolved subjects: User",
        "MUST",
        "- (no constraints apply)",
        "",
        "SHOULD",
        "- (none)",
        "",
        "CONTEXT",
        "- (none)",
        "",
        "MISSING",
        "- no declarations matched query terms: []",
    ]


def test_json_text_is_indented_and_keeps_non_ascii(load: Loader) -> None:
    rendered = build_evidence_pack(load(WORKSPACE), "plainly").render_json()

    assert "café" in rendered
    assert rendered.startswith('{\n  "schema_version"')
    assert json.loads(rendered)["should"][0]["id"] == "principle:tone"
