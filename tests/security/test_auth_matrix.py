"""The auth matrix: every route against no token, a bad token, a token missing
the route's scope, and a token without a grant for the workspace; and every admin
route against an admin token granted one workspace only."""

from __future__ import annotations

from typing import Any

import pytest

from memhub_protocol import ROUTES, Route
from memhub_protocol.scopes import ALL_SCOPES

WORKSPACE = "team-coding"
PARAMS = {
    "workspace": WORKSPACE,
    "decl_id": "coding.project_rule:git.no_force_push",
    "file_id": "rules.mem",
    "token_name": "nobody",
}
BODIES: dict[str, Any] = {
    "query": {"query": "force push"},
    "check": {"task": "push main", "candidate": "git push origin main"},
    "workspace_add": {"name": "other", "path": "/nonexistent"},
    "token_create": {"name": "x", "scopes": ["read:summary"], "workspaces": ["*"]},
    "recall_ingest": {"content": "a note", "room": "general"},
    "recall_search": {"query": "note"},
    "recall_taxonomy_edit": {"room": "general", "keywords": ["note"]},
}
# Well-formed query strings, for the routes that take their input there.
QUERIES: dict[str, dict[str, str]] = {"recall_search_get": {"q": "note"}}
PROTECTED = [r for r in ROUTES if r.scope is not None and r.name != "events"]
WORKSPACE_ROUTES = [r for r in PROTECTED if "{workspace}" in r.path]


def call(client: Any, route: Route, **params: str) -> Any:
    url = route.url(**{**PARAMS, **params})
    return client.request(
        route.method, url, json=BODIES.get(route.name), params=QUERIES.get(route.name)
    )


def assert_envelope(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["detail"], dict)


@pytest.mark.parametrize("route", PROTECTED, ids=lambda r: r.name)
def test_protected_route_without_token_is_401(shared_daemon, route: Route) -> None:
    with shared_daemon.http() as client:
        assert_envelope(call(client, route), 401, "unauthorized")


@pytest.mark.parametrize("route", PROTECTED, ids=lambda r: r.name)
def test_protected_route_with_unknown_token_is_401(shared_daemon, route: Route) -> None:
    with shared_daemon.http("mh_notatoken_0000000000000000000000000000000000") as client:
        assert_envelope(call(client, route), 401, "unauthorized")


@pytest.mark.parametrize("route", PROTECTED, ids=lambda r: r.name)
def test_protected_route_without_its_scope_is_403(shared_daemon, route: Route) -> None:
    name = f"lacks-{route.scope}".replace(":", "-")
    secret = shared_daemon.tokens.get(name)
    if secret is None:
        others = ",".join(s for s in ALL_SCOPES if s != route.scope)
        secret = shared_daemon.add_token(name, others)
    with shared_daemon.http(secret) as client:
        response = call(client, route)
    assert_envelope(response, 403, "forbidden")
    assert route.scope in response.json()["error"]["message"]


@pytest.mark.parametrize("route", WORKSPACE_ROUTES, ids=lambda r: r.name)
def test_workspace_route_without_a_grant_answers_as_an_unknown_workspace(
    shared_daemon, route: Route
) -> None:
    secret = shared_daemon.tokens.get("writing-only") or shared_daemon.add_token(
        "writing-only", "all", workspaces=["writing"]
    )
    with shared_daemon.http(secret) as client:
        response = call(client, route)
        unknown = call(client, route, workspace="no-such-workspace")
    # The same 404 as for a workspace that does not exist: its name is not confirmed
    assert_envelope(response, 404, "workspace_not_found")
    assert response.json()["error"]["detail"]["available"] == ["writing"]
    assert response.text.replace(WORKSPACE, "no-such-workspace") == unknown.text


def test_events_stream_requires_a_token(shared_daemon) -> None:
    with shared_daemon.http() as client:
        assert_envelope(client.get("/v1/events"), 401, "unauthorized")


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/v1/openapi.json"])
def test_probes_and_openapi_need_no_token(shared_daemon, path: str) -> None:
    with shared_daemon.http() as client:
        assert client.get(path).status_code == 200


