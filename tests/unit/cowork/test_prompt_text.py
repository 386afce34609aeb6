"""What of the zero-width joiners and presentation selectors a prompt keeps: each only
where it changes what a person sees, so that ordinary text carries no hidden bits and
text made of emoji or of a cursive or Indic script a few, bounded here."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memhub_protocol.prompt_text import INVISIBLE_KEPT, left_out, shown

ZWJ, ZWNJ, TEXT_STYLE, EMOJI_STYLE = "\u200d", "\u200c", "\ufe0e", "\ufe0f"
# What may follow a character under the rule before this one: none or one selector,
# then none or one joiner (8 choices, 3 bits a character).
CHOICES = [s + j for s, j in itertools.product(["", TEXT_STYLE, EMOJI_STYLE], ["", ZWJ, ZWNJ])]


def hide(cover: str, seed: int = 7) -> str:
    """`cover` with one of `CHOICES` after each character, as a sender hiding bits."""
    return "".join(ch + CHOICES[(at * 5 + seed) % len(CHOICES)] for at, ch in enumerate(cover))


@pytest.mark.parametrize(
    "cover",
    [
        "Looks good to me; merging after lunch (ETA 14:30, #42 & *the* rest).",
        "Привет, всё готово к слиянию.",  # Cyrillic
        "マージは昼食後にします。了解です",  # Japanese
        "20°C, ±3 — 50% · ½ € §",  # symbols and signs that have no emoji look
        "Ça marche, ĝis — Ελληνικά, עברית",  # Latin with accents, Greek, Hebrew
    ],
)
def test_ordinary_text_carries_no_joiner_and_no_selector(cover: str) -> None:
    assert shown(hide(cover)) == cover


@pytest.mark.parametrize(
    "text",
    [
        "\U0001f469\u200d\U0001f4bb",  # woman technologist
        "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag: selector, then joiner
        "\u2764\ufe0f\u200d\U0001f525",  # heart on fire
        "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # family
        "\U0001f469\u200d\u2764\ufe0f\u200d\U0001f48b\u200d\U0001f468",  # kiss
        "\U0001f44d\U0001f3fd \U0001f469\U0001f3fd\u200d\U0001f4bb",  # skin tones
        "\U0001f441\ufe0f\u200d\U0001f5e8\ufe0f",  # eye in speech bubble
        "\U0001f3f4\u200d\u2620\ufe0f \U0001f3f3\ufe0f\u200d\u26a7\ufe0f",  # pirate, trans flags
        "\U0001f9d1\u200d\U0001f9bd\u200d\u27a1\ufe0f",  # person in wheelchair facing right
        "\U0001f426\u200d\U0001f525 \U0001fae8\u200d\U0001f525",  # newer than Python's tables
        "1\ufe0f\u20e3 #\ufe0f\u20e3 *\ufe0f\u20e3",  # keycaps
        "\u263a\ufe0f \u2714\ufe0f \u2764\ufe0f \u2122\ufe0f \u00a9\ufe0f \u203c\ufe0f \u3030\ufe0f",
        "\u263a\ufe0e \u2194\ufe0e",  # text presentation
        "\U0001f1e9\U0001f1ea \U0001f1ee\U0001f1f7",  # flags
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \u06a9\u062a\u0627\u0628\u200c\u0647\u0627",
        "\u0647\u200d \u0639\u200d",  # Arabic letters in a joined form at a word's end
        "\u200d\u0647 \u200d\u0647\u200d",  # ... at a word's start, and a medial form alone
        "\u0915\u094d\u200d\u0937 \u0915\u094d\u200c\u0937",  # Hindi half form, explicit virama
        "\u0d05\u0d35\u0d28\u0d4d\u200d \u0d15\u0d4d\u200c",  # Malayalam chillu, ZWNJ
        "\u0dc1\u0dca\u200d\u0dbb\u0dd3",  # Sinhala sri
        "\u09b0\u200d\u09cd\u09af",  # Bengali ra-phala: a joiner before the virama
    ],
)
def test_what_emoji_and_scripts_spell_with_joiners_and_selectors_stays(text: str) -> None:
    assert shown(text) == text


def test_a_selector_after_a_digit_stays_only_in_a_keycap() -> None:
    assert shown("1\ufe0f 1\ufe0e\u20e3 1\ufe0f\u20e3") == "1 1\u20e3 1\ufe0f\u20e3"


def test_a_joiner_stays_between_emoji_only() -> None:
    fire = "\U0001f525"
    assert shown(f"x\u200d{fire} {fire}\u200dx {fire}\u200d {fire}\u200c{fire}") == (
        f"x{fire} {fire}x {fire} {fire}{fire}"
    )


def test_a_non_joiner_stays_inside_a_word_of_a_cursive_script_or_after_a_virama() -> None:
    persian = "\u0645\u06cc"
    assert shown(f"{persian}\u200c {persian}\u200c.") == f"{persian} {persian}."
    assert shown("\u0915\u200c\u0937") == "\u0915\u0937"  # no virama before it


def choices_kept(before: str, after: str) -> int:
    """How many different texts a prompt shows for `before`, any run of up to four
    joiners and selectors, and `after`: what one character can carry, log2 of it in
    bits."""
    runs = ("".join(run) for n in range(5) for run in itertools.product(INVISIBLE_KEPT, repeat=n))
    return len({shown(before + run + after) for run in runs})


# Where a choice remains by nature, each stays visible to a person who looks (a broken
# join, an emoji's other look, a conjunct spelt out) except where renderers have no
# sequence for it: a joiner between two emoji that form none, a selector after a
# symbol with no emoji look (box drawing). In an 8,192-byte message made only of such
# characters that is at most about 430 bytes (3-byte emoji, 5 choices each), 310
# (Persian letters, 2 choices) or 290 (Devanagari consonant and virama, 6 choices);
# ordinary text of letters, digits and punctuation carries none.
@pytest.mark.parametrize(
    ("before", "after", "most"),
    [
        ("a", "b", 1),
        ("1", "2", 1),
        (".", " ", 1),
        ("\u263a", "\u263a", 5),  # none, either selector, ZWJ, emoji selector and ZWJ
        ("\U0001f525", "x", 3),  # the selectors only: no emoji to join
        ("\u2500", "\u2500", 5),  # box drawing: taken for a symbol that may be an emoji
        ("\u0645", "\u06cc", 2),  # Persian, inside a word: ZWNJ or not
        ("\u0645", " ", 2),  # at a word's end: ZWJ or not
        (" ", "\u0645", 2),  # at a word's start: ZWJ or not
        ("\u0915\u094d", "\u0937", 3),  # after a virama: ZWJ, ZWNJ or neither
        ("\u0915", "\u094d", 2),  # before a virama: ZWJ or not
    ],
)
def test_a_character_carries_no_more_than_the_choices_that_act(
    before: str, after: str, most: int
) -> None:
    assert choices_kept(before, after) == most


@given(
    st.text(
        st.sampled_from(
            "a1#\u263a\U0001f525\u0645\u06cc \u0915\u094d\u20e3" * 2
            + "\u200c\u200d\ufe0e\ufe0f" * 3
        )
    )
)
@example("\u0645\u200d\u200c\u06cc")  # a joiner before a non-joiner inside a word
def test_what_a_prompt_shows_it_shows_again_unchanged(text: str) -> None:
    # The daemon keeps peek texts cleaned, and memctl cleans them again.
    assert shown(shown(text)) == shown(text)


def test_ascii_text_loses_what_left_out_names_and_nothing_else() -> None:
    # Every ASCII character, alone and around others: ASCII text has a shorter way.
    for code in range(128):
        ch = chr(code)
        expected = "" if left_out(ch) else ch
        assert shown(ch) == expected
        assert shown(f"a{ch}b") == f"a{expected}b"
    every = "".join(map(chr, range(128)))
    assert shown(every) == "".join(ch for ch in every if not left_out(ch))
