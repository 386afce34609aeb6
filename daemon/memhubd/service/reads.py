"""Read operations: status, map, types, list, query, explain, check, lint, raw files.

Each checks access through `access`, runs the engine off the event loop and
returns plain data; nothing here knows about HTTP or MCP.
"""

from __future__ import annotations

import os
import time
import weakref
from dataclasses import dataclass
from typing import Any

import anyio

from memhub_protocol import (
    FILE_SCHEMA,
    FILES_SCHEMA,
    LINT_SCHEMA,
    LIST_SCHEMA,
    MAP_SCHEMA,
    STATUS_SCHEMA,
    TYPES_SCHEMA,
    WORKSPACES_SCHEMA,
    CheckRequest,
    ErrorCode,
    ProtocolError,
    QueryRequest,
)
from memhub_protocol.scopes import READ_SEARCH, READ_SUMMARY
from memhubd import __version__
from memhubd.auth.identity import Identity
from memhubd.query.pack import compact_json, must_left_out
from memhubd.runtime.hub import Hub, WorkspaceHost
from memhubd.runtime.snapshot import Snapshot
from memhubd.runtime.sources import SourceFile, SourceProblem
from memhubd.service.access import (
    STARTED_AT,
    View,
    awaited_view_for,
    check_length,
    host_for,
    problem_dicts,
    require_scope,
    run_engine,
    view_for,
    view_of,
    visible_workspaces,
)
from memhubd.service.cowork import note_check, note_query
from memhubd.service.encoding import (
    AnswerTooLarge,
    QueryAnswer,
    answer_cache,
    answer_tag,
    apply_budget,
    joined_length,
    joined_size,
    pieces,
    result_too_large,
    sections,
    snapshot_serial,
)

LIST_CLAIM_CHARS = 200


# --- status -----------------------------------------------------------------------------


def workspace_summary(host: WorkspaceHost, identity: Identity | None = None) -> dict[str, Any]:
    """One workspace's health and counts as `identity` may see them (None: everything).

    Declaration and lint counts cover only the declarations the caller may read, and
    load problems are redacted for a caller who does not see everything. Lint may run
    here the first time a snapshot is summarised: call it off the event loop.
    """
    complete = identity is None or identity.sees_everything
    snapshot = host.snapshot
    if snapshot is None:
        return {
            "name": host.name,
            "root": host.root,
            "health": "unavailable",
            "lint_errors": 0,
            "lint_warnings": 0,
            "generation": 0,
            "declarations": 0,
            "files": 0,
            "problems": problem_dicts([host.unavailable] if host.unavailable else [], complete),
            "last_reload_at": host.last_reload_at,
        }
    if identity is None:
        declarations, diagnostics = snapshot.workspace.declarations, snapshot.diagnostics()
        problems = problem_dicts(snapshot.problems, True)
    else:
        view = view_of(snapshot, identity)
        declarations, diagnostics, problems = (
            view.workspace.declarations,
            view.diagnostics(),
            view.problems(),
        )
    errors = sum(1 for d in diagnostics if d.severity == "error")
    health = snapshot.health
    if host.unavailable is not None:
        # The last build could not be made (its root now leads onto another served
        # workspace, say): what was served before still is, and the reason is shown.
        problems = [*problem_dicts([host.unavailable], complete), *problems]
        health = "degraded" if health == "healthy" else health
    return {
        "name": host.name,
        "root": host.root,
        "health": health,
        "lint_errors": errors,
        "lint_warnings": len(diagnostics) - errors,
        "generation": snapshot.generation,
        "declarations": len(declarations),
        "files": len(snapshot.files),
        "problems": problems,
        "last_reload_at": host.last_reload_at,
    }


async def _summaries(hub: Hub, identity: Identity, names: list[str]) -> list[dict[str, Any]]:
    hosts = [hub.hosts[name] for name in names]
    return await run_engine(lambda: [workspace_summary(host, identity) for host in hosts])


async def status(hub: Hub, identity: Identity) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    names = visible_workspaces(hub, identity)
    return {
        "schema_version": STATUS_SCHEMA,
        "server": "memhub",
        "version": __version__,
        "uptime_s": round(time.time() - STARTED_AT, 3),
        "identity": {
            "name": identity.name,
            "scopes": sorted(identity.scopes),
            "workspaces": sorted(identity.workspaces),
            "roles": sorted(identity.roles),
            "local": identity.local,
        },
        "workspaces": await _summaries(hub, identity, names),
    }


