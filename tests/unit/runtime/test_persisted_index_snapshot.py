"""Property: an index saved with a snapshot and restored answers exactly as one composed
from scratch, and so does one composed from the restored index after further edits.

Random workspaces go through random edit sequences; after every edit the index is
saved (`memhubd.index.persist`), passed through `marshal` as the snapshot file holds it,
restored over the same segments, then edited once more through the incremental path.
"""

from __future__ import annotations

import marshal
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# The random workspaces and edits of the index's own property tests, imported as they are.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "index"))

from random_workspaces import check_arguments, query_arguments, workspaces  # noqa: E402
from test_incremental_index import Files, _apply, _files, _state, edits  # noqa: E402

from memhubd.check import check_compliance  # noqa: E402
from memhubd.index import adopt_index, build_segment  # noqa: E402
from memhubd.index import workspace as index_module  # noqa: E402
from memhubd.index.persist import KNOWN, index_data, restore_index  # noqa: E402
from memhubd.index.workspace import WorkspaceIndex  # noqa: E402
from memhubd.model import Workspace  # noqa: E402
from memhubd.query import build_evidence_pack  # noqa: E402


def _round_trip(index: WorkspaceIndex, segments: list[Any]) -> WorkspaceIndex:
    data = index_data(index)
    assert data is not None
    return restore_index(marshal.loads(marshal.dumps(data)), segments)


def _answers(files: Files, registry: Any, index: WorkspaceIndex, queries: Any, checks: Any) -> Any:
    current = Workspace([d for f in files for d in f], [f[0].file for f in files], registry)
    assert adopt_index(current, index)
    return (
        [build_evidence_pack(current, **args).as_dict() for args in queries],
        [check_compliance(current, **args).as_dict() for args in checks],
    )


