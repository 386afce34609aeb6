"""TypeDescriptor: the behaviour contract of one memory type (spec §2.4).

Pure data plus the small rules that read declaration fields through it. It must
not know about files, registries or workspaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RUNTIME_ROLES: frozenset[str] = frozenset(
    {"symbol", "constraint", "guidance", "assertion", "question"}
)

UNIVERSAL_FIELDS: frozenset[str] = frozenset(
    {
        "subject",
        "claim",
        "evidence",
        "scope",
        "confidence",
        "lifecycle",
        "access_policy",
        "access",
        "relations",
        "status",
        "force",
        "as_of",
        "valid_until",
        "tags",
        "facets",
        "exceptions",
        "guard",
    }
)


class SchemaError(ValueError):
    """A workspace manifest, a type pack or a type descriptor is invalid."""


@dataclass(frozen=True)
class TypeDescriptor:
    """What a memory type requires, allows, searches and means at runtime.

    Defaults here are the programmatic ones (lenient: extra fields allowed);
    type packs loaded from JSON are strict unless they say otherwise.
    """

    name: str
    runtime_role: str
    required_fields: tuple[str, ...] = ()
    optional_fields: tuple[str, ...] = ()
    claim_fields: tuple[str, ...] = ("claim",)
    search_fields: tuple[str, ...] = ()
    capabilities: frozenset[str] = frozenset()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    allowed_forces: tuple[str, ...] = ()
    role_field: str = ""
    role_map: Mapping[str, str] = field(default_factory=dict)
    diagnostic_codes: Mapping[str, str] = field(default_factory=dict)
    allow_extra_fields: bool = True
    schema_name: str = ""
    schema_version: str = ""
    source: str = "<builtin>"

    def __post_init__(self) -> None:
        _check_invariants(self)
        # The linter asks for this once per declaration of a strict type.
        object.__setattr__(self, "_allowed", _compute_allowed_fields(self))
        object.__setattr__(self, "_float_free", not _holds_float(self.defaults))

    def role_for(self, fields: Mapping[str, Any]) -> str:
        """The runtime role for a declaration with these raw fields."""
        if self.role_field:
            value = fields.get(self.role_field, self.defaults.get(self.role_field))
            if value is not None:
                mapped = self.role_map.get(str(value))
                if mapped:
                    return mapped
        return self.runtime_role

    def claim_for(self, fields: Mapping[str, Any]) -> str:
        """The first claim field whose value (own or default) is a string, else ''."""
        defaults = self.defaults
        for key in self.claim_fields:
            value = fields[key] if key in fields else defaults.get(key)
            if isinstance(value, str):
                return value
        return ""

    def has_capability(self, name: str) -> bool:
        return name in self.capabilities

    @property
    def allowed_fields(self) -> frozenset[str]:
        """Universal fields plus every field this type names anywhere."""
        return self._allowed  # type: ignore[attr-defined,no-any-return]

    @property
    def float_free(self) -> bool:
        """No default holds a float, at any depth. A declaration's fields are strings,
        lists and blocks (memdsl keeps numbers as strings), so without float defaults
        its JSON holds no float either: encoders then agree byte for byte."""
        return self._float_free  # type: ignore[attr-defined,no-any-return]

    def as_dict(self) -> dict[str, Any]:
        """The discovery form (`memdsl types --json`); diagnostic_codes stay private."""
        return {
            "name": self.name,
            "runtime_role": self.runtime_role,
            "required_fields": list(self.required_fields),
            "optional_fields": list(self.optional_fields),
            "claim_fields": list(self.claim_fields),
            "search_fields": list(self.search_fields),
            "capabilities": sorted(self.capabilities),
            "defaults": dict(self.defaults),
            "allowed_forces": list(self.allowed_forces),
            "role_field": self.role_field,
            "role_map": dict(self.role_map),
            "allow_extra_fields": self.allow_extra_fields,
            "schema": self.schema_name,
            "schema_version": self.schema_version,
            "source": self.source,
        }


def _check_invariants(descriptor: TypeDescriptor) -> None:
    name = descriptor.name
    if not str(name or "").strip():
        raise SchemaError("memory type name cannot be empty")
    if not isinstance(descriptor.runtime_role, str):
        raise SchemaError(f"type {name!r} runtime_role must be a string")
    role_map = descriptor.role_map
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in role_map.items()):
        raise SchemaError(f"type {name!r} role_map must contain string keys and values")
    unknown = sorted(({descriptor.runtime_role} | set(role_map.values())) - RUNTIME_ROLES)
    if unknown:
        raise SchemaError(f"type {name!r} uses unknown runtime role(s): {', '.join(unknown)}")
    if role_map and not descriptor.role_field:
        raise SchemaError(f"type {name!r} defines role_map without role_field")


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, Mapping):
        return any(_holds_float(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_float(item) for item in value)
    return False


def _compute_allowed_fields(descriptor: TypeDescriptor) -> frozenset[str]:
    named = {
        *descriptor.required_fields,
        *descriptor.optional_fields,
        *descriptor.claim_fields,
        *descriptor.search_fields,
        *descriptor.defaults,
    }
    if descriptor.role_field:
        named.add(descriptor.role_field)
    return UNIVERSAL_FIELDS | frozenset(named)


def descriptor_contract(descriptor: TypeDescriptor) -> tuple[Any, ...]:
    """Everything that makes two descriptors behave alike; `source` is provenance only.

    Mappings are compared order-insensitively, default values by their repr.
    """
    return (
        descriptor.name,
        descriptor.runtime_role,
        descriptor.required_fields,
        descriptor.optional_fields,
        descriptor.claim_fields,
        descriptor.search_fields,
        tuple(sorted(descriptor.capabilities)),
        tuple(sorted((str(key), repr(value)) for key, value in descriptor.defaults.items())),
        descriptor.allowed_forces,
        descriptor.role_field,
        tuple(sorted(descriptor.role_map.items())),
        tuple(sorted(descriptor.diagnostic_codes.items())),
        descriptor.allow_extra_fields,
        descriptor.schema_name,
        descriptor.schema_version,
    )
