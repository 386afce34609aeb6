"""Property: an index updated edit by edit answers exactly as one composed from scratch.

Random workspaces of a few files go through random edit sequences (a file replaced,
added, removed or moved); after every edit the index composed from the previous one
(`WorkspaceIndex(..., previous=)`) must hold the same slots, bitmaps and directories as
a fresh composition, and every query and check over it must equal the linear scans.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from random_workspaces import check_arguments, query_arguments, workspaces

from memhubd.check import check_compliance
from memhubd.check.reference import check_compliance_linear
from memhubd.index import adopt_index, build_segment, codes, index_for
from memhubd.index import workspace as index_module
from memhubd.index.tokens import word_tokens
from memhubd.index.workspace import SCOPE, SUBJECT, TERM, WorkspaceIndex
from memhubd.model import Workspace
from memhubd.query import build_evidence_pack
from memhubd.query.reference import build_evidence_pack_linear

Files = list[tuple[Any, ...]]  # one tuple of typed declarations per file


def _files(ws: Workspace) -> Files:
    """Runs of consecutive declarations of one file label, as the builder's files."""
    out: Files = []
    for decl in ws.declarations:
        if out and out[-1][0].file == decl.file:
            out[-1] = (*out[-1], decl)
        else:
            out.append((decl,))
    return out


@st.composite
def edits(draw: st.DrawFn) -> list[tuple[str, int, Files]]:
    """(operation, position, replacement files drawn from another random workspace)."""
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        operation = draw(st.sampled_from(["replace", "add", "remove", "move", "same"]))
        steps.append((operation, draw(st.integers(0, 8)), _files(draw(workspaces()))))
    return steps


def _apply(files: Files, segments: list[Any], step: tuple[str, int, Files]) -> None:
    operation, position, donor = step
    at = position % (len(files) + 1)
    if operation in ("replace", "add") and donor:
        new = donor[position % len(donor)]
        if operation == "replace" and files:
            at %= len(files)
            files[at], segments[at] = new, build_segment(new)
        else:
            files.insert(at, new)
            segments.insert(at, build_segment(new))
    elif operation == "remove" and files:
        at %= len(files)
        del files[at], segments[at]
    elif operation == "move" and len(files) > 1:
        at %= len(files)
        files.append(files.pop(at))
        segments.append(segments.pop(at))
    elif operation == "same" and files:
        # The same bytes parsed again: equal declarations, new objects.
        at %= len(files)
        segments[at] = build_segment(files[at])


def _state(ix: WorkspaceIndex) -> dict[str, Any]:
    keys = {k for s in ix.segments for k in s.local_ids} | {k for s in ix.segments for k in s.names}
    terms = {k for s in ix.segments for k in s.terms.keys}
    return {
        "bases": ix.bases,
        "size": ix.space.size,
        "pool": ix.pool,
        "constraints": ix.constraints,
        "high": ix.high_confidence,
        "questions": ix.questions,
        "kinds": ix.pool_kinds,
        "shared": ix.shared_ids,
        "global": ix.global_constraints,
        "superseded": ix.superseded,
        "ids": {k: ix.ids.get(k) for k in keys},
        "multi": ix.ids.multi,
        "when_any": ix.when_any,
        "aliases": ix.aliases.items,
        "declarations": list(ix.declarations),
        "ids_of": list(ix.ids_of),
        "subjects": list(ix.subjects),
        "scopes": list(ix.scopes),
        "terms": {t: ix.bits(TERM, t) for t in terms},
        "subject_bits": {s: ix.bits(SUBJECT, s) for s in ix.subjects if s is not None},
        "scope_bits": {s: ix.bits(SCOPE, s) for s in ix.scopes if s is not None},
        "constraint_slots": _constraint_slots(ix),
    }


def _constraint_slots(ix: WorkspaceIndex) -> dict[tuple[str, str], list[int]]:
    """(table, key) -> the index's constraint slots of the key, checked against its bitmap."""
    out = {}
    for table, keys in ((SUBJECT, ix.subjects), (SCOPE, ix.scopes)):
        for key in {k for k in keys if k is not None} | {"nothing such"}:
            slots = ix.constraint_slots(table, key).tolist()
            assert slots == ix.space.members(ix.constraint_bits(table, key))
            out[(table, key)] = slots
    return out


def _linear_term_bits(ix: WorkspaceIndex) -> dict[str, int]:
    """term -> bitmap of the indexed declarations with that word, one declaration at a time."""
    indexed = ix._raw["in_pool"] | ix._raw["is_constraint"]
    out: dict[str, int] = {}
    for slot, decl in enumerate(ix.declarations):
        if decl is not None and ix.has_bit(indexed, slot):
            for term in set(word_tokens(decl.searchable_text())):
                out[term] = out.get(term, 0) | ix.space.bitmap((slot,))
    return out


# Each example builds and edits a whole workspace: half the profile's examples.
@settings(max_examples=max(settings.default.max_examples // 2, 1), deadline=None)
@given(
    workspaces(),
    edits(),
    st.lists(query_arguments(), min_size=1, max_size=2),
    st.lists(check_arguments(), min_size=1, max_size=2),
    st.booleans(),
    st.booleans(),
)
def test_index_updated_per_edit_equals_a_fresh_composition(
    ws: Workspace,
    steps: list[tuple[str, int, Files]],
    queries: list[dict[str, Any]],
    checks: list[dict[str, Any]],
    fold_every_time: bool,
    few_serials: bool,
) -> None:
    # Directories are layers over a shared base, folded once the layer grows; keys of a
    # few files list them while others keep codes, folded once a few files were added
    # and rebuilt once edits used up the spare serials; files whose serial does not fit
    # a code are listed; cached bitmaps are spliced, or assembled again: each way.
    with (
        mock.patch.object(index_module, "_FOLD_MIN", 0 if fold_every_time else 256),
        mock.patch.object(index_module, "_RARE", 1 if fold_every_time else 64),
        mock.patch.object(index_module, "_EXTRAS", 0 if fold_every_time else 8),
        mock.patch.object(index_module, "_SPLICE_AT_MOST", 0 if fold_every_time else 64),
        mock.patch.object(index_module, "_SPARE_SERIALS", 0 if few_serials else 1024),
        mock.patch.object(codes, "SERIAL_LIMIT", 3 if few_serials else codes.SERIAL_LIMIT),
    ):
        _edit_and_compare(ws, steps, queries, checks)


def _edit_and_compare(
    ws: Workspace,
    steps: list[tuple[str, int, Files]],
    queries: list[dict[str, Any]],
    checks: list[dict[str, Any]],
) -> None:
    # Given an index composed from per-file segments
    files = _files(ws)
    segments = [build_segment(f) for f in files]
    index = WorkspaceIndex(segments)
    for step in steps:
        # When one file changes and the index is updated from the previous one
        _apply(files, segments, step)
        index = WorkspaceIndex(segments, previous=index)
        fresh = WorkspaceIndex(segments)

        # Then it holds exactly what a fresh composition holds
        state = _state(index)
        assert state == _state(fresh)
        assert state["terms"] == _linear_term_bits(fresh)

        # And every query and check answers as the linear scans do
        current = Workspace([d for f in files for d in f], [f[0].file for f in files], ws.registry)
        assert adopt_index(current, index)
        assert index_for(current) is index
        for args in queries:
            indexed = build_evidence_pack(current, **args)
            assert indexed.as_dict() == build_evidence_pack_linear(current, **args).as_dict()
        for args in checks:
            checked = check_compliance(current, **args)
            assert checked.as_dict() == check_compliance_linear(current, **args).as_dict()
