"""Cowork operations for every door: push to a partner's inbox, drain one's own inbox
(at most once), inbox status, partner peek, and the activity notes peek is built from.

Scopes: push needs `write:recall`; drain and status read the caller's own inbox with
`read:summary`; peek needs `read:search` (a partner's query text is as telling as a
search). A recipient must hold a live token granted the workspace with `read:summary`
(it could never drain otherwise); a caller without `admin` hears one neutral error for
every other case, so it cannot probe which tokens exist. Knows nothing of HTTP or MCP.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import structlog

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.scopes import ADMIN, READ_SEARCH, READ_SUMMARY, WRITE_RECALL
from memhub_protocol.times import parse_iso
from memhubd.auth.identity import Identity, grants_beyond
from memhubd.cowork import (
    Activity,
    CoworkShelf,
    EmptyMessage,
    InboxError,
    InboxFull,
    InboxStore,
    MessageTooLarge,
    SelfPush,
    is_active,
    visible_to,
)
from memhubd.cowork.activity import KINDS, cut
from memhubd.runtime.hub import Hub
from memhubd.service.access import host_for, require_scope

log = structlog.get_logger("memhubd.service.cowork")

PUSH_SCHEMA = "memhub.cowork.push.v1"
DRAIN_SCHEMA = "memhub.cowork.drain.v1"
STATUS_SCHEMA = "memhub.cowork.status.v1"
PEEK_SCHEMA = "memhub.cowork.peek.v1"
PEEK_LIMIT = 30  # mempal's default
MAX_PEEK_LIMIT = 50
MAX_NAME = 200
AUTO = "auto"
_INBOX = anyio.CapacityLimiter(2)

Members = Callable[[str], Identity | None]
T = TypeVar("T")


@dataclass
class CoworkDesk:
    """What the daemon keeps for cowork: the shelf, and who may receive messages.

    `members` maps a token name to its identity while the token is live (None when
    there is no such token, or it expired); it is the token store, read at push time.
    """

    shelf: CoworkShelf
    members: Members

    def forget(self, workspace: str) -> None:
        self.shelf.forget(workspace)

    def retire(self, workspace: str) -> None:
        self.shelf.retire(workspace)

    def admit(self, workspace: str) -> None:
        self.shelf.admit(workspace)

    def close(self) -> None:
        self.shelf.close()


def open_cowork(directory: str | Path, tokens: Any) -> CoworkDesk:
    """The daemon's cowork desk over `<state>/cowork/` and its token store."""

    def member(name: str) -> Identity | None:
        from memhubd.auth.tokens import TokenFileError

        try:
            record = tokens.get(name)
        except TokenFileError as error:  # said as such, not as an unexplained failure
            raise ProtocolError(ErrorCode.INTERNAL, f"{error}; {error.remedy}") from error
        if record is None or record.is_expired(dt.datetime.now(dt.UTC)):
            return None
        return record.identity()  # type: ignore[no-any-return]

    return CoworkDesk(CoworkShelf(directory), member)


def desk_of(hub: Hub) -> CoworkDesk:
    desk = getattr(hub, "cowork", None)
    if desk is None:
        raise ProtocolError(ErrorCode.INTERNAL, "cowork is not running in this daemon")
    return desk  # type: ignore[no-any-return]


def _rfc3339(seconds: float, timespec: str = "milliseconds") -> str:
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


def _shown_us(seconds: float) -> int:
    """`seconds` in whole microseconds exactly as a peek entry's `at` shows it (the same
    rounding as `_rfc3339`, which float arithmetic would not always give)."""
    return (dt.datetime.fromtimestamp(seconds, dt.UTC) - _EPOCH) // _MICROSECOND


def _roles(identity: Identity) -> frozenset[str] | None:
    return None if identity.sees_everything else identity.roles


# --------------------------------------------------------------------------- push


