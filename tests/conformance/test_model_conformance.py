"""Model conformance: derived declaration properties and workspace lookups equal memdsl's."""

from __future__ import annotations

import pytest
from conformance_goldens import load_workspace, workspace_golden, workspace_keys

KEYS = workspace_keys()


@pytest.mark.parametrize("key", KEYS)
def test_files_load_in_reference_order(key: str) -> None:
    # Root files sorted by name, then subdirectories, hidden ones included
    assert load_workspace(key).files == workspace_golden(key)["model"]["files"]


@pytest.mark.parametrize("key", KEYS)
def test_derived_properties_match_reference(key: str) -> None:
    # Given memdsl's role, status, force, subject, scope, claim and searchable text
    expected = workspace_golden(key)["model"]["declarations"]

    # When our declarations derive the same properties
    got = [
        {
            "id": d.id,
            "runtime_role": d.runtime_role,
            "status": d.status,
            "force": d.force,
            "subject": d.subject,
            "scope": d.scope,
            "claim": d.claim_text,
            "searchable_text": d.searchable_text(),
        }
        for d in load_workspace(key).declarations
    ]

    # Then they agree declaration by declaration
    assert got == expected


@pytest.mark.parametrize("key", KEYS)
def test_workspace_lookups_match_reference(key: str) -> None:
    expected = workspace_golden(key)["model"]
    ws = load_workspace(key)

    assert [d.id for d in ws.active()] == expected["active"]
    assert [d.id for d in ws.entities()] == expected["entities"]
    assert sorted(ws.known_symbols()) == expected["known_symbols"]
    assert ws.alias_map() == expected["alias_map"]
    assert list(ws.alias_map()) == list(expected["alias_map"])
    assert sorted(ws.superseded_ids()) == expected["superseded_ids"]
