"""The workspace manifest `memdsl.json` and the registry a set of workspace paths gets.

Only the directory of each given path is searched (never up or down the tree).
This module must not parse `.mem` files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from memhubd.schema.descriptor import SchemaError
from memhubd.schema.jsonfile import read_json, string_list
from memhubd.schema.registry import TypeRegistry

WORKSPACE_MANIFEST = "memdsl.json"
WORKSPACE_SCHEMA_VERSION = "memdsl.workspace.v1"


def manifest_paths(paths: Iterable[str]) -> list[str]:
    """The manifests that apply to `paths`: absolute, deduplicated, in path order."""
    found: list[str] = []
    for raw_path in paths:
        path = os.path.abspath(str(raw_path))
        root = path if os.path.isdir(path) else os.path.dirname(path)
        manifest = os.path.join(root, WORKSPACE_MANIFEST)
        if os.path.isfile(manifest) and manifest not in found:
            found.append(manifest)
    return found


def manifest_schema_paths(manifest: str) -> list[str]:
    """The type-pack paths a manifest lists, joined to the manifest's directory."""
    payload = read_json(manifest, "manifest")
    if not isinstance(payload, dict):
        raise SchemaError(f"{manifest}: manifest root must be an object")
    if payload.get("schema_version") != WORKSPACE_SCHEMA_VERSION:
        raise SchemaError(f"{manifest}: schema_version must be {WORKSPACE_SCHEMA_VERSION!r}")
    schemas = string_list(payload.get("schemas", []), f"{manifest}.schemas")
    base = os.path.dirname(manifest)
    return [os.path.join(base, entry) for entry in schemas]


def registry_for_paths(paths: Iterable[str]) -> TypeRegistry:
    """The standard pack, then every pack named by the manifests of `paths`.

    All manifests are located before any is read; the first error aborts.
    """
    registry = TypeRegistry.standard()
    for manifest in manifest_paths(paths):
        for schema_path in manifest_schema_paths(manifest):
            registry.load_schema(schema_path)
    return registry