def _recipient(desk: CoworkDesk, sender: Identity, name: str, to: str) -> str:
    """The recipient's name once it may receive in `name`; else one error.

    Only a caller with `admin` (who may list tokens anyway) learns why.
    """
    to = to.strip()
    if not to or len(to) > MAX_NAME:
        raise ProtocolError(
            ErrorCode.INVALID, f"'to' must be 1 to {MAX_NAME} characters", {"field": "to"}
        )
    if to == sender.name:
        raise ProtocolError(
            ErrorCode.INVALID,
            "a message to yourself is refused: push to a partner",
            {"field": "to", "reason": SelfPush.code},
        )
    member = desk.members(to)
    why = None
    if member is None:
        why = f"no live token named '{to}'"
    elif not member.can_use(name):
        why = f"token '{to}' has no grant for workspace '{name}'"
    elif not member.has_scope(READ_SUMMARY):
        why = f"token '{to}' lacks read:summary, so it could never drain its inbox"
    if why is None:
        return to
    if member is not None and grants_beyond(sender, member.scopes, member.workspaces, member.roles):
        # An admin knows only the tokens within its own grants (the admin model): any
        # other is explained as if it did not exist.
        why = f"no live token named '{to}'"
    detail: dict[str, Any] = {"to": to, "workspace": name, "reason": "unknown_recipient"}
    if sender.has_scope(ADMIN):
        raise ProtocolError(ErrorCode.NOT_FOUND, f"cannot push to '{to}': {why}", detail)
    raise ProtocolError(
        ErrorCode.NOT_FOUND,
        f"no identity '{to}' that may receive messages in workspace '{name}'",
        detail,
    )


def _may_receive(desk: CoworkDesk, name: str, to: str) -> bool:
    """Whether `to` is a live token granted workspace `name` that can drain its inbox."""
    member = desk.members(to)
    return member is not None and member.can_use(name) and member.has_scope(READ_SUMMARY)


def _sweep(desk: CoworkDesk, name: str, store: InboxStore) -> None:
    """Delete long-undelivered messages to recipients that can no longer receive (see
    `UNRECEIVED_KEPT_S`), at most once an hour per workspace. Never fails its caller."""
    try:
        removed = store.sweep_due(lambda to: _may_receive(desk, name, to))
    except Exception:  # the push or status it rides on is answered all the same
        log.exception("cowork sweep failed", workspace=name)
        return
    if removed:
        log.info("cowork messages to gone recipients removed", workspace=name, messages=removed)


def _inbox_error(error: InboxError) -> ProtocolError:
    detail: dict[str, Any] = {"reason": error.code}
    if isinstance(error, MessageTooLarge):
        detail.update(size=error.size, limit=error.limit, field="content")
        return ProtocolError(ErrorCode.TOO_LARGE, str(error), detail)
    if isinstance(error, InboxFull):
        detail.update(current_count=error.count, current_bytes=error.size, **error.limits.as_dict())
        return ProtocolError(ErrorCode.CONFLICT, str(error), detail)
    if isinstance(error, EmptyMessage):
        detail["field"] = "content"
    return ProtocolError(ErrorCode.INVALID, str(error), detail)


def push_allowed(hub: Hub, identity: Identity, name: str) -> None:
    """The scope and grant checks of push, for a door to run before it reads the body."""
    require_scope(identity, WRITE_RECALL)
    host_for(hub, identity, name)


async def push(
    hub: Hub, identity: Identity, name: str, to: str, content: str, door: str
) -> dict[str, Any]:
    """Leave `content` in `to`'s inbox of workspace `name`, for its next drain."""
    push_allowed(hub, identity, name)
    desk = desk_of(hub)
    recipient = _recipient(desk, identity, name, to)
    if not isinstance(content, str):
        raise ProtocolError(ErrorCode.INVALID, "'content' must be a string", {"field": "content"})
    shelf = desk.shelf
    try:
        receipt = await _in_store(
            shelf, name, lambda store: store.push(identity.name, recipient, content)
        )
    except InboxError as error:
        raise _inbox_error(error) from None
    await _in_store(shelf, name, lambda store: _sweep(desk, name, store))
    log.info("cowork push", workspace=name, sender=identity.name, to=recipient, door=door)
    note(hub, identity, name, "push", f"{len(content)} characters", recipient=recipient)
    return {
        "schema_version": PUSH_SCHEMA,
        "workspace": name,
        "from": identity.name,
        "to": recipient,
        "message_id": receipt.message_id,
        "pushed_at": _rfc3339(receipt.pushed_at),
        "inbox_count_after": receipt.count_after,
        "inbox_size_after": receipt.bytes_after,
        "limits": shelf.limits.as_dict(),
    }


async def _in_store(shelf: CoworkShelf, name: str, call: Callable[[InboxStore], T]) -> T:
    """`call` on the workspace's store in a worker thread (opening it is file work too)."""
    return await anyio.to_thread.run_sync(lambda: call(shelf.store(name)), limiter=_INBOX)