async def workspaces(hub: Hub, identity: Identity) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    names = visible_workspaces(hub, identity)
    return {
        "schema_version": WORKSPACES_SCHEMA,
        "workspaces": await _summaries(hub, identity, names),
    }


async def workspace(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    require_scope(identity, READ_SUMMARY)
    host = host_for(hub, identity, name)
    return (await _summaries(hub, identity, [host.name]))[0]


# --- reads ------------------------------------------------------------------------------


async def memory_map(hub: Hub, identity: Identity, name: str) -> tuple[dict[str, Any], str]:
    from memhubd.query import build_memory_map, render_memory_map_text

    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    data = await run_engine(build_memory_map, view.workspace)
    return {"schema_version": MAP_SCHEMA, **data}, render_memory_map_text(data)


async def types(hub: Hub, identity: Identity, name: str) -> tuple[dict[str, Any], str]:
    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    registry = view.workspace.registry
    items = [descriptor.as_dict() for descriptor in registry.descriptors()]
    lines = []
    for item in items:
        required = ",".join(item["required_fields"]) or "-"
        capabilities = ",".join(item["capabilities"]) or "-"
        lines.append(
            f"{item['name']}  role={item['runtime_role']}  "
            f"required={required}  capabilities={capabilities}"
        )
    payload = {
        "schema_version": TYPES_SCHEMA,
        "schema_files": list(registry.schema_files),
        "types": items,
    }
    return payload, "\n".join(lines)


def _list_item(d: Any) -> dict[str, Any]:
    claim = d.claim_text
    if len(claim) > LIST_CLAIM_CHARS:
        claim = claim[: LIST_CLAIM_CHARS - 1] + "…"
    return {
        "id": d.id,
        "type": d.kind,
        "kind": d.kind,
        "runtime_role": d.runtime_role,
        "capabilities": sorted(d.capabilities),
        "subject": d.subject,
        "scope": d.scope,
        "status": d.status,
        "claim": claim,
        "file": d.file,
        "line": d.line,
        "has_evidence": bool(d.evidence),
    }


async def list_declarations(
    hub: Hub,
    identity: Identity,
    name: str,
    *,
    memory_type: str = "",
    subject: str = "",
    include_inactive: bool = False,
    limit: int = 100,
) -> dict[str, Any]:
    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    limit = max(1, min(500, limit))

    def work() -> dict[str, Any]:
        selected = _listed(view, memory_type, subject, include_inactive)
        return {
            "schema_version": LIST_SCHEMA,
            "total": len(selected),
            "items": [_list_item(d) for d in selected[:limit]],
        }

    return await run_engine(work)


async def list_encoded(
    hub: Hub,
    identity: Identity,
    name: str,
    *,
    memory_type: str = "",
    subject: str = "",
    include_inactive: bool = False,
    limit: int = 100,
) -> tuple[int, bytes]:
    """`list_declarations`' total and its items as one JSON array, joined from items
    encoded once per snapshot."""
    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    limit = max(1, min(500, limit))
    piece = pieces(view.snapshot, "list", lambda d: compact_json(_list_item(d)), hub.get(name))

    def work() -> tuple[int, bytes]:
        selected = _listed(view, memory_type, subject, include_inactive)
        return len(selected), b"[" + b",".join([piece(d) for d in selected[:limit]]) + b"]"

    return await run_engine(work)  # type: ignore[no-any-return]


def _listed(view: View, memory_type: str, subject: str, include_inactive: bool) -> list[Any]:
    ws = view.workspace
    pool = ws.declarations if include_inactive else ws.active()
    return [
        d
        for d in pool
        if (not memory_type or d.kind == memory_type) and (not subject or d.subject == subject)
    ]


def _trace_additions(view: View, pack: dict[str, Any]) -> None:
    trace = pack.get("search_trace")
    if not isinstance(trace, dict):
        return
    if view.hidden:
        # Both counts are the workspace's, not the query's: a count of hidden matches
        # would tell the caller which words hidden declarations contain. A caller who
        # cannot read some MUST rules is still bound by them, so the trace says how many
        # exist and the text tells it to run `check`, which evaluates them all.
        trace["hidden_by_access_policy"] = len(view.hidden)
        trace["hidden_must_rules"] = view.hidden_must_rules()
    problems = view.problems()
    if problems:
        trace["source_problems"] = problems


def _hidden_must_note(count: int) -> str:
    rules = "1 MUST rule" if count == 1 else f"{count} MUST rules"
    verb = "is" if count == 1 else "are"
    return (
        f"\n\nHIDDEN MUST\n- {rules} of this workspace {verb} hidden from you and may apply: "
        "run check on what you are about to do before acting"
    )


def _query_key(view: View, request: QueryRequest, as_text: bool) -> tuple[Any, ...]:
    # Everything an answer depends on: the snapshot, the role set that cut the view,
    # and the request. Roles sorted: equal frozensets may iterate in different orders.
    return (
        snapshot_serial(view.snapshot),
        tuple(sorted(view.cut.roles)),
        request.query,
        request.types,
        request.kinds,
        request.subject,
        request.limit,
        request.max_bytes,
        request.max_must,
        as_text,
    )


@dataclass(frozen=True, slots=True)
class QueryLookup:
    """One query's caller view, answer key and entity tag, and its cached answer if any:
    what a door needs to answer `If-None-Match` before anything is computed."""

    view: View
    key: tuple[Any, ...]
    tag: str
    cached: QueryAnswer | None


def query_lookup(
    hub: Hub,
    identity: Identity,
    name: str,
    request: QueryRequest,
    *,
    as_text: bool = False,
    view: View | None = None,
) -> QueryLookup:
    """The access checks of `query`, then its answer's key, tag and cached answer.

    Pass it to `query` to serve the same request without doing all that again. `view`:
    the caller's view, made by `awaited_view_for` after those checks; without it, the
    view may be made here (on the event loop, use `awaited_query_lookup`).
    """
    if view is None:
        view = view_for(hub, identity, name, READ_SEARCH)
    check_length(hub, "query", request.query)
    key = _query_key(view, request, as_text)
    cached = answer_cache(hub).get(key)
    # A cached answer carries its tag: the digest is only computed for a miss.
    tag = cached.tag if cached is not None else answer_tag(key)
    return QueryLookup(view, key, tag, cached)


async def awaited_query_lookup(
    hub: Hub, identity: Identity, name: str, request: QueryRequest, *, as_text: bool = False
) -> QueryLookup:
    """`query_lookup` for the event loop: a view not made yet is made in a worker thread."""
    view = await awaited_view_for(hub, identity, name, READ_SEARCH)
    return query_lookup(hub, identity, name, request, as_text=as_text, view=view)


async def query(
    hub: Hub,
    identity: Identity,
    name: str,
    request: QueryRequest,
    *,
    as_text: bool = False,
    max_result_bytes: int | None = None,
    lookup: QueryLookup | None = None,
) -> tuple[QueryAnswer, View]:
    """The EvidencePack as JSON bytes, and its text rendering when `as_text` (else "").

    Answers are joined from per-snapshot pieces and kept in the hub's answer cache.
    Over `max_result_bytes` (JSON) the request is refused before the answer is joined.
    `lookup` is `awaited_query_lookup` of the same call, made just before.
    """
    if lookup is None:
        lookup = await awaited_query_lookup(hub, identity, name, request, as_text=as_text)
    view, key, tag = lookup.view, lookup.key, lookup.tag
    cache = answer_cache(hub)
    answer = lookup.cached
    shared = answer is not None
    if answer is None:

        async def compute() -> QueryAnswer:
            refused = cache.refused_size(key)  # refused before, or while this caller waited
            if refused is not None and max_result_bytes is not None:
                _refuse_over(refused, max_result_bytes)
            try:
                computed = await _answer_query(
                    view, request, key, tag, as_text, max_result_bytes, hub.get(name)
                )
            except AnswerTooLarge as error:
                cache.note_refusal(key, error.size)
                raise
            cache.put(key, computed)
            return computed

        answer, shared = await cache.computed_once(key, compute)
    if shared and max_result_bytes is not None:
        _refuse_over(len(answer.text.encode("utf-8") if as_text else answer.body), max_result_bytes)
    note_query(hub, identity, name, request.query, answer.facts())
    return answer, view


def _refuse_over(size: int, limit: int) -> None:
    if size > limit:
        raise result_too_large(limit, size)


async def _answer_query(
    view: View,
    request: QueryRequest,
    key: Any,
    tag: str,
    as_text: bool,
    max_result_bytes: int | None,
    owner: Any,
) -> QueryAnswer:
    from memhubd.query import build_evidence_pack
    from memhubd.query.pack import declaration_json, must_line

    kinds = list(request.kinds) if request.kinds is not None else None
    types_ = list(request.types) if request.types is not None else None

    budgeted = request.max_bytes is not None or request.max_must is not None
    # Shared by the host's snapshots: a reload re-encodes only what it reparsed.
    piece = pieces(view.snapshot, "query", declaration_json, owner)

    must_gate = None
    if not as_text and not budgeted and max_result_bytes is not None:
        limit = max_result_bytes

        def refuse_early(index: Any, slots: Any) -> None:
            # The MUST section alone is a lower bound of the JSON answer's size: over
            # the limit, the refusal is decided before the layer and the answer are
            # built (a dense workspace's layer is thousands of rules). The size the
            # refusal carries, and the answer cache notes, is then that bound.
            _refuse_over(joined_length(index, slots, piece, over=limit), limit)

        must_gate = refuse_early

    def work() -> QueryAnswer:
        pack = build_evidence_pack(
            view.workspace,
            request.query,
            kinds=kinds,
            subject=request.subject,
            limit=request.limit,
            types=types_,
            must_gate=must_gate,
        )
        _trace_additions(view, {"search_trace": pack.trace})
        hidden_must = pack.trace.get("hidden_must_rules", 0)
        extra = None
        if budgeted:
            pack, budget = apply_budget(
                pack, piece, request.max_bytes, request.max_must, hidden_must
            )
            extra = {"budget": budget}
        # `join_pieces(must, piece)`, the kept pieces read in one pass.
        must_json = sections(view.snapshot, "query", lambda must: b",".join(piece.many(must)))
        parts = pack.json_parts(piece, extra, must_json)
        if not as_text and max_result_bytes is not None:
            _refuse_over(joined_size(parts), max_result_bytes)
        text = ""
        if as_text:

            def must_lines(must: Any) -> str:
                # `must_text(must, line)`: a MUST layer met first has its lines kept per
                # declaration, as pieces are (layers share most rules), read in one pass.
                line = pieces(view.snapshot, "must-line", must_line, owner)
                return "\n".join(line.many(must))  # type: ignore[attr-defined]

            text = pack.render_text(sections(view.snapshot, "text", must_lines))
        if text and hidden_must:
            text += _hidden_must_note(hidden_must)
        if text and extra and extra["budget"]["must_omitted"]:
            # An emptied MUST layer: its rules were left out, not that none apply.
            text = must_left_out(text) + f"\n\nMORE MUST\n- {extra['budget']['next_step']}"
        if as_text and max_result_bytes is not None:
            _refuse_over(len(text.encode("utf-8")), max_result_bytes)
        return QueryAnswer(
            key=key,
            body=b"".join(parts),
            text=text,
            tag=tag,
            generation=view.snapshot.generation,
            health=view.snapshot.health,
            counts={
                "must": len(pack.must),
                "should": len(pack.should),
                "context": len(pack.context),
                "conflicts": len(pack.conflicts),
            },
            missing=list(pack.missing),
            excluded_total=int(pack.trace.get("excluded_by_filters_total", 0) or 0),
        )

    # A query-sized call (about a millisecond, less than a hop to a worker thread and
    # back) runs inline; one that would first build the view's index or counts does not.
    if view.ready():
        return work()
    return await run_engine(work)  # type: ignore[no-any-return]


# A caller's view of a snapshot never changes, and computing its vocabulary takes
# milliseconds on a large workspace: keep it for as long as the view's workspace lives.
# The values are plain data: one referring to its workspace would keep it alive forever.
_VOCABULARY: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


async def vocabulary(view: View) -> dict[str, Any]:
    """The workspace's own words (subjects, aliases, scopes, types) as this caller sees them."""
    from memhubd.query import workspace_vocabulary

    cached = _VOCABULARY.get(view.workspace)
    if cached is None:
        cached = await run_engine(workspace_vocabulary, view.workspace)
        _VOCABULARY[view.workspace] = cached
    return cached


async def explain(hub: Hub, identity: Identity, name: str, decl_id: str) -> dict[str, Any]:
    """memdsl's explain payload (as `memhubd explain --json` prints it), with `rendered_text`."""
    from memhubd.query import explain_payload

    view = await awaited_view_for(hub, identity, name, READ_SEARCH)
    if not decl_id.strip():
        raise ProtocolError(ErrorCode.INVALID, "a declaration id is required", {"field": "id"})

    def work() -> dict[str, Any]:
        declaration = view.workspace.by_id(decl_id)
        if declaration is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"declaration '{decl_id}' not found",
                {"id": decl_id, "workspace": name},
            )
        payload = explain_payload(view.workspace, decl_id)
        # Its superseder is hidden, so `referenced_by` cannot show it; say that there is one.
        elsewhere = view.workspace.superseded_elsewhere
        if declaration.id in elsewhere or declaration.name in elsewhere:
            payload["declaration"]["superseded_by_hidden"] = True
            payload["rendered_text"] += "\n  superseded by a declaration you cannot read"
        return payload

    return await run_engine(work)


