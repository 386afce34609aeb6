"""The knowledge graph through a real daemon: stored triples with validity periods, read-only
triples derived from `.mem` declarations that follow edits and deletions, role hiding,
tunnels across three workspaces with different grants, and the same answers through the
JSON API, MCP and memctl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM, WRITING, ASSISTANT = "team-coding", "writing", "assistant"
T0 = 1_700_000_000
Y2100 = 4_102_444_800  # 2100-01-01T00:00:00Z
NATS = "decision:queue.nats_jetstream"
FORCE_RULE = "teamcode.project_rule:git.no_force_push_main"
SHARED = """module shared.notes

entity Person.Ines {
  canonical_name: "Ines"
}
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("graph")
    workspaces = copy_examples(root / "ws", [TEAM, WRITING, ASSISTANT])
    for name in (WRITING, ASSISTANT):
        (Path(workspaces[name]) / "shared.mem").write_text(SHARED)
    with start_daemon(root, workspaces) as live:
        with live.http(live.admin_token, timeout=60) as http:
            for name in (TEAM, WRITING, ASSISTANT):
                for room, content in (
                    ("ledger", f"the {name} ledger drifts by a cent on conversion"),
                    ("default", f"an unrouted note of {name}"),
                ):
                    answer = http.post(
                        f"/v1/workspaces/{name}/recall/ingest",
                        json={"content": content, "room": room},
                    )
                    assert answer.status_code == 201, answer.text
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def developer(daemon: LiveDaemon) -> str:
    return token(
        daemon,
        "graph-dev",
        "read:summary,read:search,write:recall",
        workspaces=[TEAM],
        roles=["developer"],
    )


def outsider(daemon: LiveDaemon) -> str:
    """Granted the team workspace but none of the roles that may read its rules."""
    return token(daemon, "graph-outsider", "read:summary,read:search", workspaces=[TEAM])


