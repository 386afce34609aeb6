"""MemhubClient: one method per JSON API route, returning parsed JSON or text.

URLs come from the protocol's route table and bodies from its request models; a
4xx/5xx answer becomes a ServerError (a ProtocolError). It must not print anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping

from memctl.transport import DEFAULT_TIMEOUT, Transport, parse_target
from memhub_protocol import (
    CheckRequest,
    ErrorCode,
    ProtocolError,
    QueryRequest,
    TokenCreateRequest,
    WorkspaceAddRequest,
    route_by_name,
)
from memhub_protocol.models import ApproveRequest, ProposeRequest, RejectRequest

TYPE_CHECKING = False  # typing itself is not imported: every command would pay for it
if TYPE_CHECKING:
    from typing import Any

    from memctl.transport import Response

TEXT = "text/plain"
JSON = "application/json"
EVENT_STREAM = "text/event-stream"

# What a status means when the body is not an error envelope (a proxy, an old daemon).
_CODE_FOR_STATUS = {
    400: ErrorCode.INVALID,
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    409: ErrorCode.CONFLICT,
    413: ErrorCode.TOO_LARGE,
    422: ErrorCode.INVALID,
    503: ErrorCode.WORKSPACE_UNAVAILABLE,
}


class ServerError(ProtocolError):
    """An error the daemon answered with, and the HTTP status it came with."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        detail: dict[str, Any] | None = None,
        *,
        status: int = 500,
    ) -> None:
        super().__init__(code, message, detail)
        self.status = status
        # Lines told after the message (a refused proposal's further issues), each one line.
        self.issues: list[str] = []

    @classmethod
    def from_response(cls, response: Response) -> ServerError:
        """From a complete answer (the transport's `Response`, or httpx's for streams)."""
        try:
            body = response.json()
        except ValueError:
            body = None
        status = response.status_code
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = ProtocolError.from_envelope(body)
            return cls(error.code, error.message, error.detail, status=status)
        code = _CODE_FOR_STATUS.get(status, ErrorCode.INTERNAL)
        snippet = " ".join(response.text.split())[:200]
        message = f"HTTP {status} {response.reason_phrase}" + (f": {snippet}" if snippet else "")
        return cls(code, message, status=status)