async def check(
    hub: Hub, identity: Identity, name: str, request: CheckRequest
) -> tuple[dict[str, Any], str]:
    pack, _view = await _compliance_pack(hub, identity, name, request)
    data = pack.as_dict()
    note_check(hub, identity, name, request.task, data)
    return data, pack.render_text()


async def check_encoded(
    hub: Hub,
    identity: Identity,
    name: str,
    request: CheckRequest,
    *,
    max_result_bytes: int | None = None,
) -> tuple[bytes, dict[str, Any], str]:
    """`check` for the doors: the pack's compact JSON joined from per-snapshot pieces
    (refused over `max_result_bytes` before it is joined), its verdict and findings for
    callers that read them, and its text."""
    from memhubd.check.pack import constraint_json

    pack, view = await _compliance_pack(hub, identity, name, request)
    parts = pack.json_parts(pieces(view.snapshot, "check", constraint_json))
    if max_result_bytes is not None:
        _refuse_over(joined_size(parts), max_result_bytes)
    findings = {
        "verdict": pack.verdict,
        "evaluated": pack.evaluated,
        "violations": pack.violations,
        "unknowns": pack.unknowns,
    }
    note_check(hub, identity, name, request.task, findings)
    return b"".join(parts), findings, pack.render_text()


async def _compliance_pack(
    hub: Hub, identity: Identity, name: str, request: CheckRequest
) -> tuple[Any, View]:
    from memhubd.check import check_compliance

    view = await awaited_view_for(hub, identity, name, READ_SEARCH)
    check_length(hub, "task", request.task)
    check_length(hub, "candidate", request.candidate)

    def work() -> Any:
        # Every applicable rule of the whole workspace binds the caller, readable or
        # not: hidden ones are judged too and reported as counts (`withheld`).
        return check_compliance(
            view.snapshot.workspace,
            request.task,
            request.candidate,
            subject=request.subject,
            scope=request.scope,
            exceptions=list(request.exceptions),
            regex_timeout=hub.limits.regex_timeout_ms / 1000.0,
            hidden=view.is_hidden if view.hidden else None,
        )

    # Guards are user-written regexes: even when bounded in time, matching must never
    # hold up the event loop, so a check always runs in a worker thread.
    return await run_engine(work), view