# --------------------------------------------------------------------------- drain, status


async def drain(
    hub: Hub,
    identity: Identity,
    name: str,
    max_bytes: int | None = None,
    at_least_one: bool = True,
    *,
    weigh: str = "content",
) -> dict[str, Any]:
    """The messages waiting for the caller in `name`, oldest first: every one, or with
    `max_bytes` those whose content (UTF-8) totals at most that, the oldest always unless
    `at_least_one` is False. Each is handed out once: a second drain, even one racing
    this one, does not get it again; `remaining` counts those left for the next drain."""
    require_scope(identity, READ_SUMMARY)
    host_for(hub, identity, name)
    if max_bytes is not None and (isinstance(max_bytes, bool) or max_bytes < 0):
        raise ProtocolError(
            ErrorCode.INVALID, "'max_bytes' must be an integer at least 0", {"field": "max_bytes"}
        )
    delivery = await _in_store(
        desk_of(hub).shelf,
        name,
        lambda store: store.take(identity.name, max_bytes, at_least_one=at_least_one, weigh=weigh),
    )
    return {
        "schema_version": DRAIN_SCHEMA,
        "workspace": name,
        "identity": identity.name,
        "count": len(delivery.messages),
        "remaining": delivery.remaining,
        "messages": [
            {
                "id": m.id,
                "from": m.sender,
                "pushed_at": _rfc3339(m.pushed_at),
                "content": m.content,
            }
            for m in delivery.messages
        ],
    }


