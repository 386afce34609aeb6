"""Property: a role set's view made per file over the previous view's results
(`Workspace.restricted_by_run`) is `Workspace.restricted`, and its index composed over
that view's previous index and the whole workspace's (`compose_index`) answers exactly
as one built from nothing, and its lint over the previous view's is a fresh lint.

Random workspaces go through random edit sequences; after every edit the view (what a
random role set may read) is made and indexed over the earlier ones, and must hold the
same declarations as `restricted`, the same slots, bitmaps and directories as
`build_index` of that view, and answer every query and check as the linear scans do.
"""

from __future__ import annotations

import zlib
from typing import Any
from unittest import mock

import test_incremental_index as incremental
from hypothesis import given, settings
from hypothesis import strategies as st
from random_workspaces import check_arguments, query_arguments, workspaces

from memhubd.check import check_compliance
from memhubd.check.reference import check_compliance_linear
from memhubd.index import build_index, build_segment, index_for
from memhubd.index import workspace as index_module
from memhubd.index.segment import PostingTable, _cut_apart, cut_segment
from memhubd.index.workspace import WorkspaceIndex, build_with, compose_index
from memhubd.lint import lint, lint_files
from memhubd.model import Workspace
from memhubd.model.workspace import Declarations, file_runs, left_out
from memhubd.query import build_evidence_pack
from memhubd.query.reference import build_evidence_pack_linear


def _readable(modulus: int, residue: int) -> Any:
    """A role set's reading rule over declarations, stable across edits (by id)."""
    return lambda d: zlib.crc32(d.id.encode()) % modulus != residue


