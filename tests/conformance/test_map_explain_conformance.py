"""Memory map and explain conformance: JSON and text equal memdsl 0.5.1's."""

from __future__ import annotations

import json

import pytest
from conformance_goldens import (
    as_json_text,
    expected_explain_payload,
    load_workspace,
    run_cli,
    split_key,
    workspace_golden,
    workspace_keys,
)

# The module, not its names: a missing engine then fails each test loudly
# instead of stopping collection of the whole suite.
from memhubd import query

KEYS = workspace_keys()
EXPLAIN_REFS = [(key, ref) for key in KEYS for ref in workspace_golden(key)["explain"]]


@pytest.mark.parametrize("key", KEYS)
def test_map_json_matches_reference(key: str) -> None:
    # Given memdsl's `map --json` for the workspace
    expected = workspace_golden(key)["map"]["json"]

    # When we build the map
    data = {"schema_version": "memdsl.map.v1", **query.build_memory_map(load_workspace(key))}

    # Then module grouping, items and vocabulary agree, key order included
    assert [m["module"] for m in data["modules"]] == [m["module"] for m in expected["modules"]]
    assert as_json_text(data) == as_json_text(expected)


@pytest.mark.parametrize("key", KEYS)
def test_map_text_matches_reference(key: str) -> None:
    data = query.build_memory_map(load_workspace(key))

    assert query.render_memory_map_text(data) == workspace_golden(key)["map"]["text"]


@pytest.mark.parametrize("key", KEYS)
def test_cli_map_json_matches_reference(key: str) -> None:
    base, name = split_key(key)

    result = run_cli(["map", name, "--json"], base)

    assert result["exit_code"] == 0
    assert json.loads(result["stdout"]) == workspace_golden(key)["map"]["json"]


@pytest.mark.parametrize(("key", "ref"), EXPLAIN_REFS)
def test_explain_text_matches_reference(key: str, ref: str) -> None:
    expected = workspace_golden(key)["explain"][ref]["text"]

    assert query.explain(load_workspace(key), ref) == expected


@pytest.mark.parametrize(("key", "ref"), EXPLAIN_REFS)
def test_explain_payload_matches_reference(key: str, ref: str) -> None:
    # Given the §5.5 payload memdsl's MCP layer builds for this reference
    expected = expected_explain_payload(key, ref)

    # When we build the payload
    got = query.explain_payload(load_workspace(key), ref)

    # Then it is the whole payload, or (if only the declaration object is
    # returned) that object
    if "schema_version" in got:
        assert got == expected
    else:
        assert got == expected.get("declaration")


@pytest.mark.parametrize("key", KEYS)
def test_cli_explain_of_first_reference_matches(key: str) -> None:
    base, name = split_key(key)
    ref, entry = next(iter(workspace_golden(key)["explain"].items()))

    result = run_cli(["explain", name, ref], base)

    assert (result["exit_code"], result["stdout"]) == (0, entry["text"] + "\n")
