"""Recall operations for every door: ingest, search (one or many workspaces), status,
wake-up and the watcher; delete, purge, taxonomy and reindex are in recall_admin
(and reachable from here by their names).

Checks scopes and grants first, hides drawers whose `readers` exclude the caller's
roles, runs the recall engine in worker threads and returns plain data. A caller
never learns anything about a workspace it has no grant for: searches span only the
caller's workspaces, and tunnel hints name only those.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
import structlog

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.recall import (
    BINARY,
    CLAUDE_TOOL_RESULTS,
    HEAD_BYTES,
    MISSING,
    NOT_REGULAR,
    SKIP_DIRS,
    UNREADABLE,
    IngestRequest,
    NotRegular,
    SearchRequest,
    SourceFile,
    looks_binary,
    read_regular,
    read_text,
    skipped_directory,
)
from memhub_protocol.routes import WAKE_UP_MIN_BUDGET
from memhub_protocol.scopes import ADMIN, READ_SEARCH, READ_SUMMARY, REVIEW, WRITE_RECALL
from memhubd.auth.identity import Identity
from memhubd.auth.tokens import WATCHER_NAME
from memhubd.recall import aaak
from memhubd.recall.embed import EmbedderError
from memhubd.recall.ids import DEFAULT_ROOM
from memhubd.recall.ingest import IngestOptions, LockTimeout, SourceReport
from memhubd.recall.search import Hit, search
from memhubd.recall.shelf import RecallShelf
from memhubd.recall.signals import analyze
from memhubd.recall.store import AuditEntry, DrawerFilter, IndexWarming
from memhubd.recall.uploads import PartError, TooLarge
from memhubd.runtime.hub import Hub
from memhubd.service.access import (
    CHUNK_READERS,
    check_length,
    host_for,
    require_scope,
    state_database_failure,
    visible_workspaces,
)
from memhubd.service.cowork import note_search
from memhubd.service.graph import tunnel_workspaces

log = structlog.get_logger("memhubd.service.recall")

RESULT_SCHEMA = "memhub.recall.search.v1"
INGEST_SCHEMA = "memhub.recall.ingest.v1"
STATUS_SCHEMA = "memhub.recall.status.v1"
WAKE_UP_SCHEMA = "memhub.recall.wake_up.v1"
MAX_NAME = 200
WAKE_UP_LIMIT = 50
WAKE_UP_BUDGET = 4000
WAKE_UP_CUT = 200
# How the JSON API reads one drawer whole, as wake-up's text points to it.
WAKE_UP_READ_WHOLE = "GET /v1/workspaces/{workspace}/recall/drawers/<drawer_id>"
MAP_HEADER_LINES = 12
# The status of a file part kept until its upload's last part (not yet a file).
PART_RECEIVED = "part_received"
FORMATS = ("json", "aaak")
WAKE_UP_FORMATS = ("text", "aaak")
COMPRESS_SCHEMA = "memhub.recall.compress.v1"
# Ingest runs beside searches, not instead of them: one ingest thread at a time.
_INGEST = anyio.CapacityLimiter(1)
_SEARCH = anyio.CapacityLimiter(4)
# Reads that never wait on the embedder (status, wake-up, a drawer, taxonomy, compress):
# apart from the search slots, which an embedder that hangs can hold for its timeout.
_READ = anyio.CapacityLimiter(4)
# Looks at whether a store's BM25 index is ready (quick; apart from the search slots).
_PROBE = anyio.CapacityLimiter(2)
# How long a search by a caller of limited roles waits for an index being built: with
# the store's own short wait, well within memctl's default 30 s timeout, so that a
# client sees the 503 `index_building` rather than a timeout that suggests a write.
LEXICAL_WAIT_S = 20.0


def shelf_of(hub: Hub) -> RecallShelf:
    shelf = getattr(hub, "recall", None)
    if shelf is None:
        raise ProtocolError(ErrorCode.INTERNAL, "recall is not running in this daemon")
    return shelf


def _private_role(name: str) -> str:
    from memhubd.service.diary import private_role  # it imports this module

    return private_role(name)


def _roles(identity: Identity) -> frozenset[str] | None:
    if identity.sees_everything:
        return None
    # A writer reads its own private diary entries wherever drawers are read.
    return identity.roles | {_private_role(identity.name)}


def _visible(identity: Identity, readers: tuple[str, ...] | None) -> bool:
    roles = _roles(identity)
    return roles is None or readers is None or not roles.isdisjoint(readers)


def _name(value: str | None, field: str) -> str | None:
    if value is not None and (not value.strip() or len(value) > MAX_NAME):
        raise ProtocolError(
            ErrorCode.INVALID, f"'{field}' must be 1 to {MAX_NAME} characters", {"field": field}
        )
    return value.strip() if value is not None else None


def _audit(identity: Identity, door: str, action: str, **detail: Any) -> AuditEntry:
    return AuditEntry(identity.name, door, action, detail)


# --------------------------------------------------------------------------- ingest


async def ingest(
    hub: Hub, identity: Identity, name: str, request: IngestRequest, door: str
) -> dict[str, Any]:
    require_scope(identity, WRITE_RECALL)
    host_for(hub, identity, name)
    shelf = shelf_of(hub)
    options = IngestOptions(
        workspace=name,
        identity=identity.name,
        door=door,
        room=_name(request.room, "room"),
        importance=request.importance,
        format=request.format,
        dry_run=request.dry_run,
        readers=request.readers,
        near_duplicate=shelf.settings.near_duplicate,
        roles=_roles(identity),
        replaces_others=identity.has_scope(REVIEW) or identity.has_scope(ADMIN),
    )

    def work() -> list[SourceReport]:
        ingestor = shelf.ingestor(name)
        if request.content is not None:
            return [
                _guarded(
                    lambda: ingestor.ingest_content(request.content or "", options, request.source),
                    request.source or "content",
                )
            ]
        limit = shelf.settings.max_file_bytes
        early: dict[int, SourceReport] = {}  # reports settled before ingest
        texts: dict[int, str] = {}
        for i, upload in enumerate(request.files):
            if upload.upload is None:
                if len(upload.content.encode("utf-8")) > limit:
                    early[i] = SourceReport(upload.name, "skipped", f"larger than {limit} bytes")
                else:
                    texts[i] = upload.content
                continue
            # One caller's upload of one file into one workspace: nobody else adds to it,
            # and a part sent before the workspace was removed joins nothing after it.
            key = (name, str(shelf.incarnation(name)), identity.name, upload.upload, upload.name)
            try:
                whole = shelf.uploads.add(key, upload.part, upload.parts, upload.content)
            except TooLarge as error:  # as a whole file over the limit is
                early[i] = SourceReport(upload.name, "skipped", str(error))
                continue
            except PartError as error:
                early[i] = SourceReport(upload.name, "failed", str(error))
                continue
            if whole is None:
                early[i] = SourceReport(
                    upload.name, PART_RECEIVED, f"part {upload.part + 1} of {upload.parts}"
                )
            else:
                texts[i] = whole
        # The files go through one batch ingest: their chunks are embedded together,
        # each file still in its own transaction under its own lock.
        stored = iter(
            ingestor.ingest_texts(
                ((request.files[i].name, text) for i, text in texts.items()), options, _guarded
            )
        )
        return [early[i] if i in early else next(stored) for i in range(len(request.files))]

    reports = await anyio.to_thread.run_sync(work, limiter=_INGEST)
    return ingest_summary(name, request.dry_run, reports)


# How a failed source's reason begins, by cause: a door that answers one source alone
# (MCP `memory_ingest`) tells a retry from a text to change by it.
LOCK_FAILED = "ingest lock: "
EMBEDDER_FAILED = "embedder: "
INTERNAL_FAILED = "internal error: "


def _guarded(run: Any, source: str) -> SourceReport:
    """One source's ingest; its failure is reported, never raised into the batch, unless
    the store or its lock cannot be used: then the request is refused (503)."""
    try:
        return run()
    except LockTimeout as error:
        return SourceReport(source, "failed", f"{LOCK_FAILED}{error}")
    except Exception as error:
        log.exception("ingest failed", source=source)
        unusable = state_database_failure(error)
        if unusable is not None:
            # e.g. a read-only or full disk: the file is not at fault and every file
            # after it would fail the same. What was stored before it stays stored.
            raise unusable from error
        if isinstance(error, EmbedderError):  # its message says what to change
            return SourceReport(source, "failed", f"{EMBEDDER_FAILED}{error}")
        return SourceReport(
            source, "failed", f"{INTERNAL_FAILED}{type(error).__name__}; see the daemon log"
        )


def ingest_summary(name: str, dry_run: bool, reports: list[SourceReport]) -> dict[str, Any]:
    waits = [r.lock_wait_ms for r in reports if r.lock_wait_ms is not None]
    return {
        "schema_version": INGEST_SCHEMA,
        "workspace": name,
        "dry_run": dry_run,
        "files": sum(1 for r in reports if r.status != PART_RECEIVED),
        "chunks": sum(r.chunks for r in reports),
        "duplicates": sum(r.duplicates for r in reports),
        "replaced": sum(r.replaced for r in reports),
        "deleted": sum(r.deleted for r in reports),
        "skipped": [
            {"source": r.source, "reason": r.reason} for r in reports if r.status == "skipped"
        ],
        "failed": [
            {"source": r.source, "reason": r.reason} for r in reports if r.status == "failed"
        ],
        "near_duplicates": [n for r in reports for n in r.near_duplicates],
        "lock_wait_ms": max(waits) if waits else None,
        "sources": [r.as_dict() for r in reports],
    }


# --------------------------------------------------------------------------- search


def _search_names(
    hub: Hub, identity: Identity, name: str | None, request: SearchRequest
) -> list[str]:
    if name is not None:
        host_for(hub, identity, name)
        return [name]
    if request.workspaces:
        for requested in request.workspaces:
            host_for(hub, identity, requested)
        return list(dict.fromkeys(request.workspaces))
    return visible_workspaces(hub, identity)


async def lexical_ready(
    shelf: RecallShelf, names: Sequence[str], roles: frozenset[str] | None
) -> None:
    """Wait, holding no search slot, until each of `names`' stores can rank a caller of
    `roles` by the drawers it may read (an index being built; see `IndexWarming`), for
    at most LEXICAL_WAIT_S in all. Errors are left to the search that follows."""
    if roles is None:
        return
    deadline = anyio.current_time() + LEXICAL_WAIT_S
    for workspace in names:

        def probe(workspace: str = workspace) -> bool:
            return shelf.store(workspace).lexical_ready(roles)

        try:
            while not await anyio.to_thread.run_sync(probe, limiter=_PROBE):
                if anyio.current_time() >= deadline:
                    return
                await anyio.sleep(0.1)
        except Exception:  # noqa: BLE001 - the search names the store's failure
            return


@contextlib.contextmanager
def index_warming(workspace: str) -> Iterator[None]:
    """`IndexWarming` as the caller's answer: 503, retry shortly."""
    try:
        yield
    except IndexWarming:
        raise ProtocolError(
            ErrorCode.WORKSPACE_UNAVAILABLE,
            f"workspace '{workspace}': its recall search index is being built; retry in a "
            "few seconds",
            {"workspace": workspace, "status": "index_building"},
        ) from None


