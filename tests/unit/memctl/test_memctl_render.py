"""How memctl turns the daemon's payloads into terminal text."""

from __future__ import annotations

import json

from memctl import render

LINT = {
    "schema_version": "memhub.lint.v1",
    "ok": False,
    "declarations": 7,
    "errors": 1,
    "warnings": 1,
    "diagnostics": [
        {
            "code": "E_MISSING_FIELD",
            "severity": "error",
            "message": "rule 'x' has no 'claim'",
            "file": "rules.mem",
            "line": 3,
            "column": 1,
            "decl_id": "rule:x",
        },
        {
            "code": "W_NO_SOURCE",
            "severity": "warning",
            "message": "fact 'y' cites no source",
            "file": "facts.mem",
            "line": 9,
            "column": 5,
            "decl_id": "fact:y",
        },
    ],
}


def test_lint_text_is_memdsls_lines_then_a_blank_line_and_the_counts() -> None:
    assert render.render_lint(LINT).split("\n") == [
        "rules.mem:3: error[E_MISSING_FIELD] rule 'x' has no 'claim'",
        "facts.mem:9: warning[W_NO_SOURCE] fact 'y' cites no source",
        "",
        "7 declarations, 1 error(s), 1 warning(s)",
    ]


def test_lint_text_puts_sources_that_no_longer_parse_first_as_errors() -> None:
    problem = {"kind": "parse_error", "file": "new.mem", "line": 2, "message": "expected '}'"}
    text = render.render_lint({**LINT, "source_problems": [problem]})
    assert text.split("\n")[0] == "new.mem:2: error[parse_error] expected '}'"
    # and the counts line says so, beside the lint's own counts
    assert text.split("\n")[-1] == (
        "7 declarations, 1 error(s), 1 warning(s), 1 source problem(s) (above)"
    )


def test_clean_lint_text_is_only_the_counts() -> None:
    clean = {"ok": True, "declarations": 3, "errors": 0, "warnings": 0, "diagnostics": []}
    assert render.render_lint(clean) == "\n3 declarations, 0 error(s), 0 warning(s)"


def test_lint_exits_1_on_errors_and_on_warnings_only_when_strict() -> None:
    warnings_only = {**LINT, "ok": True, "errors": 0}
    assert render.lint_exit_code(LINT, strict=False) == 1
    assert render.lint_exit_code(warnings_only, strict=False) == 0
    assert render.lint_exit_code(warnings_only, strict=True) == 1


def test_verdict_is_read_from_json_or_from_the_first_text_line() -> None:
    assert render.verdict_of({"verdict": "needs_review"}) == "needs_review"
    assert render.verdict_of("VERDICT: BLOCK\n\nAPPLICABLE MUST\n- (none)") == "block"
    assert render.verdict_of("VERDICT: NEEDS_REVIEW\n") == "needs_review"
    assert render.verdict_of("something else") is None


def test_json_keeps_key_order_and_non_ascii_like_memdsl() -> None:
    data = {"z": "ü", "a": [1]}
    assert render.dump_json(data) == '{\n  "z": "ü",\n  "a": [\n    1\n  ]\n}'


def test_text_answers_end_with_exactly_one_newline_added_when_missing() -> None:
    assert render.text_body("MUST\n- x") == "MUST\n- x\n"
    assert render.text_body("MUST\n- x\n") == "MUST\n- x\n"


def test_table_aligns_columns_and_skips_columns_no_row_has() -> None:
    rows = [
        {"name": "team", "status": "ready", "declarations": 12},
        {"name": "writing-desk", "status": "degraded", "declarations": 3},
    ]
    assert render.table(rows, ("name", "status", "generation", "declarations")).split("\n") == [
        "NAME          STATUS    DECLARATIONS",
        "team          ready     12",
        "writing-desk  degraded  3",
    ]


def test_status_shows_daemon_facts_the_caller_then_workspaces() -> None:
    payload = {
        "schema_version": "memhub.status.v1",
        "version": "0.1.0",
        "uptime_s": 2.5,
        "identity": {"name": "ci", "scopes": ["read:search"], "workspaces": ["*"], "roles": []},
        "workspaces": [
            {"name": "team", "root": "/w/team", "health": "ok", "generation": 4, "problems": []},
            {"name": "notes", "health": "degraded", "generation": 9, "problems": [{"kind": "x"}]},
        ],
    }
    assert render.render_status(payload).split("\n") == [
        "version: 0.1.0",
        "uptime_s: 2.5",
        "identity: ci  scopes=read:search  workspaces=*  roles=-",
        "",
        "NAME   HEALTH    GENERATION  PROBLEMS",
        "team   ok        4           0",
        "notes  degraded  9           1",
    ]


def test_workspaces_also_show_their_root() -> None:
    payload = {"workspaces": [{"name": "team", "root": "/w/team", "health": "ok"}]}
    assert render.render_workspaces(payload).split("\n") == [
        "NAME  HEALTH  ROOT",
        "team  ok      /w/team",
    ]


