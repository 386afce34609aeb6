"""OpenAPI 3.1 description of the JSON API, generated from the route table.

Path and query parameters, request bodies, success statuses, the `schema_version` of
each answer and the error envelope are described precisely enough for a client
generator or a schema-driven fuzzer; nothing here decides behaviour (the route table,
the models and the handlers do: this module only says what they do).
"""

from __future__ import annotations

from typing import Any

import memhub_protocol.models as models
import memhub_protocol.recall as recall_models
from memhub_protocol import (
    EVIDENCE_PACK_SCHEMA,
    FILE_SCHEMA,
    FILES_SCHEMA,
    LINT_SCHEMA,
    LIST_SCHEMA,
    MAP_SCHEMA,
    ROUTES,
    STATUS_SCHEMA,
    TOKENS_SCHEMA,
    TYPES_SCHEMA,
    WORKSPACES_SCHEMA,
    ProtocolError,
)
from memhub_protocol.models import (
    DECISION_SCHEMA,
    PROPOSAL_SCHEMA,
    PROPOSALS_SCHEMA,
    PROPOSE_SCHEMA,
)
from memhub_protocol.routes import Route
from memhubd import __version__
from memhubd.query.explain import EXPLAIN_SCHEMA
from memhubd.service import cowork, diary, graph, recall, recall_review

_ENVELOPE = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "detail"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "detail": {"type": "object"},
            },
        }
    },
}
_ERROR = {
    "description": "Error envelope",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}

# ---------------------------------------------------------------------------- request bodies

_TIME = {
    "type": ["integer", "string", "null"],
    "description": "epoch seconds or an ISO 8601 date/time (UTC when it names no zone)",
}
_WORDS = {"type": "string", "minLength": 1, "pattern": "\\S"}


