"""The agent diary for every door (mempal §13): an identity's own notes on how it works,
typed OBSERVATION, LESSON or PATTERN, written and read through the recall store.

An entry is a drawer in the room named after its writer, cited as `diary/<name>`, with
its type as the content's prefix (mempal's convention). Unless written as shared, its
`readers` is a role no token can hold (`diary/<name>`: grants never contain `/`), so
recall search, wake-up and drawer reads hide it from everyone whose roles do not see
everything; the diary routes show it to its writer and to reviewers (tokens with the
`review` scope). Knows nothing of HTTP or MCP.
"""

from __future__ import annotations

from typing import Any

import anyio

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.scopes import READ_SUMMARY, REVIEW, WRITE_RECALL
from memhubd.auth.identity import Identity
from memhubd.recall.ingest import IngestOptions
from memhubd.recall.search import search
from memhubd.recall.store import Drawer, DrawerFilter
from memhubd.runtime.hub import Hub
from memhubd.service.access import host_for, require_scope
from memhubd.service.recall import index_warming, lexical_ready, query_vector, shelf_of

WRITE_SCHEMA = "memhub.diary.write.v1"
READ_SCHEMA = "memhub.diary.read.v1"
TYPES = ("OBSERVATION", "LESSON", "PATTERN")
MAX_ENTRY_CHARS = 8000
READ_LIMIT = 20
MAX_READ_LIMIT = 100
# mempal suggests importance 3 or more for lessons: they are what a wake-up should show.
DEFAULT_IMPORTANCE = {"LESSON": 3, "PATTERN": 2, "OBSERVATION": 1}
# A query's search ranks the owner's whole room, which may also hold other drawers and
# entries of other types: it asks for this many times more hits each round.
_OVERFETCH = 4
# A read with a query looks among at most this many of the room's best matches: the
# search ranks every drawer of the room, and reads each hit's row.
SEARCHED_AT_MOST = 1600
_DIARY = anyio.CapacityLimiter(1)


def private_role(owner: str) -> str:
    """The only reader of an unshared entry; token grants never contain `/`."""
    return f"diary/{owner}"


def diary_source(owner: str) -> str:
    return f"diary/{owner}"


def is_entry(drawer: Drawer) -> bool:
    """True for a drawer written through the diary (by its owner, in the owner's room)."""
    owner = drawer.identity
    return (
        drawer.room == owner
        and drawer.source_file == diary_source(owner)
        and entry_type(drawer.content) is not None
    )


def _own_entry(drawer: Drawer, owner: str) -> bool:
    """Whether `drawer` is a real diary entry of `owner` (shared or private)."""
    return (
        drawer.identity == owner
        and is_entry(drawer)
        and drawer.readers in (None, (private_role(owner),))
    )


def entry_type(content: str) -> str | None:
    head, colon, _rest = content.partition(":")
    return head if colon and head in TYPES else None


def may_read(identity: Identity, drawer: Drawer) -> bool:
    """Whether `identity` may read this diary entry: shared ones are everyone's; the
    others only its writer's and reviewers'. An entry-shaped drawer given other
    readers (by an ingest) is not the diary's to open: its readers decide."""
    if drawer.readers is None:
        return True
    if tuple(drawer.readers) != (private_role(drawer.identity),):
        return False
    return identity.name == drawer.identity or identity.has_scope(REVIEW)


def _type(value: str) -> str:
    kind = value.strip().upper()
    if kind not in TYPES:
        raise ProtocolError(
            ErrorCode.INVALID, f"'type' must be one of {', '.join(TYPES)}", {"field": "type"}
        )
    return kind


def write_allowed(hub: Hub, identity: Identity, name: str) -> None:
    """The scope and grant checks of a write, made before its input is read."""
    require_scope(identity, WRITE_RECALL)
    host_for(hub, identity, name)


