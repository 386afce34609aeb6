"""The built-in pack `memdsl.standard@1`: its 18 types and their contracts (spec §2.7)."""

from __future__ import annotations

import pytest

from memhubd.schema import STANDARD_SOURCE, TypeRegistry, standard_type_descriptors

EVIDENCED = {"requires_evidence", "searchable"}
PLAIN = [
    "goal",
    "relationship",
    "skill",
    "lesson",
    "behavior_event",
    "behavior_pattern",
    "habit",
    "personhood_signal",
    "counter_evidence",
    "motive_hypothesis",
]

# type -> (role, required, capabilities, claim_fields)
TABLE = {
    "entity": ("symbol", (), {"symbol"}, ("claim",)),
    "fact": ("assertion", ("evidence",), EVIDENCED, ("claim",)),
    "preference": ("assertion", ("evidence",), EVIDENCED, ("claim",)),
    "boundary": (
        "constraint",
        ("evidence",),
        EVIDENCED | {"enforceable", "guardable", "exceptions_recommended"},
        ("rule", "claim"),
    ),
    "principle": ("guidance", ("evidence",), EVIDENCED, ("claim",)),
    "decision": ("assertion", ("evidence",), EVIDENCED, ("decision", "claim")),
    "state": ("assertion", ("evidence",), EVIDENCED | {"temporal"}, ("claim", "summary")),
    "open_issue": ("question", ("next_action",), {"searchable"}, ("claim",)),
    **{name: ("assertion", (), {"searchable"}, ("claim",)) for name in PLAIN},
}


def test_the_standard_registry_holds_exactly_the_eighteen_types_sorted() -> None:
    registry = TypeRegistry.standard()

    assert registry.names() == sorted(TABLE)
    assert len(registry.names()) == 18
    assert [d.name for d in registry.descriptors()] == sorted(TABLE)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_standard_type_contract(name: str) -> None:
    role, required, capabilities, claim_fields = TABLE[name]

    descriptor = TypeRegistry.standard().resolve(name)

    assert descriptor is not None
    assert descriptor.runtime_role == role
    assert descriptor.required_fields == required
    assert descriptor.capabilities == capabilities
    assert descriptor.claim_fields == claim_fields
    assert descriptor.allow_extra_fields is True
    assert descriptor.defaults == {}
    assert (descriptor.schema_name, descriptor.schema_version) == ("memdsl.standard", "1")
    assert descriptor.source == STANDARD_SOURCE == "<builtin:memdsl.standard@1>"


def test_preference_becomes_guidance_only_when_strong() -> None:
    preference = TypeRegistry.standard().resolve("preference")

    assert preference is not None
    assert preference.allowed_forces == ("advisory", "strong")
    assert preference.role_for({"force": "strong"}) == "guidance"
    assert preference.role_for({"force": "advisory"}) == "assertion"


def test_boundary_and_state_rename_their_lint_codes() -> None:
    registry = TypeRegistry.standard()
    boundary, state = registry.resolve("boundary"), registry.resolve("state")

    assert boundary is not None and state is not None
    assert boundary.allowed_forces == ("hard",)
    assert boundary.diagnostic_codes == {"exceptions_recommended": "boundary_without_exception"}
    assert state.diagnostic_codes == {"stale": "stale_state"}


def test_there_is_no_implicit_user_symbol() -> None:
    assert TypeRegistry.standard().resolve("User") is None


def test_each_call_returns_fresh_descriptors_in_documented_order() -> None:
    first, second = standard_type_descriptors(), standard_type_descriptors()

    assert [d.name for d in first][:3] == ["entity", "fact", "preference"]
    assert first == second
    assert first[0] is not second[0]
