"""`types` conformance: registry contents, `as_dict()` discovery form, CLI text and JSON."""

from __future__ import annotations

import json

import pytest
from conformance_goldens import (
    expected_types_json,
    load_workspace,
    relativize,
    run_cli,
    split_key,
    workspace_golden,
    workspace_keys,
)

KEYS = workspace_keys()


@pytest.mark.parametrize("key", KEYS)
def test_registry_names_and_roles_match_reference(key: str) -> None:
    # Given the types memdsl registered for the workspace
    expected = expected_types_json(key)["types"]

    # When our registry is built from the same manifest
    registry = load_workspace(key).registry

    # Then names and runtime roles agree, in name order
    got = [(d.name, d.runtime_role) for d in registry.descriptors()]
    assert got == [(t["name"], t["runtime_role"]) for t in expected]


@pytest.mark.parametrize("key", KEYS)
def test_types_json_matches_reference(key: str) -> None:
    base, _ = split_key(key)
    registry = load_workspace(key).registry

    got = {
        "schema_version": "memdsl.types.v1",
        "schema_files": list(registry.schema_files),
        "types": [d.as_dict() for d in registry.descriptors()],
    }

    assert relativize(got, base) == expected_types_json(key)


@pytest.mark.parametrize("key", KEYS)
def test_cli_types_text_matches_reference(key: str) -> None:
    base, name = split_key(key)
    expected = workspace_golden(key)["types"]

    result = run_cli(["types", name], base)

    assert (result["exit_code"], result["stdout"]) == (expected["exit_code"], expected["text"])


@pytest.mark.parametrize("key", KEYS)
def test_cli_types_json_matches_reference(key: str) -> None:
    base, name = split_key(key)

    result = run_cli(["types", name, "--json"], base)

    assert result["exit_code"] == 0
    assert relativize(json.loads(result["stdout"]), base) == expected_types_json(key)