def api(daemon: LiveDaemon, secret: str, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    with daemon.http(secret) as http:
        return http.request(method, path, **kwargs)


def kg(path: str) -> str:
    return f"/v1/workspaces/{TEAM}/kg{path}"


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, secret: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


async def call(daemon: LiveDaemon, secret: str, tool: str, args: dict[str, Any]) -> Any:
    async with mcp_client(daemon, secret) as client:
        result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def memctl(daemon: LiveDaemon, secret: str, *argv: str, stdin: str = "") -> tuple[int, str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", secret, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
        env=dict(os.environ),
    )
    return result.returncode, result.stdout, result.stderr


def wait_for(check: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("the daemon did not get there in time")


# --------------------------------------------------------------------------- stored triples


def test_as_of_answers_at_the_boundaries_and_invalidation_keeps_history(
    daemon: LiveDaemon,
) -> None:
    secret = developer(daemon)
    body = {"subject": "Ana", "predicate": "works_at", "object": "Harbor", "valid_from": T0}
    added = api(daemon, secret, "POST", kg("/triples"), json=body)
    assert added.status_code == 201, added.text
    ident = added.json()["triples"][0]["id"]
    closed = api(daemon, secret, "POST", kg(f"/triples/{ident}/invalidate"), json={"at": T0 + 100})
    assert closed.status_code == 200 and closed.json()["triples"][0]["valid_to"] == T0 + 100

    def at(instant: int) -> list[str]:
        params = {"subject": "Ana", "as_of": str(instant)}
        answer = api(daemon, secret, "GET", kg("/triples"), params=params)
        return [t["id"] for t in answer.json()["triples"]]

    assert (at(T0 - 1), at(T0), at(T0 + 99), at(T0 + 100)) == ([], [ident], [ident], [])
    assert (
        api(daemon, secret, "GET", kg("/triples"), params={"subject": "Ana"}).json()["triples"]
        == []
    )  # not valid now
    again = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": T0 + 200})
    assert again.status_code == 201 and again.json()["triples"][0]["id"] == ident
    assert (at(T0 + 50), at(T0 + 150), at(T0 + 250)) == ([ident], [], [ident])
    timeline = api(daemon, secret, "GET", kg("/timeline"), params={"entity": "Harbor"}).json()
    periods = [(t["valid_from"], t["valid_to"]) for t in timeline["triples"] if t["id"] == ident]
    assert periods == [(T0, T0 + 100), (T0 + 200, None)]
    gone = api(daemon, secret, "POST", kg(f"/triples/{ident}/invalidate"), json={"at": T0 + 300})
    assert gone.status_code == 200
    twice = api(daemon, secret, "POST", kg(f"/triples/{ident}/invalidate"), json={})
    assert twice.status_code == 404 and "already invalidated" in twice.json()["error"]["message"]


def test_a_triple_dated_in_the_future_by_mistake_can_be_withdrawn_and_added_again(
    daemon: LiveDaemon,
) -> None:
    secret = developer(daemon)
    future = int(time.time()) + 30 * 365 * 86400  # 2052 typed for 2022, say
    body = {"subject": "Cai", "predicate": "leads", "object": "Docs", "valid_from": future}
    added = api(daemon, secret, "POST", kg("/triples"), json=body)
    assert added.status_code == 201, added.text
    ident = added.json()["triples"][0]["id"]
    # Withdrawn before it begins: its period ends where it starts, never valid
    withdrawn = api(daemon, secret, "POST", kg(f"/triples/{ident}/invalidate"), json={})
    assert withdrawn.status_code == 200, withdrawn.text
    assert "withdrawn before it became valid" in withdrawn.json()["message"]
    assert withdrawn.json()["triples"][0]["valid_to"] == future
    # The start meant is accepted, and only that period is ever valid
    fixed = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": T0})
    assert fixed.status_code == 201, fixed.text
    assert fixed.json()["message"].startswith("added")
    params = {"subject": "Cai", "as_of": str(future + 10)}
    later = api(daemon, secret, "GET", kg("/triples"), params=params).json()["triples"]
    assert [t["valid_from"] for t in later] == [T0]


def test_a_withdrawn_period_counts_as_expired_for_every_caller(daemon: LiveDaemon) -> None:
    secret = developer(daemon)

    def counts() -> list[tuple[int, int, int]]:
        out = []
        for caller in (daemon.admin_token, secret):
            got = api(daemon, caller, "GET", kg("/stats")).json()["stats"]
            out.append((got["total"], got["active"], got["expired"]))
        return out

    before = counts()
    future = int(time.time()) + 20 * 365 * 86400
    body = {"subject": "Zed", "predicate": "plans", "object": "Mars2", "valid_from": future}
    ident = api(daemon, secret, "POST", kg("/triples"), json=body).json()["triples"][0]["id"]
    withdrawn = api(daemon, secret, "POST", kg(f"/triples/{ident}/invalidate"), json={})
    assert withdrawn.status_code == 200, withdrawn.text
    after = counts()
    # One more in the total and among the expired, for the role-limited caller as for admin
    for (total, active, expired), (total2, active2, expired2) in zip(before, after, strict=True):
        assert (total2 - total, active2 - active, expired2 - expired) == (1, 0, 1)


def test_two_facts_whose_ids_clash_are_both_kept(daemon: LiveDaemon) -> None:
    # Their ids' 8 hex digits agree (found by trying objects)
    secret = developer(daemon)
    first, second = "Person122548", "Person169710"
    added = [
        api(
            daemon,
            secret,
            "POST",
            kg("/triples"),
            json={"subject": "Alice", "predicate": "knows", "object": o},
        )
        for o in (first, second)
    ]
    assert [a.status_code for a in added] == [201, 201], added[1].text
    one, two = (a.json()["triples"][0] for a in added)
    assert (one["object"], two["object"]) == (first, second)
    assert len(two["id"]) == len(one["id"]) + 8 and two["id"].startswith(one["id"])
    found = api(daemon, secret, "GET", kg("/triples"), params={"object": second}).json()
    assert [t["id"] for t in found["triples"]] == [two["id"]]


def test_adding_again_a_triple_that_starts_later_says_it_is_not_valid_yet(
    daemon: LiveDaemon,
) -> None:
    secret = developer(daemon)
    fact = {"subject": "Dara", "predicate": "chairs", "object": "Board"}
    added = api(daemon, secret, "POST", kg("/triples"), json={**fact, "valid_from": Y2100})
    assert added.status_code == 201, added.text
    ident = added.json()["triples"][0]["id"]
    # Added again from now: the later start stays, and the answer says it does
    again = api(daemon, secret, "POST", kg("/triples"), json=fact)
    assert again.status_code == 200, again.text
    assert again.json()["created"] is False
    assert [t["valid_from"] for t in again.json()["triples"]] == [Y2100]
    assert again.json()["message"] == (
        "not valid yet: valid from 2100-01-01T00:00:00.000Z; unchanged (to start it earlier, "
        "invalidate it, which withdraws it, then add it again)"
    )
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "add", "Dara", "chairs", "Board")
    assert (code, out) == (0, f"{again.json()['message']}\n  id: {ident}\n"), err
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "query", "--subject", "Dara", "--all")
    assert code == 0 and f"[{Y2100}..open]" in out, err
    # Withdrawn and added from a start already past: valid until now, and said so
    withdrawn = api(daemon, secret, "POST", kg(f"/triples/{ident}/invalidate"), json={})
    assert withdrawn.status_code == 200, withdrawn.text
    fixed = api(daemon, secret, "POST", kg("/triples"), json={**fact, "valid_from": T0})
    assert fixed.status_code == 201, fixed.text
    again = api(daemon, secret, "POST", kg("/triples"), json=fact)
    assert again.json()["message"] == "already valid; unchanged"
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "query", "--subject", "Dara")
    assert code == 0 and f"[{T0}..now]" in out, err