async def lint(hub: Hub, identity: Identity, name: str) -> tuple[dict[str, Any], str]:
    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)

    def work() -> tuple[dict[str, Any], str]:
        # Lint of what the caller may read, not a filter over the whole workspace's:
        # workspace-level findings (ambiguous aliases, duplicates, module sizes) would
        # otherwise name or count hidden declarations.
        diagnostics = view.diagnostics()
        errors = sum(1 for d in diagnostics if d.severity == "error")
        warnings = len(diagnostics) - errors
        problems = view.problems()
        payload = {
            "schema_version": LINT_SCHEMA,
            "ok": errors == 0 and not problems,
            "declarations": len(view.workspace.declarations),
            "errors": errors,
            "warnings": warnings,
            "diagnostics": [d.as_dict() for d in diagnostics],
            "source_problems": problems,
        }
        lines = [f"{p['file']}:{p['line']}: error[{p['kind']}] {p['message']}" for p in problems]
        lines += [d.render() for d in diagnostics]
        summary = (
            f"\n{len(view.workspace.declarations)} declarations, {errors} error(s), "
            f"{warnings} warning(s)"
        )
        if problems:  # the lint counts are of the declarations; these files did not load
            summary += f", {len(problems)} source problem(s) (above)"
        lines.append(summary)
        return payload, "\n".join(lines)

    return await run_engine(work)


