"""The route table of the JSON API: one entry per operation, with its scope.

The daemon mounts these and documents them in OpenAPI; memctl builds its URLs
from them. Paths use Starlette's `{name}` placeholders.
"""

from __future__ import annotations

from memhub_protocol.record import Record
from memhub_protocol.scopes import (
    ADMIN,
    READ_SEARCH,
    READ_SUMMARY,
    REVIEW,
    WRITE_CANDIDATE,
    WRITE_RECALL,
)

TYPE_CHECKING = False  # typing itself is not imported: memctl would pay for it
if TYPE_CHECKING:
    from typing import Any


# A query parameter that may be given more than once says so in its description.
_SEVERAL = "; several: repeat it or separate them by commas"


class Param(Record):
    """A query parameter: checked by the daemon before the route runs, and documented."""

    __slots__ = ("name", "kind", "minimum", "maximum", "choices", "description", "several")
    name: str
    kind: str  # "string", "integer" or "boolean"
    minimum: int | None
    maximum: int | None
    choices: tuple[str, ...]
    description: str
    several: bool  # may be given more than once; any other is refused when it is

    def __init__(
        self,
        name: str,
        kind: str = "string",
        minimum: int | None = None,
        maximum: int | None = None,
        choices: tuple[str, ...] = (),
        description: str = "",
        several: bool = False,
    ) -> None:
        self._set(
            name=name,
            kind=kind,
            minimum=minimum,
            maximum=maximum,
            choices=choices,
            description=description + (_SEVERAL if several else ""),
            several=several,
        )

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.kind}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.choices:
            schema["enum"] = list(self.choices)
        if self.kind == "string" and not self.choices:
            schema["maxLength"] = MAX_PARAM_CHARS
        return schema


MAX_PARAM_CHARS = 4096
BOOLEAN_WORDS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


class Route(Record):
    __slots__ = ("name", "method", "path", "scope", "summary", "request_model", "params")
    name: str
    method: str
    path: str
    scope: str | None  # None: no token needed
    summary: str
    # The body's schema: a class in memhub_protocol.models or .recall, or the name of a
    # body its handler parses itself, described in memhubd.api.openapi.
    request_model: str | None
    params: tuple[Param, ...]  # query parameters

    def __init__(
        self,
        name: str,
        method: str,
        path: str,
        scope: str | None,
        summary: str,
        request_model: str | None = None,
        params: tuple[Param, ...] = (),
    ) -> None:
        self._set(
            name=name,
            method=method,
            path=path,
            scope=scope,
            summary=summary,
            request_model=request_model,
            params=params,
        )

    def url(self, **params: str) -> str:
        path = self.path
        for key, value in params.items():
            path = path.replace("{" + key + "}", quote_segment(str(value)))
            path = path.replace("{" + key + ":path}", quote_segment(str(value)))
        return path


# What `urllib.parse.quote(text, safe="")` leaves as it is; memctl calls `url` on every
# command, and importing urllib.parse (with ipaddress) costs more than this loop.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def quote_segment(text: str) -> str:
    """`text` percent-encoded (UTF-8) as one path segment, as `quote(text, safe="")` does."""
    return "".join(
        char if char in _UNRESERVED else "".join(f"%{byte:02X}" for byte in char.encode())
        for char in text
    )


_WS = "/v1/workspaces/{workspace}"
_AAAK = Param("format", choices=("json", "aaak"), description="aaak: add the hits as AAAK")
# memhub_protocol.recall.MAX_LIMIT and the daemon's wake-up bounds, written out: importing
# them would cost memctl `dataclasses` on every command (a test holds the limits equal).
RECALL_MAX_LIMIT = 100
RECALL_MAX_HIT_CHARS = 1_000_000
WAKE_UP_MAX_LIMIT = 50
WAKE_UP_MIN_BUDGET = 200
# The daemon's bounds of a diary read, a cowork peek and a graph query, named so that
# memctl refuses a number outside them itself.
DIARY_MAX_LIMIT = 100
PEEK_MAX_LIMIT = 50
KG_MAX_LIMIT = 1000
KG_MAX_OFFSET = 10000
MAX_LIST_LIMIT = 500  # declarations per page
MAX_PROPOSALS_LIMIT = 10000