def test_a_new_period_never_overlaps_an_ended_one(daemon: LiveDaemon) -> None:
    """Through the API and memctl; MCP's `memory_kg` (mempal's arguments) adds from now."""
    secret = developer(daemon)
    body = {"subject": "Bea", "predicate": "chairs", "object": "Guild", "valid_from": T0}
    ident = api(daemon, secret, "POST", kg("/triples"), json=body).json()["triples"][0]["id"]
    api(daemon, secret, "POST", kg(f"/triples/{ident}/invalidate"), json={"at": T0 + 100})
    for start in (T0 - 50, T0 + 50, T0 + 99):
        refused = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": start})
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["detail"] == {"field": "valid_from", "triple_id": ident, "valid_to": T0 + 100}
        assert f"valid until {T0 + 100}" in error["message"]
    code, _out, err = memctl(
        daemon, secret, "-w", TEAM, "kg", "add", "Bea", "chairs", "Guild", "--valid-from", str(T0)
    )
    assert code == 1 and f"valid until {T0 + 100}" in err
    timeline = api(daemon, secret, "GET", kg("/timeline"), params={"entity": "Bea"}).json()
    assert [(t["valid_from"], t["valid_to"]) for t in timeline["triples"]] == [(T0, T0 + 100)]
    # Right at the end is no overlap (a period ends before its end instant).
    reopened = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": T0 + 100})
    assert reopened.status_code == 201, reopened.text


