"""Fact-check without a model: names within edit distance 2 of a known entity, relations
contradicting a valid fact, facts whose validity ended; each finding cites its source."""

from __future__ import annotations

from memhubd.graph import Fact, fact_check
from memhubd.graph.factcheck import claims_in, edit_distance, known_entities, names_in

NOW = 1_800_000_000


def test_names_are_capitalised_ascii_words_of_three_letters_or_more() -> None:
    assert names_in("The note: Bobby met Alice's brother Al, then (Carol).") == [
        "Bobby",
        "Alice",
        "Carol",
    ]


def test_the_three_relation_patterns() -> None:
    text = "Bob is Alice's brother. Alice is the founder of Acme; Carol works for Globex."
    assert [(c.subject, c.predicate, c.object) for c in claims_in(text)] == [
        ("Bob", "brother_of", "Alice"),
        ("Alice", "founder_of", "Acme"),
        ("Carol", "works_at", "Globex"),
    ]
    assert claims_in("bob is alice's brother") == []


def test_edit_distance_is_bounded() -> None:
    assert edit_distance("Bobby", "Bob") == 2
    assert edit_distance("Alice", "Alicia") == 2
    assert edit_distance("Alice", "Bob") == 3  # over the bound: bound + 1


def test_a_similar_name_is_reported_with_its_source() -> None:
    fact = Fact("triple_bob", "Bob", "husband_of", "Alice", NOW - 10, None, source_drawer="d1")
    known = known_entities([fact], [("Tidewater", "entity:Service.Tidewater")], [("d2", "Ines")])
    result = fact_check("Bobby and Tidewatr met Inez and Alice.", [fact], known, NOW)
    issues = [(i["mentioned"], i["known_entity"], i["edit_distance"]) for i in result["issues"]]
    assert issues == [("Bobby", "Bob", 2), ("Tidewatr", "Tidewater", 1), ("Inez", "Ines", 1)]
    assert result["issues"][0]["source"]["triple_id"] == "triple_bob"
    assert result["issues"][1]["source"] == {"source_declaration": "entity:Service.Tidewater"}
    assert result["issues"][2]["source"] == {"source_drawer": "d2"}
    assert result["checked_entities"] == ["Bobby", "Tidewatr", "Inez", "Alice"]


def test_a_claim_contradicting_a_valid_fact_is_reported() -> None:
    husband = Fact("t1", "Bob", "husband_of", "Alice", NOW - 10, None, source_drawer="d1")
    ended = Fact("t2", "Bob", "father_of", "Alice", NOW - 10, NOW - 5)
    result = fact_check("Bob is Alice's brother.", [husband, ended], {}, NOW)
    (issue,) = result["issues"]
    assert issue["kind"] == "relation_contradiction" and issue["triple_id"] == "t1"
    assert issue["source_drawer"] == "d1" and "husband_of" in issue["kg_fact"]
    assert result["claims"] == [{"subject": "Bob", "predicate": "brother_of", "object": "Alice"}]


def test_a_claim_of_an_ended_fact_is_stale_unless_valid_again() -> None:
    ended = Fact("t1", "Carol", "works_at", "Globex", NOW - 100, NOW - 1)
    (issue,) = fact_check("Carol works at Globex.", [ended], {}, NOW)["issues"]
    assert issue == {
        "kind": "stale_fact",
        "subject": "Carol",
        "predicate": "works_at",
        "object": "Globex",
        "valid_to": NOW - 1,
        "triple_id": "t1",
        "source_drawer": None,
        "source_declaration": None,
    }
    again = Fact("t1", "Carol", "works_at", "Globex", NOW - 1, None)
    assert fact_check("Carol works at Globex.", [ended, again], {}, NOW)["issues"] == []
    # valid_to is exclusive: at that very instant the fact has ended
    assert fact_check("Carol works at Globex.", [ended], {}, NOW - 1)["issues"]


def test_issues_come_in_mempals_order() -> None:
    facts = [
        Fact("t1", "Bob", "husband_of", "Alice", 0, None),
        Fact("t2", "Bob", "brother_of", "Alice", 0, 5),
    ]
    known = known_entities(facts, [], [])
    kinds = [
        i["kind"]
        for i in fact_check("Bob is Alice's brother; Alicia too.", facts, known, NOW)["issues"]
    ]
    assert kinds == ["similar_name_conflict", "relation_contradiction", "stale_fact"]
