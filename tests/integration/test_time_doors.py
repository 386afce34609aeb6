"""Times through a real daemon, at every door that takes one: a time given but empty is
refused as malformed (never "no limit" or "never expires"), an absent one is not given,
MCP takes epoch seconds as a JSON number where the JSON API does, digits ISO 8601 would
read as a date are refused as ambiguous, and a lower-case "z" names UTC everywhere."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import LiveDaemon, copy_examples, memctl, start_daemon

TEAM = "team-coding"
WS = f"/v1/workspaces/{TEAM}"
JUNE_3 = 1_748_908_800  # 2025-06-03T00:00:00Z
AGENT = "read:summary,read:search,write:recall"
MALFORMED = "must be epoch seconds or an ISO 8601 date/time"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("time-doors")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        live.add_token("times-a", AGENT, workspaces=[TEAM], roles=["developer"])
        live.add_token("times-b", AGENT, workspaces=[TEAM])
        with live.http(live.admin_token, timeout=60) as http:
            for content in ("a note kept", "a note deleted on purpose"):
                answer = http.post(f"{WS}/recall/ingest", json={"content": content, "room": "r"})
                assert answer.status_code == 201, answer.text
            drawer = answer.json()["sources"][0]["drawer_ids"][0]
            assert http.delete(f"{WS}/recall/drawers/{drawer}").status_code == 200
            body = {"subject": "Ana", "predicate": "works_at", "object": "Acme"}
            added = http.post(f"{WS}/kg/triples", json={**body, "valid_from": JUNE_3})
            assert added.status_code == 201, added.text
        yield live


def refused(answer: httpx2.Response, field: str) -> str:
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["detail"]["field"] == field, error
    return str(error["message"])


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, secret: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


# -- given but empty -------------------------------------------------------------------


def test_an_empty_purge_limit_is_refused_and_purges_nothing(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        for field in ("before", "audit_before"):
            for empty in ("", "  "):
                answer = http.post(f"{WS}/recall/purge", json={field: empty})
                assert MALFORMED in refused(answer, field)
        # The soft-deleted drawer is still there: a purge with no limit finds it.
        assert http.post(f"{WS}/recall/purge", json={}).json()["purged"] == 1


def test_memctl_refuses_an_empty_before_on_its_own_side(daemon: LiveDaemon) -> None:
    for option in ("--before", "--audit-before"):
        code, out, err = memctl(
            daemon, daemon.admin_token, "-w", TEAM, "recall", "purge", option, ""
        )
        assert code == 2, out + err
        # A usage error, as a bad --limit is: the usage, then one line naming the option.
        assert err.splitlines()[-1].endswith(f"argument {option}: {MALFORMED}, not ''"), err


def test_empty_search_and_graph_times_are_refused_at_the_api(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.tokens["times-a"]) as http:
        for field in ("since", "until"):
            posted = http.post(f"{WS}/recall/search", json={"query": "note", field: ""})
            assert MALFORMED in refused(posted, field)
            got = http.get(f"{WS}/recall/search", params={"query": "note", field: ""})
            assert MALFORMED in refused(got, field)
        body = {"subject": "A", "predicate": "b", "object": "C", "valid_from": ""}
        refused(http.post(f"{WS}/kg/triples", json=body), "valid_from")
        refused(http.get(f"{WS}/kg/triples", params={"as_of": ""}), "as_of")
        refused(http.post(f"{WS}/fact-check", json={"text": "Ana works at Acme", "now": ""}), "now")
        peek = http.get(f"{WS}/cowork/peek/times-b", params={"since": ""})
        refused(peek, "since")
        # Absent or null: not given.
        assert http.post(f"{WS}/recall/search", json={"query": "note", "since": None}).is_success
        assert http.get(f"{WS}/kg/triples").is_success


def test_memctl_refuses_an_empty_time_naming_its_option(daemon: LiveDaemon) -> None:
    secret = daemon.tokens["times-a"]
    for argv in (
        ("kg", "query", "--as-of", ""),
        ("kg", "add", "A", "b", "C", "--valid-from", ""),
        ("cowork", "peek", "times-b", "--since", ""),
        ("recall", "search", "note", "--since", ""),
        ("kg", "invalidate", "no-such-triple", "--at", ""),
    ):
        code, out, err = memctl(daemon, secret, "-w", TEAM, *argv)
        assert code == 2, (argv, out, err)
        assert f"argument {argv[-2]}: {MALFORMED}" in err, err


def test_an_empty_expiry_is_refused_at_every_door(daemon: LiveDaemon) -> None:
    request = {"scopes": ["read:summary"], "workspaces": [TEAM]}
    with daemon.http(daemon.admin_token) as http:
        for name, empty in (("ci-empty", ""), ("ci-blank", " ")):
            answer = http.post("/v1/tokens", json={**request, "name": name, "expires": empty})
            assert answer.status_code == 422, answer.text
            assert "bad expiry" in answer.json()["error"]["message"]
        code, out, err = memctl(
            daemon, daemon.admin_token, "token", "create", "ci-ctl", "--scopes", "read:summary",
            "--workspaces", TEAM, "--expires", "",
        )  # fmt: skip
        # A usage error on memctl's side, as memhubd token create's (exit 2).
        assert code == 2 and "argument --expires: must not be empty" in err, out + err
        names = {token["name"] for token in http.get("/v1/tokens").json()["tokens"]}
    assert not names & {"ci-empty", "ci-blank", "ci-ctl"}


# -- epoch seconds and ambiguous digits --------------------------------------------------


@pytest.mark.anyio
async def test_mcp_takes_epoch_seconds_as_a_json_number(daemon: LiveDaemon) -> None:
    secret = daemon.tokens["times-a"]
    with daemon.http(secret) as http:
        api = http.get(f"{WS}/kg/triples", params={"as_of": JUNE_3 + 1}).json()
        checked = http.post(f"{WS}/fact-check", json={"text": "x", "now": JUNE_3}).json()
    async with mcp_client(daemon, secret) as client:
        query = await client.call_tool("memory_kg", {"action": "query", "as_of": JUNE_3 + 1})
        check = await client.call_tool("memory_fact_check", {"text": "x", "now": JUNE_3})
        empty = await client.call_tool("memory_kg", {"action": "query", "as_of": ""})
        # A fraction is refused as the API refuses it, naming the field
        fraction = await client.call_tool("memory_fact_check", {"text": "x", "now": 1.5})
        as_text = await client.call_tool(
            "memory_kg", {"action": "query", "as_of": "2025-06-03T00:00:01z"}
        )
    assert not query.is_error, query.content[0].text
    assert json.loads(query.content[0].text)["triples"] == api["triples"] != []
    assert not check.is_error, check.content[0].text
    assert json.loads(check.content[0].text)["now"] == checked["now"] == JUNE_3
    assert empty.is_error and "as_of" in empty.content[0].text
    said = fraction.content[0].text
    assert fraction.is_error and "'now' must be epoch seconds" in said and "now.int" not in said
    assert json.loads(as_text.content[0].text)["triples"] == api["triples"]


def test_digits_iso_8601_reads_as_a_date_are_refused_as_ambiguous(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.tokens["times-a"]) as http:
        for digits in ("20250603", "2025"):
            message = refused(http.get(f"{WS}/kg/triples", params={"as_of": digits}), "as_of")
            assert "ambiguous" in message and "2025-06-03" in message
        as_number = http.get(f"{WS}/kg/triples", params={"as_of": "1748908801"})
        assert as_number.status_code == 200, as_number.text
