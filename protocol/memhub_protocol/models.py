"""Request models: parsed and validated from JSON on the server, built by memctl.

Frozen records (`record.Record`, not dataclasses: memctl imports these on every
command) with `from_json` (raising ProtocolError on bad input) and `to_json`;
`json_schema()` feeds the OpenAPI document.
"""

from __future__ import annotations

import json
import re
import sys
from itertools import accumulate

from memhub_protocol.errors import ErrorCode, ProtocolError
from memhub_protocol.record import Record

TYPE_CHECKING = False  # typing itself is not imported: memctl would pay for it
if TYPE_CHECKING:
    from typing import Any

MAX_TEXT = 64 * 1024  # list items and free texts (a proposal's reason)
# A query, task or candidate has no bound here (`limit=None`): the daemon checks it
# against its configured `[limits] max_query_chars` where it is served, and the body
# size bounds it first. A fixed bound here would overrule an operator's larger setting.
MAX_NAME = 200
MAX_ITEMS = 100  # items of a list of strings (`types`, `exceptions`, `scopes`, ...)
MAX_QUERY_LIMIT = 1000  # a query's `limit`, either sign
MAX_WORKSPACE_NAME = 64
MAX_EXPIRES = 64  # a token's `expires`
# A workspace name: ASCII letters, digits, '-', '_' and '.' (runtime.config's
# WORKSPACE_NAME, which the daemon checks again), at least one letter or digit.
_WORKSPACE_NAME = re.compile(r"[A-Za-z0-9_.-]*[A-Za-z0-9][A-Za-z0-9_.-]*")
# The bounds `_text` and `_strings` enforce, as the OpenAPI document gives them.
_QUERY_TEXT = "at most the daemon's limits.max_query_chars characters (413 beyond)"
_NAME_OR_NULL = {"type": ["string", "null"], "maxLength": MAX_NAME}
_STRINGS = {
    "type": "array",
    "maxItems": MAX_ITEMS,
    "items": {"type": "string", "maxLength": MAX_TEXT},
}
# Request bodies are objects of strings and lists of strings: depth 2. The bound keeps
# json's recursive decoder (and anything walking the result) far from the recursion limit.
MAX_JSON_DEPTH = 32

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}


def _invalid(message: str, field: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID, message, {"field": field})


def has_surrogate(text: str) -> bool:
    """True when `text` holds a lone UTF-16 surrogate, which no UTF-8 output can carry."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def _nesting_depth(text: str) -> int:
    """How deeply arrays and objects nest in JSON `text`, brackets inside strings ignored."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return 0  # cannot be too deep: skip the scan for ordinary bodies
    brackets = _BRACKET.findall(_JSON_STRING.sub("", text))
    return max(accumulate(_NESTING[b] for b in brackets), default=0)


