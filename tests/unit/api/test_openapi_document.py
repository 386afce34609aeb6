"""The OpenAPI document describes every route as its handler serves it: the bodies it
reads, the query parameters it takes, the statuses it answers and what they carry.

Built in process from the route table; `tests/integration/test_openapi_answers.py`
holds it against a real daemon's answers.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jsonschema
import pytest
from schemathesis.specs.openapi.definitions import OPENAPI_31

import memhub_protocol.recall as recall_models
from memhub_protocol import ROUTES
from memhub_protocol.routes import (
    RECALL_MAX_HIT_CHARS,
    RECALL_MAX_LIMIT,
    WAKE_UP_MAX_LIMIT,
    WAKE_UP_MIN_BUDGET,
)
from memhubd.api.openapi import HANDLER_BODIES, openapi_document
from memhubd.service import recall

WS = "/v1/workspaces/{workspace}"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return openapi_document()


def operation(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    return document["paths"][path][method]  # type: ignore[no-any-return]


def operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for methods in document["paths"].values() for op in methods.values()]


def resolve(document: dict[str, Any], ref: str) -> Any:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in refs(value)]
    return []


def body_schema(document: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
    ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return resolve(document, ref)  # type: ignore[no-any-return]


def test_the_document_is_valid_openapi_31_with_unique_ids_and_resolvable_refs(
    document: dict[str, Any],
) -> None:
    jsonschema.validate(document, OPENAPI_31)
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    ids = Counter(op["operationId"] for op in operations(document))
    assert [name for name, count in ids.items() if count > 1] == []
    for ref in refs(document):
        assert resolve(document, ref) is not None, ref


@pytest.mark.parametrize(
    ("method", "path", "required"),
    [
        ("post", "/v1/recall/compress", ["text"]),
        ("post", WS + "/recall/drawers/{drawer_id}/propose", ["type", "id"]),
        ("post", WS + "/diary", ["type", "content"]),
        ("post", WS + "/recall/purge", []),
        ("post", WS + "/cowork/push", ["to", "content"]),
        ("post", WS + "/kg/triples", ["subject", "predicate", "object"]),
        ("post", WS + "/kg/triples/{triple_id}/invalidate", []),
        ("post", WS + "/fact-check", ["text"]),
    ],
)
def test_routes_whose_handlers_read_a_body_describe_it(
    document: dict[str, Any], method: str, path: str, required: list[str]
) -> None:
    op = operation(document, method, path)
    schema = body_schema(document, op)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert sorted(schema.get("required", [])) == sorted(required)
    assert set(required) <= set(schema["properties"])
    assert op["requestBody"]["required"] is bool(required)


def test_hand_parsed_bodies_name_the_fields_their_handlers_take(
    document: dict[str, Any],
) -> None:
    from memhubd.api.graph import ADD_FIELDS
    from memhubd.service.recall_review import _KEYS as PROPOSE_KEYS

    fields = {name: set(schema["properties"]) for name, schema in HANDLER_BODIES.items()}
    assert fields["TripleAddRequest"] == set(ADD_FIELDS)
    assert fields["DrawerProposeRequest"] == set(PROPOSE_KEYS)
    assert fields["DiaryWriteRequest"] == {"type", "content", "shared", "importance"}
    assert fields["CoworkPushRequest"] == {"to", "content"}
    assert fields["FactCheckRequest"] == {"text", "room", "now"}
    assert fields["TripleInvalidateRequest"] == {"at"}
    assert fields["PurgeRequest"] == {"before", "audit_before"}
    assert fields["CompressRequest"] == {"text"}


@pytest.mark.parametrize(
    ("method", "path", "required"),
    [
        ("post", WS + "/proposals/{proposal_id}/reject", False),
        ("post", WS + "/recall/reindex", False),
        ("post", WS + "/query", True),
        ("post", WS + "/recall/ingest", True),
        ("post", WS + "/recall/taxonomy", True),
        ("post", "/v1/tokens", True),
    ],
)
def test_a_body_is_required_only_where_an_empty_one_is_refused(
    document: dict[str, Any], method: str, path: str, required: bool
) -> None:
    assert operation(document, method, path)["requestBody"]["required"] is required


def query_parameters(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    found = operation(document, method, path)["parameters"]
    return {p["name"]: p["schema"] for p in found if p["in"] == "query"}


def test_get_search_lists_every_parameter_it_takes(document: dict[str, Any]) -> None:
    params = query_parameters(document, "get", WS + "/recall/search")
    assert set(params) == {
        *("q", "query", "limit", "top_k", "room", "source_kind"),
        *("since", "until", "identity", "max_chars", "format"),
    }
    for name in ("limit", "top_k"):
        assert params[name] == {"type": "integer", "minimum": 1, "maximum": RECALL_MAX_LIMIT}
    assert params["max_chars"] == {"type": "integer", "minimum": 1, "maximum": RECALL_MAX_HIT_CHARS}


def test_wake_up_lists_its_limit_and_budget(document: dict[str, Any]) -> None:
    params = query_parameters(document, "get", WS + "/recall/wake-up")
    assert set(params) == {"limit", "budget", "format"}
    assert params["limit"] == {"type": "integer", "minimum": 1, "maximum": WAKE_UP_MAX_LIMIT}
    assert params["budget"] == {"type": "integer", "minimum": WAKE_UP_MIN_BUDGET}


def test_the_route_tables_recall_bounds_are_the_daemons() -> None:
    assert RECALL_MAX_LIMIT == recall_models.MAX_LIMIT
    assert RECALL_MAX_HIT_CHARS == recall_models.MAX_HIT_CHARS
    assert WAKE_UP_MAX_LIMIT == recall.WAKE_UP_LIMIT


@pytest.mark.parametrize(
    ("method", "path", "statuses"),
    [
        ("post", "/v1/workspaces", {"201"}),
        ("post", "/v1/tokens", {"201"}),
        ("post", WS + "/proposals", {"201"}),
        ("post", WS + "/recall/drawers/{drawer_id}/propose", {"201"}),
        ("post", WS + "/cowork/push", {"201"}),
        ("post", WS + "/recall/ingest", {"200", "201"}),
        ("post", WS + "/diary", {"200", "201"}),
        ("post", WS + "/kg/triples", {"200", "201"}),
        ("post", WS + "/query", {"200", "304"}),
        ("get", WS + "/recall/status", {"200"}),
    ],
)
def test_each_route_lists_the_success_statuses_it_answers(
    document: dict[str, Any], method: str, path: str, statuses: set[str]
) -> None:
    responses = operation(document, method, path)["responses"]
    assert set(responses) == statuses | {"default"}


def test_a_304_has_no_body_and_is_no_error(document: dict[str, Any]) -> None:
    op = operation(document, "post", WS + "/query")
    assert "content" not in op["responses"]["304"]
    assert any(p["name"] == "If-None-Match" and p["in"] == "header" for p in op["parameters"])


def test_success_answers_name_their_schema_version(document: dict[str, Any]) -> None:
    pushed = operation(document, "post", WS + "/cowork/push")["responses"]["201"]
    schema = pushed["content"]["application/json"]["schema"]
    assert schema["properties"]["schema_version"] == {"const": "memhub.cowork.push.v1"}
    assert schema["required"] == ["schema_version"]
    for op in operations(document):
        for status, response in op["responses"].items():
            if status != "default" and status != "304" and op["operationId"] != "mcp":
                assert response.get("content"), (op["operationId"], status)


def test_mcp_is_listed_as_its_streamable_http_endpoint(document: dict[str, Any]) -> None:
    mcp = operation(document, "post", "/mcp")
    assert mcp["operationId"] == "mcp" and mcp["security"] == [{"bearer": []}]
    assert "streamable HTTP" in mcp["summary"]
    assert set(document["paths"]["/mcp"]) == {"post"}


def test_every_route_of_the_table_is_in_the_document(document: dict[str, Any]) -> None:
    names = {op["operationId"] for op in operations(document)}
    assert names == {route.name for route in ROUTES} | {"mcp"}