def test_an_overlap_with_a_hidden_period_is_refused_without_its_end(daemon: LiveDaemon) -> None:
    body = {"subject": "Cato", "predicate": "guards", "object": "Vault", "valid_from": T0}
    with daemon.http(daemon.admin_token) as http:
        note = {"content": "Cato guards the vault at night", "room": "ops", "readers": ["ops"]}
        ingested = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json=note)
        drawer = ingested.json()["sources"][0]["drawer_ids"][0]
        added = http.post(kg("/triples"), json={**body, "source_drawer": drawer})
        ident = added.json()["triples"][0]["id"]
        http.post(kg(f"/triples/{ident}/invalidate"), json={"at": T0 + 500})
    secret = developer(daemon)  # cannot read the cited drawer, nor so the period
    refused = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": T0 + 7})
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    # Nothing of the hidden period: not its end, nor that it is hidden, nor how many.
    assert error["detail"] == {"field": "valid_from", "triple_id": ident}
    assert str(T0 + 500) not in refused.text and "read" not in error["message"]
    other = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": T0 + 400})
    assert other.json()["error"] == error  # the same refusal whatever the start
    later = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": T0 + 500})
    assert later.status_code == 201, later.text


def test_writing_needs_write_recall(daemon: LiveDaemon) -> None:
    body = {"subject": "A", "predicate": "b", "object": "C"}
    refused = api(daemon, outsider(daemon), "POST", kg("/triples"), json=body)
    assert refused.status_code == 403
    assert refused.json()["error"]["detail"]["required_scope"] == "write:recall"
    bad = api(daemon, developer(daemon), "POST", kg("/triples"), json={"subject": "A"})
    assert bad.status_code == 422 and bad.json()["error"]["detail"]["field"] == "predicate"


def test_a_triple_citing_a_hidden_drawer_is_hidden_with_it(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        note = {"content": "Quinn leads the ops rotation", "room": "ops", "readers": ["ops"]}
        ingested = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json=note)
        drawer = ingested.json()["sources"][0]["drawer_ids"][0]
        body = {"subject": "Quinn", "predicate": "leads", "object": "Rotation"}
        added = http.post(kg("/triples"), json={**body, "source_drawer": drawer})
        assert added.status_code == 201, added.text
        seen = http.get(kg("/triples"), params={"subject": "Quinn"}).json()["triples"]
    assert [t["source_drawer"] for t in seen] == [drawer]
    secret = developer(daemon)
    assert (
        api(daemon, secret, "GET", kg("/triples"), params={"subject": "Quinn"}).json()["triples"]
        == []
    )
    # Adding the hidden triple again: it holds (and binds), nothing of its period is shown.
    again = api(daemon, secret, "POST", kg("/triples"), json=body)
    assert again.status_code == 200, again.text
    assert again.json()["created"] is False and again.json()["triples"] == []
    assert again.json()["message"] == "already recorded, in a period you cannot read; unchanged"
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "add", "Quinn", "leads", "Rotation")
    assert (code, out, err) == (0, "already recorded, in a period you cannot read; unchanged\n", "")
    cite = {"subject": "Quinn", "predicate": "likes", "object": "Tea", "source_drawer": drawer}
    refused = api(daemon, secret, "POST", kg("/triples"), json=cite)
    assert refused.status_code == 404 and refused.json()["error"]["detail"]["field"] == (
        "source_drawer"
    )
    # One that starts later: whether it has started is not said either.
    later = {"subject": "Quinn", "predicate": "joins", "object": "Oncall"}
    future = int(time.time()) + 86_400
    with daemon.http(daemon.admin_token) as http:
        added = http.post(
            kg("/triples"), json={**later, "source_drawer": drawer, "valid_from": future}
        )
        assert added.status_code == 201, added.text
    again = api(daemon, secret, "POST", kg("/triples"), json=later)
    assert again.status_code == 200 and again.json()["triples"] == []
    assert again.json()["message"] == "already recorded, in a period you cannot read; unchanged"


# --------------------------------------------------------------------------- derived triples