def decode_json_body(raw: bytes) -> Any:
    """Parse a request body: UTF-8 JSON, at most MAX_JSON_DEPTH deep, no lone surrogates.

    Every string that reaches a model, a log line or a response comes through here
    (or through `_text`), so none can carry a character that cannot be encoded.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProtocolError(
            ErrorCode.INVALID, f"request body is not UTF-8: invalid byte at {error.start}"
        ) from None
    if _nesting_depth(text) > MAX_JSON_DEPTH:
        raise ProtocolError(
            ErrorCode.INVALID, f"request body nests deeper than {MAX_JSON_DEPTH} levels"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProtocolError(ErrorCode.INVALID, f"request body is not JSON: {error}") from None
    except ValueError:  # an integer with more digits than Python converts
        raise ProtocolError(
            ErrorCode.INVALID,
            f"request body holds a number of more than {sys.get_int_max_str_digits()} digits",
        ) from None
    if _SURROGATE_ESCAPE.search(text) and _holds_surrogate(data):
        raise ProtocolError(
            ErrorCode.INVALID,
            "request body holds a lone UTF-16 surrogate escape (\\ud800-\\udfff); "
            "send valid Unicode text",
        )
    return data


def _holds_surrogate(data: Any) -> bool:
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if has_surrogate(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.INVALID, "request body must be a JSON object")
    return data


def _text(data: dict, field: str, *, required: bool = False, limit: int | None = MAX_TEXT) -> str:
    value = data.get(field)
    if value is None:
        if required:
            raise _invalid(f"'{field}' is required", field)
        return ""
    if not isinstance(value, str):
        raise _invalid(f"'{field}' must be a string", field)
    if has_surrogate(value):
        raise _invalid(f"'{field}' holds a lone UTF-16 surrogate; send valid Unicode", field)
    if required and not value.strip():
        raise _invalid(f"'{field}' must not be empty", field)
    if limit is not None and len(value) > limit:
        raise ProtocolError(
            ErrorCode.TOO_LARGE, f"'{field}' is longer than {limit} characters", {"field": field}
        )
    return value


def _strings(data: dict, field: str) -> tuple[str, ...] | None:
    value = data.get(field)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _invalid(f"'{field}' must be a list of strings", field)
    if len(value) > MAX_ITEMS:
        raise _invalid(f"'{field}' has more than {MAX_ITEMS} items", field)
    if any(len(item) > MAX_TEXT for item in value):
        raise ProtocolError(
            ErrorCode.TOO_LARGE, f"an item of '{field}' is longer than {MAX_TEXT} characters"
        )
    if any(has_surrogate(item) for item in value):
        raise _invalid(f"'{field}' holds a lone UTF-16 surrogate; send valid Unicode", field)
    return tuple(value)


def _unknown_keys(data: dict, model: type[Record]) -> None:
    known = set(model.__slots__)
    extra = sorted(set(data) - known)
    if extra:
        # ascii(): an unknown key is caller text and may hold anything; the message must not.
        shown = ", ".join(ascii(key)[1:-1] for key in extra[:10])
        raise _invalid(f"unknown field(s): {shown}", ascii(extra[0])[1:-1][:MAX_NAME])


class _Model(Record):
    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


class QueryRequest(_Model):
    """memdsl's query arguments; `types` overrides the legacy `kinds` when given."""

    __slots__ = ("query", "types", "kinds", "subject", "limit", "max_bytes", "max_must")
    query: str
    types: tuple[str, ...] | None
    kinds: tuple[str, ...] | None
    subject: str | None
    limit: int
    # Opt-in answer budget: MUST is cut (in memdsl's order) to fit; None keeps memdsl's.
    max_bytes: int | None
    max_must: int | None

    def __init__(
        self,
        query: str,
        types: tuple[str, ...] | None = None,
        kinds: tuple[str, ...] | None = None,
        subject: str | None = None,
        limit: int = 8,
        max_bytes: int | None = None,
        max_must: int | None = None,
    ) -> None:
        self._set(
            query=query,
            types=types,
            kinds=kinds,
            subject=subject,
            limit=limit,
            max_bytes=max_bytes,
            max_must=max_must,
        )

    @classmethod
    def from_json(cls, data: Any) -> QueryRequest:
        data = _object(data)
        _unknown_keys(data, cls)
        limit = data.get("limit", 8)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise _invalid("'limit' must be an integer", "limit")
        if not -MAX_QUERY_LIMIT <= limit <= MAX_QUERY_LIMIT:
            raise _invalid(
                f"'limit' must be between -{MAX_QUERY_LIMIT} and {MAX_QUERY_LIMIT}", "limit"
            )
        subject = _text(data, "subject", limit=MAX_NAME) or None
        return cls(
            query=_text(data, "query", required=True, limit=None),
            types=_strings(data, "types"),
            kinds=_strings(data, "kinds"),
            subject=subject,
            limit=limit,
            max_bytes=_budget(data, "max_bytes", MIN_BUDGET_BYTES),
            max_must=_budget(data, "max_must", 0),
        )

    def to_json(self) -> dict[str, Any]:
        out = _Model.to_json(self)
        # Budget keys only when set: a daemon without answer budgets refuses unknown keys.
        for key in ("max_bytes", "max_must"):
            if out[key] is None:
                del out[key]
        return out

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["query"],
            "additionalProperties": False,
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": _QUERY_TEXT},
                "types": {**_STRINGS, "type": ["array", "null"]},
                "kinds": {**_STRINGS, "type": ["array", "null"]},
                "subject": _NAME_OR_NULL,
                "limit": {
                    "type": "integer",
                    "minimum": -MAX_QUERY_LIMIT,
                    "maximum": MAX_QUERY_LIMIT,
                    "default": 8,
                },
                "max_bytes": {
                    "type": ["integer", "null"],
                    "minimum": MIN_BUDGET_BYTES,
                    "maximum": MAX_BUDGET,
                },
                "max_must": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_BUDGET},
            },
        }


