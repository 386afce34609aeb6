"""memdsl's MCP payload rules applied to service results: status, next actions,
vocabulary on a miss, clamping, the memdsl index file ids."""

from __future__ import annotations

import pytest

from memhubd.mcp import payloads, text

EMPTY_PACK = {"must": [], "should": [], "context": [], "conflicts": [], "missing": []}


def pack(**layers):
    return {**EMPTY_PACK, "search_trace": {}, **layers}


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 1), (-4, 1), (8, 8), (51, 50), (10**9, 50), ("7", 7), ("x", 8)]
)
def test_query_limit_is_clamped_like_memdsl(value, expected):
    assert payloads.clamp(value, payloads.QUERY_LIMIT) == expected


def test_a_match_asks_for_explain_before_citing_and_carries_no_vocabulary():
    payload = payloads.query_payload(pack(context=[{"id": "fact:a"}]), "text", "ws", {"x": 1})
    assert payload["status"] == "ok"
    assert payload["next_actions"] == [text.NEXT_EXPLAIN_BEFORE_CITING]
    assert "vocabulary" not in payload


def test_a_global_must_rule_alone_is_a_match():
    assert payloads.query_payload(pack(must=[{"id": "boundary:g"}]), "", "ws")["status"] == "ok"


def test_a_miss_is_a_retry_signal_with_filter_hint_and_vocabulary():
    trace = {"excluded_by_filters_total": 2}
    vocabulary = {"subjects": [], "scopes": ["global"], "modules": [], "types": {}}
    payload = payloads.query_payload(
        {**pack(missing=[{"id": "open_question:q"}]), "search_trace": trace}, "", "ws", vocabulary
    )
    assert payload["status"] == "no_match" and payload["ok"] is True
    assert payload["vocabulary"] == vocabulary
    missing, filtered, retry = payload["next_actions"]
    assert missing == text.NEXT_MISSING
    assert filtered.startswith("2 declaration(s) matched")
    assert retry == text.NEXT_NO_MATCH


@pytest.mark.parametrize("verdict", ["allow", "block", "needs_review"])
def test_check_status_is_the_verdict_with_its_own_advice(verdict):
    payload = payloads.check_payload({"verdict": verdict}, "", "ws")
    assert payload["status"] == verdict
    assert payload["next_actions"] == [text.NEXT_CHECK[verdict]]


def test_lint_with_source_problems_is_not_ok():
    data = {
        "ok": False,
        "declarations": 3,
        "errors": 0,
        "warnings": 1,
        "diagnostics": [],
        "source_problems": [{"file": "a.mem"}],
    }
    payload = payloads.lint_payload(data, "ws")
    assert (payload["ok"], payload["status"]) == (False, "errors")


def test_memdsl_files_are_numbered_and_memhub_files_keep_their_paths():
    data = {"files": [{"file_id": "a.mem", "path": "/w/a.mem", "declarations": 2}] * 2}
    assert [f["file_id"] for f in payloads.files_payload(data, "ws", True)["files"]] == ["0", "1"]
    assert [f["file_id"] for f in payloads.files_payload(data, "ws", False)["files"]] == [
        "a.mem",
        "a.mem",
    ]


def test_a_stored_proposal_tells_the_agent_a_person_decides():
    data = {"proposal_id": "p-20261130-000000-abcdef", "declaration_id": "fact:x", "path": "/p"}
    payload = payloads.propose_payload(data, "ws")
    assert payload["ok"] is True and payload["status"] == "pending_review"
    assert "review approve p-20261130-000000-abcdef" in payload["next_actions"][0]


def test_status_narrowed_to_one_workspace_keeps_only_it():
    data = {
        "server": "memhub",
        "version": "0",
        "uptime_s": 1.0,
        "identity": {"name": "t"},
        "workspaces": [{"name": "a"}, {"name": "b"}],
    }
    assert payloads.status_payload(data, "b")["workspaces"] == [{"name": "b"}]
    assert len(payloads.status_payload(data)["tools"]) == 11