# --- raw sources ------------------------------------------------------------------------


def _file_id(snapshot: Snapshot, source: SourceFile) -> str:
    return os.path.relpath(source.path, snapshot.root)


def _load_problem(snapshot: Snapshot, source: SourceFile) -> SourceProblem | None:
    """Why `source` is served from its last good version, if it is: its own problem, or
    the workspace directory's (gone: every file is then served as last read)."""
    return source.problem or snapshot.root_problem


def _status(snapshot: Snapshot, source: SourceFile) -> str:
    problem = _load_problem(snapshot, source)
    return problem.kind if problem is not None else "ok"


async def files(hub: Hub, identity: Identity, name: str) -> dict[str, Any]:
    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    counts: dict[str, int] = {}
    for d in view.workspace.declarations:
        counts[d.file] = counts.get(d.file, 0) + 1
    return {
        "schema_version": FILES_SCHEMA,
        "workspace": name,
        "files": [
            {
                "file_id": _file_id(view.snapshot, source),
                "path": source.path,
                "declarations": counts.get(source.path, 0),
                "status": _status(view.snapshot, source),
            }
            for source in view.snapshot.files
        ],
    }


def _find_file(snapshot: Snapshot, file_id: str) -> SourceFile | None:
    sources = snapshot.files
    for source in sources:
        if _file_id(snapshot, source) == file_id:
            return source
    # ASCII and short before int(): '²' is a digit int() refuses, and thousands of digits
    # exceed its conversion limit.
    short_number = file_id.isascii() and file_id.isdigit() and len(file_id) < 10
    if short_number and int(file_id) < len(sources):
        return sources[int(file_id)]
    for source in sources:
        if os.path.basename(source.path) == file_id:
            return source
    return None


