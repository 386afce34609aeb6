"""Property tests: the parser never fails in an unplanned way, both parsing
paths agree, and the source writer round-trips every declaration."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from memhubd.lang import (
    Document,
    ParseError,
    RawDeclaration,
    parse_precise,
    parse_text,
    write_declaration,
    write_document,
)

SPECIAL = list('{}[]:,"#()\\\n\t\r ') + ["fact", "module", "use", "x", "事", "\ufeff", "a.b"]

texts = st.lists(st.sampled_from(SPECIAL) | st.text(max_size=4), max_size=60).map("".join)

atom_chars = st.characters(blacklist_characters=' \t\r\n#{}[]:,"()', blacklist_categories=("Cs",))
atoms = st.text(atom_chars, min_size=1, max_size=8) | st.sampled_from(
    ['f("x")', "g(a b: {c})", "h(#)", "2026-01-01", "-1"]
)
scalars = atoms | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4), max_leaves=12)
blocks = st.recursive(
    st.dictionaries(atoms, values, max_size=5),
    lambda inner: st.dictionaries(atoms, values | inner, max_size=4),
    max_leaves=10,
)
names = atoms.filter(lambda a: a not in ("module", "use"))


def outcome(parse, text: str):
    try:
        document = parse(text)
    except ParseError as error:
        return ("error", error.message, error.line)
    return (
        "ok",
        document.module,
        document.uses,
        [(d.kind, d.name, d.fields, d.line, d.module) for d in document.declarations],
    )


@given(texts)
@example("fact x { a: " + "[" * 3000)
@example("fact x { a: f(" + "(" * 3000)
@example("\x00\ud7ff")
def test_any_text_parses_or_raises_parse_error(text: str) -> None:
    try:
        document = parse_text(text)
    except ParseError:
        return
    assert isinstance(document, Document)


@given(texts)
def test_fast_and_precise_paths_agree_on_any_text(text: str) -> None:
    assert outcome(parse_text, text) == outcome(parse_precise, text)


@given(names, names, blocks)
def test_written_declaration_parses_back_to_itself(kind: str, name: str, fields: dict) -> None:
    declaration = RawDeclaration(kind, name, fields, "<text>", 1)
    (parsed,) = parse_text(write_declaration(declaration)).declarations
    assert (parsed.kind, parsed.name, parsed.fields) == (kind, name, fields)


@given(st.lists(st.tuples(names, names, blocks), max_size=4), st.none() | names)
def test_written_document_parses_back_to_itself(items, module) -> None:
    document = Document(
        module=module,
        uses=[],
        declarations=[RawDeclaration(k, n, f, "<text>", 1, module) for k, n, f in items],
        file="<text>",
    )
    parsed = parse_text(write_document(document))
    assert parsed.module == module
    assert [(d.kind, d.name, d.fields) for d in parsed.declarations] == items


def test_a_large_file_parses() -> None:
    text = "".join(f'fact f{i} {{ claim: "c {i}" tags: [a, b] }}\n' for i in range(20000))
    document = parse_text(text)
    assert len(document.declarations) == 20000
    assert document.declarations[-1].line == 20000
