"""A `memory_query` answer whose budget left MUST rules out: decided as the pack was
before the cut (the rules apply), with the budget's next step and a MUST section that
does not say no constraints apply."""

from __future__ import annotations

from memhubd.mcp import payloads, text
from memhubd.mcp.tools import pack_budget

STEP = "3 more MUST rules apply: run check before acting"
BUDGET = {"max_bytes": None, "max_must": 0, "must_total": 3, "must_shown": 0,
          "must_omitted": 3, "next_step": STEP}  # fmt: skip
RENDERED = "MUST\n- (no constraints apply)\n\nSHOULD\n- (none)\n\nMORE MUST\n- " + STEP


def pack(**layers):
    empty = {"must": [], "should": [], "context": [], "missing": [], "search_trace": {}}
    return {**empty, **layers}


def test_every_must_rule_left_out_is_still_a_match():
    payload = payloads.query_payload(pack(budget=BUDGET), RENDERED, "ws", {"subjects": []})
    assert payload["status"] == "ok" and "vocabulary" not in payload
    assert payload["next_actions"] == [text.NEXT_EXPLAIN_BEFORE_CITING, STEP]
    assert payload["rendered_text"].startswith(f"MUST\n{text.MUST_LEFT_OUT}\n\nSHOULD")


def test_a_budget_that_cut_nothing_adds_nothing():
    budget = {**BUDGET, "must_total": 0, "must_omitted": 0, "next_step": ""}
    payload = payloads.query_payload(pack(budget=budget), RENDERED, "ws", {})
    assert payload["status"] == "no_match" and payload["next_actions"] == [text.NEXT_NO_MATCH]
    assert payload["rendered_text"] == RENDERED


def test_the_must_line_is_rewritten_only_under_must():
    rendered = "# resolved subjects: a\nMUST\n- (no constraints apply)\n\nCONTEXT\n- x"
    assert text.must_left_out(rendered).splitlines()[2] == text.MUST_LEFT_OUT
    kept = "MUST\n- [constraint:a] never\n\nSHOULD\n- (no constraints apply)"
    assert text.must_left_out(kept) == kept


def test_the_budget_is_read_from_the_end_of_the_encoded_pack():
    body = b'{"must":[],"should":[],"search_trace":{"q":",\\"budget\\":{"},"budget":'
    body += b'{"max_bytes":300,"max_must":null,"must_total":4,"must_omitted":4,"next_step":"x"}}'
    assert pack_budget(body) == {
        "max_bytes": 300, "max_must": None, "must_total": 4, "must_omitted": 4, "next_step": "x"
    }  # fmt: skip
    assert pack_budget(b'{"must":[],"search_trace":{}}') is None
