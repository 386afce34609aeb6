"""Fact-check through a real daemon: one fixture per kind of issue (a name close to a known
entity, a relation contradicting a valid triple, a fact whose validity ended, a MUST rule
the text would break, and one such rule hidden from the caller: still reported, its id
and text withheld), each citing its triple, drawer or declaration; the same answer
through the JSON API, MCP and memctl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
T0 = 1_700_000_000
NOW = T0 + 1000
FORCE_RULE = "teamcode.project_rule:git.no_force_push_main"
FORCE_TEXT = "Tonight I will git push --force to main."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("factcheck")
    workspaces = copy_examples(root / "ws", [TEAM])
    with start_daemon(root, workspaces) as live:
        with live.http(live.admin_token, timeout=60) as http:
            ingested = http.post(
                f"/v1/workspaces/{TEAM}/recall/ingest",
                json={"content": "Marguerite reviewed the ledger rounding.", "room": "ledger"},
            )
            assert ingested.status_code == 201, ingested.text
            drawer = ingested.json()["sources"][0]["drawer_ids"][0]

            def add(s: str, p: str, o: str, **extra: Any) -> str:
                body = {"subject": s, "predicate": p, "object": o, "valid_from": T0, **extra}
                answer = http.post(f"/v1/workspaces/{TEAM}/kg/triples", json=body)
                assert answer.status_code == 201, answer.text
                return str(answer.json()["triples"][0]["id"])

            husband = add("Bob", "husband_of", "Alice", source_drawer=drawer)
            globex = add("Carol", "works_at", "Globex")
            ended = http.post(
                f"/v1/workspaces/{TEAM}/kg/triples/{globex}/invalidate", json={"at": T0 + 10}
            )
            assert ended.status_code == 200, ended.text
        yield {"live": live, "drawer": drawer, "husband": husband, "globex": globex}


def developer(live: LiveDaemon) -> str:
    return live.tokens.get("fc-dev") or live.add_token(
        "fc-dev", "read:summary,read:search", workspaces=[TEAM], roles=["developer"]
    )


def outsider(live: LiveDaemon) -> str:
    return live.tokens.get("fc-out") or live.add_token(
        "fc-out", "read:summary,read:search", workspaces=[TEAM]
    )


def check_api(live: LiveDaemon, secret: str, text: str, **extra: Any) -> dict[str, Any]:
    with live.http(secret) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/fact-check", json={"text": text, "now": NOW, **extra}
        )
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def kinds(answer: dict[str, Any]) -> list[str]:
    return [issue["kind"] for issue in answer["issues"]]


def test_a_name_close_to_a_known_entity_cites_where_it_is_known(daemon: dict[str, Any]) -> None:
    live = daemon["live"]
    answer = check_api(live, developer(live), "Bobby asked Margarite and Inez about it.")
    conflicts = {i["mentioned"]: i for i in answer["issues"]}
    assert kinds(answer) == ["similar_name_conflict"] * 3
    assert conflicts["Bobby"]["known_entity"] == "Bob"
    assert conflicts["Bobby"]["source"]["triple_id"] == daemon["husband"]
    assert conflicts["Margarite"]["known_entity"] == "Marguerite"
    assert conflicts["Margarite"]["source"] == {"source_drawer": daemon["drawer"]}
    assert conflicts["Inez"]["known_entity"] == "Ines"
    assert conflicts["Inez"]["source"] == {"source_declaration": "entity:Person.Ines"}
    assert answer["checked_entities"] == ["Bobby", "Margarite", "Inez"]


def test_a_relation_contradicting_a_valid_triple_cites_the_triple(daemon: dict[str, Any]) -> None:
    live = daemon["live"]
    answer = check_api(live, developer(live), "Bob is Alice's brother.")
    (issue,) = answer["issues"]
    assert issue["kind"] == "relation_contradiction"
    assert issue["triple_id"] == daemon["husband"] and issue["source_drawer"] == daemon["drawer"]
    assert "husband_of" in issue["kg_fact"] and "brother_of" in issue["text_claim"]
    # Before the triple was valid there is nothing to contradict.
    assert check_api(live, developer(live), "Bob is Alice's brother.", now=T0 - 1)["issues"] == []


def test_a_fact_past_its_valid_to_is_stale(daemon: dict[str, Any]) -> None:
    live = daemon["live"]
    answer = check_api(live, developer(live), "Carol works at Globex.")
    (issue,) = answer["issues"]
    assert issue["kind"] == "stale_fact" and issue["triple_id"] == daemon["globex"]
    assert issue["valid_to"] == T0 + 10
    assert check_api(live, developer(live), "Carol works at Globex.", now=T0 + 5)["issues"] == []


def test_a_must_rule_the_text_breaks_is_reported_with_its_declaration(
    daemon: dict[str, Any],
) -> None:
    live = daemon["live"]
    answer = check_api(live, developer(live), "Notes for today. " + FORCE_TEXT)
    (issue,) = [i for i in answer["issues"] if i["kind"] == "must_rule_violation"]
    assert issue["declaration_id"] == FORCE_RULE and not issue["withheld"]
    assert issue["claims"] == [FORCE_TEXT] and "--force" in issue["matched"]
    assert issue["file"].endswith("rules.mem") and issue["line"] > 0
    assert answer["must_gate"]["verdict"] == "block"
    clean = check_api(live, developer(live), "Tonight I will open a pull request for main.")
    assert "must_rule_violation" not in kinds(clean)


def test_a_must_rule_hidden_from_the_caller_still_binds_but_is_withheld(
    daemon: dict[str, Any],
) -> None:
    live = daemon["live"]
    answer = check_api(live, outsider(live), FORCE_TEXT)
    (issue,) = [i for i in answer["issues"] if i["kind"] == "must_rule_violation"]
    assert issue["withheld"] and issue["count"] == 1 and issue["declaration_id"] is None
    assert "cannot read" in issue["message"]
    assert answer["must_gate"]["verdict"] == "block"
    body = json.dumps(answer)
    assert FORCE_RULE not in body and "git.no_force_push_main" not in body
    assert "Never force-push" not in body and "rules.mem" not in body


def test_bad_input_is_a_clear_error(daemon: dict[str, Any]) -> None:
    live = daemon["live"]
    with live.http(developer(live)) as http:
        empty = http.post(f"/v1/workspaces/{TEAM}/fact-check", json={"text": "  "})
        when = http.post(f"/v1/workspaces/{TEAM}/fact-check", json={"text": "x", "now": "soon"})
        extra = http.post(f"/v1/workspaces/{TEAM}/fact-check", json={"text": "x", "wing": "w"})
    assert [r.status_code for r in (empty, when, extra)] == [422, 422, 422]
    assert when.json()["error"]["detail"]["field"] == "now"


@pytest.mark.anyio
async def test_api_mcp_and_memctl_give_the_same_fact_check(daemon: dict[str, Any]) -> None:
    live = daemon["live"]
    secret = developer(live)
    text = "Bobby says Bob is Alice's brother and Carol works at Globex. " + FORCE_TEXT
    api_answer = check_api(live, secret, text)
    assert kinds(api_answer) == [
        "similar_name_conflict",
        "relation_contradiction",
        "stale_fact",
        "must_rule_violation",
    ]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as c:
        result = await c.call_tool("memory_fact_check", {"text": text, "now": str(NOW)})
    assert not result.is_error, result.content[0].text
    mcp_answer = json.loads(result.content[0].text)
    run = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", live.url, "--token", secret, "-w", TEAM]
        + ["fact-check", "-", "--now", str(NOW), "--json"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert run.returncode == 0, run.stderr
    assert api_answer == mcp_answer == json.loads(run.stdout)
    human = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", live.url, "--token", secret, "-w", TEAM]
        + ["fact-check", "--now", str(NOW)],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert human.returncode == 0  # issues are findings, not failures
    assert f"MUST rule [{FORCE_RULE}]" in human.stdout and "4 issue(s)" in human.stdout
