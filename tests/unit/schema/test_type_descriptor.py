"""TypeDescriptor: programmatic defaults, role and claim rules, allowed fields, discovery form."""

from __future__ import annotations

import pytest

from memhubd.schema import RUNTIME_ROLES, UNIVERSAL_FIELDS, SchemaError, TypeDescriptor


def test_programmatic_descriptors_are_lenient_claim_based_and_builtin() -> None:
    descriptor = TypeDescriptor(name="note", runtime_role="assertion")

    assert descriptor.allow_extra_fields is True
    assert descriptor.claim_fields == ("claim",)
    assert descriptor.source == "<builtin>"
    assert descriptor.defaults == {}
    assert descriptor.capabilities == frozenset()


def test_there_are_exactly_five_runtime_roles() -> None:
    assert {"symbol", "constraint", "guidance", "assertion", "question"} == RUNTIME_ROLES


# ---- role_for ---------------------------------------------------------------

PREFERENCE = TypeDescriptor(
    name="pref",
    runtime_role="assertion",
    role_field="force",
    role_map={"strong": "guidance"},
)


def test_role_field_value_selects_a_mapped_role() -> None:
    assert PREFERENCE.role_for({"force": "strong"}) == "guidance"


@pytest.mark.parametrize("fields", [{}, {"force": "advisory"}, {"force": "Strong"}])
def test_unmapped_or_missing_role_field_keeps_the_base_role(fields: dict) -> None:
    assert PREFERENCE.role_for(fields) == "assertion"


def test_role_field_falls_back_to_its_default_and_is_stringified() -> None:
    descriptor = TypeDescriptor(
        name="d",
        runtime_role="assertion",
        role_field="level",
        role_map={"['x']": "constraint", "hi": "guidance"},
        defaults={"level": "hi"},
    )

    assert descriptor.role_for({}) == "guidance"
    assert descriptor.role_for({"level": ["x"]}) == "constraint"


# ---- claim_for --------------------------------------------------------------


def test_claim_for_returns_the_first_claim_field_holding_a_string() -> None:
    descriptor = TypeDescriptor(name="b", runtime_role="constraint", claim_fields=("rule", "claim"))

    assert descriptor.claim_for({"rule": ["not", "a", "string"], "claim": "c"}) == "c"
    assert descriptor.claim_for({"rule": "r", "claim": "c"}) == "r"
    assert descriptor.claim_for({"summary": "s"}) == ""


def test_claim_for_uses_defaults_for_missing_fields_only() -> None:
    descriptor = TypeDescriptor(
        name="b", runtime_role="assertion", claim_fields=("rule",), defaults={"rule": "default"}
    )

    assert descriptor.claim_for({}) == "default"
    assert descriptor.claim_for({"rule": "own"}) == "own"


# ---- allowed_fields ---------------------------------------------------------


def test_allowed_fields_unite_universal_and_every_field_the_type_names() -> None:
    descriptor = TypeDescriptor(
        name="t",
        runtime_role="assertion",
        required_fields=("owner",),
        optional_fields=("rationale",),
        claim_fields=("summary",),
        search_fields=("symptoms",),
        defaults={"cadence": "weekly"},
        role_field="mode",
        role_map={"x": "guidance"},
    )

    assert descriptor.allowed_fields == UNIVERSAL_FIELDS | {
        "owner",
        "rationale",
        "summary",
        "symptoms",
        "cadence",
        "mode",
    }


def test_naming_fields_are_not_universal() -> None:
    not_universal = {"aliases", "canonical_name", "about", "rule", "kind", "next_action"}

    assert not_universal.isdisjoint(UNIVERSAL_FIELDS)
    assert "supersedes" not in UNIVERSAL_FIELDS
    assert len(UNIVERSAL_FIELDS) == 17


# ---- as_dict ----------------------------------------------------------------


def test_as_dict_has_the_discovery_keys_in_order_without_diagnostic_codes() -> None:
    descriptor = TypeDescriptor(
        name="t",
        runtime_role="constraint",
        capabilities=frozenset({"searchable", "enforceable", "guardable"}),
        diagnostic_codes={"stale": "old"},
        schema_name="dom",
        schema_version="2",
    )

    payload = descriptor.as_dict()

    assert list(payload) == [
        "name",
        "runtime_role",
        "required_fields",
        "optional_fields",
        "claim_fields",
        "search_fields",
        "capabilities",
        "defaults",
        "allowed_forces",
        "role_field",
        "role_map",
        "allow_extra_fields",
        "schema",
        "schema_version",
        "source",
    ]
    assert payload["capabilities"] == ["enforceable", "guardable", "searchable"]
    assert payload["claim_fields"] == ["claim"]
    assert payload["schema"] == "dom"


# ---- invariants -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "  ", "runtime_role": "assertion"}, "memory type name cannot be empty"),
        ({"name": "t", "runtime_role": 3}, "type 't' runtime_role must be a string"),
        (
            {"name": "t", "runtime_role": "fact", "role_field": "f", "role_map": {"a": "zeta"}},
            "type 't' uses unknown runtime role(s): fact, zeta",
        ),
        (
            {"name": "t", "runtime_role": "assertion", "role_map": {"a": "guidance"}},
            "type 't' defines role_map without role_field",
        ),
        (
            {"name": "t", "runtime_role": "assertion", "role_field": "f", "role_map": {"a": 1}},
            "type 't' role_map must contain string keys and values",
        ),
    ],
)
def test_invalid_descriptors_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(SchemaError) as caught:
        TypeDescriptor(**kwargs)

    assert str(caught.value) == message
