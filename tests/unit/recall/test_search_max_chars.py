"""A search's `max_chars`: each hit's content is cut to that many characters and says
so, the whole kept readable by its drawer id; the bound is checked as other arguments
are, and a search without it answers as before."""

from __future__ import annotations

import pytest

from memhub_protocol import ProtocolError
from memhub_protocol.recall import MAX_HIT_CHARS, SearchRequest
from memhubd.service.recall import _cut_content


def test_max_chars_is_optional_and_sent_only_when_given() -> None:
    plain = SearchRequest.from_json({"query": "ledger"})
    assert plain.max_chars is None and "max_chars" not in plain.to_json()
    bounded = SearchRequest.from_json({"query": "ledger", "max_chars": 500})
    assert bounded.max_chars == 500
    assert SearchRequest.from_json(bounded.to_json()) == bounded


@pytest.mark.parametrize("value", [0, -3, MAX_HIT_CHARS + 1, "500", 2.5, True])
def test_max_chars_outside_its_bounds_or_not_an_integer_is_refused(value: object) -> None:
    with pytest.raises(ProtocolError) as refused:
        SearchRequest.from_json({"query": "ledger", "max_chars": value})
    assert refused.value.detail["field"] == "max_chars"
    assert f"between 1 and {MAX_HIT_CHARS}" in refused.value.message


def test_a_long_content_is_cut_at_a_character_and_says_its_whole_length() -> None:
    content = "é" * 10 + "🦓" * 10  # letters of two and four bytes in UTF-8
    cut = _cut_content(content, 12)
    assert cut == {"content": "é" * 10 + "🦓" * 2, "content_truncated": True, "content_chars": 20}


def test_a_content_within_max_chars_is_whole_and_not_marked_cut() -> None:
    assert _cut_content("short note", 10) == {
        "content": "short note",
        "content_truncated": False,
        "content_chars": 10,
    }