def _format(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ProtocolError(
            ErrorCode.INVALID, f"'format' must be one of {', '.join(allowed)}", {"field": "format"}
        )
    return value


async def search_recall(
    hub: Hub, identity: Identity, name: str | None, request: SearchRequest, fmt: str = "json"
) -> dict[str, Any]:
    """Search one workspace (`name`), the ones the request names, or every one the
    caller may use; hits are merged by fused score. Every hit carries mempal's
    structured signals; `fmt="aaak"` adds the hits as one AAAK document."""
    require_scope(identity, READ_SEARCH)
    _format(fmt, FORMATS)
    check_length(hub, "query", request.query)
    names = _search_names(hub, identity, name, request)
    shelf = shelf_of(hub)
    roles = _roles(identity)
    where = DrawerFilter(
        rooms=request.rooms,
        source_kinds=request.source_kinds,
        since=request.since,
        until=request.until,
        identities=request.identities,
        roles=roles,
    )
    every = visible_workspaces(hub, identity)
    route = _route(name, request)
    await lexical_ready(shelf, names, roles)

    def work() -> tuple[dict[str, Any], dict[str, int | None]]:
        started = time.perf_counter()
        # Made once for every workspace: asked again, a failing embedder would only
        # fail (or time out) once more per workspace.
        embedder, vector, unavailable = query_vector(shelf, request.query)
        warnings: list[str] = [unavailable] if unavailable else []
        merged: list[tuple[str, Hit]] = []
        boosted: dict[str, list[str]] = {}
        terms: list[str] = []
        # Hits per workspace for partner peek, each as that workspace alone gave them
        # (a peer granted only some of the workspaces must not learn from a count that
        # the others' hits took places), the caller's private diary entries left out: a
        # peer holding the same roles would not see them. Where one took a place in a
        # workspace's hits cut at `limit`, a peer could have found more than are left:
        # the count is then not told (None).
        private = _private_role(identity.name)
        counted: dict[str, int | None] = {}
        for workspace in names:
            with index_warming(workspace):
                result = search(
                    shelf.store(workspace),
                    embedder,
                    request.query,
                    where,
                    request.limit,
                    shelf.settings.weights,
                    query_vector=vector,
                )
            terms = result.terms
            warnings.extend(w for w in result.warnings if w not in warnings)
            boosted.update(result.boosted_rooms)
            merged.extend((workspace, hit) for hit in result.hits)
            mine = [
                h
                for h in result.hits
                if h.drawer.readers is None or private not in h.drawer.readers
            ]
            cut = len(result.hits) >= request.limit
            counted[workspace] = None if cut and len(mine) < len(result.hits) else len(mine)
        merged.sort(key=lambda item: (-item[1].fused, item[0], item[1].drawer.rowid))
        merged = merged[: request.limit]
        # One definition of a tunnel for hints and `tunnels` (recall rooms, modules,
        # entities; never the fallback room), over the caller's workspaces only.
        rooms = {hit.drawer.room for _w, hit in merged}
        tunnels = tunnel_workspaces(hub, identity, every, rooms)
        hits = []
        for workspace, hit in merged:
            data = hit.as_dict()
            if roles is not None and "bm25" in data["signals"]:
                # BM25 weighs a term by how many drawers hold it, hidden ones included:
                # its raw score would tell this caller whether hidden drawers use a word.
                data["signals"]["bm25"]["score"] = None
            data["workspace"] = workspace
            data["wing"] = workspace  # mempal's name for it
            if not (data.get("source_file") or "").strip():
                data["source_file"] = f"mempal://drawer/{hit.drawer.id}"
            data["citation"] = _citation(hit)
            data["route"] = route
            data["tunnel_hints"] = sorted(
                w for w in tunnels.get(hit.drawer.room, ()) if w != workspace
            )
            data.update(analyze(hit.drawer.content).as_dict())
            if request.max_chars is not None:
                data.update(_cut_content(hit.drawer.content, request.max_chars))
            hits.append(data)
        answer = {
            "schema_version": RESULT_SCHEMA,
            "query": request.query,
            "terms": terms,
            "workspaces": names,
            "boosted_rooms": boosted,
            "warnings": warnings,
            "hits": hits,
            "took_ms": round((time.perf_counter() - started) * 1000, 2),
        } | ({"aaak": _aaak_hits(names, merged, request.max_chars)} if fmt == "aaak" else {})
        return answer, counted

    data, counted = await anyio.to_thread.run_sync(work, limiter=_SEARCH)
    note_search(hub, identity, counted, request.query)
    return data


def _route(name: str | None, request: SearchRequest) -> dict[str, Any]:
    """mempal's route object: the filters that restricted the search. Only explicit ones
    do here; the taxonomy's rooms boost and never filter (`boosted_rooms`). `wing` and
    `room` are set when the search was held to one; `reason` names every filter."""
    rooms, named = request.rooms, request.workspaces
    wing = name or (named[0] if named and len(named) == 1 else None)
    room = rooms[0] if rooms and len(rooms) == 1 else None
    # mempal's scope first (`wing/room`, `wing` or `room=<room>`), then the rest.
    scope = "/".join(part for part in (wing, room) if part) if wing else ""
    filters = [scope] if scope else []
    if named and not wing:
        filters.append(f"workspaces={','.join(named)}")
    if rooms and not (wing and room):
        filters.append(f"room={','.join(rooms)}")
    for label, values in (("source_kind", request.source_kinds), ("identity", request.identities)):
        if values:
            filters.append(f"{label}={','.join(values)}")
    if request.since is not None:
        filters.append(f"since={request.since}")
    if request.until is not None:
        filters.append(f"until={request.until}")
    if filters:
        reason = f"explicit filters provided: {' '.join(filters)}"
        return {"wing": wing, "room": room, "confidence": 1.0, "reason": reason}
    reason = "no explicit filters: every room searched, taxonomy matches boosted"
    return {"wing": None, "room": None, "confidence": 0.0, "reason": reason}


def _cut_content(content: str, max_chars: int) -> dict[str, Any]:
    """A hit's content held to `max_chars` characters (code points: a cut never splits
    one, though it may part a letter from its combining mark), and whether it was cut.
    Its signals were read from the whole; the drawer id reads the whole again."""
    return {
        "content": content[:max_chars],
        "content_truncated": len(content) > max_chars,
        "content_chars": len(content),
    }


def _aaak_hits(names: list[str], merged: list[tuple[str, Hit]], max_chars: int | None) -> str:
    """The hits as one AAAK document, one zettel per hit in rank order; each hit's quote
    cut to `max_chars` as its content is (AAAK quotes a text whole), its signals read
    from the whole content as the JSON hit's are."""
    wing = merged[0][0] if merged else ",".join(names)
    room = merged[0][1].drawer.room if merged else DEFAULT_ROOM
    texts = [hit.drawer.content for _w, hit in merged] or ["memhub search: no results"]
    date = str(int(time.time()))
    return aaak.encode_many(texts, wing, room, date, "search", quote_chars=max_chars).document


async def compress(hub: Hub, identity: Identity, text: str) -> dict[str, Any]:
    """mempal's `compress`: `text` as one AAAK zettel (nothing is stored or read).
    At most `limits.max_query_chars` characters, as a query: the check that every
    sentence survives costs sentences x text."""
    require_scope(identity, READ_SUMMARY)
    if not text.strip():
        raise ProtocolError(ErrorCode.INVALID, "'text' must not be empty", {"field": "text"})
    check_length(hub, "text", text)

    def work() -> dict[str, Any]:
        encoded = aaak.encode(text, "manual", "compress", str(int(time.time())), "cli")
        return {
            "schema_version": COMPRESS_SCHEMA,
            "document": encoded.document,
            "report": encoded.report.as_dict(),
        }

    return await anyio.to_thread.run_sync(work, limiter=_READ)


def query_vector(shelf: RecallShelf, query: str) -> tuple[Any, Any, str | None]:
    """The embedder for a query, its vector, and a warning when vector search is not
    available (then BM25 alone: the embedder and vector are None). The vector is made
    once for every round or workspace a search goes through; an embedder that failed
    lately is not asked (`RecallShelf.query_embedder`). A failure of this query's own
    embedding is told in full (its text is the caller's), a shared one publicly."""
    embedder = shelf.query_embedder()
    if embedder is None:
        error = shelf.embedder_error
        return None, None, f"vector search unavailable: {error}" if error else None
    try:
        return embedder, embedder.embed([query])[0], None
    except Exception as error:
        log.info("query embedding failed", error=str(error))
        return None, None, f"vector search unavailable: {error}"


def _citation(hit: Hit) -> str:
    drawer = hit.drawer
    source = (
        drawer.source_file if (drawer.source_file or "").strip() else f"mempal://drawer/{drawer.id}"
    )
    return f"{source} ({drawer.locator})" if drawer.locator else source


# --------------------------------------------------------------------------- status, wake-up


async def status(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    host_for(hub, identity, name)
    shelf = shelf_of(hub)
    roles = _roles(identity)

    def work() -> dict[str, Any]:
        store = shelf.store(name)
        # Every count read at one moment, the caller's own beside the whole store's
        # live total: only the documented `hidden_count` tells of drawers hidden from it.
        state = store.status(DrawerFilter(roles=roles) if roles is not None else None)
        rooms = dict(state.rooms)
        visible = sum(rooms.values())
        deleted, vectors = state.deleted_count, state.vector_count
        # Never loads nor retries the embedder: status answers at once whatever the
        # model server does. Before its first use (a search or a write) none has run.
        embedder = shelf.loaded_embedder
        failure = shelf.embedder_failure
        stored = state.embedder
        running = {"name": embedder.name, "dimension": embedder.dimension} if embedder else None
        return {
            "schema_version": STATUS_SCHEMA,
            "workspace": name,
            "store_schema_version": state.schema_version,
            "drawer_count": visible,
            "hidden_count": state.drawer_count - visible,
            "deleted_count": deleted,
            "vector_count": vectors,
            "rooms": [
                {"room": room, "drawer_count": count} for room, count in sorted(rooms.items())
            ],
            "taxonomy_count": state.taxonomy_count,
            "vectors_embedder": (
                {"name": stored.name, "dimension": stored.dimension} if stored else None
            ),
            "embedder": running,
            "embedder_pending": shelf.settings.vectors and not shelf.embedder_tried,
            # Why the embedder cannot load, or its last call's failure until one succeeds:
            # one record for every workspace and caller, so its public form only (the
            # full message may quote another caller's texts) ...
            "embedder_error": failure.public if failure else None,
            # ... and when only to an admin of every workspace: it would tell others
            # when someone searched or wrote where they cannot look.
            "embedder_failed_at": failure.at if failure and _sees_all_activity(identity) else None,
            "vectors_usable": bool(
                embedder
                and failure is None
                and stored
                and (stored.name, stored.dimension) == (embedder.name, embedder.dimension)
            ),
            # Live drawers with no vector (stored while the embedder failed or differed
            # from the store's): a reindex gives them one. None when vectors are off.
            "vectors_missing": visible - vectors if shelf.settings.vectors else None,
            "db_size_bytes": state.db_size_bytes,
            "wal_size_bytes": state.wal_size_bytes,
        }

    return await anyio.to_thread.run_sync(work, limiter=_READ)


def _sees_all_activity(identity: Identity) -> bool:
    """An admin of every workspace, who may learn when any of them was used."""
    return identity.has_scope(ADMIN) and identity.manages_all_workspaces


def _identity_text(shelf: RecallShelf, name: str) -> str | None:
    for path in (shelf.directory / "identity" / f"{name}.txt", shelf.directory / "identity.txt"):
        try:
            return path.read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as error:
            log.warning("identity text unreadable", path=str(path), error=str(error))
    return None


async def wake_up(
    hub: Hub,
    identity: Identity,
    name: str,
    limit: int = 5,
    budget: int = WAKE_UP_BUDGET,
    fmt: str = "text",
    read_whole: str | None = None,
) -> dict[str, Any]:
    """A bounded context refresh: identity text, top drawers by importance then
    recency, and the governed memory map's header, within `budget` characters.
    `fmt="aaak"`: `text` is instead the top drawers as one AAAK zettel (as mempal).
    `read_whole` is how the caller's door reads one drawer whole (by default the JSON
    API's route): the text points there, beside the summaries that stand for drawers."""
    require_scope(identity, READ_SUMMARY)
    host_for(hub, identity, name)
    _format(fmt, WAKE_UP_FORMATS)
    if not 1 <= limit <= WAKE_UP_LIMIT:
        raise ProtocolError(
            ErrorCode.INVALID, f"'limit' must be 1 to {WAKE_UP_LIMIT}", {"field": "limit"}
        )
    if budget < WAKE_UP_MIN_BUDGET:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"'budget' must be at least {WAKE_UP_MIN_BUDGET} characters",
            {"field": "budget"},
        )
    shelf = shelf_of(hub)
    header = await _map_header(hub, identity, name)
    roles = _roles(identity)

    def work() -> dict[str, Any]:
        drawers = shelf.store(name).top(DrawerFilter(roles=roles), limit)
        ident = _identity_text(shelf, name)
        lines = [
            "## Identity",
            # The state directory's path is the operator's business, not every reader's.
            ident or f"(no identity text: write <state dir>/recall/identity/{name}.txt)",
        ]
        lines += ["", f"## Recent recall ({name})"]
        items = []
        ends = []  # where each drawer's first line ends in the text
        for drawer in drawers:
            summary = " ".join(drawer.content.split())
            if len(summary) > WAKE_UP_CUT:
                summary = summary[:WAKE_UP_CUT] + "..."
            first = f"- {drawer.room} {drawer.id} (importance {drawer.importance})"
            ends.append(sum(len(line) + 1 for line in lines) + len(first))
            lines += [first, f"  source: {drawer.source_file}", f"  {summary}"]
            # Bounded like the text: the summary stands for the content (read a drawer
            # whole by its id, as the text says how), so a wake-up never carries whole
            # drawers.
            item = drawer.as_dict()
            del item["content"]
            items.append({**item, "summary": summary})
        how = read_whole or WAKE_UP_READ_WHOLE.format(workspace=name)
        pointer = f"(summaries; read a drawer whole: {how})"
        # After the drawers, so a small budget still shows them; told whole or not at
        # all, since a pointer cut short points nowhere.
        if drawers and sum(len(line) + 1 for line in lines) + len(pointer) <= budget - 3:
            lines.append(pointer)
        if not drawers:
            lines.append("no recent drawers")
        if header:
            lines += ["", "## Governed memory", header]
        text = "\n".join(lines)
        truncated = len(text) > budget
        if fmt == "aaak":
            text, truncated = _aaak_wake_up(name, drawers), False
        elif truncated:
            text = text[: budget - 3].rstrip() + "..."
            # `drawers` lists the drawers the text shows (its first line whole), no others.
            shown = len(text) - 3
            items = [item for item, end in zip(items, ends, strict=True) if end <= shown]
        return {
            "schema_version": WAKE_UP_SCHEMA,
            "workspace": name,
            "identity_text": ident,
            "drawers": items,
            "memory_map_header": header,
            "text": text,
            "truncated": truncated,
            "estimated_tokens": len(text.split()),
            "read_whole": how,
        }

    return await anyio.to_thread.run_sync(work, limiter=_READ)


def _aaak_wake_up(name: str, drawers: list[Any]) -> str:
    """mempal's wake-up in AAAK: the drawers' contents joined into one zettel."""
    joined = " ".join(d.content for d in drawers) or "memhub wake-up: no recent drawers"
    room = drawers[0].room if drawers else DEFAULT_ROOM
    return aaak.encode(joined, name, room, str(int(time.time())), "wake-up").document


async def _map_header(hub: Hub, identity: Identity, name: str) -> str | None:
    from memhubd.service.reads import memory_map

    try:
        _data, text = await memory_map(hub, identity, name)
    except ProtocolError:
        return None  # not loaded yet, or nothing the caller may see: recall still answers
    return "\n".join(text.splitlines()[:MAP_HEADER_LINES])


# --------------------------------------------------------------------------- lifecycle


async def get_drawer(hub: Hub, identity: Identity, name: str, drawer_id: str) -> dict[str, Any]:
    require_scope(identity, READ_SEARCH)
    host_for(hub, identity, name)
    shelf = shelf_of(hub)
    drawer = await anyio.to_thread.run_sync(shelf.store(name).get_by_id, drawer_id, limiter=_READ)
    if drawer is None or not _visible(identity, drawer.readers):
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"no drawer '{drawer_id}'", {"drawer_id": drawer_id}
        )
    return {"workspace": name, "drawer": drawer.as_dict()}


