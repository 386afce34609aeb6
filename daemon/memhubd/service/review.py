"""Review-gated writes: proposals by agents, decisions by people, over the review engine."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import structlog

from memhub_protocol import (
    ErrorCode,
    ProtocolError,
)
from memhub_protocol.models import (
    DECISION_SCHEMA,
    PROPOSAL_SCHEMA,
    PROPOSALS_SCHEMA,
    PROPOSE_SCHEMA,
    ProposeRequest,
)
from memhub_protocol.scopes import READ_SUMMARY, REVIEW, WRITE_CANDIDATE
from memhubd.auth.identity import Identity
from memhubd.lang import ParseError, parse_text
from memhubd.review import LIST_STATUSES, Proposal, ReviewStore, durable, is_proposal_id
from memhubd.review.durable import exclusive_lock
from memhubd.review.keys import KeptAnswer, KeyFile
from memhubd.review.marking import proposed_declaration
from memhubd.review.store import SourcesChanged
from memhubd.review.targets import resolve_target, suggest_target
from memhubd.runtime.confine import Refused, read_confined
from memhubd.runtime.hub import Hub, WorkspaceHost
from memhubd.runtime.snapshot import Snapshot
from memhubd.runtime.watcher import workspace_signature
from memhubd.service.access import (
    View,
    awaited_view_for,
    host_for,
    require_scope,
    run_engine,
    run_review,
)
from memhubd.service.cowork import note_proposal

# --- review: proposals and decisions ------------------------------------------------------
#
# Agents propose (write:candidate), people decide (review). The engine (memhubd.review)
# does the file work under its lock, in a worker thread. This section validates against
# the whole snapshot (declarations hidden from the caller still exist), keeps hidden
# content out of what it answers, reloads after approvals and publishes review events.

log = structlog.get_logger("memhubd.review")

# A refused review result's status -> the error code it travels with (docs/review.md).
_REFUSAL_CODES = {
    "invalid": ErrorCode.INVALID,
    "not_found": ErrorCode.NOT_FOUND,
    "already_approved": ErrorCode.CONFLICT,
    "already_rejected": ErrorCode.CONFLICT,
    "stale_or_invalid": ErrorCode.CONFLICT,
    "conflict": ErrorCode.CONFLICT,
    "git_operation_in_progress": ErrorCode.CONFLICT,
    "too_many": ErrorCode.TOO_MANY,
}
# Validations an approval makes before giving up on sources that keep changing under it.
APPROVE_TRIES = 3
# How long an approval waits before looking again at a save elsewhere still settling.
SETTLE_PAUSE_S = 0.05
WITHHELD = "details withheld: they concern a declaration hidden from this caller"
# A target that does not parse is quoted by the parser; its text may be hidden content.
TARGET_WITHHELD = (
    "the approval target does not parse; its text is withheld (the file may hold "
    "declarations hidden from this caller): fix the file, or approve into another"
)


SUPERSEDES_HIDDEN = (
    "supersedes '{target}' is a bare name that a declaration hidden from this caller also "
    "has, and a bare name supersedes every declaration of that name: name the one meant by "
    "its full id (TYPE:NAME)"
)
SUPERSEDES_HIDDEN_ID = (
    "supersedes '{target}' names a declaration hidden from this caller: only a reviewer "
    "who may read it can approve superseding it"
)


def _hidden_supersede(
    view: View, source: str, *named: str | None, full_ids: bool = False
) -> dict[str, Any] | None:
    """The refused answer of a proposal whose `supersedes` names, by a bare name (or,
    with `full_ids`, by its id), a declaration hidden from the caller: served, it would
    supersede that one too (memdsl supersedes by id or bare name), releasing everyone
    from a rule the caller never saw, and approving it would mark that declaration in a
    file the caller may not read. None when it does not. At propose a hidden full id is
    left to the validation, which refuses it with its details withheld."""
    if not view.hidden:
        return None
    proposed = proposed_declaration(source, view.workspace)
    targets = [*(proposed.relation_targets("supersedes") if proposed is not None else ())]
    targets.extend(t.strip() for t in named if t and t.strip())
    names = {hidden_id.partition(":")[2] for hidden_id in view.hidden}
    for target in targets:
        if target in names or (full_ids and target in view.hidden):
            template = SUPERSEDES_HIDDEN if target in names else SUPERSEDES_HIDDEN_ID
            error = {
                "code": "supersedes_hidden",
                "severity": "error",
                "message": template.format(target=target),
                "line": 1,
            }
            return {
                "ok": False,
                "status": "invalid",
                "declaration_id": proposed.id if proposed is not None else "",
                "errors": [error],
                "warnings": [],
            }
    return None


def review_host(hub: Hub, identity: Identity, name: str, scope: str) -> WorkspaceHost:
    """The scope and grant checks of a review operation, made before its input is read."""
    require_scope(identity, scope)
    return host_for(hub, identity, name)


def _review_store(hub: Hub, host: WorkspaceHost) -> ReviewStore:
    limit = hub.limits.max_proposal_bytes
    return ReviewStore(host.review_root, max_bytes=limit, saves=hub.watch_settings.save_policy)


def _redacted(
    issues: list[dict[str, Any]],
    hidden: frozenset[str],
    decl_id: str,
    own: set[str],
    *,
    blocking: bool,
) -> list[dict[str, Any]]:
    """Issues that name no hidden declaration but the caller's own ids (`decl_id`, `own`)
    and never say where a hidden one lives. A hidden declaration is named by its id or
    by its bare name (`Project.Zebra` of `entity:Project.Zebra`, as an alias finding
    lists symbols). An error concerning one is kept with its details withheld (it binds
    the caller); a warning is left out, since it blocks nothing and its mere presence
    would tell of the hidden declaration."""
    others = hidden - own - {decl_id}
    # Each name as a whole word: a hidden `entity:A` must not withhold every message
    # holding the letter A.
    names = sorted({hidden_id.partition(":")[2] or hidden_id for hidden_id in others}, key=len)
    named = (
        re.compile(r"(?<![\w.:])(?:" + "|".join(map(re.escape, names[::-1])) + r")(?!\w|\.\w)")
        if names
        else None
    )
    out = []
    for issue in issues:
        message = issue["message"]
        if issue["code"] == "declaration_exists" and decl_id in hidden:
            message = f"'{decl_id}' already exists in this workspace; propose a new name"
        elif any(hidden_id in message for hidden_id in others) or (
            named is not None and named.search(message)
        ):
            if not blocking:
                continue
            message = WITHHELD
        out.append({**issue, "message": message})
    return out


def _answer(result: Any, view: View, *own: str) -> dict[str, Any]:
    """`result.as_dict()` with its errors and warnings redacted for the caller."""
    data = result.as_dict()
    if view.hidden:
        decl_id = str(data.get("declaration_id") or "")
        for key in ("errors", "warnings"):
            if key in data:
                blocking = key == "errors"
                data[key] = _redacted(data[key], view.hidden, decl_id, set(own), blocking=blocking)
    if not view.complete and data.get("errors"):
        data["errors"] = [
            {**e, "message": TARGET_WITHHELD} if e.get("code") == "target_parse_error" else e
            for e in data["errors"]
        ]
    return data


def _refusal(data: dict[str, Any], name: str) -> ProtocolError:
    """The error envelope of a refused review result (`data` is its redacted dict)."""
    status = str(data["status"])
    errors = data.get("errors") or []
    code = _REFUSAL_CODES.get(status, ErrorCode.INVALID)
    if errors and errors[0]["code"] == "too_large":
        code = ErrorCode.TOO_LARGE
    if errors:
        message = f"{errors[0]['code']}: {errors[0]['message']}"
    elif status == "not_found":
        message = f"no proposal '{data['proposal_id']}' in workspace '{name}'"
    else:
        decided_by = data.get("decided_by")
        message = f"proposal {data['proposal_id']} was {status.removeprefix('already_')}"
        message += f" by {decided_by}" if decided_by else ""
    if status not in ("invalid", "not_found"):
        message = f"{status}: {message}"
    if data.get("hint"):
        message += f" ({data['hint']})"
    return ProtocolError(code, message, {**data, "workspace": name})


def _not_found(proposal_id: str, name: str) -> ProtocolError:
    return _refusal({"status": "not_found", "proposal_id": proposal_id}, name)


def _queue_readable(store: ReviewStore, name: str) -> None:
    """Raise `workspace_unavailable` when the workspace directory itself is gone (moved
    away, a restore under way): its review queue cannot be read, which is not an empty
    queue, and an agent told so would propose again. A workspace never proposed to has
    no `.memdsl` yet; its queue is empty."""
    if os.path.isdir(store.root):
        return
    structlog.get_logger("memhubd.service").warning(
        "review files cannot be read", workspace=name, path=store.root, reason="missing"
    )
    raise ProtocolError(
        ErrorCode.WORKSPACE_UNAVAILABLE,
        f"review files cannot be read (the workspace directory {store.root} is missing); "
        "retry once it is back: its proposals are kept there",
        {"workspace": name, "status": "missing", "reason": "workspace directory is missing"},
    )


def _hidden_proposal(view: View, identity: Identity, proposal: Proposal) -> bool:
    """True when the proposed declaration would be hidden from the caller once served."""
    from memhubd.auth.access import is_visible
    from memhubd.lang import ParseError, parse_text
    from memhubd.model import Declaration

    if identity.sees_everything:
        return False
    try:
        doc = parse_text(proposal.source, file="<proposal>")
    except ParseError:
        return False
    resolve = view.workspace.registry.resolve
    return any(
        not is_visible(Declaration.from_raw(raw, resolve(raw.kind)), identity)
        for raw in doc.declarations
    )


def _visible_proposal(
    store: ReviewStore, view: View, identity: Identity, proposal_id: str, name: str
) -> Proposal | None:
    """The proposal, or None when there is none or the caller may not see it (blocking);
    `workspace_unavailable` when the workspace directory is gone (`_queue_readable`)."""
    proposal = store.get(proposal_id) if is_proposal_id(proposal_id) else None
    if proposal is None:
        _queue_readable(store, name)
    if proposal is None or _hidden_proposal(view, identity, proposal):
        return None
    return proposal


# Answers of proposals made with an idempotency key, per workspace host: a retry of the
# same request by the same identity answers the proposal made, instead of a second one.
KEYED_KEPT = 1024  # per workspace, least recently made first out
KEYED_FOR_S = 86400.0


class _Keyed:
    """Keyed proposals' answers of one workspace: (proposer, roles, key) -> (made at, the
    request's fingerprint, the answer), kept in `file` too when there is a state
    directory, so that a restart forgets none (`memhubd.review.keys`). Copies of one key are
    made one at a time (each key's lock lives while a request of it runs), so copies sent
    together make one proposal; other keys go on meanwhile."""

    def __init__(self, file: KeyFile | None = None) -> None:
        self.answers: OrderedDict[tuple[Any, ...], tuple[float, str, dict[str, Any]]] = (
            OrderedDict()
        )
        # key -> (its lock, how many requests of it hold or wait for the lock)
        self.running: dict[tuple[Any, ...], tuple[anyio.Lock, int]] = {}
        self.file = file
        # One write of the file at a time: two compactions at once could each replace
        # the file, the older list of answers last.
        self.writing = anyio.Lock()
        if file is not None:
            for kept in file.read():
                mine = (kept.identity, kept.roles, kept.key)
                self.answers.pop(mine, None)  # a later line of a key is its answer now
                self.answers[mine] = (kept.made_at, kept.fingerprint, kept.answer)
            self._trim()

    @contextlib.asynccontextmanager
    async def one_at_a_time(self, key: tuple[Any, ...], within_s: float) -> AsyncIterator[None]:
        """Hold `key`'s lock for the block; waiting longer than `within_s` is a conflict."""
        lock, users = self.running.get(key, (None, 0))
        if lock is None:
            lock = anyio.Lock()
        self.running[key] = (lock, users + 1)
        try:
            with anyio.move_on_after(within_s) as waiting:
                await lock.acquire()
            if waiting.cancelled_caught:
                raise ProtocolError(
                    ErrorCode.CONFLICT,
                    "a proposal with this idempotency key is still being made; retry",
                    {"idempotency_key": key[-1]},
                )
            try:
                yield
            finally:
                lock.release()
        finally:
            lock, users = self.running[key]
            if users == 1:
                del self.running[key]
            else:
                self.running[key] = (lock, users - 1)

    def get(self, key: tuple[Any, ...]) -> tuple[str, dict[str, Any]] | None:
        found = self.answers.get(key)
        if found is None:
            return None
        # Wall time: what was kept on disk before a restart is measured the same way.
        if abs(time.time() - found[0]) > KEYED_FOR_S:
            del self.answers[key]
            return None
        return found[1], found[2]

    def forget(self, key: tuple[Any, ...]) -> None:
        self.answers.pop(key, None)

    async def put(self, key: tuple[Any, ...], fingerprint: str, answer: dict[str, Any]) -> None:
        made_at = time.time()
        self.answers.pop(key, None)
        self.answers[key] = (made_at, fingerprint, answer)
        self._trim()
        file = self.file
        if file is None:
            return
        name, roles, given = key
        kept = KeptAnswer(name, roles, given, made_at, fingerprint, answer)
        async with self.writing:
            await anyio.to_thread.run_sync(file.append, kept)
            if file.lines > 2 * KEYED_KEPT:
                live = [
                    KeptAnswer(n, r, k, at, sealed, said)
                    for (n, r, k), (at, sealed, said) in self.answers.items()
                ]
                await anyio.to_thread.run_sync(file.rewrite, live)

    def _trim(self) -> None:
        now = time.time()
        for key in [k for k, (at, _f, _a) in self.answers.items() if abs(now - at) > KEYED_FOR_S]:
            del self.answers[key]
        while len(self.answers) > KEYED_KEPT:
            self.answers.popitem(last=False)


_KEYED: weakref.WeakKeyDictionary[WorkspaceHost, _Keyed] = weakref.WeakKeyDictionary()


async def propose(
    hub: Hub, identity: Identity, name: str, request: ProposeRequest
) -> dict[str, Any]:
    """Validate against the served snapshot and store a pending proposal by this caller;
    with an idempotency key already used by this caller for the same request (within
    `KEYED_FOR_S`), answer that proposal again (`replayed`), unless it is no longer
    stored at all: the key is then forgotten and the proposal made anew."""
    key = request.idempotency_key
    if key is None:
        return await _propose(hub, identity, name, request)
    require_scope(identity, WRITE_CANDIDATE)
    host = host_for(hub, identity, name)
    keyed = _KEYED.get(host)
    if keyed is None:
        state_dir = hub.state_dir
        file = KeyFile(state_dir, host.name, host.root) if state_dir is not None else None
        keyed = _KEYED.setdefault(host, await anyio.to_thread.run_sync(_Keyed, file))
    fingerprint = hashlib.sha256(
        json.dumps([request.source, request.reason, request.client, request.supersedes]).encode()
    ).hexdigest()
    # The roles too: an answer is redacted for the roles it was made for, so a token of
    # the same name with other roles never gets it again.
    mine = (identity.name, identity.roles, key)
    started = time.monotonic()
    async with keyed.one_at_a_time(mine, durable.LOCK_TIMEOUT_S):
        found = keyed.get(mine)
        if found is not None and not await _stored(hub, host, found[1]["proposal_id"]):
            # Its file is gone (the staging directory cleaned away, say): a replay would
            # answer for a proposal that exists nowhere, and the caller retries to have one.
            keyed.forget(mine)
            found = None
        if found is not None:
            if found[0] != fingerprint:
                raise ProtocolError(
                    ErrorCode.CONFLICT,
                    f"idempotency key '{key}' was used for another proposal "
                    f"({found[1]['proposal_id']}); use a new key for a new proposal",
                    {"idempotency_key": key, "proposal_id": found[1]["proposal_id"]},
                )
            return {**found[1], "replayed": True}
        # The wait for a copy of this request and for the review lock share one bound.
        budget_s = durable.LOCK_TIMEOUT_S - (time.monotonic() - started)
        answer = await _propose(hub, identity, name, request, budget_s)
        await keyed.put(mine, fingerprint, answer)
    return {**answer, "replayed": False}


async def _stored(hub: Hub, host: WorkspaceHost, proposal_id: str) -> bool:
    """Whether the review store still holds `proposal_id`, whatever its status."""
    store = _review_store(hub, host)
    return bool(await run_engine(lambda: store.get(proposal_id) is not None))


async def _propose(
    hub: Hub,
    identity: Identity,
    name: str,
    request: ProposeRequest,
    budget_s: float | None = None,
) -> dict[str, Any]:
    view = await awaited_view_for(hub, identity, name, WRITE_CANDIDATE)
    store = _review_store(hub, host_for(hub, identity, name))
    snapshot = view.snapshot
    refused = _hidden_supersede(view, request.source, request.supersedes)
    if refused is not None:
        raise _refusal({**refused, "proposal_id": ""}, name)

    def work() -> tuple[Any, str | None]:
        result = store.propose(
            view.workspace,
            request.source,
            proposer=identity.name,
            client=request.client,
            reason=request.reason,
            generation=snapshot.generation,
            supersedes=request.supersedes,
            max_pending=hub.limits.max_pending_proposals,
        )
        # Only declarations the caller may read can point at a file.
        suggested = suggest_target(store.root, view.workspace, request.source)
        return result, suggested if result.ok else None

    result, suggested = await run_review(name, work, budget_s=budget_s)
    data = _answer(result, view, request.supersedes or "")
    if not result.ok:
        raise _refusal(data, name)
    proposal = result.proposal
    note_proposal(hub, identity, name, view.workspace, proposal)
    hub.events.publish(
        "proposal_created",
        workspace=name,
        proposal_id=proposal.id,
        proposer=identity.name,
        generation=snapshot.generation,
    )
    return {
        "schema_version": PROPOSE_SCHEMA,
        "workspace": name,
        **data,
        "generation": snapshot.generation,
        "proposal": proposal.summary(),
        "suggested_into": suggested,
    }


async def list_proposals(
    hub: Hub,
    identity: Identity,
    name: str,
    status: str = "pending",
    limit: int | None = None,
    offset: int | None = None,
) -> dict[str, Any]:
    """Proposals with `status` (or "all") in creation order; hidden ones are only counted.

    `offset` skips that many of the listed ones (those `total` counts): the oldest come
    first, so the newest are only reached by paging. Given, the answer also has it and
    `next_offset` (None after the last page); left out, the answer is as it always was.
    """
    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    if status not in LIST_STATUSES:
        raise ProtocolError(
            ErrorCode.INVALID,
            f"status must be one of {', '.join(LIST_STATUSES)}",
            {"field": "status", "status": status},
        )
    if offset is not None and (
        isinstance(offset, bool) or not isinstance(offset, int) or offset < 0
    ):
        raise ProtocolError(
            ErrorCode.INVALID, "'offset' must be an integer at least 0", {"field": "offset"}
        )
    store = _review_store(hub, host_for(hub, identity, name))

    def work() -> tuple[list[Proposal], int]:
        found = store.list(status)
        if not found:
            _queue_readable(store, name)
        shown = [p for p in found if not _hidden_proposal(view, identity, p)]
        return shown, len(found) - len(shown)

    shown, hidden = await run_engine(work)
    start = offset or 0
    page = shown[start:] if limit is None else shown[start : start + limit]
    answer = {
        "schema_version": PROPOSALS_SCHEMA,
        "workspace": name,
        "filter": status,
        "total": len(shown),
        "hidden_by_access_policy": hidden,
        "proposals": [p.summary() for p in page],
    }
    if offset is not None:
        following = start + len(page)
        answer["offset"] = offset
        answer["next_offset"] = following if following < len(shown) else None
    return answer


async def show_proposal(
    hub: Hub, identity: Identity, name: str, proposal_id: str, into: str | None = None
) -> dict[str, Any]:
    """One proposal: its source, its validation now (when pending) and the approval's diff."""
    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    store = _review_store(hub, host_for(hub, identity, name))

    def work() -> dict[str, Any]:
        proposal = _visible_proposal(store, view, identity, proposal_id, name)
        if proposal is None:
            raise _not_found(proposal_id, name)
        validation = suggested = interrupted = None
        cut_short = store.interrupted(proposal)
        if cut_short is not None:
            # Its own block is in the target: validating it again would report the
            # declaration as existing. Approving again finishes the approval.
            interrupted = {
                "into": os.path.relpath(cut_short, store.root),
                "by": proposal.decided_by,
                "next": "approve it again to finish the approval",
            }
        elif proposal.status == "pending":
            checked = store.validate(
                view.workspace, proposal.source, supersedes=proposal.supersedes or None
            )
            validation = _answer(checked, view, proposal.supersedes)
            refused = _hidden_supersede(view, proposal.source, proposal.supersedes, full_ids=True)
            if refused is not None:
                validation = {
                    **validation,
                    "ok": False,
                    "status": "invalid",
                    "errors": [*refused["errors"], *(validation.get("errors") or [])],
                }
            suggested = suggest_target(store.root, view.workspace, proposal.source)
        shown = {"target": "", "diff": "", "diff_withheld": False}
        if proposal.status != "rejected" and (into or proposal.status == "approved"):
            shown = _shown_diff(store, view, proposal, into, name)
        return {
            "schema_version": PROPOSAL_SCHEMA,
            "workspace": name,
            "proposal": proposal.as_dict(),
            "validation": validation,
            "suggested_into": suggested,
            "approval_interrupted": interrupted,
            **shown,
        }

    data = await run_engine(work)
    # A proposal made from recall cites its drawer: the reviewer sees what was said.
    from memhubd.service.recall_review import drawer_beside

    data["recall_drawer"] = await drawer_beside(hub, identity, name, data["proposal"]["source"])
    return data


def _shown_diff(
    store: ReviewStore, view: View, proposal: Proposal, into: str | None, name: str
) -> dict[str, Any]:
    """The approval's diff, withheld when the target holds declarations hidden from the caller
    (its context lines could show them)."""
    diff = store.diff(proposal.id, into, workspace=view.snapshot.workspace)
    if not diff.ok:
        raise _refusal(_answer(diff, view), name)
    target = os.path.relpath(diff.target, store.root)
    withheld = _target_withheld(view, view.snapshot, diff.target)
    return {"target": target, "diff": "" if withheld else diff.diff, "diff_withheld": withheld}


def _target_withheld(
    view: View, snapshot: Snapshot | None, target: str, *, as_on_disk: bool = True
) -> bool:
    """Whether what is made of the file `target` (a diff, its hashes) must be withheld from
    the caller: it holds declarations hidden from them in `snapshot`, or (`as_on_disk`)
    the file on disk is not what `snapshot` serves from it (a new edit, a file that does
    not parse), so its text may hold some."""
    if view.complete:
        return False
    if snapshot is None:
        return True
    return any(
        view.is_hidden(d) and os.path.realpath(d.file) == target
        for d in snapshot.workspace.declarations
    ) or (as_on_disk and not _served_as_on_disk(snapshot, target))


def _served_as_on_disk(snapshot: Any, target: str) -> bool:
    """Whether `target` holds on disk exactly the text the snapshot serves from it (a
    file that does not exist yet holds nothing to show)."""
    for source in snapshot.files:
        if os.path.realpath(source.path) == target:
            if source.problem is not None:
                return False
            try:
                with open(target, encoding="utf-8") as handle:
                    return bool(handle.read() == source.text)
            except (OSError, UnicodeDecodeError):
                return False
    return not os.path.exists(target) or os.path.getsize(target) == 0


async def approve_proposal(
    hub: Hub, identity: Identity, name: str, proposal_id: str, into: str
) -> dict[str, Any]:
    """Approve into `into`, then answer with the generation that serves the declaration.

    The host's reload lock is held from the reload before the approval to the one after
    it, so no other reload slips between them: the generation written to the audit is
    exactly the one that first serves the change.
    """
    host = review_host(hub, identity, name, REVIEW)
    store = _review_store(hub, host)
    started = time.monotonic()
    changed = 0
    while True:
        try:
            return await _approve_once(hub, host, store, identity, name, proposal_id, into, started)
        except SourcesChanged as error:
            # Another process (memdsl, a second daemon, an editor) wrote a source after
            # this approval read them and before it held the lock: validate again; a
            # save still settling is waited for, within the lock's wait bound.
            if error.settling and _left(started) > SETTLE_PAUSE_S:
                await anyio.sleep(SETTLE_PAUSE_S)
                continue
            changed += 1
            if changed >= APPROVE_TRIES or _left(started) <= 0:
                raise ProtocolError(
                    ErrorCode.CONFLICT,
                    "the workspace's files kept changing while the approval was validated;"
                    " nothing was written: retry",
                    {"proposal_id": proposal_id, "status": "sources_changed"},
                ) from None


async def _approve_once(
    hub: Hub,
    host: WorkspaceHost,
    store: ReviewStore,
    identity: Identity,
    name: str,
    proposal_id: str,
    into: str,
    started: float,
) -> dict[str, Any]:
    # Wait for the review lock before holding off reloads: a lock held elsewhere then
    # costs this approval its wait, not the workspace its reloads. The wait to write has
    # only what is left of the bound, so the two waits together stay within it.
    await run_review(name, _lock_free, store.lock_path, budget_s=_left(started))
    budget_s = _left(started)
    async with host.reloads_held():
        # The sources' stat keys before they are read: if they are the same once the
        # lock is held, the snapshot validated against is what the disk holds (save for
        # files held back mid-save, served as they were).
        root = Path(host.review_root)
        before = await anyio.to_thread.run_sync(workspace_signature, root)
        # Validate against the sources as served now: a file caught half-way through a
        # save elsewhere stays held back, its declarations still served and counted.
        await host.reload_held()
        view = await awaited_view_for(hub, identity, name, REVIEW)
        current = view.snapshot
        held = dict(host.held_back)

        def work() -> Any:
            proposal = _visible_proposal(store, view, identity, proposal_id, name)
            if proposal is None and is_proposal_id(proposal_id):
                raise _not_found(proposal_id, name)
            if (
                proposal is not None
                and proposal.status == "pending"
                and _held_back_declaring(held, store, into, proposal.declaration)
            ):
                # A save elsewhere, held back as it settles, declares this id on disk: the
                # served text it stands in for does not, so wait for the save to count.
                raise SourcesChanged(store.root, settling=True)
            if (
                proposal is not None
                and proposal.status == "pending"
                and store.interrupted(proposal) is None  # written already: finished
            ):
                # The reviewer's own view decides: one who may read the declaration
                # the bare name also names may approve it, knowing what it supersedes.
                refused = _hidden_supersede(
                    view, proposal.source, proposal.supersedes, full_ids=True
                )
                if refused is not None:
                    raise _refusal({**refused, "proposal_id": proposal.id}, name)
            # Already served: an interrupted approval being finished; else the next generation.
            served = proposal is not None and current.workspace.by_id(proposal.declaration)
            expected = current.generation + (0 if served else 1)
            return store.approve(
                proposal_id,
                current.workspace,
                into,
                reviewer=identity.name,
                generation=expected,
                unchanged=lambda target: _others(workspace_signature(root), root, target)
                == _others(before, root, target),
            )

        decision = await run_review(name, work, budget_s=budget_s)
        data = _answer(decision, view)
        if not decision.ok:
            raise _refusal(data, name)
        # The reviewer learns which marks it may read; a hidden one stays unnamed.
        data["marked_superseded"] = [i for i in decision.marked_superseded if i not in view.hidden]
        after = await host.reload_held(decision.written)
    # The target's hashes cover all of its text: a caller who may not read all of it could
    # test guesses of the hidden part against them.
    # Before: as served when the approval started (the file has been written since).
    target = decision.merged_into
    withheld = _target_withheld(view, current, target, as_on_disk=False) or _target_withheld(
        view, after, target
    )
    if withheld:
        data["target_sha256_before"] = data["target_sha256_after"] = None
    data["target_sha256_withheld"] = withheld
    generation = _served_generation(after, decision.declaration_id, decision.merged_into)
    file_id = os.path.relpath(decision.merged_into, store.root)
    hub.events.publish(
        "proposal_approved",
        workspace=name,
        proposal_id=decision.proposal_id,
        reviewer=decision.decided_by,
        file_id=file_id,
        served_generation=generation,
    )
    return {
        "schema_version": DECISION_SCHEMA,
        "workspace": name,
        **data,
        "file_id": file_id,
        "served_generation": generation,
    }


async def _announce_recovered(
    hub: Hub, host: Any, store: ReviewStore, name: str, decision: Any
) -> None:
    """Serve an approval that a reject finished, and send its `proposal_approved`."""
    async with host.reloads_held():
        after = await host.reload_held(decision.written)
    hub.events.publish(
        "proposal_approved",
        workspace=name,
        proposal_id=decision.proposal_id,
        reviewer=decision.decided_by,
        file_id=os.path.relpath(decision.merged_into, store.root),
        served_generation=_served_generation(after, decision.declaration_id, decision.merged_into),
    )


def _held_back_declaring(
    held: Mapping[str, Any], store: ReviewStore, into: str, declaration_id: str
) -> bool:
    """Whether a source other than the target, held back while its save settles (`held`:
    its served text is the one before the save), declares `declaration_id` on disk now,
    or cannot be read well enough to tell."""
    if not held:
        return False
    target = resolve_target(store.root, store.staging_dir, into)
    for path in list(held):
        if isinstance(target, str) and os.path.realpath(path) == target:
            continue  # read again under the lock anyway
        try:
            # Opened without waiting (a FIFO renamed over it), judged on the open file.
            found = read_confined(path, store.root)
        except (Refused, OSError):
            return True  # not to be read as it is now: it settles, or is refused, soon
        if found is None:
            continue  # gone: its declarations are no longer anyone's
        try:
            text = found[0].decode("utf-8")
        except UnicodeDecodeError:
            return True
        try:
            document = parse_text(text, path)
        except ParseError:
            return True  # half-written, most likely: it settles soon
        if any(d.id == declaration_id for d in document.declarations):
            return True
    return False


def _others(signature: Any, root: Path, target: str) -> list[Any] | None:
    """A workspace signature without the entry of `target` (an absolute real path)."""
    if signature is None:
        return None
    names = {os.path.relpath(target, root), os.path.relpath(target, os.path.realpath(root))}
    return [entry for entry in signature if entry[0] not in names]


def _left(started: float) -> float:
    """What is left of the review lock's wait bound for a request begun at `started`."""
    return durable.LOCK_TIMEOUT_S - (time.monotonic() - started)


def _lock_free(lock_path: str) -> None:
    """Return once the review lock at `lock_path` could be taken (it is let go at once)."""
    if not os.path.exists(lock_path):  # nothing to wait for: nobody has locked it yet
        return
    with exclusive_lock(lock_path):
        pass


def _served_generation(snapshot: Snapshot | None, decl_id: str, path: str) -> int | None:
    """The snapshot's generation if it serves `decl_id` from `path`; None (and a log) if not."""
    served = snapshot.workspace.by_id(decl_id) if snapshot is not None else None
    if served is not None and os.path.realpath(served.file) == path:
        return snapshot.generation  # type: ignore[union-attr]
    log.error(
        "approved declaration is not served",
        declaration=decl_id,
        file=path,
        generation=snapshot.generation if snapshot is not None else None,
    )
    return None


async def reject_proposal(
    hub: Hub, identity: Identity, name: str, proposal_id: str, reason: str = ""
) -> dict[str, Any]:
    """Reject a pending proposal; the workspace's sources are not touched."""
    view = await awaited_view_for(hub, identity, name, REVIEW)
    store = _review_store(hub, host_for(hub, identity, name))

    def work() -> Any:
        proposal = _visible_proposal(store, view, identity, proposal_id, name)
        if is_proposal_id(proposal_id) and proposal is None:
            raise _not_found(proposal_id, name)
        # Should this finish an approval cut short: the generation to serve its block.
        current = view.snapshot
        served = proposal is not None and current.workspace.by_id(proposal.declaration)
        expected = current.generation + (0 if served else 1)
        return store.reject(proposal_id, reviewer=identity.name, reason=reason, generation=expected)

    decision = await run_review(name, work)
    data = _answer(decision, view)
    if not decision.ok:
        if decision.recovered:
            # The approval this finished is news to everyone following the workspace.
            await _announce_recovered(hub, host_for(hub, identity, name), store, name, decision)
        raise _refusal(data, name)
    hub.events.publish(
        "proposal_rejected",
        workspace=name,
        proposal_id=decision.proposal_id,
        reviewer=decision.decided_by,
    )
    return {"schema_version": DECISION_SCHEMA, "workspace": name, **data}