def _real_position(text: str, offset: int) -> tuple[int, int]:
    """The real 1-based (line, column) of a character offset."""
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def _on_disk(real_root: str, path: str, served: str, limit: int) -> str:
    """The text of `path` as it is on disk now (confined to the directory the workspace
    serves, `real_root`, also when its root is a link that now leads elsewhere; bytes
    that are not UTF-8 as U+FFFD), else `served` (also for a file over `limit` bytes,
    which no answer could carry)."""
    from memhubd.runtime.confine import Refused, read_confined

    try:
        if os.path.getsize(path) > limit:
            return served
        found = read_confined(path, real_root)
    except (OSError, Refused):
        return served
    if found is None:
        return served
    # A file that does not load for bytes that are not UTF-8 is shown too, each such
    # byte as U+FFFD: the text that needs fixing, and where (`stale` says it is not served).
    return found[0].decode("utf-8", errors="replace")


async def file_content(hub: Hub, identity: Identity, name: str, file_id: str) -> dict[str, Any]:
    from memhubd.auth.access import redact_source

    view = await awaited_view_for(hub, identity, name, READ_SUMMARY)
    source = _find_file(view.snapshot, file_id)
    if source is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no source file '{file_id}' in workspace '{name}'",
            {"file_id": file_id, "workspace": name},
        )
    text = source.text
    if source.problem is not None and view.complete:
        # memdsl reads the file from disk: one that does not load is shown as it is
        # there, the text that needs fixing. A caller who may not read everything gets
        # the served text, redacted: unparsed text cannot be.
        limit = int(hub.limits.max_result_bytes)
        host = hub.hosts.get(name)
        real_root = host.review_root if host is not None else os.path.realpath(view.snapshot.root)
        # Under the directory served, not through a root link that may lead elsewhere now.
        path = os.path.join(real_root, os.path.relpath(source.path, view.snapshot.root))
        text = await anyio.to_thread.run_sync(_on_disk, real_root, path, text, limit)
    hidden_here = []
    if view.hidden and source.document is not None:
        for raw in source.document.declarations:
            if raw.id in view.hidden:
                start, end = raw.span
                hidden_here.append((*_real_position(text, start), *_real_position(text, end - 1)))
    if hidden_here:
        text = redact_source(text, hidden_here)
    return {
        "schema_version": FILE_SCHEMA,
        "file_id": _file_id(view.snapshot, source),
        "path": source.path,
        "content": text,
        "stale": _load_problem(view.snapshot, source) is not None,
        "hidden_declarations": len(hidden_here),
    }
