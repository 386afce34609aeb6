"""Error codes and the error envelope `{"error": {"code", "message", "detail"}}`, and the
JSON-RPC error that carries the envelope when the daemon refuses a request at `/mcp`."""

from __future__ import annotations

from enum import StrEnum

TYPE_CHECKING = False  # typing itself is not imported: memctl would pay for it
if TYPE_CHECKING:
    from typing import Any


class ErrorCode(StrEnum):
    UNAUTHORIZED = "unauthorized"  # 401: no token or an unknown/expired one
    FORBIDDEN = "forbidden"  # 403: missing scope or workspace grant
    NOT_FOUND = "not_found"  # 404: unknown route, declaration, file
    METHOD_NOT_ALLOWED = "method_not_allowed"  # 405: the path is served, not by this method
    WORKSPACE_NOT_FOUND = "workspace_not_found"  # 404
    INVALID = "invalid"  # 400/422: bad request body or arguments
    TOO_LARGE = "too_large"  # 413
    HEADERS_TOO_LARGE = "headers_too_large"  # 431: request head over the header limits
    REQUEST_TIMEOUT = "request_timeout"  # 408: the request did not arrive in time
    CONFLICT = "conflict"  # 409: e.g. workspace name already used
    TOO_MANY = "too_many"  # 429: e.g. more open event streams than a token may hold
    WORKSPACE_UNAVAILABLE = "workspace_unavailable"  # 503: never loaded successfully
    INTERNAL = "internal"  # 500

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS[self]


_HTTP_STATUS = {
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.WORKSPACE_NOT_FOUND: 404,
    ErrorCode.INVALID: 422,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.HEADERS_TOO_LARGE: 431,
    ErrorCode.REQUEST_TIMEOUT: 408,
    ErrorCode.CONFLICT: 409,
    ErrorCode.TOO_MANY: 429,
    ErrorCode.WORKSPACE_UNAVAILABLE: 503,
    ErrorCode.INTERNAL: 500,
}


class ProtocolError(Exception):
    """An error that travels to the caller as an envelope."""

    def __init__(self, code: ErrorCode, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail or {}

    def envelope(self) -> dict[str, Any]:
        return error_envelope(self.code, self.message, self.detail)

    @classmethod
    def from_envelope(cls, data: Any) -> ProtocolError:
        """Rebuild the error a server sent; tolerant of malformed bodies."""
        error = data.get("error") if isinstance(data, dict) else None
        if not isinstance(error, dict):
            return cls(ErrorCode.INTERNAL, f"unexpected error body: {data!r}"[:300])
        try:
            code = ErrorCode(error.get("code"))
        except ValueError:
            code = ErrorCode.INTERNAL
        detail = error.get("detail") if isinstance(error.get("detail"), dict) else {}
        return cls(code, str(error.get("message", "")), detail)


def error_envelope(
    code: ErrorCode, message: str, detail: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"error": {"code": code.value, "message": message, "detail": detail or {}}}


# The JSON-RPC error code of a request refused before MCP read it (token, host, size):
# in the range JSON-RPC leaves to servers, and the code `memctl mcp` answers such a
# refusal with.
MCP_REFUSED = -32001

# What a caller does next, where the refusal's own message does not say it.
_NEXT_STEP = {
    ErrorCode.TOO_LARGE: "; send less in one request (split a long text over several calls)",
}


def jsonrpc_refusal(
    code: ErrorCode, message: str, detail: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A refusal at `/mcp` as a JSON-RPC error response: MCP clients pass on the error of
    a non-2xx answer only in this shape. `data` is the envelope the JSON API answers
    with; `id` is null, as the request was refused before its body was read."""
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": MCP_REFUSED,
            "message": f"{code.value}: {message}{_NEXT_STEP.get(code, '')}",
            "data": error_envelope(code, message, detail),
        },
    }
