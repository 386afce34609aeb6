"""Property: the cached, indexed lookups agree with their plain linear definitions (spec §1.6)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhubd.model import EXCLUDED_STATUSES, Declaration, Workspace

KINDS = st.sampled_from(["fact", "entity", "decision", "runbook"])
NAMES = st.sampled_from(["a", "b", "a.b", "User", "fact:a"])
STATUSES = st.sampled_from(["active", "candidate", "archived", "superseded", "odd"])
TARGETS = st.lists(st.sampled_from(["a", "fact:a", "b", "zz"]), max_size=2)


@st.composite
def workspaces(draw: st.DrawFn) -> Workspace:
    ws = Workspace()
    for line in range(draw(st.integers(0, 12))):
        kind = draw(KINDS)
        fields = {"status": draw(STATUSES), "supersedes": draw(TARGETS)}
        if kind == "entity":
            fields["aliases"] = draw(st.lists(st.sampled_from(["me", "Me", "x"]), max_size=2))
        descriptor = ws.registry.resolve(kind)
        ws.declarations.append(
            Declaration(kind, draw(NAMES), fields, "p.mem", line + 1, None, descriptor)
        )
    return ws


def linear_by_id(ws: Workspace, key: str) -> Declaration | None:
    return next((d for d in ws.declarations if d.id == key or d.name == key), None)


@given(workspaces(), st.lists(st.sampled_from(["a", "fact:a", "entity:User", "User", "q"])))
def test_indexed_lookups_match_a_linear_scan(ws: Workspace, keys: list[str]) -> None:
    for key in keys:
        assert ws.by_id(key) is linear_by_id(ws, key)
    found = ws.by_ids(keys)
    assert found == {k: linear_by_id(ws, k) for k in keys if linear_by_id(ws, k) is not None}


@given(workspaces())
def test_cached_sets_and_lists_match_their_definitions(ws: Workspace) -> None:
    symbols = [d for d in ws.declarations if d.runtime_role == "symbol"]

    assert ws.entities() == symbols
    assert ws.known_names() == {d.name for d in ws.declarations} | {d.id for d in ws.declarations}
    assert ws.active() == [d for d in ws.declarations if d.status not in EXCLUDED_STATUSES]
    assert ws.superseded_ids() == {t for d in ws.declarations for t in d.fields["supersedes"]}
    expected_aliases: dict[str, list[str]] = {}
    for entity in symbols:
        for alias in entity.fields["aliases"]:
            expected_aliases.setdefault(alias.lower(), []).append(entity.name)
    assert ws.alias_map() == expected_aliases


@given(workspaces(), workspaces())
def test_appending_declarations_refreshes_every_lookup(first: Workspace, more: Workspace) -> None:
    # Given lookups that were already computed (and cached)
    first.known_names()
    first.by_id("a")
    first.active()

    # When declarations are appended directly to the list
    first.declarations.extend(more.declarations)

    # Then every lookup sees them
    assert first.by_id("a") is linear_by_id(first, "a")
    assert first.known_names() == {d.name for d in first.declarations} | {
        d.id for d in first.declarations
    }
    assert len(first.active()) == sum(d.status not in EXCLUDED_STATUSES for d in first.declarations)
