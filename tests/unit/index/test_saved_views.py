"""A role set's view saved with the parse cache's snapshot file: a start restores its
index instead of composing it, only when the role set, worked out afresh, leaves out
exactly what it left out when saved, from the very same files; it then answers exactly
as the view composed from nothing does, and so does the view of the next snapshot.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
import test_incremental_index as incremental
import test_restored_views as views

from memhubd.auth.access import is_readable
from memhubd.index import build_index, index_for
from memhubd.index import workspace as index_module
from memhubd.query import build_evidence_pack
from memhubd.runtime.cache import ParseCache, read_snapshot_payload, snapshot_documents
from memhubd.runtime.snapshot import Snapshot, build_snapshot, persist
from memhubd.service import access

# Role sets that each leave something out (a role set reading everything has no view).
ROLE_SETS = [r for r in views.ROLE_SETS if "security" not in r or "ops" not in r]


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new daemon process starts with: no earlier views of any role set."""
    monkeypatch.setattr(access, "_EARLIER", OrderedDict())


def _compositions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The workspaces `compose_index` composes an index of, from now on."""
    composed: list[Any] = []
    compose = index_module.compose_index

    def counting(ws: Any, *args: Any) -> Any:
        composed.append(ws)
        return compose(ws, *args)

    monkeypatch.setattr(index_module, "compose_index", counting)
    return composed


def _saved_with_views(root: Path, state: Path, role_sets: list[frozenset[str]]) -> Snapshot:
    """A snapshot of `root` served from the parse cache, with the views of `role_sets`
    made and saved with it, as a daemon's quiet step saves them."""
    parsed = build_snapshot("views", str(root), None, cache=ParseCache(state))
    persist(parsed, ParseCache(state))
    served = build_snapshot("views", str(root), None, cache=ParseCache(state))
    for roles in role_sets:
        index_for(access._cut_of(served, roles).workspace)  # noqa: SLF001
    cache = ParseCache(state)
    cache._snapshots.clear()  # noqa: SLF001 - a new process: the file is due for a write
    persist(served, cache, access.views_to_save)
    return served


def _workspace_saved_with(tmp_path: Path, role_sets: list[frozenset[str]]) -> tuple[Path, Path]:
    """(root, state dir) of the edge-case workspace, its snapshot file saved with the
    views of `role_sets`."""
    root = views._workspace(tmp_path / "ws")  # noqa: SLF001
    state = tmp_path / "state"
    _saved_with_views(root, state, role_sets)
    return root, state


def _restarted_view(
    monkeypatch: pytest.MonkeyPatch, root: Path, state: Path, roles: frozenset[str]
) -> tuple[list[Any], Any, Any, Any]:
    """A new process started from `state`, and the view of `roles` made and indexed:
    (the workspaces composed meanwhile, the snapshot, the cut, its index)."""
    _new_process(monkeypatch)
    composed = _compositions(monkeypatch)
    again = build_snapshot("views", str(root), None, cache=ParseCache(state))
    cut = access._cut_of(again, roles)  # noqa: SLF001
    return composed, again, cut, index_for(cut.workspace)


def _fresh(root: Path, roles: frozenset[str]) -> tuple[Any, Any]:
    """(the view of `roles` of `root` parsed without any cache, its index from nothing)."""
    whole = build_snapshot("views", str(root), None).workspace
    fresh = whole.restricted(lambda d: is_readable(d, roles))
    return fresh, build_index(fresh)


def _saved_roles(state: Path) -> list[tuple[str, ...]]:
    cache = ParseCache(state)
    (file,) = state.glob("*/snapshot")
    payload = cache._open(file.read_bytes(), b"MHSS", cache_version())  # noqa: SLF001
    assert payload is not None
    return [view[0] for view in read_snapshot_payload(payload)[4]]


def cache_version() -> int:
    from memhubd.runtime.cache import SNAPSHOT_FORMAT

    return SNAPSHOT_FORMAT