def test_declared_relations_are_derived_triples_that_cannot_be_invalidated(
    daemon: LiveDaemon,
) -> None:
    secret = developer(daemon)
    answer = api(daemon, secret, "GET", kg("/triples"), params={"subject": NATS})
    edges = {(t["predicate"], t["object"]): t for t in answer.json()["triples"]}
    supersedes = edges[("supersedes", "decision:queue.redis_streams")]
    assert supersedes["derived"] and supersedes["source_declaration"] == NATS
    assert edges[("about", "Service.Tidewater")]["derived"]
    refused = api(daemon, secret, "POST", kg(f"/triples/{supersedes['id']}/invalidate"), json={})
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert "memctl propose --supersedes " + NATS in error["message"]
    assert error["detail"]["declaration_id"] == NATS
    code, _out, err = memctl(daemon, secret, "-w", TEAM, "kg", "invalidate", supersedes["id"])
    assert code == 1 and "propose" in err
    still = api(daemon, secret, "GET", kg("/triples"), params={"subject": NATS}).json()
    assert supersedes["id"] in [t["id"] for t in still["triples"]]


@pytest.mark.anyio
async def test_mcp_says_to_propose_instead_of_invalidating_a_derived_triple(
    daemon: LiveDaemon,
) -> None:
    secret = developer(daemon)
    query = await call(daemon, secret, "memory_kg", {"action": "query", "subject": NATS})
    derived = next(t for t in query["triples"] if t["predicate"] == "supersedes")
    answer = await call(
        daemon, secret, "memory_kg", {"action": "invalidate", "triple_id": derived["id"]}
    )
    assert answer["invalidated"] is False and answer["declaration_id"] == NATS
    assert "propose" in answer["action"] and answer["triples"] == []


def test_a_declaration_hidden_from_the_caller_yields_no_derived_triple(
    daemon: LiveDaemon,
) -> None:
    def rule_edges(secret: str) -> list[dict[str, Any]]:
        answer = api(daemon, secret, "GET", kg("/timeline"), params={"entity": FORCE_RULE})
        assert answer.status_code == 200, answer.text
        return answer.json()["triples"]

    assert [t["predicate"] for t in rule_edges(developer(daemon))] == ["about"]
    assert rule_edges(outsider(daemon)) == []
    tidewater = api(
        daemon, outsider(daemon), "GET", kg("/timeline"), params={"entity": "Service.Tidewater"}
    ).json()
    assert FORCE_RULE not in json.dumps(tidewater)


def test_derived_triples_follow_edits_and_deletions_of_mem_files(daemon: LiveDaemon) -> None:
    secret = developer(daemon)
    path = Path(daemon.workspaces[TEAM]) / "graph_probe.mem"
    subject = "decision:probe.one"

    def objects() -> set[str]:
        answer = api(daemon, secret, "GET", kg("/triples"), params={"subject": subject})
        return {t["object"] for t in answer.json()["triples"] if t["predicate"] == "depends_on"}

    def source(target: str) -> str:
        return (
            "module teamcode.probe\n\ndecision probe.one {\n"
            f'  decision: "Probe the graph."\n  depends_on: {target}\n}}\n'
        )

    path.write_text(source("infra.first"))
    wait_for(lambda: objects() == {"infra.first"})
    path.write_text(source("infra.second"))
    wait_for(lambda: objects() == {"infra.second"})
    path.unlink()
    wait_for(lambda: objects() == set())
    stats = api(daemon, secret, "GET", kg("/stats")).json()["stats"]
    assert stats["derived"] > 0 and stats["total"] == stats["stored"] + stats["derived"]


# --------------------------------------------------------------------------- tunnels


