"""Proposal validation against what the proposer may read: hidden ids stay taken, but
no answer tells a hidden declaration from one that does not exist."""

from __future__ import annotations

from memhubd.review.validation import validate_source

SOURCE = """
entity Project.Public { }
entity Project.Zebra { access_policy { readers: [ops] } }
fact launch.codes {
  claim: "The launch code is 4417."
  evidence { source: "s" quote: "q" }
  access_policy { readers: [ops] }
}
"""
TEMPLATE = (
    'fact notes.{name} {{ subject: {subject} claim: "c" evidence {{ source: "s" quote: "q" }} }}'
)


def public(decl) -> bool:
    return "readers" not in decl.access_policy


def codes(result) -> list[str]:
    return [issue.code for issue in (*result.errors, *result.warnings)]


def test_a_hidden_subject_is_as_unresolved_as_a_missing_one(load) -> None:
    seen = load(SOURCE).restricted(public)
    hidden = validate_source(seen, TEMPLATE.format(name="a", subject="Project.Zebra"))
    missing = validate_source(seen, TEMPLATE.format(name="b", subject="Project.Nothing"))
    assert codes(hidden) == codes(missing) == ["unresolved_symbol"]


def test_the_whole_workspace_still_resolves_the_subject(load) -> None:
    result = validate_source(load(SOURCE), TEMPLATE.format(name="a", subject="Project.Zebra"))
    assert result.ok, result


def test_a_hidden_id_is_refused_without_its_location(load) -> None:
    seen = load(SOURCE).restricted(public)
    result = validate_source(
        seen, 'fact launch.codes { claim: "x" evidence { source: "s" quote: "q" } }'
    )
    assert not result.ok
    (error,) = result.errors
    assert error.code == "declaration_exists"
    assert "not available" in error.message and "memory.mem" not in error.message


def test_a_visible_id_is_refused_with_its_location(load) -> None:
    seen = load(SOURCE).restricted(public)
    result = validate_source(seen, "entity Project.Public { }")
    assert "memory.mem:2" in result.errors[0].message


def test_a_hidden_declaration_cannot_be_named_as_superseded(load) -> None:
    seen = load(SOURCE).restricted(public)
    source = (
        'fact launch.codes_v2 { claim: "x" supersedes: "fact:launch.codes" '
        'evidence { source: "s" quote: "q" } }'
    )
    result = validate_source(seen, source, supersedes="fact:launch.codes")
    assert [e.code for e in result.errors] == ["supersedes_unknown"]
