"""TypeRegistry: the memory types a workspace knows, and loading `.memschema.json` packs.

Checks a pack in memdsl's order so that the first error reported is memdsl's
(spec §2.2). It must not look for manifests; `manifest.py` decides which packs load.
"""

from __future__ import annotations

import os
from typing import Any

from memhubd.schema.descriptor import SchemaError, TypeDescriptor, descriptor_contract
from memhubd.schema.jsonfile import read_json, string_list, string_map
from memhubd.schema.standard import standard_type_descriptors


class TypeRegistry:
    """Type name -> descriptor, plus the schema files loaded so far (absolute, in order)."""

    def __init__(self) -> None:
        self._types: dict[str, TypeDescriptor] = {}
        self.schema_files: list[str] = []

    @classmethod
    def standard(cls) -> TypeRegistry:
        """A registry holding the standard pack `memdsl.standard@1`."""
        registry = cls()
        for descriptor in standard_type_descriptors():
            registry.register(descriptor)
        return registry

    def register(self, descriptor: TypeDescriptor, *, replace: bool = False) -> None:
        """Add a type. Re-registering the same contract is a no-op; a different one fails."""
        name = str(descriptor.name or "").strip()
        if not name:
            raise SchemaError("memory type name cannot be empty")
        previous = self._types.get(name)
        if previous is not None and not replace:
            if descriptor_contract(previous) == descriptor_contract(descriptor):
                return
            raise SchemaError(f"memory type {name!r} is already defined by {previous.source}")
        self._types[name] = descriptor

    def resolve(self, name: str) -> TypeDescriptor | None:
        return self._types.get(str(name or ""))

    def names(self) -> list[str]:
        return sorted(self._types)

    def descriptors(self) -> list[TypeDescriptor]:
        """All descriptors, in type-name order."""
        return [self._types[name] for name in self.names()]

    def load_schema(self, path: str) -> list[TypeDescriptor]:
        """Load one type pack and register its types; returns them in file order."""
        absolute = os.path.abspath(path)
        payload = read_json(absolute, "schema")
        if not isinstance(payload, dict):
            raise SchemaError(f"{absolute}: schema root must be an object")
        schema_name = _stripped_or_empty(payload.get("name", ""))
        schema_version = _stripped_or_empty(payload.get("version", ""))
        raw_types = payload.get("types")
        if not schema_name or not schema_version or not isinstance(raw_types, dict):
            raise SchemaError(f"{absolute}: schema requires name, version, and object-valued types")
        loaded: list[TypeDescriptor] = []
        for local_name, raw in raw_types.items():
            descriptor = _descriptor_from_json(
                absolute, schema_name, schema_version, local_name, raw
            )
            # Registered one by one, so a conflict names the first clashing type.
            self.register(descriptor)
            loaded.append(descriptor)
        if absolute not in self.schema_files:
            self.schema_files.append(absolute)
        return loaded


def _stripped_or_empty(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _full_type_name(schema_name: str, local: str) -> str:
    # A dotted local name is taken verbatim, so a pack can never shadow a
    # (dot-less) standard type.
    return local if "." in local else f"{schema_name}.{local}"


def _descriptor_from_json(
    absolute: str, schema_name: str, schema_version: str, local_name: str, raw: Any
) -> TypeDescriptor:
    if not isinstance(raw, dict):
        raise SchemaError(f"{absolute}: type {local_name!r} must be an object")
    local = str(local_name).strip()
    if not local:
        raise SchemaError(f"{absolute}: memory type name cannot be empty")
    full = _full_type_name(schema_name, local)
    defaults = raw.get("defaults", {})
    role_map = raw.get("role_map", {})
    diagnostic_codes = raw.get("diagnostic_codes", {})
    if not all(isinstance(v, dict) for v in (defaults, role_map, diagnostic_codes)):
        raise SchemaError(
            f"{absolute}: type {full!r} defaults, role_map, and diagnostic_codes must be objects"
        )
    runtime_role = raw.get("runtime_role", "assertion")
    role_field = raw.get("role_field", "")
    allow_extra_fields = raw.get("allow_extra_fields", False)
    if not isinstance(runtime_role, str):
        raise SchemaError(f"{absolute}: {full}.runtime_role must be a string")
    if not isinstance(role_field, str):
        raise SchemaError(f"{absolute}: {full}.role_field must be a string")
    if not isinstance(allow_extra_fields, bool):
        raise SchemaError(f"{absolute}: {full}.allow_extra_fields must be a boolean")

    def strings(key: str, default: list[str]) -> tuple[str, ...]:
        return string_list(raw.get(key, default), f"{full}.{key}")

    # Keyword order is the validation order: the first bad key is the one reported.
    return TypeDescriptor(
        name=full,
        runtime_role=runtime_role.strip(),
        required_fields=strings("required_fields", []),
        optional_fields=strings("optional_fields", []),
        claim_fields=strings("claim_fields", ["claim"]),
        search_fields=strings("search_fields", []),
        capabilities=frozenset(strings("capabilities", [])),
        defaults=dict(defaults),
        allowed_forces=strings("allowed_forces", []),
        role_field=role_field.strip(),
        role_map=string_map(role_map, f"{full}.role_map"),
        diagnostic_codes=string_map(diagnostic_codes, f"{full}.diagnostic_codes"),
        allow_extra_fields=allow_extra_fields,
        schema_name=schema_name,
        schema_version=schema_version,
        source=absolute,
    )
