"""The direct routes take a request only when Starlette's router would give it to the
same route with the same workspace; anything else (another method, a trailing slash,
more segments, a mounted root path) is left to the router."""

from __future__ import annotations

import pytest
from starlette.routing import Match

from memhubd.api.app import ApiContext, build_app
from memhubd.api.direct import DirectRoutes

APP = build_app(ApiContext(hub=None, tokens=None))


def direct_routes() -> DirectRoutes:
    layer = APP.build_middleware_stack()
    while not hasattr(layer, "direct"):
        layer = layer.app
    return layer.direct  # type: ignore[no-any-return]


def scope(method: str, path: str, root_path: str = "") -> dict:
    return {"type": "http", "method": method, "path": path, "root_path": root_path}


def router_choice(request: dict) -> tuple[object, dict] | None:
    for route in APP.router.routes:
        match, child = route.matches(request)
        if match is Match.FULL:
            return route, child["path_params"]
    return None


def test_query_and_check_are_served_directly() -> None:
    assert direct_routes().names() == ["check", "query"]


@pytest.mark.parametrize("name", ["ws", "a.b-c_d", "with space", "ünï", "%2F", "q"])
@pytest.mark.parametrize("route", ["query", "check"])
def test_a_direct_route_is_the_routers_choice(name: str, route: str) -> None:
    request = scope("POST", f"/v1/workspaces/{name}/{route}")

    found = direct_routes().match(request)

    assert found is not None
    chosen, params = router_choice(request)  # type: ignore[misc]
    assert (found[0], {"workspace": found[1]}) == (chosen, params)
    assert chosen.name == route  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "request_",
    [
        scope("GET", "/v1/workspaces/ws/query"),
        scope("PUT", "/v1/workspaces/ws/check"),
        scope("POST", "/v1/workspaces/ws/query/"),
        scope("POST", "/v1/workspaces/ws/query\n"),
        scope("POST", "/v1/workspaces//query"),
        scope("POST", "/v1/workspaces/a/b/query"),
        scope("POST", "/v1/workspaces/ws/lint"),
        scope("POST", "/v1/workspaces/ws/kg/query"),
        scope("POST", "/v2/workspaces/ws/query"),
        scope("POST", "/api/v1/workspaces/ws/query", root_path="/api"),
    ],
)
def test_other_requests_are_left_to_the_router(request_: dict) -> None:
    assert direct_routes().match(request_) is None


def test_an_empty_table_matches_nothing() -> None:
    assert DirectRoutes().match(scope("POST", "/v1/workspaces/ws/query")) is None