def test_unix_socket_without_token_is_the_local_operator(shared_daemon) -> None:
    with shared_daemon.unix() as client:
        body = client.get("/v1/status").json()
    assert body["identity"]["name"] == "local-operator"
    assert "admin" in body["identity"]["scopes"]


def test_unix_socket_with_a_token_uses_that_token(shared_daemon) -> None:
    secret = shared_daemon.tokens.get("reader") or shared_daemon.add_token("reader", "read:summary")
    with shared_daemon.unix(secret) as client:
        assert client.get("/v1/status").json()["identity"]["name"] == "reader"
        assert_envelope(client.get("/v1/tokens"), 403, "forbidden")


def test_unknown_workspace_lists_the_available_ones(shared_daemon) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        response = client.get("/v1/workspaces/nope/map")
    assert_envelope(response, 404, "workspace_not_found")
    assert WORKSPACE in response.json()["error"]["detail"]["available"]


def test_unknown_route_is_an_enveloped_404(shared_daemon) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        assert_envelope(client.get("/v1/nothing-here"), 404, "not_found")


def test_oversized_body_is_413_and_changes_nothing(shared_daemon) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        response = client.post(
            f"/v1/workspaces/{WORKSPACE}/query", content=b'{"query": "' + b"x" * 2_000_000 + b'"}'
        )
    assert_envelope(response, 413, "too_large")


def test_malformed_body_is_an_enveloped_422(shared_daemon) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        not_json = client.post(f"/v1/workspaces/{WORKSPACE}/query", content=b"{nope")
        missing = client.post(f"/v1/workspaces/{WORKSPACE}/query", json={"limit": 3})
        extra = client.post(f"/v1/workspaces/{WORKSPACE}/query", json={"query": "x", "k": 1})
    for response in (not_json, missing, extra):
        assert_envelope(response, 422, "invalid")


def test_tokens_never_appear_in_token_listings(shared_daemon) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        listing = client.get("/v1/tokens").text
    assert shared_daemon.admin_token not in listing
    assert "hash" not in listing


# -- the admin routes for an admin granted one workspace -------------------------------------

SCOPED_ADMIN = [
    # (route, path parameters, body, status): within its grants it acts; beyond, it is refused.
    ("tokens", {}, None, 200),
    ("token_create", {}, {"name": "s1", "scopes": ["all"], "workspaces": ["*"]}, 403),
    ("token_create", {}, {"name": "s2", "scopes": ["all"], "workspaces": [WORKSPACE]}, 403),
    ("token_create", {}, {"name": "s3", "scopes": ["all"], "workspaces": ["writing"]}, 201),
    ("token_revoke", {"token_name": "admin"}, None, 404),
    ("workspace_add", {}, {"name": "alias", "path": "."}, 403),
    ("workspace_remove", {"workspace": "writing"}, None, 403),
    ("workspace_remove", {"workspace": WORKSPACE}, None, 404),
    ("workspace_reload", {"workspace": "writing"}, None, 200),
    ("workspace_reload", {"workspace": WORKSPACE}, None, 404),
]


@pytest.mark.parametrize(
    ("name", "params", "body", "status"),
    SCOPED_ADMIN,
    ids=[f"{row[0]}-{i}" for i, row in enumerate(SCOPED_ADMIN)],
)
def test_admin_routes_for_a_workspace_scoped_admin(
    shared_daemon, name: str, params: dict[str, str], body: Any, status: int
) -> None:
    secret = shared_daemon.tokens.get("admin-of-writing") or shared_daemon.add_token(
        "admin-of-writing", "all", workspaces=["writing"]
    )
    route = next(r for r in ROUTES if r.name == name)
    with shared_daemon.http(secret) as client:
        response = client.request(route.method, route.url(**params), json=body)
    assert response.status_code == status, response.text
    with shared_daemon.http(shared_daemon.admin_token) as client:
        assert client.get("/v1/status").status_code == 200  # the full admin still works