def test_tunnels_name_only_workspaces_the_caller_has_a_grant_for(daemon: LiveDaemon) -> None:
    two = token(daemon, "graph-two", "read:summary,read:search", workspaces=[TEAM, WRITING])
    one = token(daemon, "graph-one", "read:summary,read:search", workspaces=[WRITING])

    def tunnels(secret: str) -> dict[str, Any]:
        answer = api(daemon, secret, "GET", "/v1/tunnels")
        assert answer.status_code == 200, answer.text
        return {t["room"]: t for t in answer.json()["tunnels"]}

    every = tunnels(daemon.admin_token)
    assert every["ledger"]["wings"] == [ASSISTANT, TEAM, WRITING]
    assert every["shared.notes"]["kinds"] == {ASSISTANT: ["module"], WRITING: ["module"]}
    assert every["Person.Ines"]["kinds"][TEAM] == ["entity"]
    assert "default" not in every
    seen_by_two = tunnels(two)
    assert seen_by_two["ledger"]["wings"] == [TEAM, WRITING]
    assert seen_by_two["Person.Ines"]["wings"] == [TEAM, WRITING]
    assert "shared.notes" not in seen_by_two
    assert ASSISTANT not in json.dumps(seen_by_two)
    assert tunnels(one) == {}
    code, out, err = memctl(daemon, two, "tunnels")
    assert code == 0, err
    assert "room 'ledger' <-> workspaces: team-coding, writing" in out
    assert ASSISTANT not in out


def test_search_hints_agree_with_the_tunnels(daemon: LiveDaemon) -> None:
    two = token(daemon, "graph-two", "read:summary,read:search", workspaces=[TEAM, WRITING])
    with daemon.http(two) as http:
        answer = http.post("/v1/recall/search", json={"query": "ledger drifts cent conversion"})
    hits = {h["workspace"]: h for h in answer.json()["hits"] if h["room"] == "ledger"}
    assert hits[TEAM]["tunnel_hints"] == [WRITING]
    assert hits[WRITING]["tunnel_hints"] == [TEAM]
    # A recall room named like an entity of another workspace is the same room there.
    with daemon.http(daemon.admin_token) as http:
        note = {"content": "Ines signed off the harbour essay", "room": "Person.Ines"}
        assert http.post(f"/v1/workspaces/{WRITING}/recall/ingest", json=note).status_code == 201
    with daemon.http(two) as http:
        answer = http.post("/v1/recall/search", json={"query": "Ines signed harbour essay"})
    (hit,) = [h for h in answer.json()["hits"] if h["room"] == "Person.Ines"]
    assert hit["workspace"] == WRITING and hit["tunnel_hints"] == [TEAM]
    tunnel = next(t for t in api(daemon, two, "GET", "/v1/tunnels").json()["tunnels"]
                  if t["room"] == "Person.Ines")  # fmt: skip
    assert tunnel["kinds"] == {TEAM: ["entity"], WRITING: ["recall", "entity"]}


# --------------------------------------------------------------------------- one answer, three doors


@pytest.mark.anyio
async def test_api_mcp_and_memctl_give_the_same_graph_answers(daemon: LiveDaemon) -> None:
    secret = developer(daemon)
    api_query = api(daemon, secret, "GET", kg("/triples"), params={"subject": NATS}).json()
    mcp_query = await call(daemon, secret, "memory_kg", {"action": "query", "subject": NATS})
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "query", "--subject", NATS, "--json")
    assert code == 0, err
    assert api_query["triples"] == mcp_query["triples"] == json.loads(out)["triples"]
    assert len(api_query["triples"]) >= 2

    api_stats = api(daemon, secret, "GET", kg("/stats")).json()["stats"]
    mcp_stats = (await call(daemon, secret, "memory_kg", {"action": "stats"}))["stats"]
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "stats", "--json")
    assert api_stats == mcp_stats == json.loads(out)["stats"]

    entity = "Service.Tidewater"
    api_line = api(daemon, secret, "GET", kg("/timeline"), params={"entity": entity}).json()
    mcp_line = await call(daemon, secret, "memory_kg", {"action": "timeline", "subject": entity})
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "timeline", entity, "--json")
    assert api_line["triples"] == mcp_line["triples"] == json.loads(out)["triples"]

    two = token(daemon, "graph-two", "read:summary,read:search", workspaces=[TEAM, WRITING])
    api_tunnels = api(daemon, two, "GET", "/v1/tunnels").json()
    mcp_tunnels = await call(daemon, two, "memory_tunnels", {})
    code, out, err = memctl(daemon, two, "tunnels", "--json")
    assert api_tunnels == mcp_tunnels == json.loads(out)


