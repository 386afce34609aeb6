"""From a drawer to a proposed declaration: the quote is always a verbatim span of the
drawer, chosen by the claim; the declaration parses back with the evidence block."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memhubd.lang import parse_text
from memhubd.recall.evidence import (
    EvidenceError,
    check_quote,
    declaration_source,
    drawer_of,
    fields_from_pairs,
    pick_quote,
    sentences,
)

DRAWER = (
    "> Should we go back to Redis?\n"
    "No. We decided to keep NATS JetStream because replay is built in. "
    "Redis stays for the rate limiter!  Nothing else changes."
)


def test_the_sentence_sharing_most_words_with_the_claim_is_quoted() -> None:
    assert pick_quote(DRAWER, "Redis serves the rate limiter") == (
        "Redis stays for the rate limiter!"
    )
    assert pick_quote(DRAWER, "We keep NATS JetStream: replay is built in") == (
        "We decided to keep NATS JetStream because replay is built in."
    )


def test_without_a_claim_the_first_sentence_is_quoted() -> None:
    assert pick_quote(DRAWER, "") == "> Should we go back to Redis?"


def test_a_neighbour_sharing_words_joins_the_quote_verbatim() -> None:
    text = "The cache is stale after deploys. The cache keeps old routes.\nUnrelated."
    assert pick_quote(text, "cache routes stale") == (
        "The cache is stale after deploys. The cache keeps old routes."
    )


@settings(max_examples=200, deadline=None)
@given(content=st.text(min_size=1, max_size=300), claim=st.text(max_size=60))
def test_a_picked_quote_is_always_a_substring_of_the_drawer(content: str, claim: str) -> None:
    quote = pick_quote(content, claim)
    assert quote in content
    assert all(span.text == content[span.start : span.end] for span in sentences(content))


BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@settings(max_examples=200, deadline=None)
@given(
    content=st.text(alphabet=st.sampled_from(list("ab .\n") + list(BREAKS)), min_size=1),
    claim=st.text(alphabet="ab ", max_size=20),
)
def test_a_picked_quote_holds_no_character_a_proposal_cannot_carry(
    content: str, claim: str
) -> None:
    quote = pick_quote(content, claim)
    assert quote in content
    assert not any(char in quote for char in BREAKS)


def test_a_given_quote_holding_a_line_separator_is_refused_by_name() -> None:
    content = "We moved the cron to 02:00\u2028because the backup overlaps."
    assert pick_quote(content, "cron backup") == "We moved the cron to 02:00"
    with pytest.raises(EvidenceError) as caught:
        check_quote(content, "02:00\u2028because")
    assert caught.value.field == "quote" and "U+2028" in str(caught.value)


def test_a_given_quote_must_be_verbatim() -> None:
    assert check_quote(DRAWER, "replay is built in") == "replay is built in"
    for bad in ("replay is free", "  "):
        with pytest.raises(EvidenceError) as caught:
            check_quote(DRAWER, bad)
        assert caught.value.field == "quote"


def test_the_declaration_parses_back_with_its_evidence() -> None:
    fields = fields_from_pairs(
        {"subject": "Service.Tidewater", "claim": 'Keep "NATS".', "lifecycle.status": "active"}
    )
    text = declaration_source(
        "fact", "fact:queue.keep_nats", fields, "keep NATS\nJetStream", "drawer_w_r_1234abcd",
        "claude-code/s.jsonl", "lines 3-9",
    )  # fmt: skip
    (declaration,) = parse_text(text).declarations
    assert declaration.id == "fact:queue.keep_nats"
    assert declaration.fields["claim"] == 'Keep "NATS".'
    assert declaration.fields["lifecycle"] == {"status": "active"}
    evidence = declaration.fields["evidence"]
    assert evidence["quote"] == "keep NATS\nJetStream"
    assert evidence["source"] == "recall:drawer_w_r_1234abcd claude-code/s.jsonl (lines 3-9)"
    assert drawer_of(evidence) == "drawer_w_r_1234abcd"


@pytest.mark.parametrize(
    ("kind", "name", "pairs", "field"),
    [
        ("fact", "x { }", {}, "id"),
        ("fa ct", "x", {}, "type"),
        ("fact", "x", {"evidence.quote": "q"}, "fields"),
        ("fact", "x", {"bad key": "v"}, "fields"),
        ("fact", "x", {"a": "v", "a.b": "w"}, "fields"),
    ],
)
def test_what_cannot_be_a_declaration_is_refused(
    kind: str, name: str, pairs: dict[str, str], field: str
) -> None:
    with pytest.raises(EvidenceError) as caught:
        declaration_source(kind, name, fields_from_pairs(pairs), "q", "drawer_x", "f")
    assert caught.value.field == field


def test_names_and_fields_of_any_script_make_a_declaration_as_memdsl_reads_it() -> None:
    fields = fields_from_pairs({"subject": "Lieferung", "größe": "groß"})
    text = declaration_source(
        "fakt", "café.lieferung_2", fields, "q", "drawer_w_r_1234abcd", "notes.md"
    )
    (declaration,) = parse_text(text).declarations
    assert declaration.id == "fakt:café.lieferung_2"
    assert declaration.fields["größe"] == "groß"


@pytest.mark.parametrize(
    "name", ["समीक्षा", "தமிழ்", "cafe\u0301.lieferung", "報告.第1版", "x-1.y_2"]
)
def test_a_name_of_letters_and_marks_of_any_script_is_taken(name: str) -> None:
    text = declaration_source("note", name, {}, "q", "drawer_w_r_1234abcd", "f")
    (declaration,) = parse_text(text).declarations
    assert declaration.id == f"note:{name}"


@pytest.mark.parametrize("name", ["\u0301cafe", "-x", "a b", "a:b", 'a"b', ".x"])
def test_a_name_that_is_no_atom_is_refused(name: str) -> None:
    with pytest.raises(EvidenceError) as caught:
        declaration_source("note", name, {}, "q", "drawer_x", "f")
    assert caught.value.field == "id"