class UnexpectedAnswer(ServerError):
    """A success memctl cannot use: a body that is not JSON, or JSON of another shape than
    the command reads (a list or null where an object belongs, a key missing, a field of
    another type), from a proxy, an older or newer daemon, or a bug. Told as the daemon's
    failure, as a 5xx is: `internal`, exit 2."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            ErrorCode.INTERNAL, f"unexpected answer from the daemon: {reason}", status=502
        )


class MemhubClient:
    """The daemon's operations as methods. `text=True` asks for memdsl's text rendering."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    @classmethod
    def connect(
        cls, url: str, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> MemhubClient:
        return cls(Transport(parse_target(url), token=token, timeout=timeout))

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> MemhubClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- daemon ---------------------------------------------------------------------------

    def status(self) -> Any:
        return self._call("status")

    def workspaces(self) -> Any:
        return self._call("workspaces")

    def workspace_add(self, name: str, path: str) -> Any:
        body = WorkspaceAddRequest(name=name, path=path).to_json()
        return self._call("workspace_add", body=body)

    def workspace_remove(self, name: str) -> Any:
        return self._call("workspace_remove", workspace=name)

    # -- one workspace --------------------------------------------------------------------

    def map(self, workspace: str, *, text: bool = False) -> Any:
        return self._call("map", workspace=workspace, text=text)

    def types(self, workspace: str, *, text: bool = False) -> Any:
        return self._call("types", workspace=workspace, text=text)

    def explain(self, workspace: str, decl_id: str, *, text: bool = False) -> Any:
        return self._call("explain", workspace=workspace, decl_id=decl_id, text=text)

    def query(self, workspace: str, request: QueryRequest, *, text: bool = False) -> Any:
        return self._call("query", workspace=workspace, body=request.to_json(), text=text)

    def check(self, workspace: str, request: CheckRequest, *, text: bool = False) -> Any:
        return self._call("check", workspace=workspace, body=request.to_json(), text=text)

    def lint(self, workspace: str, *, text: bool = False) -> Any:
        return self._call("lint", workspace=workspace, text=text)

    def files(self, workspace: str) -> Any:
        return self._call("files", workspace=workspace)

    def file(self, workspace: str, file_id: str, *, text: bool = True) -> Any:
        """The raw source of one file as served, or with `text=False` the
        memhub.file.v1 object (content plus path, staleness, hidden count)."""
        return self._call("file", workspace=workspace, file_id=file_id, text=text)

    def list(
        self,
        workspace: str,
        *,
        type: str | None = None,
        subject: str | None = None,
        include_inactive: bool = False,
        limit: int | None = None,
    ) -> Any:
        params = {"include_inactive": "true" if include_inactive else "false"}
        if type:
            params["type"] = type
        if subject:
            params["subject"] = subject
        if limit is not None:
            params["limit"] = str(limit)
        return self._call("list", workspace=workspace, params=params)

    # -- review ---------------------------------------------------------------------------

    def propose(self, workspace: str, request: ProposeRequest) -> Any:
        return self._call("proposal_create", workspace=workspace, body=request.to_json())

    def proposals(
        self,
        workspace: str,
        *,
        status: str = "pending",
        limit: int | None = None,
        offset: int | None = None,
    ) -> Any:
        params = {"status": status}
        if limit is not None:
            params["limit"] = str(limit)
        if offset is not None:
            params["offset"] = str(offset)
        return self._call("proposals", workspace=workspace, params=params)

    def proposal(self, workspace: str, proposal_id: str, *, into: str | None = None) -> Any:
        params = {"into": into} if into else None
        return self._call("proposal", workspace=workspace, proposal_id=proposal_id, params=params)

    def approve(self, workspace: str, proposal_id: str, into: str) -> Any:
        body = ApproveRequest(into=into).to_json()
        return self._call(
            "proposal_approve", workspace=workspace, proposal_id=proposal_id, body=body
        )

    def reject(self, workspace: str, proposal_id: str, reason: str) -> Any:
        body = RejectRequest(reason=reason).to_json()
        return self._call(
            "proposal_reject", workspace=workspace, proposal_id=proposal_id, body=body
        )

    # -- events and tokens ----------------------------------------------------------------

    def events(self) -> Iterator[tuple[str, Any]]:
        """(event name, data) pairs as the daemon sends them; data is parsed JSON when it is JSON."""
        route = route_by_name("events")
        with self.transport.stream(route.method, route.url(), accept=EVENT_STREAM) as response:
            if response.status_code >= 400:
                response.read()
                raise ServerError.from_response(response)
            import httpx  # streams go through httpx (see transport)

            try:
                yield from parse_sse(response.iter_lines())
            except httpx.TransportError as error:
                raise self.transport.unreachable(error) from error

    def tokens(self) -> Any:
        return self._call("tokens")

    def token_create(self, request: TokenCreateRequest) -> Any:
        return self._call("token_create", body=request.to_json())

    def token_revoke(self, name: str) -> Any:
        return self._call("token_revoke", token_name=name)

    # -------------------------------------------------------------------------------------

    def _call(
        self,
        name: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        text: bool = False,
        **path_params: str,
    ) -> Any:
        route = route_by_name(name)
        response = self.transport.request(
            route.method,
            route.url(**path_params),
            params=params,
            json=body,
            accept=TEXT if text else JSON,
        )
        if response.status_code >= 400:
            raise ServerError.from_response(response)
        if text:
            return response.text
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError as error:
            raise UnexpectedAnswer(
                f"{route.path} answered with something that is not JSON"
            ) from error


def parse_sse(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """Server-sent events: `event:`/`data:` lines, a blank line ends one event."""
    event, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield event, _data_value("\n".join(data))
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield event, _data_value("\n".join(data))


def _data_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