@settings(max_examples=max(settings.default.max_examples // 4, 1), deadline=None)
@given(
    workspaces(),
    edits(),
    st.lists(query_arguments(), min_size=1, max_size=2),
    st.lists(check_arguments(), min_size=1, max_size=2),
    st.booleans(),
)
def test_restored_index_answers_as_a_fresh_composition_after_edits(
    ws: Workspace,
    steps: list[tuple[str, int, Files]],
    queries: list[dict[str, Any]],
    checks: list[dict[str, Any]],
    fold_every_time: bool,
) -> None:
    with (
        mock.patch.object(index_module, "_FOLD_MIN", 0 if fold_every_time else 256),
        mock.patch.object(index_module, "_RARE", 1 if fold_every_time else 64),
        mock.patch.object(index_module, "_EXTRAS", 0 if fold_every_time else 8),
    ):
        # Given an index composed from per-file segments, edited and saved after each edit
        files = _files(ws)
        segments = [build_segment(f) for f in files]
        index = WorkspaceIndex(segments)
        for step in steps:
            _apply(files, segments, step)
            index = WorkspaceIndex(segments, previous=index)

            # When it is restored over the same segments
            restored = _round_trip(index, segments)

            # Then it holds and answers what a fresh composition does
            fresh = WorkspaceIndex(segments)
            assert _state(restored) == _state(fresh)
            expected = _answers(files, ws.registry, fresh, queries, checks)
            assert _answers(files, ws.registry, restored, queries, checks) == expected

            # And an edit composed from the restored index still does
            _apply(files, segments, step)
            patched = WorkspaceIndex(segments, previous=restored)
            assert _state(patched) == _state(WorkspaceIndex(segments))
            index = patched


def test_an_index_with_an_attribute_persist_does_not_know_is_not_saved() -> None:
    # Given an index that holds something the saved form has no place for
    index = WorkspaceIndex([])
    assert set(vars(index)) == KNOWN
    index.something_new = 1  # type: ignore[attr-defined]

    # Then it is not saved (a start composes it instead)
    assert index_data(index) is None


def test_restoring_over_other_segments_is_refused() -> None:
    ws = Workspace()
    index = WorkspaceIndex([])
    data = index_data(index)
    assert data is not None and ws.declarations == []
    with pytest.raises(ValueError):
        restore_index(data, [build_segment(())])


@settings(max_examples=max(settings.default.max_examples // 4, 1), deadline=None)
@given(workspaces(), edits(), st.booleans())
def test_restored_lookups_before_any_dict_is_made_read_as_the_saved_dicts(
    ws: Workspace, steps: list[tuple[str, int, Files]], fold_every_time: bool
) -> None:
    with mock.patch.object(index_module, "_RARE", 1 if fold_every_time else 64):
        # Given an index composed from per-file segments, edited, saved and restored
        files = _files(ws)
        segments = [build_segment(f) for f in files]
        index = WorkspaceIndex(segments)
        for step in steps:
            _apply(files, segments, step)
            index = WorkspaceIndex(segments, previous=index)
        restored = _round_trip(index, segments)
        saved = [(index.ids._where, restored.ids._where)]
        saved.append((index._names._where, restored._names._where))
        for table, holders in index._holders.items():
            saved.append((holders.counts, restored._holders[table].counts))
            saved.append((holders.rare, restored._holders[table].rare))

        # When every key, and one no file holds, is looked up before anything reads a
        # restored dict whole
        keys = [[key for key, _ in before.items()] + ["no such key"] for before, _ in saved]
        answers = [
            [after.get(key, "absent") for key in some]
            for some, (_, after) in zip(keys, saved, strict=True)
        ]

        # Then each lookup answers as the saved dict, and no dict was made for it
        for some, (before, after), found in zip(keys, saved, answers, strict=True):
            assert found == [before.get(key, "absent") for key in some]
            assert after._made is None


def _restored_counts(ws: Workspace) -> tuple[WorkspaceIndex, WorkspaceIndex, dict[str, Any], Any]:
    """(an index of `ws`, it saved and restored, its first table's counts as a dict, the
    restored index's map of those counts)."""
    files = _files(ws)
    segments = [build_segment(f) for f in files]
    index = WorkspaceIndex(segments)
    restored = _round_trip(index, segments)
    table = next(iter(index._holders))
    return (
        index,
        restored,
        dict(index._holders[table].counts.items()),
        restored._holders[table].counts,
    )


@settings(max_examples=max(settings.default.max_examples // 4, 1), deadline=None)
@given(workspaces())
def test_an_update_of_a_restored_map_layers_over_it_without_making_its_dict(
    ws: Workspace,
) -> None:
    # Given an index saved and restored
    index, restored, before, counts = _restored_counts(ws)
    added = {f"k{n} not a word": n for n in range(len(before) + 1)}

    # When a small change is made on top of a restored map
    changed = counts.updated({"a new key": 1})

    # Then the change reads through, the rest reads as saved, and no dict was made
    assert changed.get("a new key") == 1
    assert [changed.get(key) for key in before] == list(before.values())
    assert len(counts) == len(before) and counts._made is None

    # And folding changes into a new base makes the dict then, with every key
    with mock.patch.object(index_module, "_FOLD_MIN", 0):
        folded = counts.updated(added)
    assert type(folded.base) is dict
    assert dict(folded.items()) == {**before, **added}


@settings(max_examples=max(settings.default.max_examples // 4, 1), deadline=None)
@given(workspaces())
def test_a_restored_map_makes_its_dict_before_many_lookups_and_not_before_few(
    ws: Workspace,
) -> None:
    # Given an index saved and restored
    index, restored, before, counts = _restored_counts(ws)

    # When an update is readied for as few lookups as its fold would leave as a delta
    few = max(index_module._FOLD_MIN, len(before) >> 5)
    counts.unfold_for(few)
    # Then no dict is made
    assert counts._made is None

    # When one is readied for more, directly or through a map layered over it
    counts.unfold_for(few + 1)
    ids = restored.ids._where
    index_module._Layered(ids).unfold_for(max(index_module._FOLD_MIN, len(ids) >> 5) + 1)
    # Then the dicts are made, and read as the saved ones
    assert type(counts._made) is dict and type(ids._made) is dict
    assert {key: counts.get(key) for key in before} == before
    assert dict(ids.items()) == dict(index.ids._where.items())
