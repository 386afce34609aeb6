"""Trigger phrases looked up from a text's words find exactly the phrases a scan finds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhubd.index.triggers import TriggerPhrases

PHRASE = st.text(alphabet="ab_1 -.é", min_size=1, max_size=6)
TEXT = st.text(alphabet="ab_1 -.éK\n", max_size=30)


def scanned(slots: dict[str, list[int]], lowered: str) -> list[int]:
    return sorted(o for phrase, found in slots.items() if phrase in lowered for o in found)


@given(st.lists(PHRASE, max_size=12), TEXT, st.booleans())
def test_phrases_found_through_their_words_equal_a_scan_of_every_phrase(
    phrases: list[str], text: str, many: bool
) -> None:
    # Given phrases (some without any word character) guarding numbered constraints,
    # among many others when the text's substrings are to be looked up, not scanned
    slots: dict[str, list[int]] = {f"zq{n}": [-1] for n in range(2000)} if many else {}
    for n, phrase in enumerate(phrases):
        slots.setdefault(phrase.lower(), []).append(n)
    lowered = text.lower()

    # When the text is searched through the phrases' keys
    found = TriggerPhrases(slots).slots_in(lowered)

    # Then it finds the slots a test of every phrase finds, and those phrases once each
    assert sorted(found) == scanned(slots, lowered)
    named = TriggerPhrases(slots).phrases_in(lowered)
    assert sorted(named) == sorted(phrase for phrase in slots if phrase in lowered)


def test_a_phrase_is_found_inside_longer_words_and_across_word_edges() -> None:
    # Given phrases whose keys are parts of the text's words, not whole words
    slots = {"son": [1], "og in": [2], "deploy": [3], "!!": [4], "tuesday": [5]}
    phrases = TriggerPhrases(slots)

    # Then substrings count, as in memdsl (`son` is in `person`), and so do phrases
    # without a word character
    assert sorted(phrases.slots_in("a person, log into deploys!!")) == [1, 2, 3, 4]
    assert phrases.slots_in("nothing here") == []


def test_many_phrases_and_a_short_text_look_up_keys_instead_of_scanning() -> None:
    # Given more phrases than a short text has substrings
    slots = {f"word{n}": [n] for n in range(500)}
    phrases = TriggerPhrases(slots)

    # Then the answer is a scan's (`word4` is inside `word42`)
    text = "use word42 and word7"
    assert sorted(phrases.slots_in(text)) == scanned(slots, text) == [4, 7, 42]
