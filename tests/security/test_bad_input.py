"""Bad input gets a clear 4xx in the error envelope, never a 500, a bare text error or a
redirect to someone else's host.

Lone UTF-16 surrogates in any string of any request body, JSON nested far too deep,
bodies that are not UTF-8, ids with thousands of digits, out-of-range or malformed
query parameters, and a trailing slash sent with a foreign Host header, all against a
real daemon.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import memhub_protocol.models as models
import memhub_protocol.recall as recall_models
from memhub_protocol import ROUTES
from memhubd.api.openapi import HANDLER_BODIES
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"
SURROGATES = ("\ud800", "\udfff", "a\udc80b")
FACT = """fact tidewater.uses_nats {
  subject: Service.Tidewater
  claim: "Tidewater publishes shipment events to NATS JetStream."
  evidence { source: "chat" quote: "we publish to jetstream now" }
}
"""
# One valid body per request model; each string field is then spoiled in turn.
VALID_BODIES: dict[str, dict[str, Any]] = {
    "QueryRequest": {"query": "deploy", "types": ["rule"], "kinds": ["rule"], "subject": "X"},
    "CheckRequest": {
        "task": "push",
        "candidate": "git push",
        "subject": "X",
        "scope": "repo",
        "exceptions": ["none"],
    },
    "WorkspaceAddRequest": {"name": "extra", "path": "/nonexistent-memhub-test"},
    "TokenCreateRequest": {
        "name": "fuzzed",
        "scopes": ["read:summary"],
        "workspaces": [WS],
        "roles": ["coding_agent"],
        "expires": "30d",
    },
    "ProposeRequest": {"source": FACT, "reason": "r", "client": "c", "supersedes": "x:y"},
    "ApproveRequest": {"into": "memory/new.mem"},
    "RejectRequest": {"reason": "no"},
    "IngestRequest": {"content": "a note", "room": "r", "source": "s", "readers": ["dev"]},
    "SearchRequest": {
        "query": "deploy",
        "room": ["r"],
        "identity": ["admin"],
        "since": "2024-01-01",
    },
    "TaxonomyEditRequest": {"room": "r", "keywords": ["k"], "display_name": "R"},
    "ReindexRequest": {},
    "CompressRequest": {"text": "we deploy on fridays"},
    "DrawerProposeRequest": {"type": "fact", "id": "a.b", "quote": "q", "reason": "r"},
    "DiaryWriteRequest": {"type": "LESSON", "content": "drain first"},
    "PurgeRequest": {"before": "2024-01-01"},
    "SourceDeleteRequest": {"source": "notes/a.md", "dry_run": True},
    "CoworkPushRequest": {"to": "nobody", "content": "hello"},
    "TripleAddRequest": {
        "subject": "a",
        "predicate": "b",
        "object": "c",
        "source_drawer": "d",
        "valid_from": "2024-01-01",
    },
    "TripleInvalidateRequest": {"at": "2024-01-01"},
    "FactCheckRequest": {"text": "alice deploys", "room": "r", "now": "2024-01-01"},
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("bad-input")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        yield live


def admin(daemon: LiveDaemon, headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Client:
    client = daemon.http(daemon.admin_token, **kwargs)
    client.headers.update(headers or {})
    return client


def assert_envelope(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"].startswith("application/json"), response.text[:300]
    error = response.json()["error"]
    assert error["code"] == code and error["message"], error
    return error


def url_of(route_name: str) -> str:
    route = next(r for r in ROUTES if r.name == route_name)
    return route.url(
        workspace=WS,
        proposal_id="p-none",
        token_name="nobody",
        drawer_id="d-none",
        triple_id="t-none",
    )


def string_fields(model: str) -> list[tuple[str, bool]]:
    """(field, is_list) for every string or list-of-strings property of a body."""
    schema = (
        HANDLER_BODIES.get(model)
        or (getattr(models, model, None) or getattr(recall_models, model)).json_schema()
    )
    fields = []
    for name, prop in schema["properties"].items():
        kinds = prop.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "string" in kinds:
            fields.append((name, False))
        elif "array" in kinds and prop.get("items", {}).get("type") == "string":
            fields.append((name, True))
    return fields


BODY_CASES = [
    (route.name, route.method, route.request_model, field, is_list)
    for route in ROUTES
    if route.request_model
    for field, is_list in string_fields(route.request_model)
]


def test_every_string_field_of_every_body_is_covered() -> None:
    models_with_bodies = {route.request_model for route in ROUTES if route.request_model}
    assert models_with_bodies <= set(VALID_BODIES)
    assert len(BODY_CASES) >= 20


@pytest.mark.parametrize(
    ("route_name", "method", "model", "field", "is_list"),
    BODY_CASES,
    ids=[f"{case[0]}.{case[3]}" for case in BODY_CASES],
)
def test_lone_surrogates_in_any_body_string_are_refused_with_the_envelope(
    daemon: LiveDaemon, route_name: str, method: str, model: str, field: str, is_list: bool
) -> None:
    for surrogate in SURROGATES:
        body = dict(VALID_BODIES[model])
        body[field] = [surrogate] if is_list else surrogate
        # json.dumps escapes the surrogate as \ud800: exactly what a careless client sends.
        content = json.dumps(body).encode()
        with admin(daemon) as client:
            response = client.request(method, url_of(route_name), content=content)
        assert_envelope(response, 422, "invalid")


@pytest.mark.parametrize("accept", ["application/json", "text/plain"])
def test_a_surrogate_in_a_key_or_a_text_answer_is_refused_too(
    daemon: LiveDaemon, accept: str
) -> None:
    with admin(daemon, headers={"accept": accept}) as client:
        key = client.post(f"{BASE}/query", content=b'{"query": "x", "\\ud800": 1}')
        text = client.post(f"{BASE}/query", content=b'{"query": "\\udead deploy"}')
    assert_envelope(key, 422, "invalid")
    assert_envelope(text, 422, "invalid")


def test_surrogates_encoded_as_raw_bytes_and_other_invalid_utf8_are_refused(
    daemon: LiveDaemon,
) -> None:
    with admin(daemon) as client:
        for raw in (b'{"query": "\xed\xa0\x80"}', b'{"query": "caf\xe9"}', b"\xff\xfe{}"):
            assert_envelope(client.post(f"{BASE}/query", content=raw), 422, "invalid")


def test_escaped_backslashes_and_valid_surrogate_pairs_are_ordinary_text(
    daemon: LiveDaemon,
) -> None:
    with admin(daemon) as client:
        literal = client.post(f"{BASE}/query", content=b'{"query": "deploy \\\\ud800"}')
        emoji = client.post(f"{BASE}/query", content=b'{"query": "deploy \\ud83d\\ude80"}')
    assert literal.status_code == 200, literal.text[:300]
    assert emoji.status_code == 200, emoji.text[:300]


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_json_is_refused_not_a_recursion_error(
    daemon: LiveDaemon, depth: int
) -> None:
    nested = "[" * depth + "]" * depth
    with admin(daemon) as client:
        whole = client.post(f"{BASE}/query", content=nested.encode())
        inner = client.post(
            f"{BASE}/check", content=f'{{"task": "t", "candidate": "c", "x": {nested}}}'.encode()
        )
    assert "deeper" in assert_envelope(whole, 422, "invalid")["message"]
    assert "deeper" in assert_envelope(inner, 422, "invalid")["message"]


def test_brackets_inside_strings_are_text_not_nesting(daemon: LiveDaemon) -> None:
    with admin(daemon) as client:
        response = client.post(f"{BASE}/query", json={"query": "deploy " + "[{" * 5000})
    assert response.status_code == 200, response.text[:300]


def test_numbers_too_long_to_convert_are_refused(daemon: LiveDaemon) -> None:
    with admin(daemon) as client:
        response = client.post(
            f"{BASE}/query", content=b'{"query": "x", "limit": ' + b"9" * 5000 + b"}"
        )
    assert_envelope(response, 422, "invalid")


@pytest.mark.parametrize("file_id", ["9" * 4400, "9" * 20, "\u00b2", "\u0663", "-1"])
def test_huge_or_exotic_file_ids_are_not_found(daemon: LiveDaemon, file_id: str) -> None:
    with admin(daemon) as client:
        response = client.get(f"{BASE}/files/{file_id}")
    assert_envelope(response, 404, "not_found")


@pytest.mark.parametrize("path", ["declarations/" + "9" * 4400, "proposals/" + "9" * 4400])
def test_huge_declaration_and_proposal_ids_are_4xx(daemon: LiveDaemon, path: str) -> None:
    with admin(daemon) as client:
        response = client.get(f"{BASE}/{path}")
    assert 400 <= response.status_code < 500, response.text[:300]
    assert response.json()["error"]["code"]


BAD_LIMITS = ["-1", "0", "abc", "1.5", "1e3", "", " 7", "+3", "99999999999999999999", "9" * 4400]


@pytest.mark.parametrize("route", ["proposals", "declarations"])
@pytest.mark.parametrize("limit", BAD_LIMITS)
def test_out_of_range_or_malformed_limits_are_refused(
    daemon: LiveDaemon, route: str, limit: str
) -> None:
    with admin(daemon) as client:
        response = client.get(f"{BASE}/{route}", params={"limit": limit})
    error = assert_envelope(response, 422, "invalid")
    assert error["detail"]["field"] == "limit"


@pytest.mark.parametrize(
    ("route", "params", "field"),
    [
        ("proposals", {"status": "bogus"}, "status"),
        ("declarations", {"include_inactive": "maybe"}, "include_inactive"),
        ("declarations", {"subject": "s" * 5000}, "subject"),
    ],
)
def test_other_malformed_query_parameters_are_refused(
    daemon: LiveDaemon, route: str, params: dict[str, str], field: str
) -> None:
    with admin(daemon) as client:
        response = client.get(f"{BASE}/{route}", params=params)
    assert assert_envelope(response, 422, "invalid")["detail"]["field"] == field


def test_a_valid_limit_shows_that_many_proposals_and_counts_them_all(daemon: LiveDaemon) -> None:
    with admin(daemon) as client:
        for n in range(3):
            source = FACT.replace("uses_nats", f"uses_nats_{n}")
            assert client.post(f"{BASE}/proposals", json={"source": source}).status_code == 201
        everything = client.get(f"{BASE}/proposals").json()
        one = client.get(f"{BASE}/proposals", params={"limit": "1"}).json()
        listed = client.get(f"{BASE}/declarations", params={"limit": "2"}).json()
    assert everything["total"] >= 3 and len(everything["proposals"]) == everything["total"]
    assert len(one["proposals"]) == 1 and one["total"] == everything["total"]
    assert len(listed["items"]) == 2


def test_a_trailing_slash_never_redirects_to_the_callers_host(daemon: LiveDaemon) -> None:
    with admin(daemon, follow_redirects=False, headers={"host": "evil.example"}) as client:
        response = client.get("/v1/status/")
    error = assert_envelope(response, 404, "not_found")
    assert "location" not in response.headers
    assert "evil.example" not in response.text
    assert error["detail"]["did_you_mean"] == "/v1/status"


@pytest.mark.parametrize(
    ("path", "served"),
    [
        (f"{BASE}/declarations/", f"{BASE}/declarations"),
        (f"{BASE}/files/", f"{BASE}/files"),
        (f"{BASE}/declarations/rule:no.such/", f"{BASE}/declarations/rule:no.such"),
        (f"{BASE}/files/memory/x.mem/", f"{BASE}/files/memory/x.mem"),
    ],
)
def test_a_trailing_slash_after_an_id_route_names_the_served_path(
    daemon: LiveDaemon, path: str, served: str
) -> None:
    # The id routes take slashes inside an id (a file in a folder), yet an empty id or
    # one ending in a slash is no id: the answer is the router's, with its hint.
    with admin(daemon, follow_redirects=False) as client:
        response = client.get(path)
    error = assert_envelope(response, 404, "not_found")
    assert error["detail"]["did_you_mean"] == served


def test_a_file_in_a_folder_is_still_served_by_its_path(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    folder = Path(workspaces[WS]) / "more" / "deeper"
    folder.mkdir(parents=True)
    (folder / "extra.mem").write_text(FACT, encoding="utf-8")
    with start_daemon(tmp_path / "d", workspaces) as live, admin(live) as client:
        response = client.get(f"{BASE}/files/more/deeper/extra.mem")
        slashed = client.get(f"{BASE}/files/more/deeper/extra.mem/")
    assert response.status_code == 200, response.text[:300]
    assert "tidewater.uses_nats" in response.text
    hint = assert_envelope(slashed, 404, "not_found")["detail"]["did_you_mean"]
    assert hint == f"{BASE}/files/more/deeper/extra.mem"


def test_a_file_named_outside_latin_1_is_served_with_its_id_percent_encoded(
    tmp_path: Path,
) -> None:
    # Given a source file named in Japanese, beside one with a space in its name
    workspaces = copy_examples(tmp_path / "ws", [WS])
    folder = Path(workspaces[WS]) / "メモ"
    folder.mkdir()
    (folder / "ノート 1.mem").write_text(FACT, encoding="utf-8")
    encoded = "%E3%83%A1%E3%83%A2/%E3%83%8E%E3%83%BC%E3%83%88%201.mem"
    with start_daemon(tmp_path / "d", workspaces) as live, admin(live) as client:
        # When it is read as text, as JSON, and its head alone
        text = client.get(f"{BASE}/files/{encoded}")
        head = client.head(f"{BASE}/files/{encoded}")
        as_json = client.get(f"{BASE}/files/{encoded}", headers={"accept": "application/json"})
    # Then every form is served, the header naming the id as the URL does
    assert text.status_code == 200, text.text[:300]
    assert "tidewater.uses_nats" in text.text
    assert text.headers["x-memhub-file-id"] == encoded
    assert head.status_code == 200 and head.headers["x-memhub-file-id"] == encoded
    assert as_json.status_code == 200 and as_json.json()["file_id"] == "メモ/ノート 1.mem"


@pytest.mark.parametrize("name", ["ex\u0430", "\uff57s", "na\u00efve", "\u00b2", "..", "-"])
def test_a_workspace_name_outside_its_ascii_letters_is_invalid_not_a_conflict(
    daemon: LiveDaemon, tmp_path: Path, name: str
) -> None:
    # Given a name with a Cyrillic, full-width or accented letter, or no letter at all
    # When a workspace is added under it
    with admin(daemon) as client:
        response = client.post("/v1/workspaces", json={"name": name, "path": str(tmp_path)})
    # Then the input is refused, naming the field: no state was in the way
    error = assert_envelope(response, 422, "invalid")
    assert error["detail"]["field"] == "name"


@pytest.mark.parametrize("token", [True, False])
def test_a_method_the_path_does_not_serve_is_405_with_allow(
    daemon: LiveDaemon, token: bool
) -> None:
    client = admin(daemon) if token else daemon.http(None)
    with client:
        response = client.put("/v1/status")
        on_query = client.delete(f"{BASE}/query")
    for answer, allowed in ((response, ["GET"]), (on_query, ["POST"])):
        error = assert_envelope(answer, 405, "method_not_allowed")
        assert sorted(m.strip() for m in answer.headers["allow"].split(",")) == sorted(
            {*allowed, *(["HEAD"] if "GET" in allowed else [])}
        )
        assert set(allowed) <= set(error["detail"]["allow"])


@pytest.mark.parametrize("route", ["query", "check"])
@pytest.mark.parametrize("workspace", ["no-such-workspace", WS])
def test_an_unknown_or_ungranted_workspace_is_404_whatever_the_body(
    daemon: LiveDaemon, route: str, workspace: str
) -> None:
    # The grant is checked before the body is read: a bad body never tells a caller
    # without a grant anything, and the answer is the same for every such workspace.
    secret = daemon.add_token(
        f"elsewhere-{route}-{len(workspace)}", "read:search", workspaces=["granted-elsewhere"]
    )
    with daemon.http(secret) as client:
        bad_body = client.post(f"/v1/workspaces/{workspace}/{route}", json={})
        good_body = client.post(
            f"/v1/workspaces/{workspace}/{route}",
            json={"query": "deploy"} if route == "query" else {"task": "deploy"},
        )
    for answer in (bad_body, good_body):
        error = assert_envelope(answer, 404, "workspace_not_found")
        assert error["detail"]["available"] == []


def test_unknown_routes_get_the_envelope_without_a_hint(daemon: LiveDaemon) -> None:
    with admin(daemon, follow_redirects=False) as client:
        response = client.get("/v1/nothing-here/")
    error = assert_envelope(response, 404, "not_found")
    assert "did_you_mean" not in error["detail"]


def test_the_daemon_still_serves_after_all_of_it(daemon: LiveDaemon) -> None:
    with admin(daemon) as client:
        assert client.post(f"{BASE}/query", json={"query": "deploy"}).status_code == 200
