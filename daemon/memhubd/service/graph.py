"""Knowledge-graph, tunnel and fact-check operations for every door.

Checks scopes and grants, builds what the caller may see (stored triples whose source
drawer it may read, facts derived from declarations it may read, rooms of workspaces it
has a grant for), runs the graph engine in worker threads and returns plain data.
Nothing here knows about HTTP or MCP.
"""

from __future__ import annotations

import re
import sqlite3
import time
import weakref
from typing import Any

import anyio

from memhub_protocol import CheckRequest, ErrorCode, ProtocolError
from memhub_protocol.recall import parse_time
from memhub_protocol.scopes import READ_SEARCH, WRITE_RECALL
from memhubd.auth.identity import Identity
from memhubd.graph import (
    Fact,
    derived_facts,
    find_tunnels,
    is_derived_id,
    merge,
    stats,
    timeline,
    triple_id,
)
from memhubd.graph.factcheck import claims_in, known_entities, looks_like_name
from memhubd.graph.factcheck import fact_check as check_facts
from memhubd.graph.kg import matches
from memhubd.graph.tunnels import tunnel_hints
from memhubd.recall.ids import DEFAULT_ROOM
from memhubd.recall.shelf import RecallShelf
from memhubd.recall.store import (
    AuditEntry,
    DrawerFilter,
    DrawerStore,
    NewTriple,
    PeriodsOverlap,
    Triple,
    TripleFilter,
    TripleStats,
)
from memhubd.runtime.events import rfc3339
from memhubd.runtime.hub import Hub
from memhubd.service.access import (
    View,
    check_length,
    host_for,
    require_scope,
    view_of,
    visible_workspaces,
)
from memhubd.sqlite import UnusableDatabase

KG_SCHEMA = "memhub.kg.v1"
TUNNELS_SCHEMA = "memhub.tunnels.v1"
FACT_CHECK_SCHEMA = "memhub.fact_check.v1"
MAX_NAME = 500
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_OFFSET = 10_000  # a query's pages reach at most MAX_OFFSET + MAX_LIMIT triples
# Stored periods read for one answer of a caller whose roles are not `*` (its oldest
# ones); a timeline, whoever asks, lists at most this many periods (its oldest ones).
MAX_SCAN = 10_000
TRIPLE_BATCH = 1_000  # stored periods held at once while fact-check reads every one
FACT_CHECK_DRAWERS = 50  # mempal: names of the top 50 drawers are known entities
_READ = anyio.CapacityLimiter(4)
_WRITE = anyio.CapacityLimiter(1)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _shelf(hub: Hub) -> RecallShelf:
    shelf = getattr(hub, "recall", None)
    if shelf is None:
        raise ProtocolError(ErrorCode.INTERNAL, "recall is not running in this daemon")
    return shelf  # type: ignore[no-any-return]


def _roles(identity: Identity) -> frozenset[str] | None:
    """Drawers' visibility as recall search has it: the writer's own private diary
    entries included."""
    from memhubd.service.recall import _roles as recall_roles

    return recall_roles(identity)


def _name(value: Any, field: str) -> str:
    """A required subject, predicate, object, entity or id: 1 to MAX_NAME characters."""
    if value is None:
        raise ProtocolError(ErrorCode.INVALID, f"'{field}' is required", {"field": field})
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
        raise ProtocolError(
            ErrorCode.INVALID, f"'{field}' must be 1 to {MAX_NAME} characters", {"field": field}
        )
    return value.strip()


