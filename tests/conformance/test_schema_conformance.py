"""Manifest and type-pack conformance: the same SchemaError messages and the same registry."""

from __future__ import annotations

import pytest
from conformance_goldens import HERE, golden, inside, relativize, run_cli

from memhubd.model import Workspace
from memhubd.schema import SchemaError, TypeRegistry

SCHEMA_CASES = golden("schema_errors.json")
FAILING = sorted(name for name, case in SCHEMA_CASES.items() if case["message"])
LOADING = sorted(name for name, case in SCHEMA_CASES.items() if not case["message"])


def load_case(name: str) -> Workspace:
    with inside(HERE):
        return Workspace.load([f"schema_errors/{name}"])


@pytest.mark.parametrize("name", FAILING)
def test_schema_error_message_matches_reference(name: str) -> None:
    # Given a workspace whose manifest or type pack memdsl rejects
    expected = SCHEMA_CASES[name]["message"]

    # When it is loaded
    with pytest.raises(SchemaError) as caught:
        load_case(name)

    # Then the message is memdsl's (absolute paths made relative as recorded)
    assert relativize(str(caught.value), HERE) == expected


@pytest.mark.parametrize("name", LOADING)
def test_schema_case_that_memdsl_accepts_loads(name: str) -> None:
    ws = load_case(name)

    assert ws.registry.names() == SCHEMA_CASES[name]["types"]


@pytest.mark.parametrize("name", sorted(SCHEMA_CASES))
def test_cli_lint_on_schema_case_matches_reference(name: str) -> None:
    # Given the CLI run memdsl recorded (exit 2 and `schema error: ...` on stderr)
    expected = SCHEMA_CASES[name]["cli"]

    # When memhubd lints the same folder
    result = run_cli(["lint", f"schema_errors/{name}"], HERE)

    # Then exit code and output agree
    assert result["exit_code"] == expected["exit_code"]
    assert relativize(result["stderr"], HERE) == expected["stderr"]
    assert relativize(result["stdout"], HERE) == expected["stdout"]


def test_standard_pack_matches_reference() -> None:
    expected = golden("standard_types.json")

    registry = TypeRegistry.standard()

    assert registry.names() == sorted(expected)
    assert {d.name: d.as_dict() for d in registry.descriptors()} == expected