@settings(max_examples=max(settings.default.max_examples // 2, 1), deadline=None)
@given(
    workspaces(),
    incremental.edits(),
    st.integers(2, 4),
    st.integers(0, 3),
    st.lists(query_arguments(), min_size=1, max_size=2),
    st.lists(check_arguments(), min_size=1, max_size=2),
)
def test_a_view_indexed_over_earlier_indexes_equals_one_built_from_nothing(
    ws: Workspace,
    steps: list[tuple[str, int, Any]],
    modulus: int,
    residue: int,
    queries: list[dict[str, Any]],
    checks: list[dict[str, Any]],
) -> None:
    readable = _readable(modulus, residue)
    files = incremental._files(ws)
    segments = [build_segment(f) for f in files]
    earlier: WorkspaceIndex | None = None
    runs = None
    linted = None
    for step in [None, *steps]:
        # Given the whole workspace after an edit (its files' runs, the same objects
        # while a file is unchanged), indexed, and a role set's view of it made over
        # the per-file results of the view before
        if step is not None:
            incremental._apply(files, segments, step)
        whole = Workspace(Declarations(list(files)), [f[0].file for f in files], ws.registry)
        whole_index = WorkspaceIndex(segments)
        view, runs = whole.restricted_by_run(readable, runs)
        plain = whole.restricted(readable)
        assert list(view.declarations) == list(plain.declarations)
        assert view.superseded_elsewhere == plain.superseded_elsewhere
        assert left_out(runs) == {d.id for d in whole.declarations if not readable(d)}

        # When the view's index is composed over the earlier view index and the whole's
        index = compose_index(view, earlier, whole_index)

        # Then it holds what an index built from nothing holds
        assert incremental._state(index) == incremental._state(build_index(view))
        # And index_for uses it when asked to, and every answer is the linear scans'
        _assert_answers_as_linear_scans(view, index, queries, checks)
        # And its lint over the previous view's per-file results is a fresh lint's
        found, linted = lint_files(view, file_runs(view.declarations), previous=linted)
        assert [d.as_dict() for d in found] == [d.as_dict() for d in lint(view)]
        earlier = index


def test_a_composed_index_that_is_not_of_the_workspace_is_not_used(tmp_path: Any) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.mem").write_text(
            f'fact team.{name} {{ claim: "{name}" evidence {{ source: "s" quote: "q" }} }}\n'
        )
    ws = Workspace.load([str(tmp_path / "a.mem")])
    other = Workspace.load([str(tmp_path / "b.mem")])
    stranger = build_index(other)

    build_with(ws, lambda _ws: stranger)

    index = index_for(ws)
    assert index is not stranger
    assert [d for d in index.declarations if d is not None] == list(ws.declarations)


def _comparable(segment: Any) -> dict[str, Any]:
    """A segment's fields, posting tables as key -> row (their key order means nothing)."""
    out = {}
    for name in segment.__slots__:
        value = getattr(segment, name)
        if isinstance(value, PostingTable):
            value = (value.width, value.as_dict(), value.index.keys() == set(value.keys))
        out[name] = value
    return out


@settings(max_examples=max(settings.default.max_examples // 2, 1), deadline=None)
@given(workspaces(), st.data())
def test_a_segment_cut_from_a_file_is_the_segment_of_the_declarations_kept(
    ws: Workspace, data: st.DataObject
) -> None:
    for run in incremental._files(ws):
        # Given a file's segment and some of its declarations, in order
        kept = sorted(data.draw(st.sets(st.integers(0, len(run) - 1), min_size=1)))
        # When the segment of those is cut from the file's
        whole = build_segment(run)
        cut = cut_segment(whole, kept)
        # Then it is the segment built from them, its kinds in the same order
        built = build_segment([run[o] for o in kept])
        assert _comparable(cut) == _comparable(built)
        assert list(cut.kind_rows) == list(built.kind_rows)
        # And so is the cut made one table at a time (segments whose rows differ in width)
        apart = _cut_apart(whole, kept, tuple(run[o] for o in kept))
        assert _comparable(apart) == _comparable(built)


def test_a_composition_underway_is_waited_for_not_repeated(tmp_path: Any) -> None:
    import threading

    from memhubd.index import workspace as index_module

    (tmp_path / "a.mem").write_text(
        'fact team.a { claim: "a" evidence { source: "s" quote: "q" } }\n'
    )
    ws = Workspace.load([str(tmp_path / "a.mem")])
    release, started, calls = threading.Event(), threading.Event(), []

    def slow(view: Workspace) -> WorkspaceIndex:
        calls.append(view)
        started.set()
        assert release.wait(10)
        return build_index(view)

    build_with(ws, slow)
    got: list[WorkspaceIndex] = []
    first = threading.Thread(target=lambda: got.append(index_for(ws)))
    first.start()
    assert started.wait(10)
    # While the builder runs outside the index lock, other workspaces are indexed at once
    other = Workspace.load([str(tmp_path / "a.mem")])
    meanwhile = threading.Thread(target=index_for, args=(other,))
    meanwhile.start()
    meanwhile.join(10)
    assert not meanwhile.is_alive()
    second = threading.Thread(target=lambda: got.append(index_for(ws)))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting for the composition underway, not building
    release.set()
    first.join(10)
    second.join(10)
    assert len(calls) == 1 and len(got) == 2 and got[0] is got[1]
    assert not index_module._UNDERWAY


@settings(max_examples=max(settings.default.max_examples // 2, 1), deadline=None)
@given(
    workspaces(),
    st.integers(2, 6),
    st.integers(0, 3),
    st.lists(query_arguments(), min_size=1, max_size=2),
    st.lists(check_arguments(), min_size=1, max_size=2),
)
def test_a_first_view_made_as_an_edit_of_the_whole_index_equals_one_built_from_nothing(
    ws: Workspace,
    modulus: int,
    residue: int,
    queries: list[dict[str, Any]],
    checks: list[dict[str, Any]],
) -> None:
    # Given a whole workspace indexed, and a role set's first view of it
    readable = _readable(modulus, residue)
    files = incremental._files(ws)
    whole = Workspace(Declarations(list(files)), [f[0].file for f in files], ws.registry)
    whole_index = WorkspaceIndex([build_segment(f) for f in files])
    view, _ = whole.restricted_by_run(readable)

    # When its index is composed as an edit of the whole index (what a view keeping most
    # of the whole index's segments gets; here whatever it keeps)
    with mock.patch.object(index_module, "_mostly_kept", return_value=True):
        index = compose_index(view, None, whole_index)

    # Then it holds what an index built from nothing holds, and answers as linear scans
    assert incremental._state(index) == incremental._state(build_index(view))
    _assert_answers_as_linear_scans(view, index, queries, checks)


def _assert_answers_as_linear_scans(
    view: Workspace,
    index: WorkspaceIndex,
    queries: list[dict[str, Any]],
    checks: list[dict[str, Any]],
) -> None:
    """`index` made the view's own, every query and check answers as the linear scans."""
    build_with(view, lambda _ws, made=index: made)
    assert index_for(view) is index
    for args in queries:
        indexed = build_evidence_pack(view, **args)
        assert indexed.as_dict() == build_evidence_pack_linear(view, **args).as_dict()
    for args in checks:
        checked = check_compliance(view, **args)
        assert checked.as_dict() == check_compliance_linear(view, **args).as_dict()