def _optional_name(value: Any, field: str) -> str | None:
    """None for an absent or blank value (no filter), else as `_name`."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _name(value, field)


def _limit(value: Any) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_LIMIT:
        raise ProtocolError(
            ErrorCode.INVALID, f"'limit' must be 1 to {MAX_LIMIT}", {"field": "limit"}
        )
    return value


def _offset(value: Any) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_OFFSET:
        raise ProtocolError(
            ErrorCode.INVALID, f"'offset' must be 0 to {MAX_OFFSET}", {"field": "offset"}
        )
    return value


def _now() -> int:
    return int(time.time())


# Years 1 to 9999 in epoch seconds: what ISO 8601 can write and SQLite can store.
_EARLIEST, _LATEST = -62135596800, 253402300799


def _time(value: Any, field: str) -> int | None:
    """Epoch seconds from epoch seconds or ISO 8601 (None for none), within years 1-9999."""
    try:
        instant = parse_time(value, field)
    except ValueError:  # digits int() refuses: '²', or thousands of them
        raise ProtocolError(
            ErrorCode.INVALID, f"'{field}' must be epoch seconds or ISO 8601", {"field": field}
        ) from None
    if instant is not None and not _EARLIEST <= instant <= _LATEST:
        raise ProtocolError(
            ErrorCode.INVALID, f"'{field}' is outside the years 1 to 9999", {"field": field}
        )
    return instant


# --------------------------------------------------------------------------- what a caller sees


def _view(hub: Hub, identity: Identity, name: str) -> View | None:
    """The caller's view of the workspace's snapshot; None while it has not loaded
    (the graph then answers from stored triples alone)."""
    snapshot = host_for(hub, identity, name).snapshot
    return view_of(snapshot, identity) if snapshot is not None else None


def _derived(view: View | None) -> list[Fact]:
    """Facts derived from the declarations the caller may read."""
    if view is None:
        return []
    facts = derived_facts(view.snapshot.workspace)
    if not view.hidden:
        return list(facts)
    return [f for f in facts if f.source_declaration not in view.hidden]


def _stored(store: DrawerStore, identity: Identity, triples: list[Triple]) -> list[Fact]:
    """Stored periods the caller may see: a triple citing a drawer hidden from the caller
    is hidden with it."""
    roles = _roles(identity)
    if roles is None:
        return [Fact.of(t) for t in triples]
    hidden: dict[str, bool] = {}
    for drawer_id in {t.source_drawer for t in triples if t.source_drawer}:
        drawer = store.get_by_id(drawer_id, include_deleted=True)
        # A purged drawer's readers are unknown: its triples stay hidden (fail closed).
        readers = drawer.readers if drawer is not None else ()
        hidden[drawer_id] = readers is not None and roles.isdisjoint(readers)
    return [Fact.of(t) for t in triples if not hidden.get(t.source_drawer or "", False)]


def _answer(name: str, action: str, facts: list[Fact], **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": KG_SCHEMA,
        "workspace": name,
        "action": action,
        "triples": [f.as_dict() for f in facts],
        **extra,
    }


# --------------------------------------------------------------------------- kg


async def kg_add(
    hub: Hub,
    identity: Identity,
    name: str,
    subject: Any,
    predicate: Any,
    obj: Any,
    door: str,
    *,
    source_drawer: Any = None,
    valid_from: Any = None,
    confidence: Any = None,
) -> dict[str, Any]:
    """Add a triple valid from `valid_from` (default now). Adding one whose period is
    open already changes nothing; adding one that was invalidated opens a new period."""
    require_scope(identity, WRITE_RECALL)
    host_for(hub, identity, name)
    s, p, o = _name(subject, "subject"), _name(predicate, "predicate"), _name(obj, "object")
    drawer = _optional_name(source_drawer, "source_drawer")
    start = _time(valid_from, "valid_from")
    if confidence is None:
        confidence = 1.0
    if (
        not isinstance(confidence, int | float)
        or isinstance(confidence, bool)
        or not 0 <= confidence <= 1
    ):
        raise ProtocolError(
            ErrorCode.INVALID, "'confidence' must be between 0 and 1", {"field": "confidence"}
        )
    store = _shelf(hub).store(name)
    roles = _roles(identity)

    def work() -> dict[str, Any]:
        if drawer is not None:
            found = store.get_by_id(drawer)
            if found is None or (
                roles is not None and found.readers is not None and roles.isdisjoint(found.readers)
            ):
                raise ProtocolError(
                    ErrorCode.NOT_FOUND,
                    f"no live drawer '{drawer}' to cite",
                    {"field": "source_drawer", "drawer_id": drawer},
                )
        ident = triple_id(s, p, o)
        # Another fact holding the id (8 hex digits of a hash) makes the store keep
        # this one under the long form, as a drawer's content does.
        new = NewTriple(
            ident, s, p, o, identity.name, start, float(confidence), drawer,
            long_id=triple_id(s, p, o, 16),
        )  # fmt: skip
        audit = AuditEntry(identity.name, door, "kg_add", {"triple_id": ident})
        try:
            triple, created = store.add_triple(new, audit)
        except PeriodsOverlap as overlap:
            # The periods are of the id the store chose (the long one on a clash).
            raise _overlap_refused(
                store, identity, overlap.periods[0].id, overlap.periods
            ) from None
        message = f"added: ({s}) --[{p}]--> ({o})" if created else _unchanged(triple)
        # The open period may cite a drawer hidden from the caller: it is not shown (no
        # drawer, writer, start or confidence), nor whether it has started. That it holds
        # is said, as check says that a rule the caller cannot read blocks: it binds the
        # caller all the same (one open period per triple).
        shown = _stored(store, identity, [triple])
        if not shown:
            message = "already recorded, in a period you cannot read; unchanged"
        return _answer(name, "add", shown, created=created, message=message)

    return await anyio.to_thread.run_sync(work, limiter=_WRITE)


def _unchanged(period: Triple) -> str:
    """What an add answers when the triple's open `period` stays as it is. A period that
    starts later is not valid yet, and no add moves its start: invalidating it withdraws
    it, and the triple can then be added from the start meant."""
    if period.valid_from is None or period.valid_from <= _now():
        return "already valid; unchanged"
    return (
        f"not valid yet: valid from {rfc3339(period.valid_from)}; unchanged (to start it "
        "earlier, invalidate it, which withdraws it, then add it again)"
    )


def _overlap_refused(
    store: DrawerStore, identity: Identity, ident: str, periods: list[Triple]
) -> ProtocolError:
    """The refusal of a period starting before an ended one of the same triple ends.

    The rule binds every caller; a period citing a drawer hidden from the caller is part
    of what it may not read. So the refusal names the latest end among the periods the
    caller can see, and says nothing of hidden ones (not whether, nor how many): told
    apart, refusals that differ by start would find a hidden end by bisection."""
    shown = _stored(store, identity, periods)
    details: dict[str, Any] = {"field": "valid_from", "triple_id": ident}
    if shown:
        end = max(p.valid_to for p in shown if p.valid_to is not None)
        details["valid_to"] = end
        message = (
            f"this fact was valid until {end}: a new period of it must start at or after "
            "that instant (an edge is never valid twice at the same time)"
        )
    else:
        message = (
            "a period of this fact ends after the start asked for: a new period must start "
            "after every period of it (an edge is never valid twice at the same time)"
        )
    return ProtocolError(ErrorCode.CONFLICT, message, details)


async def kg_query(
    hub: Hub,
    identity: Identity,
    name: str,
    *,
    subject: Any = None,
    predicate: Any = None,
    obj: Any = None,
    as_of: Any = None,
    active_only: bool = True,
    limit: Any = None,
    offset: Any = None,
) -> dict[str, Any]:
    """Triples valid now (default), valid at `as_of`, or all (`active_only=False`);
    stored and derived together, by confidence then id: `limit` of them from place
    `offset` on. `truncated` says whether the caller may read more past this page, and
    `next_offset` where the next page starts (None on the last, or past MAX_OFFSET)."""
    require_scope(identity, READ_SEARCH)
    view = _view(hub, identity, name)
    fields = {
        "subject": _optional_name(subject, "subject"),
        "predicate": _optional_name(predicate, "predicate"),
        "object": _optional_name(obj, "object"),
    }
    at = _time(as_of, "as_of")
    if at is not None and not active_only:
        # Every period, or those valid at one instant: two questions, never one silently.
        raise ProtocolError(
            ErrorCode.INVALID,
            "'as_of' asks for the triples valid at one instant and 'all' (active_only=false)"
            " for every period: give one of them",
            {"field": "as_of"},
        )
    if at is None and active_only:
        at = _now()
    count = _limit(limit)
    start = _offset(offset)
    store = _shelf(hub).store(name)

    def work() -> dict[str, Any]:
        where = TripleFilter(fields["subject"], fields["predicate"], fields["object"], at=at)
        # One fact past the page says whether there are more. It is one the caller may
        # read: a fact hidden from it never makes a page truncated.
        wanted = start + count + 1
        if _roles(identity) is None:
            # Nothing is hidden: the store orders every period as the answer does and
            # reads only the first `wanted` of them.
            stored = [Fact.of(t) for t in store.strongest_triples(where, wanted)]
        else:
            stored = _stored(store, identity, store.triples(where, MAX_SCAN))
        derived = [
            f
            for f in _derived(view)
            if matches(f, fields["subject"], fields["predicate"], fields["object"], at)
        ]
        facts = merge(stored, derived, count + 1, start)
        truncated = len(facts) > count
        # Past MAX_OFFSET no page starts: a narrower query (by subject, predicate or
        # object) reaches the rest.
        following = start + count if truncated and start + count <= MAX_OFFSET else None
        return _answer(
            name,
            "query",
            facts[:count],
            as_of=at,
            active_only=at is not None,
            offset=start,
            truncated=truncated,
            next_offset=following,
        )

    return await anyio.to_thread.run_sync(work, limiter=_READ)


def propose_instead(fact: Fact) -> str:
    declaration = fact.source_declaration
    return (
        f"triple {fact.id} is derived from declaration {declaration} and cannot be "
        "invalidated through the graph: propose a change instead "
        f"(memctl propose --supersedes {declaration}, or memory_propose)"
    )


async def kg_invalidate(
    hub: Hub, identity: Identity, name: str, triple: Any, door: str, *, at: Any = None
) -> dict[str, Any]:
    """End the valid period of a stored triple at `at` (default now); never deletes.
    A derived triple is refused with a CONFLICT that says to propose a change."""
    require_scope(identity, WRITE_RECALL)
    view = _view(hub, identity, name)
    ident = _name(triple, "triple_id")
    now = _now()
    end = _time(at, "at")
    if end is None:
        end = now
    if end > now:
        raise ProtocolError(
            ErrorCode.INVALID, "'at' cannot be in the future", {"field": "at", "now": now}
        )
    if is_derived_id(ident):
        derived = await anyio.to_thread.run_sync(_derived, view, limiter=_READ)
        fact = next((f for f in derived if f.id == ident), None)
        if fact is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"no triple '{ident}'", {"triple_id": ident})
        raise ProtocolError(
            ErrorCode.CONFLICT,
            propose_instead(fact),
            {"triple_id": ident, "derived": True, "declaration_id": fact.source_declaration},
        )
    store = _shelf(hub).store(name)

    def work() -> dict[str, Any]:
        periods = store.triples(TripleFilter(id=ident), MAX_SCAN)
        open_ = [f for f in _stored(store, identity, periods) if f.valid_to is None]
        if not open_:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"triple {ident} not found or already invalidated",
                {"triple_id": ident},
            )
        start = open_[0].valid_from
        withdrawn = start is not None and start > now
        # Not valid yet (a start in the future, mistyped or planned): it is withdrawn
        # before it begins, its period ending where it starts, so that it is never valid
        # and a period with the start meant can be added.
        until = start if withdrawn and start is not None else end
        if not withdrawn and start is not None and until < start:
            raise ProtocolError(
                ErrorCode.INVALID,
                "'at' is before the triple became valid",
                {"field": "at", "valid_from": start},
            )
        audit = AuditEntry(identity.name, door, "kg_invalidate", {"triple_id": ident, "at": until})
        closed = store.invalidate_triple(ident, until, audit)
        if closed is None:  # closed meanwhile by another writer
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"triple {ident} not found or already invalidated",
                {"triple_id": ident},
            )
        said = "withdrawn before it became valid" if withdrawn else "invalidated"
        return _answer(name, "invalidate", [Fact.of(closed)], message=f"triple {ident} {said}")

    return await anyio.to_thread.run_sync(work, limiter=_WRITE)


async def kg_timeline(hub: Hub, identity: Identity, name: str, entity: Any) -> dict[str, Any]:
    """Every period where `entity` is subject or object, oldest first."""
    require_scope(identity, READ_SEARCH)
    view = _view(hub, identity, name)
    wanted = _name(entity, "entity")
    store = _shelf(hub).store(name)

    def work() -> dict[str, Any]:
        # The store reads periods in the timeline's order: the first MAX_SCAN of them,
        # with the derived ones, hold the timeline's first MAX_SCAN periods.
        read = store.triples(TripleFilter(entity=wanted), MAX_SCAN + 1)
        stored = _stored(store, identity, read[:MAX_SCAN])
        facts = timeline(stored, _derived(view), wanted)
        truncated = len(facts) > MAX_SCAN
        if _roles(identity) is None:
            truncated = truncated or len(read) > MAX_SCAN
        # Else the stored periods past those read are not told of: some may be hidden
        # from the caller, and saying that there are more would tell they exist.
        return _answer(
            name, f"timeline for {wanted}", facts[:MAX_SCAN], entity=wanted, truncated=truncated
        )

    return await anyio.to_thread.run_sync(work, limiter=_READ)


async def kg_stats(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    require_scope(identity, READ_SEARCH)
    view = _view(hub, identity, name)
    store = _shelf(hub).store(name)

    def work() -> dict[str, Any]:
        now = _now()
        if _roles(identity) is None:
            counted = store.triple_stats(now)
        else:  # counts over what the caller may see only
            every = _stored(store, identity, store.triples(TripleFilter(), MAX_SCAN))
            predicates: dict[str, int] = {}
            for fact in every:
                predicates[fact.predicate] = predicates.get(fact.predicate, 0) + 1
            counted = TripleStats(
                len(every),
                sum(1 for f in every if f.valid_at(now)),
                frozenset(v for f in every for v in (f.subject, f.object)),
                predicates,
                # Upcoming as the store counts it: a period withdrawn before it began
                # (ending where it starts) is never valid, so it counts as expired.
                sum(
                    1
                    for f in every
                    if f.valid_from is not None
                    and f.valid_from > now
                    and (f.valid_to is None or f.valid_to > f.valid_from)
                ),
            )
        return _answer(name, "stats", [], stats=stats(counted, _derived(view), now))

    return await anyio.to_thread.run_sync(work, limiter=_READ)


# --------------------------------------------------------------------------- tunnels

# Rooms of governed memory per caller view: the view's workspace lives as long as the
# snapshot's cut for that role set, so this never outgrows the cached cuts.
_GOVERNED: weakref.WeakKeyDictionary[Any, dict[str, set[str]]] = weakref.WeakKeyDictionary()


def governed_rooms(view: View) -> dict[str, set[str]]:
    """Modules and entity symbols of the declarations the caller may read."""
    cached = _GOVERNED.get(view.workspace)
    if cached is not None:
        return cached
    rooms: dict[str, set[str]] = {}
    for declaration in view.workspace.declarations:
        if declaration.module:
            rooms.setdefault(declaration.module, set()).add("module")
    for entity in view.workspace.entities():
        rooms.setdefault(entity.name, set()).add("entity")
    _GOVERNED[view.workspace] = rooms
    return rooms


def rooms_by_workspace(
    hub: Hub, identity: Identity, names: list[str], wanted: set[str] | None = None
) -> dict[str, Any]:
    """For each named workspace: its rooms the caller may see (only `wanted` ones when
    given), with their kinds. Call from a worker thread (it may open stores)."""
    shelf = getattr(hub, "recall", None)
    roles = _roles(identity)
    only = tuple(sorted(wanted)) if wanted is not None else None
    out: dict[str, dict[str, set[str]]] = {}
    for name in names:
        rooms: dict[str, set[str]] = {}
        if shelf is not None and shelf.path_of(name).exists() and only != ():
            try:
                store = shelf.store(name)
                where = DrawerFilter(rooms=only, roles=roles)
                # Only whether a room is there matters for rooms asked for, not its size.
                found = store.rooms_with(where) if only is not None else store.rooms(where)
            except (sqlite3.DatabaseError, UnusableDatabase):
                # Another workspace's store that cannot be used lends no room: its own
                # requests say why (503), and this one's search or tunnels go on.
                found = []
            for room in found:
                rooms.setdefault(room, set()).add("recall")
        host = hub.get(name)
        snapshot = host.snapshot if host is not None else None
        if snapshot is not None:
            for room, kinds in governed_rooms(view_of(snapshot, identity)).items():
                if wanted is None or room in wanted:
                    rooms.setdefault(room, set()).update(kinds)
        out[name] = rooms
    return out


def tunnel_workspaces(
    hub: Hub, identity: Identity, names: list[str], wanted: set[str]
) -> dict[str, set[str]]:
    """Room -> the workspaces among `names` it is a tunnel between, for the rooms in
    `wanted` (search hints: the same definition as `tunnels`). Call from a worker thread."""
    # A tunnel joins two workspaces or more, and the fallback room is never one.
    wanted = {room for room in wanted if room and room != DEFAULT_ROOM}
    if len(names) < 2 or not wanted:
        return {}
    return tunnel_hints(find_tunnels(rooms_by_workspace(hub, identity, names, wanted)))


async def tunnels(hub: Hub, identity: Identity) -> dict[str, Any]:
    """Rooms found in two or more of the workspaces the caller may use."""
    require_scope(identity, READ_SEARCH)
    names = visible_workspaces(hub, identity)

    def work() -> dict[str, Any]:
        found = find_tunnels(rooms_by_workspace(hub, identity, names))
        return {
            "schema_version": TUNNELS_SCHEMA,
            "workspaces": names,
            "tunnels": [t.as_dict() for t in found],
        }

    return await anyio.to_thread.run_sync(work, limiter=_READ)


# --------------------------------------------------------------------------- fact-check


def _symbols(view: View | None) -> list[tuple[str, str]]:
    """Names of governed entities the caller may read: each symbol's last segment and
    its aliases, with the declaration id."""
    if view is None:
        return []
    out = []
    for entity in view.workspace.entities():
        out.append((entity.name.rsplit(".", 1)[-1], entity.id))
        aliases = entity.fields.get("aliases")
        for alias in aliases if isinstance(aliases, list) else []:
            out.append((str(alias), entity.id))
    return out


def _oldest(triple: Triple) -> tuple[bool, int, str, int]:
    """A stored period's place when periods are read oldest first (`store.triples`)."""
    return (triple.valid_from is not None, triple.valid_from or 0, triple.id, triple.rowid)


