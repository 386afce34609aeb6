"""Recall administration for every door: delete (a drawer or a source), purge, taxonomy
and reindex.

Split from service/recall.py (which keeps ingest, search, status and wake-up, and
still answers to these names). Checks scopes and grants first, runs the store in
worker threads and returns plain data; it must not speak SQL or parse sources.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import numpy as np
import structlog

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.recall import ReindexRequest, SourceDeleteRequest, TaxonomyEditRequest
from memhub_protocol.scopes import ADMIN, READ_SUMMARY, REVIEW, WRITE_RECALL
from memhubd.auth.identity import Identity
from memhubd.recall.embed import EmbedderError
from memhubd.recall.ingest.pipeline import STRIPE_SOURCES, Embeds
from memhubd.recall.shelf import RecallShelf
from memhubd.recall.store import Drawer, TaxonomyEntry
from memhubd.runtime.hub import Hub
from memhubd.service.access import host_for, require_scope
from memhubd.service.recall import (
    _INGEST,
    _READ,
    MAX_NAME,
    _audit,
    _name,
    _visible,
    shelf_of,
)

log = structlog.get_logger("memhubd.service.recall")

REINDEX_BATCH = 256
# Purges' space reclaiming, one store at a time: a first VACUUM rewrites a whole file.
_RECLAIM = anyio.CapacityLimiter(1)


async def delete(
    hub: Hub, identity: Identity, name: str, drawer_id: str, door: str
) -> dict[str, Any]:
    """Soft-delete one drawer (audited); it stops being served at once."""
    require_scope(identity, WRITE_RECALL)
    host_for(hub, identity, name)
    shelf = shelf_of(hub)

    def work() -> dict[str, Any]:
        store = shelf.store(name)
        drawer = store.get_by_id(drawer_id)
        if drawer is None or not _visible(identity, drawer.readers):
            raise ProtocolError(
                ErrorCode.NOT_FOUND, f"no live drawer '{drawer_id}'", {"drawer_id": drawer_id}
            )
        # What an identity said is its own record: a teammate may not erase it (a diary
        # entry shared with the team included); reviewers and admins moderate.
        if drawer.identity != identity.name and not (
            identity.has_scope(REVIEW) or identity.has_scope(ADMIN)
        ):
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"drawer '{drawer_id}' was written by '{drawer.identity}': only its writer, "
                "a reviewer or an admin may delete it",
                {"drawer_id": drawer_id, "required_scope": REVIEW},
            )
        audit = _audit(identity, door, "delete", drawer_id=drawer_id, source=drawer.source_file)
        removed = store.soft_delete(drawer_id, audit)
        if removed is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND, f"no live drawer '{drawer_id}'", {"drawer_id": drawer_id}
            )
        return {
            "workspace": name,
            "drawer_id": drawer_id,
            "deleted": True,
            "message": f"drawer {drawer_id} soft-deleted (purge removes it for good)",
            "room": removed.room,
            "source_file": removed.source_file,
            "preview": removed.content[:100],
        }

    return await anyio.to_thread.run_sync(work, limiter=_INGEST)


async def delete_source(
    hub: Hub, identity: Identity, name: str, request: SourceDeleteRequest, door: str
) -> dict[str, Any]:
    """Soft-delete every drawer of one source the caller may read, as `delete` does one
    (audited per drawer, on purpose: a later ingest does not bring them back); with
    `request.dry_run`, only say which. All or nothing: when some were written by another
    identity and the caller may not delete those, none is deleted."""
    require_scope(identity, WRITE_RECALL)
    host_for(hub, identity, name)
    shelf = shelf_of(hub)
    source = request.source

    def work() -> dict[str, Any]:
        store = shelf.store(name)
        # Those the caller may not read are none of its business: never deleted, counted
        # or named, so that a source of hidden drawers only answers as an unknown one.
        readable = [e for _, e in store.chunks_of_source(source) if _visible(identity, e.readers)]
        if not readable:
            raise ProtocolError(
                ErrorCode.NOT_FOUND, f"no live drawers of source '{source}'", {"source": source}
            )
        others = sum(1 for e in readable if e.identity != identity.name)
        if others and not (identity.has_scope(REVIEW) or identity.has_scope(ADMIN)):
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"{others} of the {len(readable)} drawers of source '{source}' were written by "
                "another identity: only their writer, a reviewer or an admin may delete them; "
                "none was deleted",
                {"source": source, "others": others, "required_scope": REVIEW},
            )
        ids = [e.id for e in readable]
        if not request.dry_run:
            audit = _audit(identity, door, "delete", source=source)
            ids = [d.id for d in store.soft_delete_many(ids, audit)]
        answer: dict[str, Any] = {
            "workspace": name,
            "source": source,
            "deleted": len(ids),
            "drawer_ids": ids,
        }
        if request.dry_run:
            answer["dry_run"] = True
        return answer

    return await anyio.to_thread.run_sync(work, limiter=_INGEST)


async def purge(
    hub: Hub,
    identity: Identity,
    name: str,
    before: int | None,
    door: str,
    audit_before: int | None = None,
) -> dict[str, Any]:
    """Remove soft-deleted drawers for good (all, or those deleted before `before`),
    and with `audit_before` the audit entries written before it (the store's audit
    grows by a row per write; keeping it whole, the default, is the operator's choice).
    Then removes the lock files of the sources no row is left of (`prune_locks`)."""
    require_scope(identity, ADMIN)
    host_for(hub, identity, name)
    if not identity.sees_everything:
        # A purge removes drawers and audit entries of every reader, and its counts are
        # of the whole store: it is for a caller hidden nothing (the role `*`).
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            "purge removes drawers and audit entries whatever their readers: it needs the role '*'",
            {"required_role": "*"},
        )
    shelf = shelf_of(hub)
    store = shelf.store(name)
    answer: dict[str, Any] = {"workspace": name, "before": before}
    if audit_before is not None:
        # First, so that the purge's own entry below is never among those removed.
        pruning = _audit(identity, door, "audit_prune", before=audit_before)
        removed = await anyio.to_thread.run_sync(
            store.prune_audit, audit_before, pruning, limiter=_INGEST
        )
        answer.update(audit_before=audit_before, audit_removed=removed)
    audit = _audit(identity, door, "purge", before=before)
    answer["purged"] = await anyio.to_thread.run_sync(store.purge, before, audit, limiter=_INGEST)
    await anyio.to_thread.run_sync(prune_locks, shelf, name, limiter=_INGEST)
    # Outside the ingest slot: a first VACUUM of a large store takes a while, and only
    # this store's writes need to wait for it, not every workspace's ingests.
    answer["reclaimed_bytes"] = await anyio.to_thread.run_sync(store.reclaim, limiter=_RECLAIM)
    return answer


def prune_locks(shelf: RecallShelf, name: str) -> int:
    """Remove the ingest lock files of `name` no stored source needs (one per source
    ever ingested otherwise stays forever); returns how many went. A failure is logged:
    the files are only disk, and the purge it follows is done."""
    try:
        keep = shelf.store(name).sources() | STRIPE_SOURCES
        removed = shelf.locks_of(name).prune(keep)
    except Exception as error:  # noqa: BLE001 - never fails the purge
        log.warning("ingest lock files not pruned", workspace=name, error=repr(error))
        return 0
    log.info("ingest lock files pruned", workspace=name, removed=removed)
    return removed


async def taxonomy(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    host_for(hub, identity, name)
    entries = await anyio.to_thread.run_sync(shelf_of(hub).store(name).taxonomy, limiter=_READ)
    return {"workspace": name, "entries": [e.as_dict() for e in entries]}


async def taxonomy_edit(
    hub: Hub, identity: Identity, name: str, request: TaxonomyEditRequest, door: str
) -> dict[str, Any]:
    require_scope(identity, WRITE_RECALL)
    host_for(hub, identity, name)
    room = _name(request.room, "room") or ""
    # Each keyword and the label as a room name is bounded: they are read by every
    # ingest that infers a room and repeated in the audit row of each edit.
    keywords = tuple(_name(k, "keywords") or "" for k in request.keywords)
    label = request.display_name
    if label is not None and len(label) > MAX_NAME:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"'display_name' must be at most {MAX_NAME} characters",
            {"field": "display_name"},
        )
    store = shelf_of(hub).store(name)

    def work() -> None:
        if request.remove:
            if not store.remove_taxonomy(
                room, _audit(identity, door, "taxonomy_remove", room=room)
            ):
                raise ProtocolError(ErrorCode.NOT_FOUND, f"no taxonomy entry for room '{room}'")
            return
        entry = TaxonomyEntry(room, keywords, label)
        audit = _audit(identity, door, "taxonomy_edit", room=room, keywords=list(entry.keywords))
        store.set_taxonomy(entry, audit)

    await anyio.to_thread.run_sync(work, limiter=_INGEST)
    if identity.has_scope(READ_SUMMARY):
        return await taxonomy(hub, identity, name)
    # A writer that may not read the taxonomy is answered with what it wrote only: the
    # edit is done, and the others' rooms are not its to read.
    entry = TaxonomyEntry(room, keywords, label)
    return {"workspace": name, "entries": [] if request.remove else [entry.as_dict()]}


async def reindex(
    hub: Hub,
    identity: Identity,
    name: str,
    door: str,
    request: ReindexRequest | None = None,
) -> dict[str, Any]:
    """Re-embed every live drawer with the running embedder and swap the vectors in
    at once; until it commits, search keeps using the old vectors (or none).

    With `request.limit`, one step: the live drawers above row `request.after` (0
    starts over), at most `limit` of them, are re-embedded aside; the answer says
    where the next step starts, and the step that reaches the end swaps them in.
    """
    require_scope(identity, ADMIN)
    host_for(hub, identity, name)
    shelf = shelf_of(hub)
    step = request if request is not None and request.limit is not None else None

    def work() -> dict[str, Any]:
        from memhubd.recall.ingest import record_of

        embedder = shelf.embedder()
        record = record_of(embedder)
        if embedder is None or record is None:
            if shelf.embedder_error is not None:
                # Configured but not loading (a model server down): it may come back.
                raise ProtocolError(
                    ErrorCode.WORKSPACE_UNAVAILABLE,
                    f"no embedder is running: {shelf.embedder_error}; the old vectors stay in use",
                    {"embedder_error": shelf.embedder_error},
                )
            raise ProtocolError(ErrorCode.CONFLICT, "no embedder is running: vectors are off")
        store = shelf.store(name)
        started = time.perf_counter()
        after = (step.after or 0) if step is not None else 0
        budget = step.limit if step is not None else None
        first = after == 0
        total = 0
        last = after
        done = True
        size = min(REINDEX_BATCH, budget) if budget is not None else REINDEX_BATCH
        for batch in store.iter_live(size, after):
            if budget is not None:
                batch = batch[: budget - total]
            vectors = _embedded(embedder, batch, identity.sees_everything)
            store.stage_vectors([d.rowid for d in batch], vectors, first=first)
            first = False
            total += len(batch)
            last = batch[-1].rowid
            if budget is not None and total >= budget:
                # The step is full: done only if no live drawer follows.
                done = next(iter(store.iter_live(1, last)), None) is None
                break
        if first:
            store.stage_vectors([], np.zeros((0, record.dimension), np.float32), first=True)
        answer: dict[str, Any] = {
            "workspace": name,
            "drawers": total,
            "embedder": {"name": record.name, "dimension": record.dimension},
        }
        if step is not None:
            answer.update(next=last, done=done, total=store.status().drawer_count)
        if done:
            # Every live drawer goes in with a vector of this embedder: those another
            # run's first step dropped from the staging table, those stored behind this
            # run's cursor between its steps, and any staged by an embedder of another
            # dimension are embedded now rather than left without one.
            filled = 0
            for batch in store.iter_unstaged(REINDEX_BATCH, record.dimension):
                vectors = _embedded(embedder, batch, identity.sees_everything)
                store.stage_vectors([d.rowid for d in batch], vectors, first=False)
                filled += len(batch)
            audit = _audit(
                identity, door, "reindex", embedder=record.name, dimension=record.dimension
            )
            answer["vectors"] = store.commit_vectors(record, audit)
            answer["filled"] = filled
        answer["seconds"] = round(time.perf_counter() - started, 3)
        return answer

    return await anyio.to_thread.run_sync(work, limiter=_INGEST)


def _embedded(embedder: Embeds, drawers: list[Drawer], full: bool) -> np.ndarray:
    """The drawers' vectors; an embedder failing stops the reindex with its message, as
    an unavailable dependency (503): nothing is swapped in, so search keeps the vectors
    it had. The message is the public one unless `full` (a caller who may read every
    drawer): an upstream's answer may quote the drawers sent, hidden ones included."""
    try:
        return embedder.embed([d.content for d in drawers])
    except EmbedderError as error:
        said = str(error) if full else error.public
        raise ProtocolError(
            ErrorCode.WORKSPACE_UNAVAILABLE,
            f"reindex stopped, the embedder failed: {said}; the old vectors stay in use",
            {"embedder": embedder.name, "embedder_error": said},
        ) from None
