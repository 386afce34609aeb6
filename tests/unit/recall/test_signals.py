"""Structured signals (mempal §3.9): sentinels for empty text, entity codes, flags by
substring, emotions, stars; and they never change the text they describe."""

from __future__ import annotations

from memhubd.recall.signals import analyze, entity_code, hash_code


def test_empty_text_gets_the_sentinels() -> None:
    assert analyze("").as_dict() == {
        "entities": ["UNK"],
        "topics": [],
        "flags": ["CORE"],
        "emotions": ["determ"],
        "importance_stars": 2,
    }


def test_entity_codes_take_three_letters_or_a_hash() -> None:
    assert entity_code("Auth0") == "AUT"
    assert entity_code("DX") == hash_code("DX") == "UEC"
    assert entity_code("R2D2") == hash_code("R2D2")
    assert analyze("The Kai and kai and KAI").entities == ("THE", "KAI")


def test_flags_follow_the_table_and_stars_follow_the_flags() -> None:
    technical = analyze("The server config lives in one file")
    assert technical.flags == ("TECHNICAL",) and technical.importance_stars == 3
    decided = analyze("We switched the database because of cost")
    assert decided.flags == ("DECISION", "TECHNICAL") and decided.importance_stars == 4
    assert analyze("we realized the password leaked").flags == ("PIVOT", "SENSITIVE")
    assert analyze("我们决定迁移数据库").flags == ("DECISION", "TECHNICAL")
    assert analyze("a plain note").flags == ("CORE",)


def test_emotions_keep_table_order_and_default_to_determ() -> None:
    assert analyze("I hope it works, but I am worried").emotions == ("anx", "hope")
    assert analyze("我很担心").emotions == ("anx",)
    assert analyze("lunch at noon").emotions == ("determ",)


def test_topics_drop_stop_words_and_keep_three() -> None:
    found = analyze("Why the ledger drifts: rounding, currency and rounding again")
    assert found.topics == ("ledger", "drifts", "rounding")
    assert found.topics_total == 5
