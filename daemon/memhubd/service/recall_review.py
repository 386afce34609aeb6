"""Recall -> governed memory for every door: propose a declaration from a drawer, and
the drawer a proposal cites, shown to its reviewer beside the diff.

A proposal made here is an ordinary proposal (`service.review.propose`): validated
against the served snapshot and pending until a person approves it. Its evidence
quotes the drawer verbatim and cites the drawer and its file. Nothing here writes a
source file or decides a proposal. Knows nothing of HTTP or MCP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.models import ProposeRequest
from memhub_protocol.scopes import READ_SEARCH, WRITE_CANDIDATE
from memhubd.auth.identity import Identity
from memhubd.recall.evidence import (
    EvidenceError,
    check_quote,
    citation,
    claim_of,
    declaration_source,
    drawer_of,
    fields_from_pairs,
    pick_quote,
)
from memhubd.recall.store import Drawer
from memhubd.runtime.hub import Hub
from memhubd.service import diary
from memhubd.service.access import host_for, require_scope
from memhubd.service.recall import shelf_of
from memhubd.service.review import propose

MAX_FIELDS = 50
MAX_VALUE_CHARS = 20_000
_KEYS = ("type", "id", "fields", "quote", "reason")
_LOOKUP = anyio.CapacityLimiter(2)


@dataclass(frozen=True, slots=True)
class DrawerProposal:
    """What to propose from a drawer: type, declaration name, fields, optional quote."""

    type: str
    id: str
    fields: dict[str, str]
    quote: str | None = None
    reason: str = ""

    @classmethod
    def from_json(cls, data: Any) -> DrawerProposal:
        if not isinstance(data, dict):
            raise _invalid("the body must be a JSON object", "body")
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise _invalid(f"unknown field(s) {', '.join(unknown)}", unknown[0])
        for key in ("type", "id"):
            if not isinstance(data.get(key), str) or not data[key].strip():
                raise _invalid(f"'{key}' must be a non-empty string", key)
        fields = data.get("fields") or {}
        if not isinstance(fields, dict) or len(fields) > MAX_FIELDS:
            raise _invalid(f"'fields' must be an object of at most {MAX_FIELDS} strings", "fields")
        for key, value in fields.items():
            if not isinstance(value, str):
                raise _invalid(f"field '{key}' must be a string", "fields")
            if len(value) > MAX_VALUE_CHARS:
                raise _invalid(
                    f"field '{key}' is longer than {MAX_VALUE_CHARS} characters", "fields"
                )
        for key in ("quote", "reason"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise _invalid(f"'{key}' must be a string", key)
        return cls(
            type=data["type"].strip(),
            id=data["id"].strip(),
            fields=dict(fields),
            quote=data.get("quote") or None,
            reason=data.get("reason") or "",
        )


def _invalid(message: str, field: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID, message, {"field": field})


def _readable(identity: Identity, drawer: Drawer | None) -> bool:
    """Role visibility as recall applies it, and for an unshared diary entry also the
    diary's rule (its writer and reviewers)."""
    if drawer is None:
        return False
    roles = None if identity.sees_everything else identity.roles
    if roles is None or drawer.readers is None or not roles.isdisjoint(drawer.readers):
        return True
    return diary.is_entry(drawer) and diary.may_read(identity, drawer)


async def _drawer(hub: Hub, name: str, drawer_id: str) -> Drawer | None:
    store = shelf_of(hub).store(name)
    return await anyio.to_thread.run_sync(store.get_by_id, drawer_id, limiter=_LOOKUP)


def propose_allowed(hub: Hub, identity: Identity, name: str) -> None:
    """Scope and grant checks, made before the request body is read."""
    require_scope(identity, WRITE_CANDIDATE)
    require_scope(identity, READ_SEARCH)  # the drawer's content is read to quote it
    host_for(hub, identity, name)


async def propose_from_drawer(
    hub: Hub, identity: Identity, name: str, drawer_id: str, request: DrawerProposal, client: str
) -> dict[str, Any]:
    """Propose `request` with evidence quoting drawer `drawer_id` of workspace `name`."""
    propose_allowed(hub, identity, name)
    drawer = await _drawer(hub, name, drawer_id)
    if not _readable(identity, drawer):
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"no drawer '{drawer_id}'", {"drawer_id": drawer_id}
        )
    assert drawer is not None
    try:
        fields = fields_from_pairs(request.fields)
        if request.quote is not None:
            quote = check_quote(drawer.content, request.quote)
        else:
            quote = pick_quote(drawer.content, claim_of(fields))
        source = declaration_source(
            request.type, request.id, fields, quote, drawer.id, drawer.source_file, drawer.locator
        )
    except EvidenceError as error:
        raise _invalid(str(error), error.field) from None
    reason = request.reason or f"from recall drawer {drawer.id} ({drawer.source_file})"
    data = await propose(
        hub, identity, name, ProposeRequest(source=source, reason=reason, client=client)
    )
    data["source"] = source
    data["drawer"] = _beside(drawer, quote)
    return data


def _beside(drawer: Drawer, quote: str | None = None) -> dict[str, Any]:
    data = {
        "drawer_id": drawer.id,
        "room": drawer.room,
        "source_file": drawer.source_file,
        "locator": drawer.locator,
        "citation": citation(drawer.id, drawer.source_file, drawer.locator),
        "identity": drawer.identity,
        "said_at": drawer.said_at,
        "content": drawer.content,
    }
    if quote is not None:
        data["quote"] = quote
        data["quote_found"] = quote in drawer.content
    return data


async def drawer_beside(
    hub: Hub, identity: Identity, name: str, proposal_source: str
) -> dict[str, Any] | None:
    """The drawer a proposal's evidence cites, for its reviewer: None when it cites
    none; `withheld` when the caller may not search recall at all; `missing` when it
    was deleted or is hidden from the caller (the two answer alike, as a drawer read
    does: a hidden drawer is never told apart from one that does not exist)."""
    from memhubd.lang import ParseError, parse_text

    try:
        doc = parse_text(proposal_source, file="<proposal>")
    except ParseError:
        return None
    evidence = doc.declarations[0].fields.get("evidence") if doc.declarations else None
    drawer_id = drawer_of(evidence)
    if drawer_id is None:
        return None
    quote = evidence.get("quote") if isinstance(evidence, dict) else None
    if not identity.has_scope(READ_SEARCH) or getattr(hub, "recall", None) is None:
        return {"drawer_id": drawer_id, "withheld": True}
    drawer = await _drawer(hub, name, drawer_id)
    if not _readable(identity, drawer):
        return {"drawer_id": drawer_id, "missing": True}
    assert drawer is not None
    return _beside(drawer, quote if isinstance(quote, str) else None)