def open_shelf(directory: Any, config: Any) -> RecallShelf:
    """The daemon's recall shelf from `[recall]` (memhubd.runtime.config.RecallConfig)."""
    from memhubd.recall.embed import EmbedderSettings
    from memhubd.recall.shelf import RecallSettings

    embedder = None
    if config.embedder != "none":
        embedder = EmbedderSettings(
            kind=config.embedder,
            url=config.embedder_url,
            model=config.embedder_model,
            dimension=config.embedder_dimension,
            api_key_env=config.embedder_api_key_env,
            timeout_s=config.embedder_timeout_s,
        )
    settings = RecallSettings(
        embedder=embedder,
        vectors=embedder is not None,
        max_file_bytes=config.max_file_bytes,
        near_duplicate=config.near_duplicate,
        lock_timeout_s=config.lock_timeout_s,
    )
    return RecallShelf(directory, settings)


# --------------------------------------------------------------------------- watching

WATCHER = WATCHER_NAME  # a reserved token name: no token may write as the watcher
WATCH_DEBOUNCE_MS = 200
# How often a watch without events checks that its directory is still the same one,
# and how often a missing directory is looked for again.
WATCH_ROOT_CHECK_S = 1.0
# The longest wait between tries of a watched directory's full ingest that keeps failing.
WATCH_RETRY_AT_MOST_S = 300.0
# The longest wait between tries of a watched file whose ingest keeps failing for a
# reason that may pass (the first try again is after WATCH_ROOT_CHECK_S, then twice as
# long each time): one file costs little to try.
WATCH_FILE_RETRY_AT_MOST_S = 60.0
# A watched batch holds the daemon-wide ingest slot for at most this many sources, or
# about this many seconds (one file may take longer), before others have their turn.
WATCH_SLICE_SOURCES = 256
WATCH_SLICE_S = 0.5


