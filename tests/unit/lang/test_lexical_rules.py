"""The lexical and syntax rules of spec §1.1–1.2, one behaviour per test."""

from __future__ import annotations

import pytest

from memhubd.lang import parse_precise, parse_text


def fields_of(text: str) -> dict:
    (declaration,) = parse_text(text).declarations
    return declaration.fields


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('fact x { claim: "a\\nb\\tc\\"d\\\\e\\qf" }', {"claim": 'a\nb\tc"d\\eqf'}),
        ('fact x { claim: "two\nlines" }', {"claim": "two\nlines"}),
        ('fact x { scope: repository("memdsl") }', {"scope": 'repository("memdsl")'}),
        ('fact x { scope: project("a b: {c}") }', {"scope": 'project("a b: {c}")'}),
        ("fact x { scope: outer(inner(deep(x)) #no) }", {"scope": "outer(inner(deep(x)) #no)"}),
        ("fact x { a: [1, 2, [3, 4],] }", {"a": ["1", "2", ["3", "4"]]}),
        ("fact x { a: [a b c] }", {"a": ["a", "b", "c"]}),
        ("fact x { b { c { d: 1 } } }", {"b": {"c": {"d": "1"}}}),
        ("fact x { a: 1 b: 2 a: 3 }", {"a": "3", "b": "2"}),
        (
            "fact x { as_of: 2026-07-10 n: -1 f: 3.5 file: AGENTS.md }",
            {"as_of": "2026-07-10", "n": "-1", "f": "3.5", "file": "AGENTS.md"},
        ),
        ("fact x { 事实: 値 }", {"事实": "値"}),
        ("fact x { a: b#c\n d: e }", {"a": "b", "d": "e"}),
        ("fact x {\r\n a: 1\r\n}\r\n", {"a": "1"}),
    ],
)
def test_values_are_read_as_memdsl_reads_them(source: str, expected: dict) -> None:
    assert fields_of(source) == expected


def test_hash_inside_an_atom_ends_it_and_starts_a_comment() -> None:
    (declaration,) = parse_text("fact a#b { ignored }\n{ }\n").declarations
    assert declaration.name == "a" and declaration.fields == {}


def test_call_form_atom_ends_right_after_its_closing_parenthesis() -> None:
    with pytest.raises(Exception, match="expected ':' or '{' after 'y'"):
        parse_text("fact x { n: f(x)y }")


def test_an_atom_starts_right_after_a_closing_quote() -> None:
    with pytest.raises(Exception, match="expected field name, got 'def'"):
        parse_text('fact x { claim: abc"def" }')


def test_colons_split_atoms() -> None:
    # `fact:b` is three tokens, so the second colon stands where a key should.
    with pytest.raises(Exception, match="expected field name, got ':'"):
        parse_text("fact x { supersedes: fact:b }")


def test_last_module_statement_applies_to_every_declaration_of_the_file() -> None:
    document = parse_text("module first\nfact a { }\nmodule second\nfact b { }\n")
    assert document.module == "second"
    assert [d.module for d in document.declarations] == ["second", "second"]


def test_use_statements_are_collected_and_inert() -> None:
    document = parse_text("use User\nuse Other\nfact a { }\n")
    assert document.uses == ["User", "Other"]
    assert document.module is None


def test_declaration_line_is_the_line_of_its_type_token() -> None:
    text = 'fact a {\n claim: "x\ny"\n}\n\nfact\n b { }\n'
    assert [d.line for d in parse_text(text).declarations] == [1, 6]


def test_escaped_newline_in_a_string_does_not_advance_the_line_counter() -> None:
    # memdsl's counter only moves for raw newlines it reads outside escapes.
    text = 'fact a { claim: "one\\\ntwo" }\nfact b { }\n'
    assert [d.line for d in parse_text(text).declarations] == [1, 2]


def test_newlines_inside_call_form_atoms_are_counted() -> None:
    text = "fact a { scope: f(\n\n) }\nfact b { }\n"
    assert [d.line for d in parse_text(text).declarations] == [1, 4]


def test_empty_and_blank_documents_have_no_declarations() -> None:
    assert parse_text("").declarations == []
    assert parse_text("  \n# only a comment\n").declarations == []


def test_fast_and_precise_parsers_give_the_same_document() -> None:
    text = 'module m\nuse U\nfact a { claim: "x" tags: [a, b] guard { deny_any: [c] } }\n'
    fast, precise = parse_text(text), parse_precise(text)
    assert fast.declarations == precise.declarations
    assert (fast.module, fast.uses) == (precise.module, precise.uses)