async def status(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    """The caller's own inbox without draining it, and its own undelivered pushes."""
    require_scope(identity, READ_SUMMARY)
    host_for(hub, identity, name)
    desk = desk_of(hub)
    shelf = desk.shelf

    def read(store: InboxStore) -> Any:
        _sweep(desk, name, store)  # so that `sent_undelivered` names no gone recipient
        return store.state(identity.name)

    state = await _in_store(shelf, name, read)
    return {
        "schema_version": STATUS_SCHEMA,
        "workspace": name,
        "identity": identity.name,
        "count": state.count,
        "bytes": state.bytes,
        "oldest": _rfc3339(state.oldest) if state.oldest is not None else None,
        "previews": [
            {"from": m.sender, "pushed_at": _rfc3339(m.pushed_at), "content": m.content}
            for m in state.previews
        ],
        "sent_undelivered": [{"to": to, "count": count} for to, count in state.sent],
        "limits": shelf.limits.as_dict(),
    }


# --------------------------------------------------------------------------- activity and peek


def note(
    hub: Hub,
    identity: Identity,
    name: str,
    kind: str,
    text: str,
    *,
    readers: frozenset[str] | None = None,
    recipient: str | None = None,
    **outcome: Any,
) -> None:
    """Remember that `identity` did `kind` in `name` (for partner peek). Never raises:
    an operation must not fail because its activity could not be noted."""
    desk = getattr(hub, "cowork", None)
    if desk is None or kind not in KINDS:
        return
    try:
        entry = Activity(
            at=time.time(),
            kind=kind,
            text=cut(text),
            counts=outcome,
            roles=_roles(identity),
            readers=readers,
            recipient=recipient,
        )
        desk.shelf.activity.record(name, identity.name, entry)
    except Exception:
        log.exception("activity not noted", workspace=name, kind=kind)


def note_query(hub: Hub, identity: Identity, name: str, query: str, pack: dict[str, Any]) -> None:
    counts = {key: len(pack.get(key) or ()) for key in ("must", "should", "context", "conflicts")}
    note(hub, identity, name, "query", query, **counts)


def note_check(hub: Hub, identity: Identity, name: str, task: str, pack: dict[str, Any]) -> None:
    violations = len(pack.get("violations") or ())
    note(hub, identity, name, "check", task, verdict=pack.get("verdict"), violations=violations)


def note_search(hub: Hub, identity: Identity, found: dict[str, int | None], query: str) -> None:
    """A recall search: `found` holds its hits per workspace searched (None: not told,
    as the caller's private diary entries were among them)."""
    for name, hits in found.items():
        note(hub, identity, name, "search", query, hits=hits)


def note_proposal(hub: Hub, identity: Identity, name: str, workspace: Any, proposal: Any) -> None:
    """A proposal: its declaration id, readable only by the roles the proposed
    declaration itself names as readers (it may restrict who sees it once served)."""
    note(
        hub,
        identity,
        name,
        "propose",
        str(proposal.declaration),
        readers=_proposal_readers(workspace, proposal.source),
        proposal_id=proposal.id,
    )


def _proposal_readers(workspace: Any, source: str) -> frozenset[str] | None:
    from memhubd.auth.access import readers_of
    from memhubd.lang import ParseError, parse_text
    from memhubd.model import Declaration

    try:
        doc = parse_text(source, file="<proposal>")
        resolve = workspace.registry.resolve
        declarations = [Declaration.from_raw(raw, resolve(raw.kind)) for raw in doc.declarations]
    except (ParseError, LookupError, ValueError):
        return frozenset()  # then only a caller that sees everything reads its id
    restricted = [readers_of(d) for d in declarations]
    if not any(restricted):
        return None
    # Every restricted declaration must be readable: the intersection of their readers,
    # and an unrestricted one adds no restriction.
    sets = [r for r in restricted if r]
    common = sets[0]
    for other in sets[1:]:
        common = common & other
    return frozenset(common)


def _since_us(value: str | float | None) -> int | None:
    """`since` in whole microseconds, compared exactly with `_shown_us`; None for None
    (not given). An empty `since` is given, and refused as no time."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return _shown_us(float(value))
    moment = _since_moment(str(value))
    return (moment - _EPOCH) // _MICROSECOND


def _since_moment(value: str) -> dt.datetime:
    try:
        return parse_iso(value)
    except ValueError:
        raise ProtocolError(
            ErrorCode.INVALID, "'since' must be an RFC 3339 time", {"field": "since"}
        ) from None


async def peek(
    hub: Hub,
    identity: Identity,
    name: str,
    partner: str,
    limit: int = PEEK_LIMIT,
    since: str | float | None = None,
) -> dict[str, Any]:
    """A partner's recent activity in `name` as the daemon saw it (in memory, since the
    daemon started): request text and counts, never answer content, and only what the
    caller may see. `partner` "auto" (or empty) is whoever else acted last here."""
    require_scope(identity, READ_SEARCH)
    host_for(hub, identity, name)
    if not 1 <= limit <= MAX_PEEK_LIMIT:
        raise ProtocolError(
            ErrorCode.INVALID, f"'limit' must be 1 to {MAX_PEEK_LIMIT}", {"field": "limit"}
        )
    after = _since_us(since)
    log_ = desk_of(hub).shelf.activity
    partner = partner.strip()
    # Named as the JSON API's route names the partner (`{identity}`); MCP renames it.
    if len(partner) > MAX_NAME:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"'identity' must be at most {MAX_NAME} characters",
            {"field": "identity"},
        )
    if not partner or partner == AUTO:  # `Auto` may be a token's name
        found = log_.most_recent_other(name, identity.name)
        if found is None:
            return _peek_answer(name, None, [], False, None)
        partner = found
    elif partner == identity.name:
        raise ProtocolError(
            ErrorCode.INVALID,
            "cannot peek your own activity: name a partner, or pass auto",
            {"field": "identity"},
        )
    entries = log_.entries(name, partner)
    if after is not None:
        # Newer than `since` as shown: a poll passing the last `at` it was shown must
        # not get that entry again.
        entries = [e for e in entries if _shown_us(e.at) > after]
    truncated = len(entries) > limit
    entries = entries[-limit:]
    roles = _roles(identity)
    admin = identity.has_scope(ADMIN)
    shown = [visible_to(e, identity.name, roles, knows_identities=admin) for e in entries]
    for item in shown:
        # To the microsecond: a poll passing the last `at` it was shown gets exactly
        # what came after it, even within the same millisecond.
        item["at"] = _rfc3339(item["at"], "microseconds")
    return _peek_answer(name, partner, shown, truncated, log_.last_seen(name, partner))


def _peek_answer(
    name: str, partner: str | None, entries: list[dict[str, Any]], truncated: bool, last: Any
) -> dict[str, Any]:
    return {
        "schema_version": PEEK_SCHEMA,
        "workspace": name,
        "partner": partner,
        "partner_active": is_active(last),
        "last_seen": _rfc3339(last) if last is not None else None,
        "entries": entries,
        "truncated": truncated,
        "source": "daemon memory since its start: request text and counts, never answers",
    }