# An answer budget below this could not hold a pack's fixed keys.
MIN_BUDGET_BYTES = 256
MAX_BUDGET = 1 << 40


def _budget(data: dict, name: str, minimum: int) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_BUDGET:
        raise _invalid(f"'{name}' must be an integer between {minimum} and {MAX_BUDGET}", name)
    return value


class CheckRequest(_Model):
    """memdsl's compliance-check arguments."""

    __slots__ = ("task", "candidate", "subject", "scope", "exceptions")
    task: str
    candidate: str
    subject: str | None
    scope: str | None
    exceptions: tuple[str, ...]

    def __init__(
        self,
        task: str,
        candidate: str,
        subject: str | None = None,
        scope: str | None = None,
        exceptions: tuple[str, ...] = (),
    ) -> None:
        self._set(
            task=task, candidate=candidate, subject=subject, scope=scope, exceptions=exceptions
        )

    @classmethod
    def from_json(cls, data: Any) -> CheckRequest:
        data = _object(data)
        _unknown_keys(data, cls)
        return cls(
            task=_text(data, "task", required=True, limit=None),
            candidate=_text(data, "candidate", required=True, limit=None),
            subject=_text(data, "subject", limit=MAX_NAME) or None,
            scope=_text(data, "scope", limit=MAX_NAME) or None,
            exceptions=_strings(data, "exceptions") or (),
        )

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["task", "candidate"],
            "additionalProperties": False,
            "properties": {
                "task": {"type": "string", "minLength": 1, "description": _QUERY_TEXT},
                "candidate": {"type": "string", "minLength": 1, "description": _QUERY_TEXT},
                "subject": _NAME_OR_NULL,
                "scope": _NAME_OR_NULL,
                "exceptions": _STRINGS,
            },
        }


class WorkspaceAddRequest(_Model):
    __slots__ = ("name", "path")
    name: str
    path: str

    def __init__(self, name: str, path: str) -> None:
        self._set(name=name, path=path)

    @classmethod
    def from_json(cls, data: Any) -> WorkspaceAddRequest:
        data = _object(data)
        _unknown_keys(data, cls)
        name = _text(data, "name", required=True, limit=MAX_WORKSPACE_NAME)
        # ASCII only, as the daemon's state requires: isalnum() alone takes any script's
        # letters, which the daemon then refused as a conflict rather than as input.
        if not _WORKSPACE_NAME.fullmatch(name):
            raise _invalid(
                "'name' may use ASCII letters, digits, '-', '_' and '.' only, "
                "and needs a letter or digit",
                "name",
            )
        return cls(name=name, path=_text(data, "path", required=True, limit=MAX_PATH))

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["name", "path"],
            "additionalProperties": False,
            "properties": {
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_WORKSPACE_NAME,
                    "pattern": f"^{_WORKSPACE_NAME.pattern}$",
                },
                "path": {"type": "string", "minLength": 1, "maxLength": MAX_PATH},
            },
        }


class TokenCreateRequest(_Model):
    __slots__ = ("name", "scopes", "workspaces", "roles", "expires")
    name: str
    scopes: tuple[str, ...]
    workspaces: tuple[str, ...]
    roles: tuple[str, ...]
    expires: str | None  # ISO 8601 date/time, or a duration like "30d"

    def __init__(
        self,
        name: str,
        scopes: tuple[str, ...],
        workspaces: tuple[str, ...] = ("*",),
        roles: tuple[str, ...] = (),
        expires: str | None = None,
    ) -> None:
        self._set(name=name, scopes=scopes, workspaces=workspaces, roles=roles, expires=expires)

    @classmethod
    def from_json(cls, data: Any) -> TokenCreateRequest:
        data = _object(data)
        _unknown_keys(data, cls)
        scopes = _strings(data, "scopes")
        if not scopes:
            raise _invalid("'scopes' must name at least one scope", "scopes")
        # Required and never empty: a missing or empty grant must not quietly mean "all".
        workspaces = _strings(data, "workspaces")
        if not workspaces or not any(item.strip() for item in workspaces):
            raise _invalid(
                "'workspaces' must name at least one workspace, or \"*\" for all", "workspaces"
            )
        # Kept as given: an empty expiry is refused by the daemon, never read as "never".
        expires = None if data.get("expires") is None else _text(data, "expires", limit=MAX_EXPIRES)
        return cls(
            name=_text(data, "name", required=True, limit=MAX_NAME),
            scopes=scopes,
            workspaces=workspaces,
            roles=_strings(data, "roles") or (),
            expires=expires,
        )

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["name", "scopes", "workspaces"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                "scopes": {**_STRINGS, "minItems": 1},
                "workspaces": {**_STRINGS, "minItems": 1},
                "roles": _STRINGS,
                "expires": {"type": ["string", "null"], "maxLength": MAX_EXPIRES},
            },
        }


