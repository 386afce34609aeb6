"""Routes whose modules a start defers (recall, cowork, graph, diary, OpenAPI) answer as
usual when they are the first thing a daemon is asked, and are loaded soon after the
start otherwise."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import memhubd.server as server_module
from memhub_protocol import ROUTES
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
NOTE = "The ledger drifts by a cent when currencies are converted twice."


@pytest.fixture
def unloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveDaemon]:
    """A daemon that would load its deferred modules only long after its start."""
    monkeypatch.setattr(server_module, "DEFERRED_IMPORT_DELAY_S", 3600.0)
    monkeypatch.setattr(server_module, "MCP_IMPORT_DELAY_S", 3600.0)
    with start_daemon(tmp_path, copy_examples(tmp_path / "ws", [TEAM])) as daemon:
        yield daemon


def test_deferred_routes_check_the_caller_before_loading_anything(unloaded: LiveDaemon) -> None:
    # When a deferred route is the first one called, without a token
    with unloaded.http() as http:
        answer = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": "ledger"})
    # Then it is refused as every route refuses a missing token
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "unauthorized"


def test_deferred_routes_answer_when_called_first(unloaded: LiveDaemon) -> None:
    with unloaded.http(unloaded.admin_token, timeout=60) as http:
        # When recall is used first (its module imported, its shelf opened by the call)
        ingested = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"content": NOTE})
        found = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": "ledger cent"})
        # And then each other deferred module's first route
        cowork = http.get(f"/v1/workspaces/{TEAM}/cowork/status")
        graph = http.get(f"/v1/workspaces/{TEAM}/kg/stats")
        diary = http.post(f"/v1/workspaces/{TEAM}/diary", json={"type": "LESSON", "content": NOTE})
        drawer = found.json()["hits"][0]["drawer_id"] if found.status_code == 200 else "-"
        claim = {"subject": "Service.Tidewater", "claim": NOTE}
        proposal = http.post(
            f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}/propose",
            json={"type": "fact", "id": "tidewater.cent_drift", "fields": claim},
        )
        openapi = http.get("/v1/openapi.json")
    # Then each answers as it does after the deferred loading
    assert ingested.status_code == 201, ingested.text
    assert found.status_code == 200, found.text
    assert NOTE in found.json()["hits"][0]["content"]
    assert cowork.status_code == 200, cowork.text
    assert graph.status_code == 200, graph.text
    assert diary.status_code == 201, diary.text
    assert proposal.status_code == 201, proposal.text
    assert openapi.status_code == 200
    paths = set(openapi.json()["paths"])
    assert {spec.path for spec in ROUTES} <= paths


def loading_at_once(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make a daemon load its deferred modules right after its start (no delay); the
    event is set once their route modules are imported."""
    loaded = threading.Event()
    load = server_module.import_route_modules

    def import_route_modules() -> None:
        load()
        loaded.set()

    monkeypatch.setattr(server_module, "DEFERRED_IMPORT_DELAY_S", 0.0)
    monkeypatch.setattr(server_module, "import_route_modules", import_route_modules)
    return loaded


def test_the_deferred_modules_load_soon_after_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a daemon that loads its deferred modules right after its start
    loaded = loading_at_once(monkeypatch)
    # When it has started, and nobody asked for recall
    with start_daemon(tmp_path, copy_examples(tmp_path / "ws", [TEAM])):
        # Then the shelf was opened and the route modules imported without being asked
        assert loaded.wait(30)
