"""Memory map, vocabulary and explain (spec §5)."""

from __future__ import annotations

from workspace_loading import Loader

from memhubd.query import (
    build_memory_map,
    explain,
    explain_payload,
    render_memory_map_text,
    workspace_vocabulary,
)

LONG = "word " * 30

SOURCES = {
    "a.mem": f"""
        module self
        entity User {{ canonical_name: "Alex" aliases: [me, Alex] }}
        fact old {{ claim: "Old" subject: User }}
        fact long {{ claim: "{LONG.strip()}" scope: calendar }}
        """,
    "b.mem": """
        fact loose { claim: "No module" supersedes: old }
        fact gone { claim: "Archived" status: archived scope: attic }
        """,
}


def test_map_groups_live_declarations_by_module_with_none_first(load: Loader) -> None:
    data = build_memory_map(load(SOURCES))

    assert data["declarations"] == 3
    assert [(m["module"], m["declarations"]) for m in data["modules"]] == [
        ("(none)", 1),
        ("self", 2),
    ]
    symbol, long_fact = data["modules"][1]["items"]
    assert symbol == {
        "id": "entity:User",
        "type": "entity",
        "runtime_role": "symbol",
        "summary": '"Alex"; aliases: me, Alex',
    }
    assert long_fact["scope"] == "calendar"
    assert len(long_fact["summary"]) == 120 and long_fact["summary"].endswith("…")


def test_vocabulary_filters_by_status_only(load: Loader) -> None:
    vocabulary = workspace_vocabulary(load(SOURCES))

    # The superseded `old` still counts; the archived `gone` does not.
    assert vocabulary == {
        "subjects": [{"symbol": "User", "canonical_name": "Alex", "aliases": ["me", "Alex"]}],
        "scopes": ["calendar"],
        "modules": ["self"],
        "types": {"entity": 1, "fact": 3},
    }
    assert workspace_vocabulary(load(SOURCES), limit=0)["subjects"] == []


def test_map_text_lists_items_then_the_vocabulary(load: Loader) -> None:
    text = render_memory_map_text(build_memory_map(load(SOURCES)))

    assert text.splitlines() == [
        "# memory map: 3 declaration(s) in 2 module(s)",
        "",
        "## module (none)",
        "- [fact:loose] assertion: No module",
        "",
        "## module self",
        '- [entity:User] symbol: "Alex"; aliases: me, Alex',
        f"- [fact:long] assertion (scope calendar): {LONG[:119]}…",
        "",
        "## vocabulary",
        "subjects: User (aka Alex, me)",
        "scopes: calendar",
        "types: entity(1), fact(3)",
    ]


EXPLAINED = """
    module coding
    boundary git.no_force { rule: "Never force-push" subject: Repo scope: git confidence: high
        evidence { source: "chat" }
        access_policy { readers: [developer, agent] export: internal }
        relations { supports: policy } }
    fact why { claim: "Because" supports: "boundary:git.no_force" derived_from: git.no_force }
"""


def test_explain_shows_fields_relations_both_ways_and_policy_lists_as_python(
    load: Loader,
) -> None:
    text = explain(load(EXPLAINED), "git.no_force")

    assert text.splitlines() == [
        "boundary:git.no_force",
        "  file:    memory.mem:3",
        "  module:  coding",
        "  type:    boundary",
        "  role:    constraint",
        "  status:  active",
        "  subject: Repo",
        "  scope:   git",
        "  confidence: high",
        "  claim:   Never force-push",
        "  relations:",
        "    supports -> policy",
        "  referenced by:",
        "    fact:why --supports--> this",
        "    fact:why --derived_from--> this",
        "  evidence:",
        "    source: chat",
        "  access policy:",
        "    readers: ['developer', 'agent']",
        "    export: internal",
    ]
    assert explain(load(EXPLAINED), "nope") == "declaration 'nope' not found"


def test_explain_payload_carries_the_declaration_or_an_error(load: Loader) -> None:
    ws = load(EXPLAINED)

    payload = explain_payload(ws, " fact:why ")
    declaration = payload["declaration"]

    assert (payload["ok"], payload["status"]) == (True, "ok")
    assert payload["rendered_text"] == explain(ws, "fact:why")
    assert declaration["relations"] == {
        "supports": ["boundary:git.no_force"],
        "derived_from": ["git.no_force"],
    }
    assert declaration["evidence"] == {}
    assert declaration["fields"] == {
        "claim": "Because",
        "supports": "boundary:git.no_force",
        "derived_from": "git.no_force",
    }
    assert explain_payload(ws, "missing")["status"] == "not_found"
    assert explain_payload(ws, "  ")["error"] == "id_required"