def _body(required: list[str], properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    schema = {"type": "object", "additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    return {**schema, **extra}


def _graph_name(description: str) -> dict[str, Any]:
    return {**_WORDS, "maxLength": graph.MAX_NAME, "description": description}


# The bodies their handlers parse themselves (no class of memhub_protocol describes
# them), by the name the route table gives them: what each handler and its service
# function accept, field by field.
HANDLER_BODIES: dict[str, dict[str, Any]] = {
    "CompressRequest": _body(
        ["text"],
        {
            "text": {
                **_WORDS,
                "description": "at most limits.max_query_chars characters (413 beyond)",
            }
        },
    ),
    "DrawerProposeRequest": _body(
        ["type", "id"],
        {
            "type": {**_WORDS, "description": "the memory type of the declaration"},
            "id": {**_WORDS, "description": "the declaration's name"},
            "fields": {
                "type": ["object", "null"],
                "maxProperties": recall_review.MAX_FIELDS,
                "additionalProperties": {
                    "type": "string",
                    "maxLength": recall_review.MAX_VALUE_CHARS,
                },
            },
            "quote": {
                "type": ["string", "null"],
                "description": "the drawer's words to quote verbatim (default: chosen)",
            },
            "reason": {"type": ["string", "null"]},
        },
    ),
    "DiaryWriteRequest": _body(
        ["type", "content"],
        {
            "type": {
                "type": "string",
                "description": ", ".join(diary.TYPES) + " (any case, spaces around ignored)",
            },
            "content": {
                **_WORDS,
                "description": f"1 to {diary.MAX_ENTRY_CHARS} characters once trimmed",
            },
            "shared": {"type": "boolean", "default": False},
            "importance": {"type": ["integer", "null"], "minimum": 0, "maximum": 5},
        },
    ),
    "PurgeRequest": _body(
        [],
        {
            "before": {**_TIME, "description": "only drawers deleted before then (default: all)"},
            "audit_before": {
                **_TIME,
                "description": "also remove the audit entries written before then (default: none)",
            },
        },
    ),
    "CoworkPushRequest": _body(
        ["to", "content"],
        {
            "to": {**_WORDS, "maxLength": cowork.MAX_NAME, "description": "a partner's token"},
            "content": {
                **_WORDS,
                "description": "at most the inbox's max_message_bytes (UTF-8; 413 beyond)",
            },
        },
    ),
    "TripleAddRequest": _body(
        ["subject", "predicate", "object"],
        {
            "subject": _graph_name("the subject entity"),
            "predicate": _graph_name("the relation"),
            "object": _graph_name("the object entity"),
            "source_drawer": {
                "type": ["string", "null"],
                "description": "a live drawer the caller may read, cited as the source",
            },
            "valid_from": {**_TIME, "description": "start of validity (default: now)"},
            "confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1, "default": 1},
        },
    ),
    "TripleInvalidateRequest": _body(
        [],
        {"at": {**_TIME, "description": "end of validity, not in the future (default: now)"}},
    ),
    "FactCheckRequest": _body(
        ["text"],
        {
            "text": {
                **_WORDS,
                "description": "the draft: at most limits.max_query_chars characters",
            },
            "room": {
                "type": ["string", "null"],
                "minLength": 1,
                "maxLength": graph.MAX_NAME,
                "pattern": "\\S",
            },
            "now": {**_TIME, "description": "the instant to check at, not before 1970"},
        },
    ),
}


def _request_body(name: str) -> tuple[dict[str, Any], bool]:
    """The body schema named `name`, and whether a request must send a body at all.

    A request without a body is read as `{}`: the body is required when `{}` is refused.
    """
    if name in HANDLER_BODIES:
        schema = HANDLER_BODIES[name]
        return schema, bool(schema.get("required"))
    model = getattr(models, name, None) or getattr(recall_models, name)
    try:
        model.from_json({})
    except ProtocolError:
        return model.json_schema(), True
    return model.json_schema(), False


# ---------------------------------------------------------------------------- answers

# The `schema_version` each JSON answer carries; the routes not named answer without one.
ANSWER_SCHEMAS: dict[str, str] = {
    "status": STATUS_SCHEMA,
    "workspaces": WORKSPACES_SCHEMA,
    "map": MAP_SCHEMA,
    "types": TYPES_SCHEMA,
    "list": LIST_SCHEMA,
    "explain": EXPLAIN_SCHEMA,
    "query": EVIDENCE_PACK_SCHEMA,
    "lint": LINT_SCHEMA,
    "files": FILES_SCHEMA,
    "file": FILE_SCHEMA,
    "tokens": TOKENS_SCHEMA,
    "proposal_create": PROPOSE_SCHEMA,
    "proposals": PROPOSALS_SCHEMA,
    "proposal": PROPOSAL_SCHEMA,
    "proposal_approve": DECISION_SCHEMA,
    "proposal_reject": DECISION_SCHEMA,
    "recall_ingest": recall.INGEST_SCHEMA,
    "recall_search": recall.RESULT_SCHEMA,
    "recall_search_get": recall.RESULT_SCHEMA,
    "recall_search_all": recall.RESULT_SCHEMA,
    "recall_compress": recall.COMPRESS_SCHEMA,
    "recall_status": recall.STATUS_SCHEMA,
    "recall_wake_up": recall.WAKE_UP_SCHEMA,
    "recall_propose": PROPOSE_SCHEMA,
    "diary_write": diary.WRITE_SCHEMA,
    "diary_read": diary.READ_SCHEMA,
    "cowork_push": cowork.PUSH_SCHEMA,
    "cowork_drain": cowork.DRAIN_SCHEMA,
    "cowork_status": cowork.STATUS_SCHEMA,
    "cowork_peek": cowork.PEEK_SCHEMA,
    "kg_add": graph.KG_SCHEMA,
    "kg_query": graph.KG_SCHEMA,
    "kg_invalidate": graph.KG_SCHEMA,
    "kg_timeline": graph.KG_SCHEMA,
    "kg_stats": graph.KG_SCHEMA,
    "tunnels": graph.TUNNELS_SCHEMA,
    "fact_check": graph.FACT_CHECK_SCHEMA,
}

# Success statuses other than a lone 200, as the handlers answer them.
_CREATED = "Created"
SUCCESS_STATUSES: dict[str, dict[str, str]] = {
    "workspace_add": {"201": _CREATED},
    "token_create": {"201": "Created; the secret is in `token`, shown this once"},
    "proposal_create": {"201": "Created: a pending proposal"},
    "recall_propose": {"201": "Created: a pending proposal"},
    "cowork_push": {"201": "Created: the message waits in the partner's inbox"},
    "recall_ingest": {"201": "Stored", "200": "A dry run, or nothing new stored"},
    "diary_write": {"201": "Stored", "200": "The entry is already in the diary; unchanged"},
    "kg_add": {
        "201": "Added",
        "200": "An open period of the triple exists already (valid, or starting later); unchanged",
    },
    "query": {
        "200": "OK",
        "304": "Not Modified: `If-None-Match` names the answer's current tag; no body",
    },
    "readyz": {"200": "Ready", "503": "Not ready yet: a granted workspace is still loading"},
}
_NO_BODY = {"304"}
# Routes that answer memdsl's text rendering on `Accept: text/plain`.
_TEXT_TOO = {"map", "types", "explain", "query", "check", "lint"}
_TEXT = {"text/plain": {"schema": {"type": "string"}}}
_OWN_CONTENT: dict[str, dict[str, Any]] = {
    "metrics": {"text/plain": {"schema": {"type": "string"}}},
    "events": {"text/event-stream": {"schema": {"type": "string"}}},
}


def _content(route: Route) -> dict[str, Any]:
    if route.name in _OWN_CONTENT:
        return _OWN_CONTENT[route.name]
    schema: dict[str, Any] = {"type": "object"}
    version = ANSWER_SCHEMAS.get(route.name)
    if version is not None:
        schema["required"] = ["schema_version"]
        schema["properties"] = {"schema_version": {"const": version}}
    content: dict[str, Any] = {"application/json": {"schema": schema}}
    if route.name in _TEXT_TOO or route.name == "file":  # a raw file is text by default
        content.update(_TEXT)
    return content


def _responses(route: Route) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status, description in SUCCESS_STATUSES.get(route.name, {"200": "OK"}).items():
        responses[status] = {"description": description}
        if status not in _NO_BODY:
            responses[status]["content"] = _content(route)
    responses["default"] = _ERROR
    return responses


# ---------------------------------------------------------------------------- operations


def _parameters(route: Route) -> list[dict[str, Any]]:
    names = [part[1:-1] for part in route.path.split("/") if part.startswith("{")]
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
        for name in names
    ]
    for param in route.params:
        described: dict[str, Any] = {
            "name": param.name,
            "in": "query",
            "required": False,
            "schema": param.json_schema(),
        }
        if param.description:
            described["description"] = param.description
        parameters.append(described)
    if "304" in SUCCESS_STATUSES.get(route.name, {}):
        parameters.append(
            {
                "name": "If-None-Match",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "the ETag of an earlier answer: 304 while it is current",
            }
        )
    return parameters


def _operation(route: Route, schemas: dict[str, Any]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "parameters": _parameters(route),
        "responses": _responses(route),
    }
    if route.scope is not None:
        operation["security"] = [{"bearer": []}]
        operation["x-memhub-scope"] = route.scope
    else:
        operation["security"] = []
    if route.request_model:
        schema, required = _request_body(route.request_model)
        schemas[route.request_model] = schema
        operation["requestBody"] = {
            "required": required,
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{route.request_model}"}
                }
            },
        }
    return operation


# Mounted beside the route table (not one of its routes): the MCP SDK serves it.
_MCP = {
    "operationId": "mcp",
    "summary": "The MCP endpoint (streamable HTTP): JSON-RPC messages to memhub's tools; "
    "any valid token, each tool checks its own scope. Served unless `mcp.enabled` is false.",
    "security": [{"bearer": []}],
    "requestBody": {
        "required": True,
        "description": "a JSON-RPC 2.0 message, as MCP's streamable HTTP transport sends",
        "content": {"application/json": {}},
    },
    "responses": {
        "200": {"description": "The JSON-RPC answer", "content": {"application/json": {}}},
        "202": {"description": "Accepted: a notification or response, no body"},
        "default": {
            "description": "A JSON-RPC error: for a refused token, host, size, method or "
            "content type its code is -32001 and its `data` the error envelope",
            "content": {"application/json": {}},
        },
    },
}
MCP_PATH = "/mcp"


def openapi_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {"Error": _ENVELOPE}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, schemas)
    paths[MCP_PATH] = {"post": _MCP}
    return {
        "openapi": "3.1.0",
        "info": {"title": "memhub JSON API", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