def _complete_lines(text: str) -> str:
    """What of a watched file to ingest now. A JSONL transcript being appended may end
    in half a line: that is left for later. A JSON document with no final newline (as
    `json.dump` writes one) is whole once it parses, and nothing until then."""
    if not text.lstrip().startswith("{") or text.endswith("\n"):
        return text
    cut = text.rfind("\n") + 1
    if _parses(text[cut:]) or _parses(text):
        return text  # a whole last line, or a whole document
    first = text[: text.find("\n")] if cut else text
    if cut and _parses(first):
        return text[:cut]  # lines of JSON: the last one is still being written
    return ""  # a document still being written


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class _WatchFilter:
    """Which paths under a watched directory are transcripts to follow, for the events
    and the full scans alike: not what watchfiles' default filter leaves out (editor
    swap and backup files, tool directories), not below a directory the ingest walk
    skips, and not a file still being downloaded or written under a temporary name,
    whose drawers would cite a name that is about to go."""

    TEMPORARY = re.compile(r"\.(tmp|temp|part|partial|crdownload|download)$|~$", re.IGNORECASE)

    def __init__(self, root: str) -> None:
        from watchfiles import DefaultFilter

        self.root = os.path.abspath(root)
        self.default = DefaultFilter()

    def __call__(self, change: Any, path: str) -> bool:
        below = os.path.relpath(path, self.root).split(os.sep)
        if any(part in SKIP_DIRS for part in below[:-1]):
            return False
        # A Claude Code session's `tool-results`, itself (moved in whole) or what is in it.
        for depth, part in enumerate(below):
            if part == CLAUDE_TOOL_RESULTS and skipped_directory(
                os.path.join(self.root, *below[: depth + 1])
            ):
                return False
        return self.default(change, path) and not self.TEMPORARY.search(below[-1])


