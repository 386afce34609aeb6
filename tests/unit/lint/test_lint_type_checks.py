"""Lint checks driven by the type descriptor: unknown types, required and extra fields,
evidence, recommended exceptions and force policy."""

from __future__ import annotations

from lint_fixtures import codes, lint_text, only, registry_with

from memhubd.schema import TypeDescriptor

EV = "evidence { source: chat }"
NO_EVIDENCE = (
    "active {kind} '{name}' has no evidence block "
    "(use lifecycle.status: candidate for unconfirmed memories)"
)

STRICT = TypeDescriptor(
    name="dom.rule",
    runtime_role="constraint",
    required_fields=("claim", "owner"),
    optional_fields=("rationale",),
    capabilities=frozenset({"enforceable", "guardable", "exceptions_recommended"}),
    defaults={"cadence": "weekly"},
    allow_extra_fields=False,
)
CAPABLE = TypeDescriptor(
    name="dom.note", runtime_role="assertion", capabilities=frozenset({"requires_evidence"})
)
POLICED = TypeDescriptor(
    name="dom.policy",
    runtime_role="constraint",
    required_fields=("lifecycle", "access_policy"),
    allowed_forces=("hard", "firm"),
    defaults={"force": "soft", "exceptions": []},
    capabilities=frozenset({"exceptions_recommended"}),
)
REGISTRY = registry_with(STRICT, CAPABLE, POLICED)


# ---- unknown_memory_type ----------------------------------------------------------


def test_an_unknown_type_is_an_error_and_skips_every_type_check() -> None:
    diags = lint_text("runbook r { force: anything }")

    (diag,) = diags
    assert (diag.code, diag.severity, diag.decl_id) == ("unknown_memory_type", "error", "runbook:r")
    assert diag.message == "memory type 'runbook' is not defined by any loaded schema"


def test_an_unknown_type_still_gets_reference_guard_and_access_checks() -> None:
    diags = lint_text("runbook r { subject: Ghost guard { when_any: [x] } access_policy: open }")

    assert codes(diags) == [
        "guard_without_rule",
        "invalid_access_policy",
        "unknown_memory_type",
        "unresolved_symbol",
    ]


# ---- required fields and evidence -----------------------------------------------


def test_a_required_evidence_block_is_missing_only_for_active_declarations() -> None:
    diags = lint_text("fact f { }\nfact c { status: candidate }\nfact r { status: retracted }")

    (diag,) = diags
    assert (diag.code, diag.severity, diag.line) == ("missing_evidence", "error", 1)
    assert diag.message == NO_EVIDENCE.format(kind="fact", name="f")


def test_a_scalar_evidence_satisfies_a_required_field_but_an_empty_block_does_not() -> None:
    diags = lint_text("fact scalar { evidence: chat }\nfact empty { evidence { } }")

    assert [(d.code, d.line) for d in diags] == [("missing_evidence", 2)]


def test_other_required_fields_are_missing_whatever_the_status() -> None:
    diags = lint_text('open_issue q { status: candidate }\nopen_issue r { next_action: "" }')

    assert [(d.code, d.line) for d in diags] == [
        ("missing_required_field", 1),
        ("missing_required_field", 2),
    ]
    assert diags[0].message == "memory type 'open_issue' requires field 'next_action'"


def test_empty_list_and_empty_block_values_count_as_missing() -> None:
    diags = lint_text(
        'dom.rule a { claim: [] owner: x }\ndom.rule b { claim: "c" owner { } }', registry=REGISTRY
    )

    assert [(d.line, d.message) for d in only(diags, "missing_required_field")] == [
        (1, "memory type 'dom.rule' requires field 'claim'"),
        (2, "memory type 'dom.rule' requires field 'owner'"),
    ]


def test_required_lifecycle_is_always_present_and_access_policy_needs_a_non_empty_policy() -> None:
    diags = lint_text(
        "dom.policy a { force: hard access { readers: [x] } }\n"
        "dom.policy b { force: hard access_policy { } }",
        registry=REGISTRY,
    )

    (diag,) = only(diags, "missing_required_field")
    assert diag.line == 2
    assert diag.message == "memory type 'dom.policy' requires field 'access_policy'"


def test_the_evidence_capability_accepts_any_block_but_not_a_scalar() -> None:
    diags = lint_text(
        "dom.note empty { evidence { } }\n"
        "dom.note scalar { evidence: chat }\n"
        "dom.note candidate { status: candidate }",
        registry=REGISTRY,
    )

    (diag,) = diags
    assert (diag.code, diag.line) == ("missing_evidence", 2)
    assert diag.message == NO_EVIDENCE.format(kind="dom.note", name="scalar")


# ---- unknown_type_field -----------------------------------------------------------


def test_a_strict_type_rejects_each_extra_top_level_field_in_name_order() -> None:
    source = (
        'dom.rule r {\n  claim: "c" owner: o exceptions: []\n'
        "  zeta: 1\n  aliases: [a]\n  cadence: daily\n  rationale { deep: ok }\n}"
    )

    diags = lint_text(source, registry=REGISTRY)

    assert [(d.message, d.column) for d in diags] == [
        ("memory type 'dom.rule' does not allow field 'aliases'", 3),
        ("memory type 'dom.rule' does not allow field 'zeta'", 3),
    ]
    assert {(d.code, d.severity, d.line) for d in diags} == {("unknown_type_field", "error", 1)}


def test_lenient_types_accept_any_field() -> None:
    assert lint_text(f"fact f {{ {EV} whatever: 1 canonical_name: x }}") == []


# ---- recommended exceptions -------------------------------------------------------


def test_a_boundary_without_exceptions_gets_the_renamed_warning_whatever_its_status() -> None:
    diags = lint_text(f'boundary b {{ {EV} rule: "r" status: candidate }}')

    (diag,) = diags
    assert (diag.code, diag.severity) == ("boundary_without_exception", "warning")
    assert diag.message == (
        "constraint 'boundary:b' declares no exceptions; confirm it is truly unconditional "
        "or add e.g. [user_explicit_override]"
    )


def test_an_empty_exceptions_list_silences_the_recommendation() -> None:
    assert lint_text(f"boundary b {{ {EV} exceptions: [] }}") == []


def test_other_types_use_the_generic_code_and_defaults_do_not_count() -> None:
    diags = lint_text("dom.policy p { force: hard access { r: x } }", registry=REGISTRY)

    assert only(diags, "missing_recommended_exceptions")[0].message.startswith(
        "constraint 'dom.policy:p' declares no exceptions"
    )


# ---- type_force_mismatch ----------------------------------------------------------


def test_a_force_outside_the_allowed_list_is_a_case_sensitive_warning() -> None:
    diags = lint_text(
        f"preference p {{ {EV} force: Strong }}\npreference q {{ {EV} force: strong }}"
    )

    (diag,) = diags
    assert (diag.code, diag.severity, diag.line) == ("type_force_mismatch", "warning", 1)
    assert (
        diag.message
        == "memory type 'preference' does not allow force 'Strong'; allowed: advisory, strong"
    )


def test_a_default_force_is_checked_too() -> None:
    diags = lint_text("dom.policy p { exceptions: [] access { readers: [x] } }", registry=REGISTRY)

    assert [d.message for d in diags] == [
        "memory type 'dom.policy' does not allow force 'soft'; allowed: hard, firm"
    ]


def test_types_without_a_force_policy_accept_any_force() -> None:
    assert lint_text(f"fact f {{ {EV} force: anything }}") == []