async def write(
    hub: Hub,
    identity: Identity,
    name: str,
    kind: str,
    content: str,
    *,
    shared: bool = False,
    importance: int | None = None,
    door: str,
) -> dict[str, Any]:
    """Store one entry `TYPE: content` in the caller's room of `name`'s recall store."""
    write_allowed(hub, identity, name)
    kind = _type(kind)
    text = content.strip()
    if entry_type(text) == kind:
        text = text.partition(":")[2].strip()  # already prefixed: keep one prefix
    if not text:
        raise ProtocolError(ErrorCode.INVALID, "'content' must not be blank", {"field": "content"})
    if len(text) > MAX_ENTRY_CHARS:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"'content' must be 1 to {MAX_ENTRY_CHARS} characters",
            {"field": "content"},
        )
    if importance is not None and not 0 <= importance <= 5:
        raise ProtocolError(
            ErrorCode.INVALID, "'importance' must be 0 to 5", {"field": "importance"}
        )
    shelf = shelf_of(hub)
    options = IngestOptions(
        workspace=name,
        identity=identity.name,
        door=door,
        room=identity.name,
        importance=DEFAULT_IMPORTANCE[kind] if importance is None else importance,
        keeps_importance=True,
        readers=None if shared else (private_role(identity.name),),
        near_duplicate=shelf.settings.near_duplicate,
        # A drawer another identity left in this room, hidden from the writer, is no
        # duplicate of its entry (the answer would tell it exists).
        roles=None if identity.sees_everything else identity.roles | {private_role(identity.name)},
        # Nor is any drawer but the writer's own entry, however readable (another's
        # ingest into this room, or the writer's own with other readers).
        same_entry=lambda drawer: _own_entry(drawer, identity.name),
    )
    entry = f"{kind}: {text}"

    def work() -> tuple[Any, Drawer | None]:
        report = shelf.ingestor(name).ingest_content(entry, options, diary_source(identity.name))
        stored = None
        if report.status == "unchanged" and report.drawer_ids:
            stored = shelf.store(name).get_by_id(report.drawer_ids[0])
        return report, stored

    report, stored = await anyio.to_thread.run_sync(work, limiter=_DIARY)
    if report.status == "failed":
        raise ProtocolError(ErrorCode.INVALID, f"diary entry not stored: {report.reason}")
    if report.deleted and not report.chunks:
        # The same entry was withdrawn (`recall delete`): it stays withdrawn until a purge.
        raise ProtocolError(
            ErrorCode.CONFLICT,
            "this entry was withdrawn (deleted) and is not written again until a purge; "
            "write it in other words to keep it",
            {"field": "content", "status": "deleted"},
        )
    importance = options.importance
    if stored is not None:
        # The entry as stored, not as asked: the same text written again keeps its
        # sharing and importance, and an answer saying otherwise would mislead.
        importance = stored.importance
        if (stored.readers is None) != shared:
            now = "shared" if stored.readers is None else "private"
            raise ProtocolError(
                ErrorCode.CONFLICT,
                f"this entry is already in the diary, {now}; an entry's sharing does "
                "not change: delete it (recall delete) to withdraw it",
                {"field": "shared", "drawer_id": stored.id, "shared": not shared},
            )
    answer = {
        "schema_version": WRITE_SCHEMA,
        "workspace": name,
        "identity": identity.name,
        "drawer_id": report.drawer_ids[0] if report.drawer_ids else None,
        "type": kind,
        "shared": shared,
        "importance": importance,
        "status": report.status,
        "message": (
            "this entry is already in the diary" if report.status == "unchanged" else "stored"
        ),
    }
    if report.warnings:  # e.g. stored without a vector while the embedder fails
        answer["warnings"] = list(report.warnings)
    return answer


def _entry(drawer: Drawer, score: float | None = None) -> dict[str, Any]:
    kind = entry_type(drawer.content) or ""
    data = {
        "drawer_id": drawer.id,
        "type": kind,
        "text": drawer.content.partition(":")[2].strip(),
        "content": drawer.content,
        "identity": drawer.identity,
        "shared": drawer.readers is None,
        "importance": drawer.importance,
        "created_at": drawer.created_at,
        "source_file": drawer.source_file,
    }
    if score is not None:
        data["score"] = round(score, 6)
    return data


async def read(
    hub: Hub,
    identity: Identity,
    name: str,
    owner: str | None = None,
    kind: str | None = None,
    query: str | None = None,
    limit: int = READ_LIMIT,
) -> dict[str, Any]:
    """Entries of `owner`'s diary (default: the caller's), newest first, or best first
    for `query`. Another identity's unshared entries need the `review` scope; without
    it only its shared entries are listed (`full` is false)."""
    require_scope(identity, READ_SUMMARY)
    host_for(hub, identity, name)
    owner = (owner or identity.name).strip()
    if not owner or len(owner) > 200:
        raise ProtocolError(
            ErrorCode.INVALID, "'identity' must be a token name", {"field": "identity"}
        )
    if not 1 <= limit <= MAX_READ_LIMIT:
        raise ProtocolError(
            ErrorCode.INVALID, f"'limit' must be 1 to {MAX_READ_LIMIT}", {"field": "limit"}
        )
    wanted = _type(kind) if kind else None
    full = owner == identity.name or identity.has_scope(REVIEW)
    # Roles as the store filters them: unshared entries carry only the private role.
    roles = frozenset({private_role(owner)}) if full else frozenset()
    where = DrawerFilter(rooms=(owner,), identities=(owner,), roles=roles)
    shelf = shelf_of(hub)

    def wanted_entries(pairs: list[tuple[Drawer, float | None]]) -> list[dict[str, Any]]:
        return [
            _entry(drawer, score)
            for drawer, score in pairs
            if is_entry(drawer) and (wanted is None or entry_type(drawer.content) == wanted)
        ]

    def work() -> list[dict[str, Any]]:
        store = shelf.store(name)
        if not (query and query.strip()):
            # The store picks the entries (their source and type prefix), so the room's
            # other drawers and entries of other types never use up the limit.
            prefixes = [f"{kind}:" for kind in ((wanted,) if wanted else TYPES)]
            found = store.recent_from_source(where, diary_source(owner), prefixes, limit)
            return wanted_entries([(drawer, None) for drawer in found])[:limit]
        # Search ranks every drawer of the room: ask for more until `limit` entries are
        # among the hits or the search has nothing more to give.
        fetch = limit * _OVERFETCH
        embedder, vector, _unavailable = query_vector(shelf, query)
        weights = shelf.settings.weights
        while True:
            with index_warming(name):
                found = search(store, embedder, query, where, fetch, weights, query_vector=vector)
            hits = found.hits
            entries = wanted_entries([(hit.drawer, hit.fused) for hit in hits])
            if len(entries) >= limit or len(hits) < fetch or fetch >= SEARCHED_AT_MOST:
                return entries[:limit]
            fetch = min(fetch * _OVERFETCH, SEARCHED_AT_MOST)

    if query and query.strip():
        await lexical_ready(shelf, [name], roles)
    entries = await anyio.to_thread.run_sync(work, limiter=_DIARY)
    return {
        "schema_version": READ_SCHEMA,
        "workspace": name,
        "identity": owner,
        "full": full,
        "query": query or None,
        "type": wanted,
        "entries": entries,
    }
