"""Query and check skip Starlette's router (`api.direct`) and answer exactly as through it:
the same status, headers and bytes for answers, text, gzip, 304s and every refusal, the
same access checks, and the same per-route metrics."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memhubd.api import app as api_app
from tests.integration.conftest import LiveDaemon, start_daemon
from tests.integration.test_query_budget import READER, WS, write_workspace

QUERY = f"/v1/workspaces/{WS}/query"
CHECK = f"/v1/workspaces/{WS}/check"
# Headers that differ between any two daemons: a request id, and a tag naming the
# process's own snapshot (compared within one daemon by the cache tests).
VARYING = {"x-request-id", "etag", "date"}


def exchanges(daemon: LiveDaemon) -> list[tuple[Any, ...]]:
    """What a fixed series of requests gets back, minus what differs between daemons."""
    admin, reader = daemon.admin_token, daemon.tokens["reader"]
    draft = {"task": "deploy nightly on a holiday", "candidate": "deploy tonight"}
    asks: list[tuple[str, str, Any, str | None, dict[str, str]]] = [
        ("POST", QUERY, {"query": "deploy nightly"}, admin, {}),
        ("POST", QUERY, {"query": "deploy nightly"}, admin, {}),  # now cached
        ("POST", QUERY, {"query": "deploy nightly"}, reader, {}),
        ("POST", QUERY, {"query": "deploy"}, admin, {"accept": "text/plain"}),
        ("POST", QUERY, {"query": "deploy"}, admin, {"accept-encoding": "gzip"}),
        ("POST", QUERY, {"query": "deploy", "max_bytes": 2000}, admin, {}),
        ("POST", QUERY, {"query": "deploy"}, None, {}),
        ("POST", QUERY, {"query": "deploy"}, "mh_not_a_token", {}),
        ("POST", QUERY, {"query": 7}, admin, {}),
        ("POST", QUERY, {"query": "x" * 100_000}, admin, {}),
        ("POST", "/v1/workspaces/nope/query", {"query": "deploy"}, admin, {}),
        ("GET", QUERY, None, admin, {}),
        ("POST", QUERY + "/", {"query": "deploy"}, admin, {}),
        ("POST", CHECK, draft, admin, {}),
        ("POST", CHECK, draft, reader, {"accept": "text/plain"}),
        ("POST", CHECK, {"task": ""}, admin, {}),
    ]
    seen = []
    for method, path, body, token, headers in asks:
        with daemon.http(token) as client:
            response = client.request(method, path, json=body, headers=headers)
        kept = sorted((k, v) for k, v in response.headers.items() if k not in VARYING)
        seen.append((method, path, response.status_code, kept, response.content))
    with daemon.http(admin) as client:
        tag = client.post(QUERY, json={"query": "deploy nightly"}).headers["etag"]
        again = client.post(QUERY, json={"query": "deploy nightly"}, headers={"if-none-match": tag})
    seen.append(("304", again.status_code, again.headers["etag"] == tag, again.content))
    return seen


def route_counts(daemon: LiveDaemon) -> list[str]:
    with daemon.http(daemon.admin_token) as client:
        text = client.get("/metrics").text
    return sorted(
        line.rsplit(" ", 1)[0]
        for line in text.splitlines()
        if line.startswith("memhub_requests_total{") and ('"query"' in line or '"check"' in line)
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws" / WS)


@contextmanager
def serve(tmp_path: Path, workspace: Path, name: str) -> Iterator[LiveDaemon]:
    with start_daemon(tmp_path / name, {WS: str(workspace)}) as live:
        live.add_token("reader", READER, workspaces=[WS])
        yield live


def test_direct_routes_answer_as_the_router_does(tmp_path, workspace, monkeypatch) -> None:
    # given the same workspace served with and without the direct routes
    with serve(tmp_path, workspace, "direct") as daemon:
        direct, direct_counts = exchanges(daemon), route_counts(daemon)
    monkeypatch.setattr(api_app, "DIRECT_ROUTES", ())
    with serve(tmp_path, workspace, "routed") as daemon:
        routed, routed_counts = exchanges(daemon), route_counts(daemon)

    # then every exchange is the same, byte for byte, and so are the route metrics
    assert direct == routed
    assert direct_counts == routed_counts
    assert any('"query"' in line for line in direct_counts)
