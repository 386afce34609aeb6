"""Derived properties of a Declaration (spec §1.5), including where type defaults apply."""

from __future__ import annotations

from textwrap import dedent

from memhubd.lang import Position, parse_text
from memhubd.model import Declaration, Workspace
from memhubd.schema import TypeDescriptor, TypeRegistry


def registry_with(*descriptors: TypeDescriptor) -> TypeRegistry:
    registry = TypeRegistry.standard()
    for descriptor in descriptors:
        registry.register(descriptor)
    return registry


def one(source: str, registry: TypeRegistry | None = None) -> Declaration:
    document = parse_text(dedent(source), file="t.mem")
    workspace = Workspace.from_documents([document], registry or TypeRegistry.standard())
    (declaration,) = workspace.declarations
    return declaration


DEFAULTED = TypeDescriptor(
    name="dom.note",
    runtime_role="assertion",
    defaults={
        "status": "candidate",
        "force": "hard",
        "subject": "User",
        "scope": "global",
        "confidence": "high",
        "as_of": "2026-01-01",
        "evidence": {"source": "default"},
        "access": {"readers": ["x"]},
        "relations": {"supports": "a"},
        "claim": "default claim",
        "tags": ["default-tag"],
        "owner": ["Ann", "Bo"],
    },
    search_fields=("owner",),
)


# ---- identity and field lookup ----------------------------------------------


def test_id_joins_type_and_name_and_keeps_the_source_location() -> None:
    decl = one(
        """
        module m
        fact a.b { claim: "c" }
        """
    )

    assert (decl.id, decl.type_name, decl.kind, decl.name) == ("fact:a.b", "fact", "fact", "a.b")
    assert (decl.file, decl.line, decl.column, decl.module) == ("t.mem", 3, 1, "m")


def test_field_reads_own_value_then_type_default_then_the_given_default() -> None:
    decl = one("dom.note n { status: active }", registry_with(DEFAULTED))

    assert decl.field("status") == "active"
    assert decl.field("force") == "hard"
    assert decl.field("nothing", "fallback") == "fallback"
    assert decl.field("nothing") is None


def test_unknown_types_have_no_descriptor_role_or_capabilities() -> None:
    decl = one("runbook r { claim: c }")

    assert decl.type_descriptor is None
    assert decl.runtime_role == "unknown"
    assert decl.capabilities == frozenset()
    assert not decl.has_capability("searchable")


# ---- status and lifecycle ---------------------------------------------------


def test_nested_lifecycle_status_wins_over_top_level_status() -> None:
    decl = one("fact f { status: archived lifecycle { status: candidate } }")

    assert decl.status == "candidate"


def test_status_falls_back_to_top_level_then_type_default_then_active() -> None:
    registry = registry_with(DEFAULTED)

    assert one("fact f { status: superseded lifecycle { as_of: x } }").status == "superseded"
    assert one("dom.note n { }", registry).status == "candidate"
    assert one("fact f { lifecycle: active }").status == "active"


def test_status_is_stringified() -> None:
    assert one("fact f { lifecycle { status: [a, b] } }").status == "['a', 'b']"


def test_lifecycle_merges_the_block_with_top_level_fields_and_defaults() -> None:
    decl = one(
        "dom.note n { valid_until: 2027-01-01 lifecycle { note: kept } }",
        registry_with(DEFAULTED),
    )

    assert decl.lifecycle == {
        "note": "kept",
        "status": "candidate",
        "as_of": "2026-01-01",
        "valid_until": "2027-01-01",
    }


def test_lifecycle_always_has_a_status_and_ignores_a_non_block_lifecycle() -> None:
    assert one("fact f { lifecycle: active as_of: 2026-01-01 }").lifecycle == {
        "as_of": "2026-01-01",
        "status": "active",
    }


def test_lifecycle_returns_a_fresh_dict_each_time() -> None:
    decl = one("fact f { lifecycle { status: active } }")

    decl.lifecycle["status"] = "changed"

    assert decl.lifecycle == {"status": "active"}
    assert decl.fields["lifecycle"] == {"status": "active"}


# ---- access policy, evidence, scalar fields ---------------------------------


def test_access_policy_prefers_access_policy_then_legacy_access() -> None:
    assert one(
        "fact f { access_policy { readers: [a] } access { readers: [b] } }"
    ).access_policy == {"readers": ["a"]}
    assert one("fact f { access { export: internal } }").access_policy == {"export": "internal"}


def test_access_policy_that_is_not_a_block_hides_legacy_access() -> None:
    assert one("fact f { access_policy: open access { readers: [b] } }").access_policy == {}


def test_an_empty_access_policy_block_still_hides_legacy_access() -> None:
    assert one("fact f { access_policy { } access { readers: [b] } }").access_policy == {}


def test_access_policy_comes_from_defaults_too() -> None:
    policy = TypeDescriptor(
        name="dom.p", runtime_role="assertion", defaults={"access_policy": {"export": "no"}}
    )

    assert one("dom.note n { }", registry_with(DEFAULTED)).access_policy == {"readers": ["x"]}
    assert one("dom.p n { access { readers: [b] } }", registry_with(policy)).access_policy == {
        "export": "no"
    }


def test_evidence_is_a_block_or_none() -> None:
    assert one("fact f { evidence { source: chat } }").evidence == {"source": "chat"}
    assert one("fact f { evidence { } }").evidence == {}
    assert one("fact f { evidence: chat }").evidence is None
    assert one("dom.note n { }", registry_with(DEFAULTED)).evidence == {"source": "default"}


