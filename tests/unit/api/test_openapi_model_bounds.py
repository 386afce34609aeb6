"""Every bound the OpenAPI document gives a request model's field is the one the model
enforces: a value at the bound is taken, one past it refused. And every field the model
bounds has its bound in the document, so a schema-driven client is never refused for an
input the schema allows."""

from __future__ import annotations

from typing import Any

import pytest

from memhub_protocol import ProtocolError
from memhub_protocol.models import (
    ApproveRequest,
    CheckRequest,
    ProposeRequest,
    QueryRequest,
    RejectRequest,
    TokenCreateRequest,
    WorkspaceAddRequest,
)

BASES: dict[type, dict[str, Any]] = {
    QueryRequest: {"query": "q"},
    CheckRequest: {"task": "t", "candidate": "c"},
    WorkspaceAddRequest: {"name": "w", "path": "/p"},
    TokenCreateRequest: {"name": "n", "scopes": ["read:summary"], "workspaces": ["*"]},
    ProposeRequest: {"source": "s"},
    ApproveRequest: {"into": "a.mem"},
    RejectRequest: {},
}
# Bounded by the daemon's configuration, not by the model: described, not given a bound.
CONFIGURED = {"query", "task", "candidate"}


def bounds(model: type) -> list[tuple[str, str, int]]:
    """(field, keyword, value) of each bound the model's schema gives."""
    found = []
    for field, schema in model.json_schema()["properties"].items():
        for keyword in ("maxLength", "maxItems", "minimum", "maximum"):
            if keyword in schema:
                found.append((field, keyword, schema[keyword]))
        if "maxLength" in schema.get("items", {}):
            found.append((field, "items.maxLength", schema["items"]["maxLength"]))
    return found


def value(keyword: str, bound: int, past: bool) -> Any:
    step = 1 if past else 0
    if keyword == "maxLength":
        return "a" * (bound + step)
    if keyword == "maxItems":
        return ["a"] * (bound + step)
    if keyword == "items.maxLength":
        return ["a" * (bound + step)]
    return bound + step if keyword == "maximum" else bound - step


CASES = [(model, *bound) for model in BASES for bound in bounds(model)]


@pytest.mark.parametrize(
    ("model", "field", "keyword", "bound"),
    CASES,
    ids=[f"{m.__name__}.{f}.{k}" for m, f, k, _ in CASES],
)
def test_a_value_at_a_schema_bound_is_taken_and_one_past_it_refused(
    model: type, field: str, keyword: str, bound: int
) -> None:
    model.from_json({**BASES[model], field: value(keyword, bound, past=False)})
    with pytest.raises(ProtocolError):
        model.from_json({**BASES[model], field: value(keyword, bound, past=True)})


@pytest.mark.parametrize(
    ("model", "field", "keyword", "bound"),
    [
        (QueryRequest, "limit", "minimum", -1000),
        (QueryRequest, "limit", "maximum", 1000),
        (QueryRequest, "subject", "maxLength", 200),
        (QueryRequest, "types", "maxItems", 100),
        (CheckRequest, "subject", "maxLength", 200),
        (CheckRequest, "scope", "maxLength", 200),
        (CheckRequest, "exceptions", "items.maxLength", 65536),
        (WorkspaceAddRequest, "name", "maxLength", 64),
        (TokenCreateRequest, "name", "maxLength", 200),
        (TokenCreateRequest, "expires", "maxLength", 64),
        (ProposeRequest, "idempotency_key", "maxLength", 200),
    ],
)
def test_the_bounds_the_models_enforce_are_in_the_schema(
    model: type, field: str, keyword: str, bound: int
) -> None:
    assert (field, keyword, bound) in bounds(model)


@pytest.mark.parametrize("model", [QueryRequest, CheckRequest])
def test_query_texts_are_left_to_the_configured_limit(model: type) -> None:
    properties = model.json_schema()["properties"]
    for field in CONFIGURED & set(properties):
        assert "maxLength" not in properties[field]
        assert "max_query_chars" in properties[field]["description"]
        model.from_json({**BASES[model], field: "a" * 200_000})