@pytest.mark.parametrize("roles", ROLE_SETS, ids=lambda r: "+".join(sorted(r)) or "none")
def test_a_start_restores_a_saved_view_and_it_answers_as_one_composed(
    tmp_path: Path, roles: frozenset[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot file saved with the view of `roles`
    root, state = _workspace_saved_with(tmp_path, [roles])
    assert _saved_roles(state) == [tuple(sorted(roles))]

    # When a new process starts from it and makes that view
    composed, again, cut, index = _restarted_view(monkeypatch, root, state, roles)

    # Then its index is the saved one, not composed
    assert composed == []
    # And it answers exactly as the same view composed from nothing
    fresh, fresh_index = _fresh(root, roles)
    assert cut.hidden == {d.id for d in fresh.whole.declarations if not is_readable(d, roles)}
    assert incremental._state(index) == incremental._state(fresh_index)  # noqa: SLF001
    assert views._answers(cut.workspace) == views._answers(fresh)  # noqa: SLF001
    assert cut.hidden_must_rules(again.workspace) == access._build_cut(  # noqa: SLF001
        fresh.whole, roles
    ).hidden_must_rules(fresh.whole)

    # And the next snapshot's view, after an edit, is composed over it and answers alike
    vault = root / "vault.mem"
    vault.write_text(vault.read_text().replace("every access window", "every window"))
    after = build_snapshot("views", str(root), again, changed=[str(vault)], trusted=True)
    next_cut = access._cut_of(after, roles)  # noqa: SLF001
    fresh, fresh_index = _fresh(root, roles)
    assert incremental._state(index_for(next_cut.workspace)) == incremental._state(fresh_index)  # noqa: SLF001
    assert views._answers(next_cut.workspace) == views._answers(fresh)  # noqa: SLF001


@pytest.mark.parametrize(
    ("edit", "roles"),
    [
        # the policy of a declaration changed: the role set leaves out another one now
        (("access { readers: [qa] }", "access { readers: [ops] }"), frozenset({"qa"})),
        (("access { readers: [qa] }", "access { readers: [ops] }"), frozenset({"ops"})),
        # a declaration the role set reads changed, in a file it cuts: same positions
        (("paged to ops", "paged to the ops rota"), frozenset()),
    ],
    ids=["newly-hidden", "newly-shown", "same-positions"],
)
def test_a_saved_view_of_files_changed_while_down_is_composed_afresh(
    tmp_path: Path,
    edit: tuple[str, str],
    roles: frozenset[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a snapshot file saved with the view of `roles`, then a file edited while down
    root, state = _workspace_saved_with(tmp_path, [roles])
    vault = root / "vault.mem"
    text = vault.read_text()
    assert edit[0] in text
    vault.write_text(text.replace(*edit))

    # When a new process starts and makes that view
    composed, _again, cut, index = _restarted_view(monkeypatch, root, state, roles)

    # Then the saved index is not used: the view is composed, and answers as it must
    assert composed == [cut.workspace]
    fresh, fresh_index = _fresh(root, roles)
    assert cut.hidden == {d.id for d in fresh.whole.declarations if not is_readable(d, roles)}
    assert incremental._state(index) == incremental._state(fresh_index)  # noqa: SLF001
    assert views._answers(cut.workspace) == views._answers(fresh)  # noqa: SLF001


# Two role sets that each read one of two declarations of one file, and nothing else
# tells their views apart: the same positions left out of no other file, no supersession.
PAIR = {
    "memdsl.json": '{"schema_version": "memdsl.workspace.v1", "schemas": []}',
    "pair.mem": (
        'fact pair.qa { claim: "The quokka drill runs on mondays." '
        'evidence { source: "t" quote: "q" } access_policy { readers: [qa] } }\n'
        'fact pair.ops { claim: "The pangolin drill runs on fridays." '
        'evidence { source: "t" quote: "q" } access_policy { readers: [ops] } }\n'
        'fact pair.all { claim: "Drills are logged." evidence { source: "t" quote: "q" } }\n'
    ),
    "other.mem": 'fact other.note { claim: "Notes are kept." evidence { source: "t" quote: "q" } }\n',
}


def test_a_saved_view_is_only_ever_its_own_role_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot file saved with the views of two role sets that read differently
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in PAIR.items():
        (root / name).write_text(text)
    state = tmp_path / "state"
    qa, ops = frozenset({"qa"}), frozenset({"ops"})
    _saved_with_views(root, state, [qa, ops])
    assert sorted(_saved_roles(state)) == [("ops",), ("qa",)]
    # whose saved role labels are swapped (as a bug writing them would)
    cache = ParseCache(state)
    (file,) = state.glob("*/snapshot")
    payload = cache._open(file.read_bytes(), b"MHSS", cache_version())  # noqa: SLF001
    real, types, files, index, saved = read_snapshot_payload(payload)
    swapped = tuple((other[0], *view[1:]) for view, other in zip(saved, saved[::-1], strict=True))
    cache._write_sealed(  # noqa: SLF001
        file,
        snapshot_documents(real, types, files, lambda: index, swapped),
        b"MHSS",
        cache_version(),
    )

    # When a new process starts and makes both views
    _new_process(monkeypatch)
    composed = _compositions(monkeypatch)
    again = build_snapshot("views", str(root), None, cache=ParseCache(state))
    made = {roles: access._cut_of(again, roles) for roles in (qa, ops)}  # noqa: SLF001

    # Then neither takes the other's saved index: each is composed, and finds its own
    for roles, cut in made.items():
        fresh, fresh_index = _fresh(root, roles)
        assert incremental._state(index_for(cut.workspace)) == incremental._state(fresh_index)  # noqa: SLF001
        for query in ("quokka drill", "pangolin drill"):
            assert (
                build_evidence_pack(cut.workspace, query).as_dict()
                == build_evidence_pack(fresh, query).as_dict()
            )
    assert len(composed) == 2


def test_a_start_saves_a_new_role_sets_view_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot file saved with one role set's view
    root, state = _workspace_saved_with(tmp_path, [frozenset()])
    (file,) = state.glob("*/snapshot")
    written = file.stat().st_mtime_ns

    # When a start restored from it saves again with the same view made
    _new_process(monkeypatch)
    cache = ParseCache(state)
    again = build_snapshot("views", str(root), None, cache=cache)
    index_for(access._cut_of(again, frozenset()).workspace)  # noqa: SLF001
    persist(again, cache, access.views_to_save)

    # Then the file is not written again
    assert file.stat().st_mtime_ns == written
    # But once a role set it holds no view of is served, it is written once, with both
    index_for(access._cut_of(again, frozenset({"qa"})).workspace)  # noqa: SLF001
    persist(again, cache, access.views_to_save)
    assert sorted(_saved_roles(state)) == [(), ("qa",)]
    rewritten = file.stat().st_mtime_ns
    persist(again, cache, access.views_to_save)
    assert file.stat().st_mtime_ns == rewritten


def test_saved_views_hold_at_most_their_budget_of_declarations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.runtime import saved_views

    # Given a budget that holds one view of this workspace but not two
    root = views._workspace(tmp_path / "ws")  # noqa: SLF001
    state = tmp_path / "state"
    served = build_snapshot("views", str(root), None)
    one = len(access._cut_of(served, frozenset()).workspace.declarations)  # noqa: SLF001
    monkeypatch.setattr(saved_views, "SAVED_VIEW_DECLARATIONS", one + 1)

    # When views of two role sets are saved, the most recently used last
    _saved_with_views(root, state, [frozenset({"qa"}), frozenset()])

    # Then only the most recently used one is
    assert _saved_roles(state) == [()]


def test_a_start_lets_go_of_saved_views_no_one_asked_for(tmp_path: Path) -> None:
    # Given a snapshot file saved with a view
    root, state = _workspace_saved_with(tmp_path, [frozenset({"qa"})])

    # When a start restores from it
    again = build_snapshot("views", str(root), None, cache=ParseCache(state))

    # Then it holds the saved view, its own role set's once, until its warm step lets
    # it go
    assert [view[0] for view in again.saved_views(frozenset({"ops"}))] == [("qa",)]
    assert [view[0] for view in again.saved_views(frozenset({"qa"}))] == [("qa",)]
    assert again.saved_views(frozenset({"qa"})) == []
    again = build_snapshot("views", str(root), None, cache=ParseCache(state))
    again.drop_saved_views()
    assert again.saved_views(frozenset({"qa"})) == []


def test_a_role_set_reading_what_a_saved_view_reads_restores_that_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot file saved with the view of a token without roles
    root, state = _workspace_saved_with(tmp_path, [frozenset()])

    # When a new process first makes the view of a role set no declaration names
    # (it reads what no roles read, and has no view saved of its own)
    roles = frozenset({"nobody"})
    composed, _again, cut, index = _restarted_view(monkeypatch, root, state, roles)

    # Then the saved view is its own: restored, not composed, and it answers alike
    assert composed == []
    fresh, fresh_index = _fresh(root, roles)
    assert incremental._state(index) == incremental._state(fresh_index)  # noqa: SLF001
    assert views._answers(cut.workspace) == views._answers(fresh)  # noqa: SLF001


def test_views_are_not_saved_without_a_whole_index(tmp_path: Path) -> None:
    # Given a workspace served without its whole index made
    root = views._workspace(tmp_path / "ws")  # noqa: SLF001
    state = tmp_path / "state"
    snapshot = build_snapshot("views", str(root), None)
    roles = frozenset({"qa"})
    cut = access._cut_of(snapshot, roles)  # noqa: SLF001
    index_for(cut.workspace)
    index_module._CACHE.pop(id(snapshot.workspace), None)  # noqa: SLF001

    # When it is saved
    persist(snapshot, ParseCache(state), access.views_to_save)

    # Then no view is saved with it
    assert _saved_roles(state) == []