def test_declarations_list_one_line_each_with_status_and_claim() -> None:
    payload = {
        "total": 5,
        "items": [
            {"id": "rule:no-force-push", "status": "active", "claim": "Never force-push main."},
            {"type": "fact", "name": "ci", "status": "superseded"},
        ],
    }
    assert render.render_declarations(payload).split("\n") == [
        "rule:no-force-push  [active]  Never force-push main.",
        "fact:ci  [superseded]",
        "",
        "2 declaration(s) of 5",
    ]


def test_files_are_a_table_of_id_count_and_path() -> None:
    payload = {"files": [{"file_id": "f1", "path": "rules.mem", "declarations": 4}]}
    assert render.render_files(payload).split("\n") == [
        "FILE_ID  DECLARATIONS  PATH",
        "f1       4             rules.mem",
    ]


def test_tokens_join_list_values_with_commas() -> None:
    payload = {
        "tokens": [
            {"name": "ci", "scopes": ["read:summary", "read:search"], "workspaces": ["*"]},
        ]
    }
    assert render.render_tokens(payload).split("\n") == [
        "NAME  SCOPES                    WORKSPACES",
        "ci    read:summary,read:search  *",
    ]


def test_a_new_token_puts_its_secret_alone_on_the_last_line() -> None:
    payload = {"name": "ci", "token": "mh_abc123", "scopes": ["read:search"]}
    lines = render.render_token_created(payload).split("\n")
    assert lines[0] == "created token ci  scopes=read:search"
    assert lines[-1] == "mh_abc123"


def test_an_unexpected_payload_is_shown_as_json_rather_than_dropped() -> None:
    payload = {"something": "new"}
    assert json.loads(render.render_files(payload)) == payload
    assert json.loads(render.render_workspaces(payload)) == payload


def test_events_print_as_name_then_compact_json() -> None:
    assert render.render_event("reload", {"workspace": "team", "generation": 2}) == (
        'reload {"workspace":"team","generation":2}'
    )
    assert render.render_event("message", "plain") == "message plain"


def test_a_new_proposal_names_the_workspace_in_the_reviewers_command() -> None:
    payload = {
        "proposal_id": "p-7",
        "declaration_id": "rule:x",
        "workspace": "team-coding",
        "suggested_into": "decisions.mem",
    }
    assert render.render_proposed(payload).splitlines() == [
        "proposal p-7 pending review: rule:x",
        "a reviewer decides with: memctl -w team-coding review approve p-7 --into decisions.mem",
    ]


def proposals(ids: list[str], total: int, **extra: object) -> dict:
    rows = [{"id": i, "status": "pending", "declaration": "fact:x"} for i in ids]
    return {"filter": "pending", "total": total, "proposals": rows, **extra}


def test_a_whole_proposal_list_ends_with_its_count_alone() -> None:
    assert render.render_proposals(proposals(["p-1", "p-2"], 2)).endswith(
        "\n\n2 pending proposal(s)"
    )


def test_a_page_of_proposals_says_where_it_is_and_how_to_read_on() -> None:
    first = render.render_proposals(proposals(["p-1"], 3))
    middle = render.render_proposals(proposals(["p-2"], 3, offset=1, next_offset=2))
    last = render.render_proposals(proposals(["p-3"], 3, offset=2, next_offset=None))
    beyond = render.render_proposals(proposals([], 3, offset=5, next_offset=None))
    assert first.endswith("\n\n1 pending proposal(s) (1-1 of 3); the next with --offset 1")
    assert middle.endswith("\n\n1 pending proposal(s) (2-2 of 3); the next with --offset 2")
    assert last.endswith("\n\n1 pending proposal(s) (3-3 of 3)")
    assert beyond == "no pending proposal(s) after the first 5 (3 in all)"


def test_taxonomy_lines_show_a_rooms_display_name_when_it_has_one() -> None:
    from memctl.recall import _render_taxonomy

    entries = [
        {"room": "billing", "display_name": "Billing & invoices", "keywords": ["invoice", "vat"]},
        {"room": "ops", "display_name": None, "keywords": ["pager"]},
    ]
    assert _render_taxonomy({"entries": entries}).splitlines() == [
        "billing (Billing & invoices): invoice, vat",
        "ops: pager",
    ]


def test_wake_up_points_memctl_at_recall_show_and_leaves_drawers_quoting_the_route() -> None:
    from memctl.recall import _wake_up_text

    route = "GET /v1/workspaces/team/recall/drawers/<drawer_id>"
    quoting = f"to read one, {route} or (summaries; read a drawer whole: {route})"
    text = "\n".join(
        [
            "## Identity",
            "(no identity text)",
            "",
            "## Recent recall (team)",
            "- notes drawer_team_notes_1 (importance 5)",
            "  source: notes/a.md",
            f"  {quoting}",
            f"(summaries; read a drawer whole: {route})",
        ]
    )
    shown = _wake_up_text({"workspace": "team", "text": text, "read_whole": route})
    lines = shown.split("\n")
    assert lines[6] == f"  {quoting}"  # the drawer as stored
    assert lines[7] == "(summaries; read a drawer whole: memctl recall show <drawer_id>)"
