"""Every parse-error message of spec §1.2, with memdsl's line and our column."""

from __future__ import annotations

import pytest

from memhubd.lang import ParseError, parse_file, parse_text


@pytest.mark.parametrize(
    ("source", "message", "line", "column"),
    [
        ('fact x {\n claim: "open\n}\n', "unterminated string", 2, 9),
        ("fact x", "unexpected end of file", 1, 0),
        ("fact x\n\nzz", "expected '{', got 'zz'", 3, 1),
        ('"s" x { }', "expected keyword or kind, got 's'", 1, 1),
        ("fact x { }\n{", "expected keyword or kind, got '{'", 2, 1),
        ('module "m"', "expected module name", 1, 8),
        ("use [", "expected symbol after 'use'", 1, 5),
        ('fact "x" { }', "expected declaration name after 'fact'", 1, 6),
        ("fact x {\n a: 1\n", "unterminated block", 2, 0),
        ("fact x { : 1 }", "expected field name, got ':'", 1, 10),
        ('fact x { "k": 1 }', "expected field name, got 'k'", 1, 10),
        ("fact x {\n a b }", "expected ':' or '{' after 'a', got 'b'", 2, 2),
        ("fact x { a", "expected ':' or '{' after 'a', got 'end of file'", 1, 10),
        ("fact x { a:", "expected value", 1, 0),
        ("fact x { a: }", "unexpected value '}'", 1, 13),
        ("fact x { a: [a,, b] }", "unexpected value ','", 1, 16),
        ("fact x { a: { b: 1 } }", "unexpected value '{'", 1, 13),
        ("fact x { a: [ {x: 1} ] }", "unexpected value '{'", 1, 15),
        ("fact x { a: [1, 2\n", "unterminated list", 1, 0),
        ("fact x { scope: f(unbalanced }\n", "unterminated block", 1, 0),
    ],
)
def test_parse_error_message_line_and_column(
    source: str, message: str, line: int, column: int
) -> None:
    with pytest.raises(ParseError) as caught:
        parse_text(source, file="f.mem")
    error = caught.value
    assert (error.message, error.line, error.column) == (message, line, column)
    assert str(error) == f"f.mem:{line}: {message}"


def test_an_unterminated_string_wins_over_an_earlier_syntax_error() -> None:
    # The whole file is tokenized before parsing, as memdsl does.
    with pytest.raises(ParseError, match="unterminated string"):
        parse_text('fact x { : }\nfact y { claim: "open }')


def test_default_file_label_is_text() -> None:
    with pytest.raises(ParseError) as caught:
        parse_text("fact x")
    assert str(caught.value) == "<text>:1: unexpected end of file"


def test_a_leading_byte_order_mark_is_part_of_the_first_atom(tmp_path) -> None:
    path = tmp_path / "bom.mem"
    path.write_bytes("\ufefffact x { }\n".encode())
    (declaration,) = parse_file(str(path)).declarations
    assert declaration.kind == "\ufefffact"


def test_file_label_is_the_path_as_given(tmp_path) -> None:
    path = tmp_path / "broken.mem"
    path.write_text("fact x {", encoding="utf-8")
    with pytest.raises(ParseError) as caught:
        parse_file(str(path))
    assert caught.value.file == str(path)


def test_nesting_past_the_limit_is_a_parse_error_not_a_crash() -> None:
    deep_list = "fact x { a: " + "[" * 5000 + "]" * 5000 + " }"
    deep_block = "fact x { " + "a { " * 5000 + "}" * 5000 + " }"
    for text in (deep_list, deep_block):
        with pytest.raises(ParseError, match="nesting deeper than"):
            parse_text(text)