def test_force_subject_scope_are_stringified_or_none_and_confidence_is_raw() -> None:
    decl = one('fact f { force: [a] subject: User scope: repository("m") confidence: [high] }')
    bare = one("fact f { }")

    assert (decl.force, decl.subject, decl.scope) == ("['a']", "User", 'repository("m")')
    assert decl.confidence == ["high"]
    assert (bare.force, bare.subject, bare.scope, bare.confidence) == (None, None, None, None)


def test_scalar_properties_use_type_defaults() -> None:
    decl = one("dom.note n { }", registry_with(DEFAULTED))

    assert (decl.force, decl.subject, decl.scope, decl.confidence) == (
        "hard",
        "User",
        "global",
        "high",
    )


# ---- role and claim ---------------------------------------------------------


def test_runtime_role_follows_the_role_map() -> None:
    assert one("preference p { force: strong }").runtime_role == "guidance"
    assert one("preference p { force: advisory }").runtime_role == "assertion"
    assert one("entity User { }").runtime_role == "symbol"


def test_claim_text_uses_the_type_claim_fields_in_order() -> None:
    assert one('boundary b { claim: "c" rule: "r" }').claim_text == "r"
    assert one('decision d { claim: "c" decision: "d" }').claim_text == "d"
    assert one('state s { summary: "s" }').claim_text == "s"


def test_claim_text_falls_back_to_the_first_string_among_usual_claim_fields() -> None:
    # `fact` only names `claim`; the generic fallback order is claim, rule, decision, pattern, summary
    assert one('fact f { summary: "s" pattern: "p" }').claim_text == "p"
    assert one('fact f { claim: [x] rule: "r" }').claim_text == "r"
    assert one('runbook r { decision: "d" }').claim_text == "d"
    assert one("fact f { claim: [x] }").claim_text == ""


def test_claim_text_uses_a_default_claim() -> None:
    assert one("dom.note n { }", registry_with(DEFAULTED)).claim_text == "default claim"


def test_an_empty_string_claim_is_still_the_first_string_found() -> None:
    assert one('boundary b { rule: "" summary: "s" }').claim_text == ""


# ---- relations ----------------------------------------------------------------


def test_relations_merge_top_level_fields_first_then_the_block() -> None:
    decl = one(
        'fact f { relations { supports: [x, "fact:y"] refines: r other: o } supports: z part_of: [p] }'
    )

    assert decl.relations() == {
        "supports": ["z", "x", "fact:y"],
        "part_of": ["p"],
        "refines": ["r"],
    }


def test_relation_targets_are_stringified_and_unknown_keys_ignored() -> None:
    decl = one("fact f { depends_on: [[a, b], c] notarel: x relations: oops }")

    assert decl.relations() == {"depends_on": ["['a', 'b']", "c"]}


def test_relations_block_may_come_from_defaults() -> None:
    assert one("dom.note n { }", registry_with(DEFAULTED)).relations() == {"supports": ["a"]}


def test_relations_returns_a_fresh_mapping_each_time() -> None:
    decl = one("fact f { supersedes: old }")

    decl.relations()["supersedes"].append("mutated")

    assert decl.relations() == {"supersedes": ["old"]}
    assert decl.relation_targets("supersedes") == ("old",)
    assert decl.relation_targets("supports") == ()


# ---- searchable text ----------------------------------------------------------


def test_searchable_text_joins_name_claim_subject_and_naming_fields_lowercased() -> None:
    decl = one(
        """
        entity Proj.Aurora {
          claim: "The BIG Project"
          subject: User.DayJob
          aliases: [Aurora "the App"]
          tags: single
          facets: [F1]
          exceptions: [Override]
          canonical_name: Canon
          about: Topic.X
        }
        """
    )

    assert decl.searchable_text() == (
        "proj aurora the big project user dayjob aurora the app single f1 override canon topic.x"
    )


def test_searchable_text_uses_defaults_only_for_search_fields() -> None:
    decl = one("dom.note n.x { }", registry_with(DEFAULTED))

    # default claim and subject count; default `tags` (not a search field) does not
    assert decl.searchable_text() == "n x default claim user ann bo"


# ---- positions ----------------------------------------------------------------


def test_positions_locate_each_field_of_a_parsed_declaration() -> None:
    source = "\n  fact f {\n    claim: c\n    guard { deny_any: [x] }\n  }\n"
    workspace = Workspace.from_documents([parse_text(source, "t.mem")], TypeRegistry.standard())
    (decl,) = workspace.declarations

    assert decl.column == 3
    assert decl.positions[("claim",)] == Position("t.mem", 3, 5)
    assert decl.position_of("guard", "deny_any") == Position("t.mem", 4, 13)
    assert decl.position_of("missing") == Position("t.mem", 2, 3)


def test_a_hand_built_declaration_has_explicit_or_default_positions() -> None:
    plain = Declaration("fact", "f", {}, "x.mem", 4)
    placed = Declaration(
        "fact", "f", {}, "x.mem", 4, column=7, positions={("claim",): Position("x.mem", 5, 2)}
    )

    assert (plain.column, plain.positions) == (1, {})
    assert placed.column == 7
    assert placed.position_of("claim") == Position("x.mem", 5, 2)


def test_declarations_compare_by_content_like_memdsl() -> None:
    first = Declaration("fact", "f", {"claim": "c"}, "x.mem", 1)

    assert first == Declaration("fact", "f", {"claim": "c"}, "x.mem", 1)
    assert first != Declaration("fact", "f", {"claim": "c"}, "x.mem", 2)
