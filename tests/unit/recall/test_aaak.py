"""AAAK (mempal §6.3): the encoder on the spec's example, the decoder on hand-written
documents, the parser's refusals, and the round trip as a Hypothesis property.

What round-trips, precisely: for any text whose normalised form (whitespace runs
collapsed to one space, `"` turned into `'`, ends trimmed) is not empty,
`decode(encode(text))` equals that normalised form; parsing the encoded document gives
back the header (wing, room, date, source with `|` written as `/` and whitespace
collapsed) and a zettel whose entities, topics, flags, emotions and stars are those
analysis finds in the text; and every assertion of the text is preserved (coverage 1.0).
Case, inner whitespace and double quotes are not preserved.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memhubd.recall import aaak
from memhubd.recall.signals import analyze, normalize

EXAMPLE_DOCUMENT = (
    "V1|myapp|auth|2026-04-08|readme\n"
    '0:KAI+CLE+AUT+UEC|kai_recommended_clerk|"Kai recommended Clerk over Auth0 based on '
    'pricing and DX."|★★★★|determ|DECISION+TECHNICAL'
)


def test_encoder_gives_the_spec_example() -> None:
    encoded = aaak.encode(aaak.SPEC_EXAMPLE, "myapp", "auth", "2026-04-08", "readme")
    assert encoded.document == EXAMPLE_DOCUMENT
    assert encoded.report.coverage == 1.0
    assert encoded.report.key_sentence_truncated is False
    assert encoded.report.topics_truncated == 4  # kai recommended clerk | auth0 pricing on dx


def test_decoder_reads_the_spec_example_back() -> None:
    document = aaak.parse(EXAMPLE_DOCUMENT)
    assert document.header == aaak.Header("myapp", "auth", "2026-04-08", "readme", 1)
    (only,) = document.zettels
    assert only.entities == ("KAI", "CLE", "AUT", "UEC")
    assert only.weight == 4 and only.flags == ("DECISION", "TECHNICAL")
    assert aaak.decode(EXAMPLE_DOCUMENT) == aaak.SPEC_EXAMPLE


def test_decoder_turns_codes_back_into_alias_names_and_fills_an_empty_quote() -> None:
    document = (
        "V1|w|r|1744156800|notes\n"
        '\n0:KAI+CLK|pricing|"KAI picked CLK"|★★|hope|DECISION\n'
        '1:KAI+CLK|note|""|★|determ+joy|CORE\n'
        "T:0<->1|same people\n"
        "ARC:hope->joy\n"
    )
    aliases = {"Kai": "KAI", "Clerk": "CLK"}
    assert aaak.decode(document, aliases) == "Kai picked Clerk\nKai Clerk"
    parsed = aaak.parse(document)
    assert parsed.tunnels == (aaak.Tunnel(0, 1, "same people"),)
    assert parsed.arcs == (("hope", "joy"),)
    assert aaak.parse(parsed.render()) == parsed


def test_alias_names_become_their_codes_when_encoding() -> None:
    encoded = aaak.encode("we asked Kai about pricing", "w", "r", "d", "s", {"Kai": "KAI"})
    (only,) = aaak.parse(encoded.document).zettels
    assert only.entities == ("KAI",)
    with pytest.raises(ValueError):
        aaak.encode("x", "w", "r", "d", "s", {"Kai": "kai"})


@pytest.mark.parametrize(
    ("document", "complaint"),
    [
        ("", "header"),
        ("V1|a|b|c", "header"),
        ('V1|a|b|c|d\n0:KAI|t|"q"|★★|determ', "six fields"),
        ('V1|a|b|c|d\n0:KA|t|"q"|★★|determ|CORE', "three letters"),
        ("V1|a|b|c|d\n0:KAI|t|q|★★|determ|CORE", "double quotes"),
        ('V1|a|b|c|d\n0:KAI|t|"q"|★★★★★★|determ|CORE', "1 to 5"),
        ('V1|a|b|c|d\n0:KAI|t|"q"|★★|Determ|CORE', "emotion"),
        ('V1|a|b|c|d\n0:KAI|t|"q"|★★|determ|URGENT', "flags"),
        ('V1|a|b|c|d\n0:KAI|t|"q"|★|hope|CORE\n0:KAI|t|"r"|★|hope|CORE', "unique"),
        ('V1|a|b|c|d\n0:KAI|t|"q"|★|hope|CORE\nT:0<->7|x', "unknown zettel"),
    ],
)
def test_parser_refuses_what_the_grammar_does_not_allow(document: str, complaint: str) -> None:
    with pytest.raises(aaak.AaakError, match=complaint):
        aaak.parse(document)


def test_a_quote_holding_a_bar_still_parses_back() -> None:
    encoded = aaak.encode("left | right", "a|b", "room", "d", "s")
    parsed = aaak.parse(encoded.document)
    assert parsed.header.wing == "a/b"
    assert aaak.decode(parsed) == "left | right"


def test_coverage_counts_assertions_missing_from_the_decoded_text() -> None:
    check = aaak.verify_roundtrip("We chose SQLite. It is small; tests love it!", EXAMPLE_DOCUMENT)
    assert check.total == 3 and check.preserved == 0 and check.coverage == 0.0
    assert aaak.verify_roundtrip("...", EXAMPLE_DOCUMENT).coverage == 1.0


def test_many_texts_become_numbered_zettels() -> None:
    encoded = aaak.encode_many(["first one", "Second one"], "w", "r", "d", "search")
    parsed = aaak.parse(encoded.document)
    assert [z.id for z in parsed.zettels] == [0, 1]
    assert aaak.decode(parsed) == "first one\nSecond one"


def test_dialect_text_carries_a_live_example() -> None:
    assert EXAMPLE_DOCUMENT in aaak.dialect_text()


meta = st.text(max_size=20)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400), wing=meta, room=meta, date=meta, source=meta)
def test_decode_of_encode_gives_the_normalised_text(
    text: str, wing: str, room: str, date: str, source: str
) -> None:
    encoded = aaak.encode(text, wing, room, date, source)
    parsed = aaak.parse(encoded.document)
    found = analyze(text)
    plain = normalize(text)
    if plain:
        assert aaak.decode(encoded.document) == plain
    else:
        assert aaak.decode(encoded.document) == "UNK"
    head = parsed.header
    expected = tuple(" ".join(v.split()).replace("|", "/") for v in (wing, room, date, source))
    assert (head.wing, head.room, head.date, head.source) == expected
    (only,) = parsed.zettels
    assert only.entities == found.entities
    assert only.topics == (found.topics or ("note",))
    assert (only.flags, only.emotions, only.weight) == (
        found.flags,
        found.emotions,
        found.importance_stars,
    )
    assert encoded.report.coverage == 1.0
    assert aaak.parse(parsed.render()) == parsed


def test_a_quote_cut_short_keeps_the_signals_of_the_whole_text() -> None:
    text = (
        "Zebrafish migration note. We decided to move the tank sensors to the new rack, "
        "because the old rack kept failing every night."
    )
    whole = aaak.zettel(text, 0)
    cut = aaak.zettel(text, 0, quote_chars=7)
    assert cut.quote == normalize(text[:7])
    assert (cut.topics, cut.flags, cut.weight, cut.entities) == (
        whole.topics, whole.flags, whole.weight, whole.entities
    )  # fmt: skip
    document = aaak.encode_many([text], "w", "r", "0", "search", quote_chars=7).document
    assert document.splitlines()[1] == aaak.Document(
        aaak.Header("w", "r", "0", "search"), (cut,)
    ).render().splitlines()[1]
