"""Reading the JSON files of a workspace (manifest, type packs) and checking their values.

Every failure becomes a SchemaError with memdsl's wording; nothing here registers
types or decides what a manifest means.
"""

from __future__ import annotations

import json
from typing import Any

from memhubd.schema.descriptor import SchemaError


def read_json(path: str, what: str) -> Any:
    """Parse the JSON file at `path`; `what` names it in read errors ('manifest', 'schema')."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}: invalid JSON: {exc}") from exc
    except OSError as exc:
        raise SchemaError(f"cannot read {what} {path}: {exc}") from exc


def string_list(value: Any, label: str) -> tuple[str, ...]:
    """A list of non-empty strings, stripped; JSON null counts as an empty list."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SchemaError(f"{label} must be a list of strings")
    if not all(isinstance(item, str) for item in value):
        raise SchemaError(f"{label} must contain only strings")
    items = tuple(item.strip() for item in value)
    if not all(items):
        raise SchemaError(f"{label} contains an empty value")
    return items


def string_map(value: Any, label: str) -> dict[str, str]:
    """An object of non-empty string keys and values, both stripped."""
    if not isinstance(value, dict):
        raise SchemaError(f"{label} must be an object of string values")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise SchemaError(f"{label} must contain only string keys and values")
    stripped = {key.strip(): item.strip() for key, item in value.items()}
    if not all(key and item for key, item in stripped.items()):
        raise SchemaError(f"{label} contains an empty key or value")
    return stripped
