"""The hot routes (query, check) answered without Starlette's router: a request whose
method and path have their shape goes straight to the route's endpoint, with the scope
the router would have given it.

It must not change who answers what: a route is taken in only if the router itself
resolves its path shape to it, and every other request goes through the router.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.routing import Match, Route, Router

PREFIX = "/v1/workspaces/"
# The workspace segment of the path: any text without a slash, as the router's `{workspace}`.
PARAM = "workspace"
_SAMPLE = "w"

Scope = dict[str, Any]


class DirectRoutes:
    """Routes of the shape `/v1/workspaces/{workspace}/<name>`, by (method, name).

    Filled once the router exists (`take`); empty until then, so it matches nothing.
    """

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], Route] = {}
        self._router: Router | None = None

    def take(self, router: Router, names: Iterable[str]) -> None:
        """Serve the named routes directly, each only if the router would choose it."""
        wanted = set(names)
        for route in router.routes:
            if not isinstance(route, Route) or route.name not in wanted:
                continue
            head, _, tail = route.path.rpartition("/")
            if head != PREFIX + "{" + PARAM + "}" or not tail or "{" in tail:
                continue
            for method in route.methods or ():
                if _first_full_match(router, method, tail) is route:
                    self._routes[(method, tail)] = route
        self._router = router

    def names(self) -> list[str]:
        """The routes served directly (for tests)."""
        return sorted({route.name for route in self._routes.values()})

    def match(self, scope: Scope) -> tuple[Route, str] | None:
        """The route and workspace name of a request served directly, else None."""
        if not self._routes or scope.get("root_path"):
            return None
        path: str = scope["path"]
        if not path.startswith(PREFIX):
            return None
        workspace, slash, tail = path[len(PREFIX) :].partition("/")
        if not workspace or not slash:
            return None
        route = self._routes.get((scope["method"], tail))
        return None if route is None else (route, workspace)

    async def serve(
        self, route: Route, workspace: str, scope: Scope, receive: Any, send: Any
    ) -> None:
        """What the router, the route and its request/response wrapper would do."""
        scope.setdefault("router", self._router)
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        scope["path_params"] = {**scope.get("path_params", {}), PARAM: workspace}
        response = await route.endpoint(Request(scope, receive, send))
        await response(scope, receive, send)


def _first_full_match(router: Router, method: str, tail: str) -> Any:
    scope = {"type": "http", "path": PREFIX + _SAMPLE + "/" + tail, "root_path": ""}
    scope["method"] = method
    for route in router.routes:
        match, _child = route.matches(scope)
        if match is Match.FULL:
            return route
    return None