# --- review: proposals and decisions -------------------------------------------------------

PROPOSE_SCHEMA = "memhub.propose.v1"
PROPOSALS_SCHEMA = "memhub.proposals.v1"
PROPOSAL_SCHEMA = "memhub.proposal.v1"
DECISION_SCHEMA = "memhub.decision.v1"
# The daemon enforces its configured proposal size; this only bounds what is parsed at all.
MAX_SOURCE = 1024 * 1024
MAX_PATH = 4096


class ProposeRequest(_Model):
    """One declaration offered for review; `supersedes` states a correction's target id."""

    __slots__ = ("source", "reason", "client", "supersedes", "idempotency_key")
    source: str
    reason: str
    client: str
    supersedes: str | None
    # The same key from the same identity within a day answers the first proposal again
    # instead of making a second one (a retry after a timeout).
    idempotency_key: str | None

    def __init__(
        self,
        source: str,
        reason: str = "",
        client: str = "",
        supersedes: str | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        self._set(
            source=source,
            reason=reason,
            client=client,
            supersedes=supersedes,
            idempotency_key=idempotency_key,
        )

    @classmethod
    def from_json(cls, data: Any) -> ProposeRequest:
        data = _object(data)
        _unknown_keys(data, cls)
        return cls(
            source=_text(data, "source", required=True, limit=MAX_SOURCE),
            reason=_text(data, "reason"),
            client=_text(data, "client", limit=MAX_NAME),
            supersedes=_text(data, "supersedes", limit=MAX_NAME) or None,
            idempotency_key=_text(data, "idempotency_key", limit=MAX_NAME) or None,
        )

    def to_json(self) -> dict[str, Any]:
        out = _Model.to_json(self)
        if out["idempotency_key"] is None:  # a daemon without keys refuses unknown fields
            del out["idempotency_key"]
        return out

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["source"],
            "additionalProperties": False,
            "properties": {
                "source": {"type": "string", "minLength": 1, "maxLength": MAX_SOURCE},
                "reason": {"type": "string", "maxLength": MAX_TEXT},
                "client": {"type": "string", "maxLength": MAX_NAME},
                "supersedes": {"type": ["string", "null"], "maxLength": MAX_NAME},
                "idempotency_key": {"type": ["string", "null"], "maxLength": MAX_NAME},
            },
        }


class ApproveRequest(_Model):
    """Where an approved proposal is written: a `.mem` file, relative to the workspace root."""

    __slots__ = ("into",)
    into: str

    def __init__(self, into: str) -> None:
        self._set(into=into)

    @classmethod
    def from_json(cls, data: Any) -> ApproveRequest:
        data = _object(data)
        _unknown_keys(data, cls)
        return cls(into=_text(data, "into", required=True, limit=MAX_PATH))

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["into"],
            "additionalProperties": False,
            "properties": {"into": {"type": "string", "minLength": 1, "maxLength": MAX_PATH}},
        }


class RejectRequest(_Model):
    __slots__ = ("reason",)
    reason: str

    def __init__(self, reason: str = "") -> None:
        self._set(reason=reason)

    @classmethod
    def from_json(cls, data: Any) -> RejectRequest:
        data = _object(data)
        _unknown_keys(data, cls)
        return cls(reason=_text(data, "reason"))

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {"reason": {"type": "string", "maxLength": MAX_TEXT}},
        }
