"""OpenAPI 3.1 description of the JSON API, generated from the route table.

Path and query parameters, request bodies and the error envelope are described
precisely enough for a client generator or a schema-driven fuzzer; nothing here
decides behaviour (the route table and the models do).
"""

from __future__ import annotations

from typing import Any

import memhub_protocol.models as models
import memhub_protocol.recall as recall_models
from memhub_protocol import ROUTES
from memhub_protocol.routes import Route
from memhubd import __version__

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
    return parameters


def openapi_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {"Error": _ENVELOPE}
    for route in ROUTES:
        operation: dict[str, Any] = {
            "operationId": route.name,
            "summary": route.summary,
            "parameters": _parameters(route),
            "responses": {
                "200": {"description": "OK"},
                "default": {
                    "description": "Error envelope",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                },
            },
        }
        if route.scope is not None:
            operation["security"] = [{"bearer": []}]
            operation["x-memhub-scope"] = route.scope
        else:
            operation["security"] = []
        if route.request_model:
            model = getattr(models, route.request_model, None) or getattr(
                recall_models, route.request_model
            )
            schemas[route.request_model] = model.json_schema()
            operation["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{route.request_model}"}
                    }
                },
            }
        paths.setdefault(route.path, {})[route.method.lower()] = operation
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
