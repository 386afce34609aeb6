"""Positions of declarations and of every field, including nested blocks."""

from __future__ import annotations

from memhubd.lang import Position, parse_precise, parse_text

SOURCE = """module m
fact first {
  claim: "c"
  guard {
    deny_any: [x]
  }
  claim: "again"
}
  boundary second { rule: "r" }
"""


def test_declarations_know_their_line_and_column() -> None:
    first, second = parse_text(SOURCE, file="p.mem").declarations
    assert first.position == Position("p.mem", 2, 1)
    assert second.position == Position("p.mem", 9, 3)


def test_every_field_position_is_kept_and_duplicates_point_at_the_last_one() -> None:
    first, second = parse_text(SOURCE, file="p.mem").declarations
    assert first.positions == {
        ("claim",): Position("p.mem", 7, 3),
        ("guard",): Position("p.mem", 4, 3),
        ("guard", "deny_any"): Position("p.mem", 5, 5),
    }
    assert second.position_of("rule") == Position("p.mem", 9, 21)
    assert second.position_of("missing") == second.position


def test_fast_parser_positions_match_the_precise_parser() -> None:
    fast = parse_text(SOURCE, file="p.mem").declarations
    precise = parse_precise(SOURCE, file="p.mem").declarations
    assert [d.positions for d in fast] == [d.positions for d in precise]
    assert [d.column for d in fast] == [d.column for d in precise]


def test_declarations_know_where_their_closing_brace_is() -> None:
    first, second = parse_text(SOURCE, file="p.mem").declarations
    assert first.end == Position("p.mem", 8, 1)
    assert second.end == Position("p.mem", 9, 31)
    assert parse_precise(SOURCE, file="p.mem").declarations[0].end == first.end


def test_spans_are_exact_character_offsets_even_after_escaped_newlines() -> None:
    text = 'fact a { claim: "one\\\ntwo" }\nfact b { claim: "x" }\n'
    first, second = parse_text(text).declarations
    assert text[slice(*first.span)] == 'fact a { claim: "one\\\ntwo" }'
    assert text[slice(*second.span)] == 'fact b { claim: "x" }'
    assert second.line == 2  # memdsl's counter lags; the span does not


def test_files_leave_their_text_on_disk_and_positions_survive(tmp_path) -> None:
    from memhubd.lang import parse_file

    path = tmp_path / "p.mem"
    path.write_text(SOURCE, encoding="utf-8")
    first, _second = parse_file(str(path)).declarations
    assert first.position_of("guard", "deny_any") == Position(str(path), 5, 5)


def test_positions_are_unknown_rather_than_wrong_when_the_file_changed(tmp_path) -> None:
    from memhubd.lang import parse_file

    path = tmp_path / "p.mem"
    path.write_text(SOURCE, encoding="utf-8")
    first, _second = parse_file(str(path)).declarations
    path.write_text("\n\n\n" + SOURCE, encoding="utf-8")
    assert first.positions == {}
    assert first.line == 2 and first.column == 1
