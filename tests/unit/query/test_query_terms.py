"""Query term extraction (spec §4.1)."""

from __future__ import annotations

from memhubd.query.terms import QUERY_STOPWORDS, query_terms


def test_query_stopword_list_has_66_words() -> None:
    assert len(QUERY_STOPWORDS) == 66
    assert {"the", "should", "any", "please"} <= QUERY_STOPWORDS
    assert "never" not in QUERY_STOPWORDS  # a compliance stopword only


def test_query_terms_keep_order_and_duplicates_without_stopwords() -> None:
    assert query_terms("How do I PUSH the main branch, push?") == ["push", "main", "branch", "push"]


def test_underscores_join_words_while_other_characters_split() -> None:
    assert query_terms("no_force_push don't re-run v1.2") == [
        "no_force_push", "don", "t", "re", "run", "v1", "2",
    ]  # fmt: skip


def test_non_ascii_letters_yield_no_terms() -> None:
    assert query_terms("事実 café") == ["caf"]