def _every_stored(store: DrawerStore, text: str) -> tuple[list[Fact], list[Fact], int]:
    """What fact-check needs of every stored period, read a batch at a time: for each
    name, the oldest period naming it (where the name is known from); the periods
    between two names a claim of `text` relates; and how many periods there are. Each
    list is oldest first, so the answer is the one a check of every period in that
    order gives."""
    pairs = {(claim.subject, claim.object) for claim in claims_in(text)}
    first: dict[str, Triple] = {}
    between: list[Triple] = []
    scanned = 0
    for batch in store.triple_batches(TRIPLE_BATCH):
        scanned += len(batch)
        for triple in batch:
            for value in (triple.subject, triple.object):
                if looks_like_name(value):
                    known = first.get(value)
                    if known is None or _oldest(triple) < _oldest(known):
                        first[value] = triple
            if (triple.subject, triple.object) in pairs:
                between.append(triple)
    named = sorted({t.rowid: t for t in first.values()}.values(), key=_oldest)
    between.sort(key=_oldest)
    return [Fact.of(t) for t in named], [Fact.of(t) for t in between], scanned


def _gate_issues(text: str, pack: dict[str, Any]) -> list[dict[str, Any]]:
    """One issue per MUST rule the text breaks; rules hidden from the caller as one
    issue with their count and no id or text (as check reports them)."""
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    issues = []
    for item in pack.get("violations", []):
        phrases = [m.lower() for m in item.get("matched", [])]
        claims = [s for s in sentences if any(p in s.lower() for p in phrases)]
        issues.append(
            {
                "kind": "must_rule_violation",
                "declaration_id": item["id"],
                "rule": item.get("rule"),
                "reason": item.get("reason"),
                "matched": item.get("matched", []),
                "claims": claims,
                "file": item.get("file"),
                "line": item.get("line"),
                "withheld": False,
            }
        )
    withheld = pack.get("withheld") or {}
    if withheld.get("violations"):
        issues.append(
            {
                "kind": "must_rule_violation",
                "declaration_id": None,
                "withheld": True,
                "count": withheld["violations"],
                "message": withheld.get("message", ""),
            }
        )
    return issues