@dataclass(frozen=True, slots=True)
class WatchedFile:
    """What one ingest of a watched file did: its report, the file's (size, mtime) as
    it was read, and whether its failure may pass when the file is tried again as it
    is (the source's lock held elsewhere, the store locked, full or not writable for a
    while, the file unreadable) rather than only when it changes."""

    path: str
    report: SourceReport
    seen: tuple[int, int]
    passing: bool = False


def ingest_watched(
    shelf: RecallShelf, name: str, root: str, paths: list[str] | None
) -> list[WatchedFile]:
    """Ingest `paths` under a watched directory `root` (all of it when None), in one go
    (the watch takes a `_WatchedBatch` in slices instead).

    Sources are cited as `<root's name>/<path below root>`; an unchanged file costs a
    read and a comparison, so this is safe to repeat on every event. A failure that a
    retry would not change (the file refused for its content) is logged here; one that
    may pass is left to the caller, which tries the file again. Raises `StoreClosed`
    when the store is closed under it: the rest is not tried.
    """
    return _WatchedBatch(shelf, name, root, paths).take()


class _WatchedBatch:
    """One ingest of files under a watched directory (see `ingest_watched`), taken a
    slice at a time so that the watch can let go of the daemon-wide ingest slot between
    slices. Its methods block: they run in a worker thread, one at a time."""

    def __init__(self, shelf: RecallShelf, name: str, root: str, paths: list[str] | None) -> None:
        self.shelf = shelf
        self.name = name
        self.root = root
        self.paths = paths
        self.base = Path(root)
        self.scope = _WatchScope(root)
        self.options = IngestOptions(
            workspace=name,
            identity=WATCHER,
            door="watch",
            near_duplicate=shelf.settings.near_duplicate,
            keeps_stored_readers=True,
        )
        self.ingestor: Any = None
        self.sources: Iterator[SourceFile] | None = None
        self.done = False

    def take(self, most: int | None = None, seconds: float | None = None) -> list[WatchedFile]:
        """What ingesting the next `most` sources looked at, or those of `seconds`,
        did (at least one source; all that is left when both are None)."""
        if self.sources is None:  # opening the store blocks: not in the constructor
            self.ingestor = self.shelf.ingestor(self.name)
            max_file_bytes = self.shelf.settings.max_file_bytes
            self.sources = _watched_sources(self.root, self.paths, self.scope, max_file_bytes)
        until = math.inf if seconds is None else time.monotonic() + seconds
        files = []
        for looked, source in enumerate(self.sources, 1):
            file = self._ingest(source)
            if file is not None:
                files.append(file)
            if (most is not None and looked >= most) or time.monotonic() >= until:
                return files
        self.done = True
        return files

    def _ingest(self, source: SourceFile) -> WatchedFile | None:
        # Where it is decides first: nothing outside `root` or hidden is read or logged.
        relative = self.scope.relative(source.path)
        if relative is None:
            return None
        citation = f"{self.base.name}/{relative.as_posix()}"
        seen = _seen(source.path)
        if source.skip and source.skip.startswith(UNREADABLE):
            # e.g. its mode not yet set by its writer: that may pass, so it is tried again.
            report = SourceReport(citation, "failed", source.skip)
            return WatchedFile(source.path, report, seen, passing=True)
        if source.skip == MISSING:
            return None  # gone since the event: nothing to ingest, nothing to try again
        if source.skip:  # a binary file too: the walk reads a stray byte as text already
            _skipped_once(source.path, source.skip)
            return None
        try:
            # Judged again on what is read: the file may have been replaced (by a FIFO,
            # whose open would wait for a writer) or have grown since the walk.
            data = read_regular(source.path, self.shelf.settings.max_file_bytes)
        except NotRegular as skipped:
            _skipped_once(source.path, skipped.reason)
            return None
        except FileNotFoundError:
            return None  # gone since the walk: nothing to ingest, nothing to try again
        except OSError as error:
            report = SourceReport(citation, "failed", f"{UNREADABLE}: {error.strerror or error}")
            return WatchedFile(source.path, report, seen, passing=True)
        if looks_binary(data[:HEAD_BYTES]):
            _skipped_once(source.path, BINARY)
            return None
        # As the session-end hook reads a transcript: a byte that is not UTF-8 (or a
        # character cut by a write in progress) is read as U+FFFD, not refused.
        text = _complete_lines(read_text(data))
        if not text.strip():
            return None
        report, passing = _ingest_file(self.ingestor, citation, text, self.options)
        if report.status == "failed" and not passing:
            log.warning("watched file not ingested", source=citation, reason=report.reason)
        elif report.status == "skipped":  # e.g. JSON in no format it knows, logged as a binary is
            _skipped_once(source.path, report.reason)
        return WatchedFile(source.path, report, seen, passing)


