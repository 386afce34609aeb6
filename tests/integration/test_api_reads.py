"""Reads over the JSON API give the offline command's answers, honour access
policies, and come with the operational extras (metrics, events, OpenAPI)."""

from __future__ import annotations

import io
import json
import threading
import time
from contextlib import redirect_stdout
from pathlib import Path

from memhubd.cli import main as memhubd_main

SECRET_BUG = "teamcode.bug_pattern:payments.sandbox_key_in_logs"


def offline(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = memhubd_main(list(argv))
    return code, out.getvalue()


def test_query_json_is_the_offline_query_json(shared_daemon) -> None:
    root = shared_daemon.workspaces["team-coding"]
    code, expected = offline("query", root, "-q", "force push main", "--json")
    with shared_daemon.http(shared_daemon.admin_token) as client:
        response = client.post(
            "/v1/workspaces/team-coding/query", json={"query": "force push main"}
        )
    assert code == 0 and response.status_code == 200
    assert response.json() == json.loads(expected)
    assert int(response.headers["x-memhub-generation"]) >= 1
    assert response.headers["x-memhub-health"] == "healthy"


def test_text_rendering_is_offered_for_text_plain(shared_daemon) -> None:
    root = shared_daemon.workspaces["team-coding"]
    _code, expected = offline("query", root, "-q", "release changelog")
    with shared_daemon.http(shared_daemon.admin_token) as client:
        response = client.post(
            "/v1/workspaces/team-coding/query",
            json={"query": "release changelog"},
            headers={"accept": "text/plain"},
        )
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == expected.rstrip("\n")


def test_check_map_and_types_match_offline_answers(shared_daemon) -> None:
    root = shared_daemon.workspaces["team-coding"]
    _code, expected_map = offline("map", root, "--json")
    _code, expected_types = offline("types", root, "--json")
    _code, expected_check = offline(
        "check", root, "-t", "push main", "-c", "git push --force origin main", "--json"
    )
    with shared_daemon.http(shared_daemon.admin_token) as client:
        served_map = client.get("/v1/workspaces/team-coding/map").json()
        served_types = client.get("/v1/workspaces/team-coding/types").json()
        served_check = client.post(
            "/v1/workspaces/team-coding/check",
            json={"task": "push main", "candidate": "git push --force origin main"},
        ).json()
    assert served_map == json.loads(expected_map)
    assert served_types == json.loads(expected_types)
    assert served_check == json.loads(expected_check)
    assert served_check["verdict"] == "block"


def test_explain_and_files(shared_daemon) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        explained = client.get(
            "/v1/workspaces/team-coding/declarations/coding.project_rule:git.no_force_push"
        )
        missing = client.get("/v1/workspaces/team-coding/declarations/nothing:here")
        files = client.get("/v1/workspaces/team-coding/files").json()["files"]
        raw = client.get("/v1/workspaces/team-coding/files/rules.mem")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert explained.status_code in (200, 404)
    assert {f["file_id"] for f in files} >= {"rules.mem", "bugs.mem"}
    path = Path(shared_daemon.workspaces["team-coding"]) / "rules.mem"
    assert raw.text == path.read_text(encoding="utf-8")


def test_roles_hide_declarations_everywhere(shared_daemon) -> None:
    # The sandbox-key bug pattern is readable by maintainers and security only.
    agent = shared_daemon.tokens.get("agent") or shared_daemon.add_token(
        "agent", "read:summary,read:search", roles=["coding_agent"]
    )
    maintainer = shared_daemon.tokens.get("maint") or shared_daemon.add_token(
        "maint", "read:summary,read:search", roles=["maintainer"]
    )
    query = {"query": "payment sdk sandbox key logs debug"}
    with shared_daemon.http(agent) as client:
        pack = client.post("/v1/workspaces/team-coding/query", json=query).json()
        listed = client.get("/v1/workspaces/team-coding/declarations?limit=500").json()
        mapped = json.dumps(client.get("/v1/workspaces/team-coding/map").json())
        explained = client.get(f"/v1/workspaces/team-coding/declarations/{SECRET_BUG}")
        raw = client.get("/v1/workspaces/team-coding/files/bugs.mem").text
    assert SECRET_BUG not in json.dumps(pack)
    assert pack["search_trace"]["hidden_by_access_policy"] >= 1
    assert SECRET_BUG not in {item["id"] for item in listed["items"]}
    assert SECRET_BUG not in mapped
    assert explained.status_code == 404
    assert "sandbox key" not in raw and "hidden by access policy" in raw
    with shared_daemon.http(maintainer) as client:
        pack = client.post("/v1/workspaces/team-coding/query", json=query).json()
        raw = client.get("/v1/workspaces/team-coding/files/bugs.mem").text
    assert SECRET_BUG in json.dumps(pack)
    assert "sandbox key" in raw
    with shared_daemon.http(shared_daemon.admin_token) as client:  # roles ["*"]
        pack = client.post("/v1/workspaces/team-coding/query", json=query).json()
    assert "hidden_by_access_policy" not in pack["search_trace"]


def test_metrics_count_requests_and_report_generations(shared_daemon) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        client.get("/v1/status")
        text = client.get("/metrics").text
    assert 'memhub_requests_total{route="status",status="200"}' in text
    assert 'memhub_generation{workspace="team-coding"}' in text
    assert 'memhub_declarations{workspace="writing"}' in text
    assert "memhub_reload_duration_seconds_bucket" in text


def test_openapi_describes_every_route(shared_daemon) -> None:
    from memhub_protocol import ROUTES

    with shared_daemon.http() as client:
        document = client.get("/v1/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    operations = {
        op["operationId"] for methods in document["paths"].values() for op in methods.values()
    }
    assert operations == {route.name for route in ROUTES} | {"mcp"}  # /mcp beside the table


def test_events_stream_reports_a_reload(live_daemon) -> None:
    received: list[str] = []
    done = threading.Event()

    def listen() -> None:
        with (
            live_daemon.http(live_daemon.admin_token, timeout=20) as client,
            client.stream("GET", "/v1/events") as response,
        ):
            for line in response.iter_lines():
                received.append(line)
                if line.startswith("data: ") and '"event": "reloaded"' in line:
                    done.set()
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    root = Path(live_daemon.workspaces["writing"])
    time.sleep(0.5)
    (root / "new.mem").write_text(
        'fact x.y { claim: "c" evidence { source: "s" quote: "q" } }\n', encoding="utf-8"
    )
    assert done.wait(15), received
    data = next(line for line in received if line.startswith("data: ") and "reloaded" in line)
    assert json.loads(data[6:])["workspace"] == "writing"