async def fact_check(
    hub: Hub,
    identity: Identity,
    name: str,
    text: Any,
    *,
    room: Any = None,
    now: Any = None,
) -> dict[str, Any]:
    """mempal's three checks over the graph the caller may see, then the compliance gate
    over the whole text: every MUST rule binds, including those hidden from the caller."""
    from memhubd.service.reads import check

    require_scope(identity, READ_SEARCH)
    view = _view(hub, identity, name)
    if not isinstance(text, str) or not text.strip():
        raise ProtocolError(ErrorCode.INVALID, "'text' must not be empty", {"field": "text"})
    check_length(hub, "text", text)
    scope_room = _optional_name(room, "room")
    if room is not None and scope_room is None:
        raise ProtocolError(ErrorCode.INVALID, "invalid scope: empty room", {"field": "room"})
    instant = _time(now, "now")
    if instant is None:
        instant = _now()
    if instant < 0:
        raise ProtocolError(ErrorCode.INVALID, "'now' is before the epoch", {"field": "now"})
    store = _shelf(hub).store(name)
    roles = _roles(identity)

    def work() -> dict[str, Any]:
        derived = _derived(view)
        where = DrawerFilter(rooms=(scope_room,) if scope_room else None, roles=roles)
        drawers = [(d.id, d.content) for d in store.top(where, FACT_CHECK_DRAWERS)]
        if roles is not None:
            stored = _stored(store, identity, store.triples(TripleFilter(), MAX_SCAN))
            facts = [*stored, *derived]
            known = known_entities(facts, _symbols(view), drawers)
            return check_facts(text, facts, known, instant)
        # Nothing is hidden: every stored period is checked, a batch at a time.
        named, between, scanned = _every_stored(store, text)
        known = known_entities([*named, *derived], _symbols(view), drawers)
        return check_facts(
            text, [*between, *derived], known, instant, scanned=scanned + len(derived)
        )

    result = await anyio.to_thread.run_sync(work, limiter=_READ)
    gate: dict[str, Any] = {"verdict": None, "evaluated": 0}
    if view is not None:
        pack, _rendered = await check(hub, identity, name, CheckRequest(task=text, candidate=text))
        result["issues"].extend(_gate_issues(text, pack))
        gate = {"verdict": pack["verdict"], "evaluated": len(pack.get("evaluated", []))}
        if pack.get("withheld"):
            gate["withheld"] = pack["withheld"]
    return {
        "schema_version": FACT_CHECK_SCHEMA,
        "workspace": name,
        "room": scope_room,
        "now": instant,
        **result,
        "must_gate": gate,
    }