def refusal(*errors):
    from memhub_protocol import ErrorCode, ProtocolError

    detail = {"errors": list(errors), "warnings": [{"code": "w", "message": "m"}]}
    return ProtocolError(ErrorCode.INVALID, "refused", detail)


def issue(code, message):
    return {"code": code, "severity": "error", "message": message, "line": 1}


def test_an_existing_id_is_memdsls_duplicate_with_memhubs_correction_hint():
    exists = issue("declaration_exists", "'fact:a' already exists at x.mem:3; ... supersedes")
    duplicate = issue("duplicate_declaration_id", "'fact:a' already declared at x.mem:3")
    missing = issue("missing_evidence", "no evidence")

    payload = payloads.propose_invalid(refusal(exists, duplicate, missing), "ws")

    assert payload["ok"] is False and payload["status"] == "invalid"
    assert payload["errors"] == [duplicate, missing]
    assert payload["warnings"] == [{"code": "w", "message": "m"}]
    assert payload["next_actions"] == [text.NEXT_PROPOSE_INVALID, exists["message"]]


def test_an_id_taken_by_a_hidden_declaration_keeps_memdsls_code_and_says_nothing_more():
    exists = issue("declaration_exists", "'fact:a' is not available in this workspace")

    payload = payloads.propose_invalid(refusal(exists), "ws")

    assert payload["errors"] == [{**exists, "code": "duplicate_declaration_id"}]
    assert payload["next_actions"][1] == exists["message"]


def test_a_refusal_from_part_of_an_answer_says_its_size_is_a_lower_bound() -> None:
    from memhubd.mcp.payloads import too_large

    whole = too_large("memory_query", 9_000, 8_000)
    early = too_large("memory_query", 9_000, 8_000, at_least=True)

    assert whole["message"].startswith("the answer of memory_query is 9000 bytes")
    assert early["message"].startswith("the answer of memory_query is at least 9000 bytes")
    assert early["schema_version"] == "memdsl.mcp.query.v1" and early["ok"] is False
    assert {k: v for k, v in early.items() if k != "message"} == {
        k: v for k, v in whole.items() if k != "message"
    }


def review_list(**extra):
    data = {"filter": "all", "total": 5, "proposals": [{"id": "p-1"}], **extra}
    return payloads.review_list_payload(data, "ws")


def test_a_review_list_asked_without_an_offset_is_memdsls_answer():
    payload = review_list()
    assert list(payload) == [
        "ok",
        "schema_version",
        "status",
        "workspace",
        "filter",
        "total",
        "proposals",
        "hidden_by_access_policy",
        "boundary",
        "next_actions",
    ]
    assert payload["next_actions"] == [text.NEXT_REVIEW]


def test_a_review_list_page_says_where_the_next_one_starts():
    page = review_list(offset=2, next_offset=3)
    last = review_list(offset=4, next_offset=None)
    assert (page["offset"], page["next_offset"]) == (2, 3)
    assert page["next_actions"] == [
        text.NEXT_REVIEW,
        "2 more proposal(s) follow, the newest last: call memory_review_list again with "
        'status="all", limit=50, offset=3, workspace="ws".',
    ]
    assert (last["offset"], last["next_offset"], last["next_actions"]) == (
        4,
        None,
        [text.NEXT_REVIEW],
    )


def test_a_store_closed_under_a_request_is_told_to_retry_not_to_fix_files():
    import sqlite3

    from memhubd.service.access import state_database_failure

    closed = state_database_failure(
        sqlite3.ProgrammingError("Cannot operate on a closed database.")
    )
    assert closed is not None and closed.detail == {"status": "closed"}
    assert payloads.unavailable("s", closed, "ws")["next_actions"] == [text.NEXT_RETRY]
    unwritable = state_database_failure(OSError(30, "Read-only file system", "/s/recall/x.lock"))
    assert unwritable is not None
    assert payloads.unavailable("s", unwritable, "ws")["next_actions"] == [
        text.NEXT_STATE_UNAVAILABLE
    ]