@pytest.mark.anyio
async def test_a_query_says_when_it_is_cut_and_where_the_next_page_starts(
    daemon: LiveDaemon,
) -> None:
    # Given five triples about one subject
    with daemon.http(daemon.admin_token) as http:
        for n in range(5):
            body = {"subject": "Pager", "predicate": "rings", "object": f"Desk{n}"}
            assert http.post(kg("/triples"), json=body).status_code == 201
    admin, secret = daemon.admin_token, developer(daemon)
    whole = api(daemon, admin, "GET", kg("/triples"), params={"subject": "Pager"}).json()
    assert len(whole["triples"]) == 5 and whole["action"] == "query"
    assert (whole["truncated"], whole["next_offset"], whole["offset"]) == (False, None, 0)
    # When the API is asked two at a time, by a caller who reads everything or not
    for caller in (admin, secret):
        pages, start = [], 0
        while start is not None:
            params = {"subject": "Pager", "limit": 2, "offset": start}
            page = api(daemon, caller, "GET", kg("/triples"), params=params).json()
            pages.append((page["truncated"], page["next_offset"], page["triples"]))
            start = page["next_offset"]
        # Then each page says whether there is more and where it starts, and together
        # they are the whole answer
        assert [(cut, following) for cut, following, _ in pages] == [
            (True, 2),
            (True, 4),
            (False, None),
        ]
        assert [t for *_, triples in pages for t in triples] == whole["triples"]
    # And MCP and memctl page alike
    args = {"action": "query", "subject": "Pager", "limit": 2, "offset": 2}
    mcp_page = await call(daemon, secret, "memory_kg", args)
    assert mcp_page["triples"] == whole["triples"][2:4]
    assert (mcp_page["truncated"], mcp_page["next_offset"]) == (True, 4)
    argv = ["-w", TEAM, "kg", "query", "--subject", "Pager", "--limit", "2"]
    code, out, err = memctl(daemon, secret, *argv, "--offset", "4", "--json")
    assert code == 0, err
    assert json.loads(out)["triples"] == whole["triples"][4:]
    assert json.loads(out)["truncated"] is False
    code, out, err = memctl(daemon, secret, *argv)
    assert code == 0, err
    assert out.splitlines()[-2:] == ["2 triple(s)", "more: --offset 2"]
    # An offset out of range is refused at every door, naming it
    far = {"subject": "Pager", "offset": 10_001}
    refused = api(daemon, secret, "GET", kg("/triples"), params=far)
    assert refused.status_code == 422 and refused.json()["error"]["detail"]["field"] == "offset"
    async with mcp_client(daemon, secret) as client:
        result = await client.call_tool("memory_kg", {"action": "query", "offset": -1})
    assert result.is_error and "offset" in result.content[0].text


@pytest.mark.anyio
async def test_memctl_and_mcp_add_and_invalidate(daemon: LiveDaemon) -> None:
    secret = developer(daemon)
    code, out, err = memctl(daemon, secret, "-w", TEAM, "kg", "add", "Omar", "manages", "Pia")
    assert code == 0, err
    assert out.startswith("added: (Omar) --[manages]--> (Pia)")
    ident = out.split("id: ")[1].strip()
    again = await call(
        daemon,
        secret,
        "memory_kg",
        {"action": "add", "subject": "Omar", "predicate": "manages", "object": "Pia"},
    )
    assert again["created"] is False and again["triples"][0]["id"] == ident
    done = await call(daemon, secret, "memory_kg", {"action": "invalidate", "triple_id": ident})
    assert done["action"] == "invalidate" and done["triples"][0]["valid_to"] is not None
    missing = await call(daemon, secret, "memory_kg", {"action": "invalidate", "triple_id": ident})
    assert missing["action"] == f"triple {ident} not found or already invalidated"
    assert missing["schema_version"] == done["schema_version"] == "memhub.kg.v1"