ROUTES: tuple[Route, ...] = (
    Route("healthz", "GET", "/healthz", None, "Liveness: the process answers."),
    Route("readyz", "GET", "/readyz", None, "Readiness: every workspace has loaded once."),
    Route("metrics", "GET", "/metrics", READ_SUMMARY, "Prometheus metrics."),
    Route("openapi", "GET", "/v1/openapi.json", None, "This API as OpenAPI 3.1."),
    Route("status", "GET", "/v1/status", READ_SUMMARY, "Daemon and workspace status."),
    Route("events", "GET", "/v1/events", READ_SUMMARY, "Server-sent events: reloads, health."),
    Route("workspaces", "GET", "/v1/workspaces", READ_SUMMARY, "Workspaces the caller may use."),
    Route(
        "workspace_add",
        "POST",
        "/v1/workspaces",
        ADMIN,
        "Add a workspace at run time (persisted).",
        "WorkspaceAddRequest",
    ),
    Route("workspace", "GET", _WS, READ_SUMMARY, "One workspace's status."),
    Route("workspace_remove", "DELETE", _WS, ADMIN, "Stop serving a workspace (files stay)."),
    Route("workspace_reload", "POST", _WS + "/reload", ADMIN, "Re-scan a workspace now."),
    Route("map", "GET", _WS + "/map", READ_SUMMARY, "Memory map (memdsl.map.v1)."),
    Route("types", "GET", _WS + "/types", READ_SUMMARY, "Loaded memory types (memdsl.types.v1)."),
    Route(
        "list",
        "GET",
        _WS + "/declarations",
        READ_SUMMARY,
        "List declarations with filters.",
        params=(
            Param("type", description="only declarations of this memory type"),
            Param("kind", description="legacy name of `type`"),
            Param("subject", description="only declarations about this subject"),
            Param("include_inactive", "boolean", description="also superseded or expired ones"),
            Param("limit", "integer", 1, MAX_LIST_LIMIT, description="most items (default 100)"),
        ),
    ),
    Route(
        "explain",
        "GET",
        _WS + "/declarations/{decl_id}",
        READ_SEARCH,
        "One declaration with relations and evidence.",
    ),
    Route(
        "query",
        "POST",
        _WS + "/query",
        READ_SEARCH,
        "Query into an EvidencePack (memdsl.evidence_pack.v1).",
        "QueryRequest",
    ),
    Route(
        "check",
        "POST",
        _WS + "/check",
        READ_SEARCH,
        "Preflight a draft against MUST rules (CompliancePack).",
        "CheckRequest",
    ),
    Route("lint", "GET", _WS + "/lint", READ_SUMMARY, "Lint diagnostics (memhub.lint.v1)."),
    Route("files", "GET", _WS + "/files", READ_SUMMARY, "Source files of a workspace."),
    Route(
        "file",
        "GET",
        _WS + "/files/{file_id}",
        READ_SUMMARY,
        "Raw source of one file, minus declarations hidden from the caller.",
    ),
    Route("tokens", "GET", "/v1/tokens", ADMIN, "List tokens (never their secrets)."),
    Route(
        "token_create",
        "POST",
        "/v1/tokens",
        ADMIN,
        "Create a token; the secret is shown once.",
        "TokenCreateRequest",
    ),
    Route("token_revoke", "DELETE", "/v1/tokens/{token_name}", ADMIN, "Revoke a token."),
    Route(
        "proposal_create",
        "POST",
        _WS + "/proposals",
        WRITE_CANDIDATE,
        "Propose one declaration for review; it is not served until approved.",
        "ProposeRequest",
    ),
    Route(
        "proposals",
        "GET",
        _WS + "/proposals",
        READ_SUMMARY,
        "List proposals, oldest first; `?status=pending|approved|rejected|all&limit=N&offset=N`.",
        params=(
            Param("status", choices=("pending", "approved", "rejected", "all")),
            Param("limit", "integer", 1, MAX_PROPOSALS_LIMIT, description="most proposals"),
            Param("offset", "integer", 0, description="skip this many of the listed proposals"),
        ),
    ),
    Route(
        "proposal",
        "GET",
        _WS + "/proposals/{proposal_id}",
        READ_SUMMARY,
        "One proposal: source, current validation, and a diff (`?into=FILE`).",
        params=(Param("into", description="the .mem file the diff is against"),),
    ),
    Route(
        "proposal_approve",
        "POST",
        _WS + "/proposals/{proposal_id}/approve",
        REVIEW,
        "Approve a proposal into a .mem file; answers when it is served.",
        "ApproveRequest",
    ),
    Route(
        "proposal_reject",
        "POST",
        _WS + "/proposals/{proposal_id}/reject",
        REVIEW,
        "Reject a proposal; nothing is written to the workspace.",
        "RejectRequest",
    ),
    # -- recall: drawers of raw material, searched by BM25 + vectors (memhub_protocol.recall)
    Route(
        "recall_ingest",
        "POST",
        _WS + "/recall/ingest",
        WRITE_RECALL,
        "Ingest text or files.",
        request_model="IngestRequest",
    ),
    Route(
        "recall_search",
        "POST",
        _WS + "/recall/search",
        READ_SEARCH,
        "Search the drawers.",
        request_model="SearchRequest",
        params=(_AAAK,),
    ),
    Route(
        "recall_search_get",
        "GET",
        _WS + "/recall/search",
        READ_SEARCH,
        "Search the drawers: `?q=&room=&source_kind=&since=&until=&identity=&limit=&max_chars=` (`top_k` is `limit`); other parameters are refused.",
        params=(
            Param("q", description="the words to search for (required, as `q` or `query`)"),
            Param("query", description="the same as `q`"),
            Param("limit", "integer", 1, RECALL_MAX_LIMIT, description="most hits (default 10)"),
            Param("top_k", "integer", 1, RECALL_MAX_LIMIT, description="mempal's name of `limit`"),
            Param("room", description="only drawers in this room", several=True),
            Param(
                "source_kind",
                description="only drawers of this source kind (claude-code, chatgpt, codex, "
                "slack, markdown, text, manual)",
                several=True,
            ),
            Param("since", description="only drawers from this time on (epoch seconds or ISO)"),
            Param("until", description="only drawers up to this time (epoch seconds or ISO)"),
            Param("identity", description="only drawers this identity wrote", several=True),
            Param(
                "max_chars",
                "integer",
                1,
                RECALL_MAX_HIT_CHARS,
                description="cut each hit's content to this many characters",
            ),
            _AAAK,
        ),
    ),
    Route(
        "recall_search_all",
        "POST",
        "/v1/recall/search",
        READ_SEARCH,
        "Search every workspace the caller may use, or those named in `workspaces`.",
        request_model="SearchRequest",
        params=(_AAAK,),
    ),
    Route(
        "recall_compress",
        "POST",
        "/v1/recall/compress",
        READ_SUMMARY,
        "Body `{text}` as one AAAK zettel (mempal's compress); nothing is stored.",
        request_model="CompressRequest",
    ),
    Route("recall_status", "GET", _WS + "/recall/status", READ_SUMMARY, "Recall store status."),
    Route(
        "recall_wake_up",
        "GET",
        _WS + "/recall/wake-up",
        READ_SUMMARY,
        "Identity, top drawers and the memory map header: `?limit=&budget=&format=`.",
        params=(
            Param("limit", "integer", 1, WAKE_UP_MAX_LIMIT, description="most drawers (default 5)"),
            Param(
                "budget",
                "integer",
                WAKE_UP_MIN_BUDGET,
                description="most characters of `text` (default 4000)",
            ),
            Param("format", choices=("text", "aaak"), description="aaak: one AAAK zettel"),
        ),
    ),
    Route(
        "recall_propose",
        "POST",
        _WS + "/recall/drawers/{drawer_id}/propose",
        WRITE_CANDIDATE,
        "Propose a declaration whose evidence quotes this drawer verbatim; body "
        "`{type, id, fields, quote?, reason?}`. Reviewed like any proposal. Needs "
        "read:search too (it reads the drawer).",
        request_model="DrawerProposeRequest",
    ),
    Route(
        "diary_write",
        "POST",
        _WS + "/diary",
        WRITE_RECALL,
        "Write a diary entry `{type: OBSERVATION|LESSON|PATTERN, content, shared?, importance?}`.",
        request_model="DiaryWriteRequest",
    ),
    Route(
        "diary_read",
        "GET",
        _WS + "/diary",
        READ_SUMMARY,
        "Diary entries, newest first: one's own, or another identity's with `review` "
        "(others see only shared ones).",
        params=(
            Param("identity", description="whose diary (default: the caller's)"),
            Param("type", choices=("OBSERVATION", "LESSON", "PATTERN")),
            Param("q", description="only entries matching these words, best first"),
            Param("limit", "integer", 1, DIARY_MAX_LIMIT, description="most entries (default 20)"),
        ),
    ),
    Route("recall_drawer", "GET", _WS + "/recall/drawers/{drawer_id}", READ_SEARCH, "One drawer."),
    Route(
        "recall_delete",
        "DELETE",
        _WS + "/recall/drawers/{drawer_id}",
        WRITE_RECALL,
        "Soft-delete a drawer (audited).",
    ),
    Route(
        "recall_delete_source",
        "POST",
        _WS + "/recall/sources/delete",
        WRITE_RECALL,
        "Soft-delete every drawer of one source `{source, dry_run?}` the caller may read "
        "(audited); another identity's need review or admin.",
        request_model="SourceDeleteRequest",
    ),
    Route(
        "recall_purge",
        "POST",
        _WS + "/recall/purge",
        ADMIN,
        "Remove soft-deleted drawers for good: all, or with `{before}` (epoch seconds or ISO) "
        "those deleted before then.",
        request_model="PurgeRequest",
    ),
    Route("recall_taxonomy", "GET", _WS + "/recall/taxonomy", READ_SUMMARY, "Room keywords."),
    Route(
        "recall_taxonomy_edit",
        "POST",
        _WS + "/recall/taxonomy",
        WRITE_RECALL,
        "Set (or with `remove`, drop) one room's keywords.",
        request_model="TaxonomyEditRequest",
    ),
    Route(
        "recall_reindex",
        "POST",
        _WS + "/recall/reindex",
        ADMIN,
        "Re-embed every drawer: in one call, or in steps `{after, limit}` that report progress.",
        request_model="ReindexRequest",
    ),
    # -- cowork: inboxes between identities sharing a workspace, and partner peek
    Route(
        "cowork_push",
        "POST",
        _WS + "/cowork/push",
        WRITE_RECALL,
        "Leave a message `{to, content}` in a partner's inbox, for its next drain.",
        request_model="CoworkPushRequest",
    ),
    Route(
        "cowork_drain",
        "POST",
        _WS + "/cowork/drain",
        READ_SUMMARY,
        "Take the messages waiting for the caller, oldest first: all, or within `max_bytes` "
        "(each is delivered at most once; `remaining` counts those left).",
        params=(
            Param(
                "max_bytes",
                "integer",
                0,
                description="hand out messages while their content totals at most this many "
                "bytes (UTF-8); the oldest always, unless at_least_one is false",
            ),
            Param(
                "at_least_one",
                "boolean",
                description="hand out the oldest message even when it alone is over max_bytes "
                "(default true, so a large message is never stuck)",
            ),
            Param(
                "weigh",
                choices=("content", "plain", "hook-json"),
                description="what max_bytes counts: the content (default), or each message's "
                "whole line as memctl prints it in that format (its time, sender and workspace "
                "too; line breaks indented, and escaped in JSON)",
            ),
        ),
    ),
    Route(
        "cowork_status",
        "GET",
        _WS + "/cowork/status",
        READ_SUMMARY,
        "The caller's inbox without draining it, and its own undelivered pushes.",
    ),
    Route(
        "cowork_peek",
        "GET",
        _WS + "/cowork/peek/{identity}",
        READ_SEARCH,
        "A partner's recent activity (`auto`: whoever else acted last), as the caller may see it.",
        params=(
            Param("limit", "integer", 1, PEEK_MAX_LIMIT, description="most entries (default 30)"),
            Param("since", description="only entries after this RFC 3339 time"),
        ),
    ),
    # -- knowledge graph (stored and derived triples), tunnels, fact-check
    Route(
        "kg_add",
        "POST",
        _WS + "/kg/triples",
        WRITE_RECALL,
        "Add a triple `{subject, predicate, object, source_drawer?, valid_from?, confidence?}`.",
        request_model="TripleAddRequest",
    ),
    Route(
        "kg_query",
        "GET",
        _WS + "/kg/triples",
        READ_SEARCH,
        "Triples valid now (or at `as_of`, or all), stored and derived from declarations.",
        params=(
            Param("subject", description="exact subject"),
            Param("predicate", description="exact predicate"),
            Param("object", description="exact object"),
            Param("as_of", description="valid at this instant (epoch seconds or ISO 8601)"),
            Param("all", "boolean", description="every period, expired and retired included"),
            Param("limit", "integer", 1, KG_MAX_LIMIT, description="most triples (default 100)"),
            Param(
                "offset",
                "integer",
                0,
                KG_MAX_OFFSET,
                description="triples to skip: the `next_offset` of the previous page (default 0)",
            ),
        ),
    ),
    Route(
        "kg_invalidate",
        "POST",
        _WS + "/kg/triples/{triple_id}/invalidate",
        WRITE_RECALL,
        "End a stored triple's validity (body `{at?}`); derived triples are refused.",
        request_model="TripleInvalidateRequest",
    ),
    Route(
        "kg_timeline",
        "GET",
        _WS + "/kg/timeline",
        READ_SEARCH,
        "Every period where `entity` is subject or object, oldest first.",
        params=(Param("entity", description="the entity (required)"),),
    ),
    Route("kg_stats", "GET", _WS + "/kg/stats", READ_SEARCH, "Knowledge-graph counts."),
    Route(
        "tunnels",
        "GET",
        "/v1/tunnels",
        READ_SEARCH,
        "Rooms (recall rooms, modules, entities) shared by workspaces the caller may use.",
    ),
    Route(
        "fact_check",
        "POST",
        _WS + "/fact-check",
        READ_SEARCH,
        "Check a draft `{text, room?, now?}` against the graph and the MUST rules.",
        request_model="FactCheckRequest",
    ),
)

_BY_NAME = {route.name: route for route in ROUTES}


def route_by_name(name: str) -> Route:
    return _BY_NAME[name]