class _WatchScope:
    """Whether a path is one the watch of `root` follows: below `root`'s real path by
    its directories (a link found there is judged where it is, not where it points),
    not hidden, and kept by `_WatchFilter`."""

    def __init__(self, root: str) -> None:
        from watchfiles import Change

        self.added = Change.added
        self.real_root = Path(os.path.realpath(root))
        self.keep = _WatchFilter(root)

    def relative(self, path: str) -> PurePosixPath | None:
        """`path` below the root, or None when the watch does not follow it."""
        if not self.keep(self.added, path):
            return None
        where = Path(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        try:
            relative = where.relative_to(self.real_root)
        except ValueError:
            return None
        if any(part.startswith(".") for part in relative.parts):
            return None
        return PurePosixPath(*relative.parts)


def _watched_sources(
    root: str, paths: list[str] | None, scope: _WatchScope, max_file_bytes: int
) -> Iterator[SourceFile]:
    """The files of `root` (all of it when `paths` is None), or those changed and the
    directories moved or copied in whole, walked as the start's scan walks `root`: a
    symlink is never followed (one to a directory is not entered, one to anything else
    is no regular file), and nothing is walked that the watch does not follow."""
    from memhub_protocol.recall import walk_sources

    if paths is None:
        yield from walk_sources([root], max_file_bytes)
        return
    for path in paths:
        if scope.relative(path) is None:
            continue
        if os.path.islink(path):
            if not os.path.isdir(path):
                yield SourceFile(path, os.path.basename(path), NOT_REGULAR)
        elif os.path.exists(path):
            yield from walk_sources([path], max_file_bytes)


class StoreClosed(Exception):
    """The store a watched batch writes to was closed under it: its workspace removed,
    or the daemon stopping (SQLite's ProgrammingError, a closed connection)."""


def _ingest_file(
    ingestor: Any, citation: str, text: str, options: IngestOptions
) -> tuple[SourceReport, bool]:
    """One watched file's ingest: its report, and whether its failure may pass (see
    `WatchedFile`). A failure is reported, as `ingest` reports it; raises only
    `StoreClosed`, for which every later file of the batch would fail alike."""
    import sqlite3

    from memhubd.sqlite import UnusableDatabase

    try:
        return ingestor.ingest_text(citation, text, options), False
    except sqlite3.ProgrammingError as error:
        raise StoreClosed(str(error)) from error
    except LockTimeout as error:
        return SourceReport(citation, "failed", f"ingest lock: {error}"), True
    except (OSError, sqlite3.Error, UnusableDatabase) as error:
        # Logged by the caller once when the file starts failing, not on every try.
        return SourceReport(citation, "failed", f"{type(error).__name__}: {error}"), True
    except Exception as error:
        log.exception("ingest failed", source=citation)
        return SourceReport(citation, "failed", f"internal error: {type(error).__name__}"), False


def _seen(path: str) -> tuple[int, int]:
    """(size, mtime in ns) of `path`; (-1, -1) when it cannot be read."""
    try:
        info = os.stat(path)
    except OSError:
        return (-1, -1)
    return (info.st_size, info.st_mtime_ns)


# Skipped watched files already logged, by path, with the reason and size then: a
# file is logged again only when either changes. Bounded: the oldest are forgotten.
_SKIPS_LOGGED: dict[str, tuple[str, int]] = {}
_SKIPS_LOCK = threading.Lock()  # watched ingests run in worker threads
SKIPS_REMEMBERED = 4096


def _skipped_once(path: str, reason: str) -> None:
    try:
        size = os.path.getsize(path)
    except OSError:
        size = -1
    with _SKIPS_LOCK:
        if _SKIPS_LOGGED.get(path) == (reason, size):
            return
        _SKIPS_LOGGED.pop(path, None)
        _SKIPS_LOGGED[path] = (reason, size)
        while len(_SKIPS_LOGGED) > SKIPS_REMEMBERED:
            del _SKIPS_LOGGED[next(iter(_SKIPS_LOGGED))]
    log.info("watched file skipped", path=path, reason=reason)


@contextlib.asynccontextmanager
async def watching(hub: Hub, watched: dict[str, tuple[str, ...]]) -> AsyncIterator[None]:
    """Watch each workspace's transcript directories for the duration of the block:
    a first full scan, then every created or modified file within about a second."""
    async with anyio.create_task_group() as group:
        for name, roots in watched.items():
            for root in roots:
                group.start_soon(_watch_one, hub, name, root)
        try:
            yield
        finally:
            group.cancel_scope.cancel()


async def _watch_one(hub: Hub, name: str, root: str) -> None:
    """Follow one watched directory for as long as the daemon runs, through its absence
    (warned about once, then looked for every `WATCH_ROOT_CHECK_S`), deletion,
    replacement and recreation: each time a watch is armed on it, all it holds is
    ingested, as at start (unchanged files cost a read and a comparison)."""
    shelf = shelf_of(hub)
    # The configured workspace this directory is watched for. Once it is removed the
    # watch ends: a workspace added later under its name is another one.
    host = hub.hosts.get(name)
    missing = False  # its absence was warned about, and it has not come back since
    failing = False  # arming a watch failed, and no watch was armed since
    poller: _Poller | None = None  # what follows it while no watch can be armed
    rearm = WATCH_ROOT_CHECK_S * 5  # the wait before the next try to arm a watch
    while True:
        host = _served_as(hub, name, host)
        if host is None:
            log.info("workspace removed: its transcript directory is no longer watched",
                     workspace=name, path=root)  # fmt: skip
            return
        identity = _directory_identity(root)
        if identity is None:
            if not missing:
                log.warning("watched transcript directory is missing", workspace=name, path=root)
                missing = True
            await anyio.sleep(WATCH_ROOT_CHECK_S)
            continue
        if missing:
            log.info("watched transcript directory appeared", workspace=name, path=root)
            missing = False
        try:
            gone = await _follow(hub, shelf, name, root, identity, host)
            failing, poller, rearm = False, None, WATCH_ROOT_CHECK_S * 5
        except FileNotFoundError:
            await anyio.sleep(0.1)  # it vanished as the watch was armed: look again
            continue
        except Exception as error:
            # e.g. the inotify watch limit, or a subdirectory it may not read: polled
            # meanwhile and tried again ever less often, said once. Whatever it is, one
            # directory's watch never ends the daemon's other work.
            if not failing:
                from memhubd.runtime.watcher import first_error

                log.error(
                    "watching transcripts failed: polled until a watch can be armed",
                    workspace=name,
                    path=root,
                    error=first_error(error),  # not the task group's wrapper
                )
                failing = True
            if poller is None or poller.identity != identity:
                poller = _Poller(name, root, identity)
            await _poll(hub, shelf, poller, host, rearm)
            rearm = min(rearm * 2, WATCH_RETRY_AT_MOST_S)
            continue
        if not gone:  # the watch was stopped: the daemon is stopping
            await anyio.lowlevel.checkpoint()
            continue
        # Deleted or replaced: its watch went deaf. Arm one on whatever is there now.
        log.info("watched transcript directory was deleted or replaced", workspace=name, path=root)


class _Poller:
    """What follows a watched directory while no watch can be armed on it: the (size,
    mtime) of each file the watch would follow, looked at every WATCH_ROOT_CHECK_S.
    Its first look ingests all of the directory, as a start's scan does; a subdirectory
    it cannot read is left out, logged once."""

    def __init__(self, name: str, root: str, identity: tuple[int, int]) -> None:
        self.name = name
        self.root = root
        self.identity = identity
        self.seen: dict[str, tuple[int, int]] = {}
        self.full = True  # the whole directory, until one such ingest went through
        # A full ingest that failed is tried again ever less often, as a watch's is.
        self.retry_at, self.delay = 0.0, WATCH_ROOT_CHECK_S
        self.retries = _Retries(name, root)
        self.unreadable: set[str] = set()

    def failed(self) -> None:
        """The directory is to be ingested in full again, later each time it fails."""
        self.full, self.retry_at = True, time.monotonic() + self.delay
        self.delay = min(self.delay * 2, WATCH_RETRY_AT_MOST_S)

    def changed(self) -> list[str]:
        """The files created or modified since the last look (a blocking walk)."""
        now: dict[str, tuple[int, int]] = {}
        for directory, dirs, files in os.walk(self.root, onerror=self._unreadable):
            dirs[:] = [d for d in dirs if not skipped_directory(os.path.join(directory, d))]
            for file in files:
                path = os.path.join(directory, file)
                seen = _seen(path)
                if seen != (-1, -1):
                    now[path] = seen
        changed = sorted(p for p, seen in now.items() if self.seen.get(p) != seen)
        self.seen = now
        return changed

    def _unreadable(self, error: OSError) -> None:
        if error.filename not in self.unreadable:
            self.unreadable.add(error.filename)
            log.info(
                "watched subdirectory skipped",
                workspace=self.name,
                path=error.filename,
                reason=f"{UNREADABLE}: {error.strerror}",
            )


async def _poll(hub: Hub, shelf: RecallShelf, poller: _Poller, host: Any, seconds: float) -> None:
    """Follow `poller`'s directory for `seconds`, or until it is deleted or replaced or
    its workspace is removed (the caller then looks again)."""
    name, root = poller.name, poller.root
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if _served_as(hub, name, host) is not host or _directory_identity(root) != poller.identity:
            return
        # Looking only stats files: it runs beside ingests, not in their slot.
        changed = await anyio.to_thread.run_sync(poller.changed)
        if poller.full:
            if time.monotonic() >= poller.retry_at:
                if await _ingest_watched_batch(hub, shelf, name, root, None, poller.retries):
                    poller.full, poller.delay = False, WATCH_ROOT_CHECK_S
                else:
                    poller.failed()
        else:
            paths = sorted({*changed, *poller.retries.due(time.monotonic())})
            if paths and not await _ingest_watched_batch(
                hub, shelf, name, root, paths, poller.retries
            ):
                poller.failed()
        await anyio.sleep(WATCH_ROOT_CHECK_S)


def _served_as(hub: Hub, name: str, host: Any) -> Any:
    """The host serving the workspace `host` served, following a removal that failed
    and served it again; None once it is removed (a workspace added later under its
    name is another one)."""
    while host is not None and hub.hosts.get(name) is not host:
        host = host.succeeded_by
    return host


def _directory_identity(root: str) -> tuple[int, int] | None:
    """(device, inode) of the directory `root`; None when it is not a directory (or
    cannot be one: a path with a NUL byte, which the config refuses, raises ValueError)."""
    try:
        info = os.stat(root)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None


async def _follow(
    hub: Hub, shelf: RecallShelf, name: str, root: str, identity: tuple[int, int], host: Any
) -> bool:
    """Ingest what is created or modified under `root` until the directory is deleted
    or replaced (whose events never reach this watch), or workspace `name` is no longer
    `host` (removed), then True; False when the watch was stopped. The first wake-up after the watch is in place ingests all of `root`,
    so nothing written before it is missed."""
    from watchfiles import Change, awatch

    path = os.path.abspath(root)
    stop = anyio.Event()  # ends the watch's blocking wait within a step when cancelled
    gone = False
    failure: OSError | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(_set_when_cancelled, stop)
        try:
            changes_iter = awatch(
                path,
                stop_event=stop,
                debounce=WATCH_DEBOUNCE_MS,
                step=50,
                rust_timeout=int(WATCH_ROOT_CHECK_S * 1000),
                watch_filter=_WatchFilter(path),
                yield_on_timeout=True,  # a quiet directory is still checked every so often
                recursive=True,
            )
            async with contextlib.aclosing(changes_iter):
                full = True  # the whole directory, until one such ingest went through
                announced = False
                retry_at, delay = 0.0, WATCH_ROOT_CHECK_S
                retries = _Retries(name, root)
                async for changes in changes_iter:
                    if (Change.deleted, path) in changes or _directory_identity(root) != identity:
                        gone = True
                        break
                    if _served_as(hub, name, host) is not host:
                        gone = True  # removed, or served again: the caller looks again
                        break
                    paths = sorted({p for change, p in changes if change != Change.deleted})
                    if full:
                        if time.monotonic() < retry_at:
                            continue
                        if await _ingest_watched_batch(hub, shelf, name, root, None, retries):
                            if not announced:
                                log.info("watching transcripts", workspace=name, path=root)
                                announced = True
                            full, delay = False, WATCH_ROOT_CHECK_S
                            continue
                    else:
                        # Changed files first, then those due to be tried again (every
                        # wake-up, at least each WATCH_ROOT_CHECK_S, looks for them).
                        done = not paths or await _ingest_watched_batch(
                            hub, shelf, name, root, paths, retries
                        )
                        due = retries.due(time.monotonic())
                        if done and due:
                            done = await _ingest_watched_batch(hub, shelf, name, root, due, retries)
                        if done:
                            continue
                    # Tried again later in full, ever less often (up to 5 minutes).
                    full, retry_at = True, time.monotonic() + delay
                    delay = min(delay * 2, WATCH_RETRY_AT_MOST_S)
        except OSError as error:
            # Raised out of the task group it would come as an ExceptionGroup, which
            # the caller's retry would not catch.
            failure = error
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return gone


async def _set_when_cancelled(event: anyio.Event) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        event.set()


async def _ingest_watched_batch(
    hub: Hub,
    shelf: RecallShelf,
    name: str,
    root: str,
    paths: list[str] | None,
    retries: _Retries,
) -> bool:
    """`ingest_watched` in worker threads, a slice at a time (the ingest slot let go
    between slices), its failures that may pass left to `retries`.
    False (and logged) when the whole directory is to be ingested again instead: its
    full ingest failed, or more files are failing than `retries` holds."""
    files: list[WatchedFile] = []
    try:
        batch = _WatchedBatch(shelf, name, root, paths)
        while not batch.done:
            # The ingest slot is let go between slices: a large batch (thousands of new
            # files) would otherwise keep every other ingest, of any workspace, waiting.
            files += await anyio.to_thread.run_sync(
                batch.take, WATCH_SLICE_SOURCES, WATCH_SLICE_S, limiter=_INGEST
            )
    except StoreClosed as error:
        # Its workspace removed (the watch then ends) or the daemon stopping: every file
        # left would fail alike, and none can be tried again in this store.
        log.info(
            "watched batch abandoned: its recall store was closed",
            workspace=name,
            path=root,
            error=str(error),
        )
        return False
    except Exception as error:
        # e.g. the store could not be opened: logged (with its traceback) when it starts
        # failing so or its reason changes, not on every try of every path.
        reason = f"{type(error).__name__}: {error}"
        if reason != retries.batch_failure:
            log.exception("watched ingest failed", workspace=name, path=root)
            retries.batch_failure = reason
        if paths is None:
            return False
        files = [
            WatchedFile(p, SourceReport(p, "failed", reason), _seen(p), passing=True)
            for p in paths
            if os.path.exists(p)
        ]
    else:
        if retries.batch_failure is not None:
            log.info("watched ingest works again", workspace=name, path=root)
            retries.batch_failure = None
    added = sum(f.report.chunks for f in files)
    if added:
        # Counted per subscriber over the drawers it may read (`event_for`): a count of
        # all would tell a role-limited one of text kept from it.
        shares: dict[tuple[str, ...] | None, int] = {}
        for file in files:
            for readers in file.report.readers_written:
                shares[readers] = shares.get(readers, 0) + 1
        hub.events.publish(
            "recall_ingested",
            workspace=name,
            chunks=added,
            door="watch",
            **{CHUNK_READERS: [[list(r) if r is not None else None, n] for r, n in shares.items()]},
        )
    changed = [f.report for f in files if f.report.chunks or f.report.replaced]
    if paths is None and changed:
        # A whole directory read (at start, or again after failures): what it changed,
        # e.g. the transcripts an upgrade reads anew, told once, not per file.
        log.info(
            "watched directory ingested",
            workspace=name,
            path=root,
            files=len(changed),
            chunks=sum(r.chunks for r in changed),
            replaced=sum(r.replaced for r in changed),
        )
    return retries.settle(paths, files, time.monotonic())


# Watched files tried again, at most, per watched directory.
RETRIES_REMEMBERED = SKIPS_REMEMBERED


@dataclass(frozen=True, slots=True)
class _Retry:
    reason: str
    seen: tuple[int, int]  # the file's (size, mtime) when it last failed
    due: float  # monotonic time of the next try
    delay: float  # the wait before this try
    tries: int  # failed tries so far


class _Retries:
    """The files under one watched directory whose ingest failed for a reason that may
    pass, each tried again on the watch's wake-ups, WATCH_ROOT_CHECK_S after its failure,
    then twice as long each time up to WATCH_FILE_RETRY_AT_MOST_S (back to the first
    wait when the file changed). A file's failing is logged when it starts or its reason
    changes, and its end once, not every try. Bounded by RETRIES_REMEMBERED: beyond
    that none is remembered, and the watch ingests the whole directory again instead."""

    def __init__(self, name: str, root: str) -> None:
        self.name = name
        self.root = root
        self.failing: dict[str, _Retry] = {}
        # Why the last ingest failed as a whole (the store not opening), while it does.
        self.batch_failure: str | None = None

    def due(self, now: float) -> list[str]:
        """The paths whose next try is due at `now`."""
        return sorted(p for p, retry in self.failing.items() if retry.due <= now)

    def settle(self, paths: list[str] | None, files: list[WatchedFile], now: float) -> bool:
        """Take the outcome of an ingest of `paths` (the whole directory when None): a
        file in `files` that failed for a reason that may pass is tried again later;
        any other file that was failing under `paths` is done with (ingested, refused
        for its content, gone or left out). False when more files fail than are remembered."""
        outcome = {f.path: f for f in files}
        for path in [p for p in self.failing if paths is None or _below(p, paths)]:
            if path in outcome and outcome[path].passing:
                continue
            retry = self.failing.pop(path)
            status = outcome[path].report.status if path in outcome else "left out"
            log.info(
                "watched file retry ended",
                workspace=self.name,
                path=path,
                status=status,
                tries=retry.tries,
            )
        for file in files:
            if file.passing:
                self._failed(file, now)
        if len(self.failing) <= RETRIES_REMEMBERED:
            return True
        log.warning(
            "too many watched files failing: the directory is ingested again later",
            workspace=self.name,
            path=self.root,
            failing=len(self.failing),
        )
        self.failing.clear()
        return False

    def _failed(self, file: WatchedFile, now: float) -> None:
        before = self.failing.pop(file.path, None)
        reason = file.report.reason
        if before is None or before.reason != reason:
            log.warning(
                "watched file not ingested, tried again later",
                workspace=self.name,
                source=file.report.source,
                reason=reason,
            )
        if before is None or before.seen != file.seen:
            delay = WATCH_ROOT_CHECK_S
        else:
            delay = min(before.delay * 2, WATCH_FILE_RETRY_AT_MOST_S)
        tries = 1 if before is None else before.tries + 1
        self.failing[file.path] = _Retry(reason, file.seen, now + delay, delay, tries)


def _below(path: str, paths: list[str]) -> bool:
    """Whether `path` is one of `paths` or below one of them (a directory moved in)."""
    return any(path == p or path.startswith(p.rstrip(os.sep) + os.sep) for p in paths)


# Delete, purge, taxonomy and reindex live in recall_admin (which imports this
# module's helpers); they stay reachable here under their names.
_ADMIN_OPERATIONS = frozenset(
    {"delete", "delete_source", "purge", "taxonomy", "taxonomy_edit", "reindex"}
)


def __getattr__(name: str) -> Any:
    if name in _ADMIN_OPERATIONS:
        from memhubd.service import recall_admin

        return getattr(recall_admin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
