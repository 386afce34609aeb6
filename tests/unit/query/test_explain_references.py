"""`referenced_by` comes from an index of relation targets built once per workspace,
and lists exactly what a scan of every declaration's relations would, in its order."""

from __future__ import annotations

from typing import Any

from workspace_loading import Loader

from memhubd.query.explain import referenced_by

REFERENCES = """
    decision d.one { decision: "Free tier stays" relations { supports: "fact:f.two" } }
    fact f.two { claim: "Free tier ends" conflicts_with: [d.one, f.two] supports: "d.one" }
    fact f.three { claim: "Reviewed" supports: ["fact:f.two", "f.two"] depends_on: "d.one" }
    fact f.lonely { claim: "Nobody points here" }
"""


def scanned(ws: Any, d: Any) -> list[dict[str, str]]:
    out = []
    for other in ws.declarations:
        if other.id == d.id:
            continue
        for rel, targets in other.relations().items():
            out.extend({"id": other.id, "relation": rel} for t in targets if t in (d.id, d.name))
    return out


def test_references_by_id_and_by_name_come_in_scan_order(load: Loader) -> None:
    ws = load(REFERENCES)

    for d in ws.declarations:
        assert referenced_by(ws, d) == scanned(ws, d)
    two = ws.by_id("fact:f.two")
    assert referenced_by(ws, two) == [
        {"id": "decision:d.one", "relation": "supports"},
        {"id": "fact:f.three", "relation": "supports"},
        {"id": "fact:f.three", "relation": "supports"},
    ]
    assert referenced_by(ws, ws.by_id("f.lonely")) == []


def test_declarations_appended_later_are_seen(load: Loader) -> None:
    ws = load(REFERENCES)
    lonely = ws.by_id("f.lonely")
    assert referenced_by(ws, lonely) == []

    ws.declarations.append(load('fact f.late { claim: "x" supports: "f.lonely" }').declarations[0])

    assert referenced_by(ws, lonely) == [{"id": "fact:f.late", "relation": "supports"}]
