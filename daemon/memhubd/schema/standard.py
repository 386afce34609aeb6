"""The built-in type pack `memdsl.standard@1`: the 18 standard memory types (spec §2.7).

Always loaded first into every registry. Lenient by design (extra fields allowed),
so pre-schema workspaces keep linting clean; it must never read files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memhubd.schema.descriptor import TypeDescriptor

STANDARD_SCHEMA_NAME = "memdsl.standard"
STANDARD_SCHEMA_VERSION = "1"
STANDARD_SOURCE = "<builtin:memdsl.standard@1>"

_EVIDENCED = ("requires_evidence", "searchable")
_CONSTRAINT = ("requires_evidence", "searchable", "enforceable", "guardable")

# Types that carry nothing beyond `searchable` and the assertion role.
_PLAIN_ASSERTIONS = (
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
)


def _standard(
    name: str,
    role: str,
    *,
    required: Sequence[str] = (),
    claim_fields: Sequence[str] = ("claim",),
    capabilities: Sequence[str] = ("searchable",),
    allowed_forces: Sequence[str] = (),
    role_field: str = "",
    role_map: Mapping[str, str] | None = None,
    diagnostic_codes: Mapping[str, str] | None = None,
) -> TypeDescriptor:
    return TypeDescriptor(
        name=name,
        runtime_role=role,
        required_fields=tuple(required),
        claim_fields=tuple(claim_fields),
        capabilities=frozenset(capabilities),
        allowed_forces=tuple(allowed_forces),
        role_field=role_field,
        role_map=dict(role_map or {}),
        diagnostic_codes=dict(diagnostic_codes or {}),
        allow_extra_fields=True,
        schema_name=STANDARD_SCHEMA_NAME,
        schema_version=STANDARD_SCHEMA_VERSION,
        source=STANDARD_SOURCE,
    )


def standard_type_descriptors() -> list[TypeDescriptor]:
    """Fresh descriptors of the standard pack, in its documented order."""
    evidence = ("evidence",)
    return [
        _standard("entity", "symbol", capabilities=("symbol",)),
        _standard("fact", "assertion", required=evidence, capabilities=_EVIDENCED),
        _standard(
            "preference",
            "assertion",
            required=evidence,
            capabilities=_EVIDENCED,
            allowed_forces=("advisory", "strong"),
            role_field="force",
            role_map={"strong": "guidance"},
        ),
        _standard(
            "boundary",
            "constraint",
            required=evidence,
            claim_fields=("rule", "claim"),
            capabilities=(*_CONSTRAINT, "exceptions_recommended"),
            allowed_forces=("hard",),
            diagnostic_codes={"exceptions_recommended": "boundary_without_exception"},
        ),
        _standard("principle", "guidance", required=evidence, capabilities=_EVIDENCED),
        _standard(
            "decision",
            "assertion",
            required=evidence,
            claim_fields=("decision", "claim"),
            capabilities=_EVIDENCED,
        ),
        _standard(
            "state",
            "assertion",
            required=evidence,
            claim_fields=("claim", "summary"),
            capabilities=(*_EVIDENCED, "temporal"),
            diagnostic_codes={"stale": "stale_state"},
        ),
        _standard("open_issue", "question", required=("next_action",)),
        *(_standard(name, "assertion") for name in _PLAIN_ASSERTIONS),
    ]