def test_times_out_of_range_or_malformed_are_clear_errors(daemon: LiveDaemon) -> None:
    secret = developer(daemon)
    body = {"subject": "A", "predicate": "b", "object": "C"}
    for value in ("9" * 30, "9" * 5000, "²", "tomorrow"):
        added = api(daemon, secret, "POST", kg("/triples"), json={**body, "valid_from": value})
        assert added.status_code == 422, added.text
        assert added.json()["error"]["detail"]["field"] == "valid_from"
    asked = api(daemon, secret, "GET", kg("/triples"), params={"as_of": "9" * 40})
    assert asked.status_code == 422 and asked.json()["error"]["detail"]["field"] == "as_of"
    # One instant or every period: asking both is refused, never one of them silently.
    both = api(daemon, secret, "GET", kg("/triples"), params={"as_of": "2025-01-01", "all": "1"})
    assert both.status_code == 422 and both.json()["error"]["detail"]["field"] == "as_of"
    code, _, err = memctl(daemon, secret, "kg", "query", "-w", TEAM, "--as-of", "1", "--all")
    assert code == 2 and "not allowed with" in err
    nothing = api(daemon, secret, "GET", kg("/timeline"))
    assert nothing.status_code == 422 and nothing.json()["error"]["detail"]["field"] == "entity"
    unknown = api(daemon, secret, "POST", kg("/triples"), json={**body, "colour": "red"})
    assert unknown.status_code == 422 and unknown.json()["error"]["detail"]["field"] == "colour"


@pytest.mark.anyio
async def test_mcp_says_when_wing_and_workspace_differ_at_every_recall_tool(
    daemon: LiveDaemon,
) -> None:
    two = token(daemon, "graph-two", "read:summary,read:search", workspaces=[TEAM, WRITING])
    both = {"wing": TEAM, "workspace": WRITING}
    calls = {
        "memory_kg": {"action": "stats", **both},
        "memory_fact_check": {"text": "Ines leads the guild", **both},
        "memory_wake_up": both,
        "memory_recall_status": both,
        "memory_search": {"query": "ledger", **both},
    }
    async with mcp_client(daemon, two) as client:
        for tool, args in calls.items():
            result = await client.call_tool(tool, args)
            assert result.is_error, (tool, result.content[0].text)
            assert "'wing' and 'workspace' name different workspaces" in result.content[0].text, (
                tool,
                result.content[0].text,
            )


@pytest.mark.anyio
async def test_fact_check_in_a_room_uses_the_callers_only_workspace(daemon: LiveDaemon) -> None:
    # Given a caller granted one workspace
    secret = developer(daemon)
    text = "Ines leads the ledger guild."
    # When it checks a draft in a room without naming the workspace
    answer = await call(daemon, secret, "memory_fact_check", {"text": text, "room": "ledger"})
    # Then the room is its workspace's, as the API answers for that workspace
    assert (answer["workspace"], answer["room"]) == (TEAM, "ledger")
    path = f"/v1/workspaces/{TEAM}/fact-check"
    body = {"text": text, "room": "ledger", "now": answer["now"]}
    assert api(daemon, secret, "POST", path, json=body).json() == answer


@pytest.mark.anyio
async def test_fact_check_in_a_room_names_the_workspace_argument_to_a_caller_with_several(
    daemon: LiveDaemon,
) -> None:
    two = token(daemon, "graph-two", "read:summary,read:search", workspaces=[TEAM, WRITING])
    async with mcp_client(daemon, two) as client:
        result = await client.call_tool(
            "memory_fact_check", {"text": "Ines leads the guild", "room": "ledger"}
        )
    said = result.content[0].text
    assert result.is_error and "'workspace' argument is required" in said, said
    assert f"Workspaces you may use: {TEAM}, {WRITING}" in said or (
        f"Workspaces you may use: {WRITING}, {TEAM}" in said
    ), said
