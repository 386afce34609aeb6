"""Validation: memdsl's fail-closed rules (spec §7.4) and memhub's additions, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_helpers import fact_source, load, snapshot_files

from memhubd.review import ReviewStore

SUPERSEDING = fact_source(
    "db.engine2", "The database is MySQL.", '  supersedes: "fact:db.engine"\n'
)

REFUSED = [
    ("", "empty_proposal", "proposal source is empty"),
    ("  \n\t ", "empty_proposal", "proposal source is empty"),
    ("fact x {", "parse_error", "<proposal>:"),
    ("# just a comment\n", "single_declaration_required", "exactly one declaration, got 0"),
    (
        fact_source("db.a") + fact_source("db.b"),
        "single_declaration_required",
        "exactly one declaration, got 2",
    ),
    (
        'frobnicate x { subject: db claim: "y" }',
        "unknown_memory_type",
        "memory type 'frobnicate' is not defined by any loaded schema",
    ),
    (
        'fact x { subject: nobody claim: "y" evidence { quote: "y" } }',
        "unresolved_symbol",
        "subject 'nobody' is not a declared symbol",
    ),
    (
        'fact x { subject: db claim: "no evidence" }',
        "missing_evidence",
        "active fact 'x' has no evidence block",
    ),
    (fact_source("db.engine"), "declaration_exists", "'fact:db.engine' already exists"),
]


@pytest.mark.parametrize(("source", "code", "message"), REFUSED)
def test_invalid_proposal_is_refused_and_nothing_is_written(
    store: ReviewStore, root: Path, source: str, code: str, message: str
) -> None:
    before = snapshot_files(root)

    result = store.propose(load(root), source, proposer="agent")

    assert not result.ok and result.status == "invalid"
    assert result.errors[0].code == code
    assert message in result.errors[0].message
    assert result.errors[0].severity == "error"
    assert snapshot_files(root) == before


def test_parse_error_keeps_memdsl_message_and_line_zero(store: ReviewStore, root: Path) -> None:
    result = store.validate(load(root), 'fact x {\n  claim: "open')

    assert [(e.code, e.line) for e in result.errors] == [("parse_error", 0)]
    assert result.errors[0].message.startswith("<proposal>:")


def test_lint_errors_carry_their_line_inside_the_proposal(store: ReviewStore, root: Path) -> None:
    source = '\n\nfact x {\n  subject: nobody\n  claim: "y"\n  evidence { quote: "y" }\n}\n'

    result = store.validate(load(root), source)

    assert [(e.code, e.line) for e in result.errors] == [("unresolved_symbol", 1)]


def test_candidate_of_an_evidence_type_may_omit_evidence(store: ReviewStore, root: Path) -> None:
    source = 'fact maybe { subject: db claim: "Unconfirmed." lifecycle { status: candidate } }'

    assert store.validate(load(root), source).ok


def test_warnings_do_not_block_a_proposal(store: ReviewStore, root: Path) -> None:
    source = 'boundary no.drops { subject: db rule: "Never drop tables." evidence { quote: "q" } }'

    result = store.propose(load(root), source, proposer="agent")

    assert result.ok
    assert [w.code for w in result.warnings] == ["boundary_without_exception"]


def test_diagnostics_of_other_files_do_not_count(store: ReviewStore, root: Path) -> None:
    (root / "broken.mem").write_text('fact lonely { subject: ghost claim: "x" }\n')

    assert store.validate(load(root), fact_source("db.version")).ok


def test_oversized_proposal_is_refused_before_parsing(root: Path) -> None:
    store = ReviewStore(str(root), max_bytes=200)
    source = fact_source("db.big", "x" * 300)
    before = snapshot_files(root)

    result = store.propose(load(root), source, proposer="agent")

    assert [e.code for e in result.errors] == ["too_large"]
    assert "limit is 200 bytes" in result.errors[0].message
    assert snapshot_files(root) == before


def test_default_size_limit_is_64_kib(store: ReviewStore, root: Path) -> None:
    # The claim appears twice in the source: as the claim and as the quote.
    fits = fact_source("db.big", "x" * 32_000)
    too_big = fact_source("db.big", "x" * 33_000)

    assert store.validate(load(root), fits).ok
    assert [e.code for e in store.validate(load(root), too_big).errors] == ["too_large"]


def test_existing_id_is_refused_even_when_it_supersedes_itself(
    store: ReviewStore, root: Path
) -> None:
    source = fact_source("db.engine", extra='  supersedes: "fact:db.engine"\n')

    result = store.validate(load(root), source, supersedes="fact:db.engine")

    assert [e.code for e in result.errors][:2] == ["declaration_exists", "duplicate_declaration_id"]
    assert 'supersedes: "fact:db.engine"' in result.errors[0].message


def test_new_name_that_supersedes_the_old_one_is_accepted(store: ReviewStore, root: Path) -> None:
    result = store.propose(load(root), SUPERSEDING, proposer="agent", supersedes="fact:db.engine")

    assert result.ok, result.errors
    assert result.proposal.supersedes == "fact:db.engine"


def test_supersedes_argument_must_appear_in_the_source(store: ReviewStore, root: Path) -> None:
    result = store.validate(load(root), fact_source("db.other"), supersedes="fact:db.engine")

    assert [e.code for e in result.errors] == ["supersedes_not_declared"]


def test_supersedes_argument_must_name_an_existing_declaration(
    store: ReviewStore, root: Path
) -> None:
    # A bare name passes memdsl's lint, but the argument asks for the exact id.
    source = fact_source("db.other", extra='  supersedes: "db.engine"\n')

    result = store.validate(load(root), source, supersedes="db.engine")

    assert [e.code for e in result.errors] == ["supersedes_unknown"]


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"proposer": ""}, "proposer_required"),
        ({"proposer": "  \n"}, "proposer_required"),
        ({"proposer": "a", "reason": "x" * 1001}, "reason_too_long"),
        ({"proposer": "a", "client": "\ud800"}, "invalid_client"),
        ({"proposer": "a", "generation": -1}, "invalid_generation"),
        ({"proposer": "a", "generation": True}, "invalid_generation"),
    ],
)
def test_bad_arguments_are_refused(
    store: ReviewStore, root: Path, kwargs: dict[str, object], code: str
) -> None:
    result = store.propose(load(root), fact_source("db.version"), **kwargs)  # type: ignore[arg-type]

    assert result.status == "invalid"
    assert [e.code for e in result.errors] == [code]
    assert store.list("all") == []


def test_source_that_cannot_be_stored_is_refused(store: ReviewStore, root: Path) -> None:
    result = store.validate(load(root), fact_source("db.x", "bad \ud800 text"))

    assert [e.code for e in result.errors] == ["invalid_text"]


def test_validation_result_serializes_like_memdsl(store: ReviewStore, root: Path) -> None:
    result = store.validate(load(root), 'fact x { subject: nobody claim: "y" evidence { q: "y" } }')

    assert result.as_dict() == {
        "ok": False,
        "errors": [
            {
                "code": "unresolved_symbol",
                "severity": "error",
                "message": "subject 'nobody' is not a declared symbol",
                "line": 1,
            }
        ],
        "warnings": [],
        "declaration_id": "fact:x",
    }
