"""Role-limited views saved with a workspace's snapshot file, and restored from it.

A view's index (`memhubd.service.access`) is composed at a start from every segment it
cuts; saved beside the whole workspace's (`memhubd.runtime.cache.SavedView`), a start
restores it instead. It must never decide what a role set reads: the access policies
are read at every start as always, and a saved index serves only the view that leaves
out exactly what it left out when saved, from the very same files.
"""

from __future__ import annotations

from typing import Any

from memhubd.model import Workspace
from memhubd.runtime.cache import log
from memhubd.runtime.snapshot import Snapshot
from memhubd.runtime.sources import SourceFile

# A role-limited view to save with a snapshot: its roles (sorted), the positions it
# left out of each of the whole workspace's runs it cut, and its composed index.
ViewToSave = tuple[tuple[str, ...], list[tuple[Any, tuple[int, ...]]], Any]

# At most this many role-limited views are saved with a snapshot (the most recently
# used first), holding together at most `SAVED_VIEW_DECLARATIONS` declarations: each
# holds the columns of every segment it cut and an index of its own, which a rewrite
# of the snapshot file holds in memory with the whole workspace's (a view of 1M
# declarations added about 340 MiB to that peak, and 9 s to the write).
MAX_SAVED_VIEWS = 4
SAVED_VIEW_DECLARATIONS = 1_000_000


def within_budget(views: list[ViewToSave]) -> list[ViewToSave]:
    """The first of `views` that `MAX_SAVED_VIEWS` and `SAVED_VIEW_DECLARATIONS` allow."""
    kept: list[ViewToSave] = []
    total = 0
    for view in views[:MAX_SAVED_VIEWS]:
        total += view[2].count
        if total > SAVED_VIEW_DECLARATIONS:
            break
        kept.append(view)
    return kept


def saved_views(
    snapshot: Snapshot, sound: list[SourceFile], views: list[ViewToSave]
) -> tuple[Any, ...]:
    """`views` as a consolidated snapshot saves them (`memhubd.runtime.cache.SavedView`):
    each segment of a view's index named by its file's path and digest, with the columns
    of a segment cut from that file, or None for the file's whole segment. A view over
    a file that is not saved (a last good parse kept for broken bytes), or whose index
    `memhubd.index.persist` does not save, is left out."""
    from memhubd.index.persist import index_data
    from memhubd.index.workspace import cached_index, run_path
    from memhubd.runtime.cache import segment_columns

    whole = cached_index(snapshot.workspace)
    if whole is None:
        return ()
    digest_of = {f.path: f.digest for f in sound}
    whole_segments = set(map(id, whole.segments))
    saved = []
    for roles, left, index in views:
        data = index_data(index)
        paths = [run_path(segment.declarations) for segment in index.segments]
        if data is None or any(path not in digest_of for path in paths):
            continue
        segments = tuple(
            (
                path,
                digest_of[path],
                None if id(segment) in whole_segments else segment_columns(segment),
            )
            for path, segment in zip(paths, index.segments, strict=True)
        )
        cut = tuple((run_path(run), tuple(at)) for run, at in left)
        saved.append((tuple(roles), cut, segments, data))
    return tuple(saved)


def restored_view_index(
    snapshot: Snapshot | None, view: Workspace, runs: dict[int, Any], candidates: list[Any]
) -> Any:
    """The index of `view` as the parse cache saved it with `snapshot`
    (`memhubd.runtime.cache.SavedView`, the first of `candidates` that fits), made the
    view's own; None (logged when a view does not fit) to compose it.

    What the role set reads was just worked out as always (`runs`); a saved index is
    used only when it left out exactly the same positions of the same files (by
    digest) and its whole-file segments are this snapshot's very ones, so it indexes
    exactly the view's declarations, whichever role set it was saved for (role sets
    that read the same share one view, saved once): a restart then costs a role set's
    view its reading of the access policies, not a composition over every file it cuts
    (1.35 s of CPU at 100k declarations spread over every file)."""
    from memhubd.index.workspace import cached_index, run_path

    whole_index = cached_index(snapshot.workspace) if snapshot is not None else None
    if snapshot is None or whole_index is None or not candidates:
        return None
    left = {run_path(entry[0]): entry[4] for entry in runs.values() if entry[4]}
    for saved in candidates:
        try:
            if left != {path: tuple(at) for path, at in saved[1]}:
                continue  # saved for a role set that reads otherwise
            index = _restored(snapshot, whole_index, view, saved)
        except Exception as error:  # sealed by us yet not what we write: never served
            log.warning("parse cache view unusable", workspace=snapshot.name, error=str(error))
            continue
        if index is not None:
            log.info("parse cache view restored", workspace=snapshot.name, files=len(left))
            return index
    return None


def _restored(snapshot: Snapshot, whole_index: Any, view: Workspace, saved: Any) -> Any:
    """`saved` restored and adopted as the index of `view`, or None when its files are
    not this snapshot's (one changed while the daemon was down). Raises ValueError for
    data that do not fit."""
    from memhubd.index.persist import restore_index
    from memhubd.index.workspace import adopt_index, run_path, segment_runs
    from memhubd.runtime.cache import segment_from_columns

    _roles, _cut, segments, data = saved
    kept = segment_runs(view)
    if len(kept) != len(segments):
        return None
    digest_of = {f.path: f.digest for f in snapshot.files}
    whole_of = {id(s.declarations): s for s in whole_index.segments}
    built = []
    for run, (path, digest, columns) in zip(kept, segments, strict=True):
        if run_path(run) != path or digest_of.get(path) != digest:
            return None
        segment = whole_of.get(id(run)) if columns is None else None
        if columns is None and (segment is None or segment.declarations is not run):
            return None
        built.append(segment if segment is not None else segment_from_columns(run, columns))
    index = restore_index(data, built)
    if index.superseded_elsewhere != view.superseded_elsewhere:
        raise ValueError("saved view of other supersessions")
    return index if adopt_index(view, index) else None
