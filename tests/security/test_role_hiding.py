"""Role hiding: `access_policy.readers` hides content, never the obligation.

A token without roles (what the docs suggest creating for an agent) and a token with
other roles probe every door of a real daemon for declarations they may not read:
the compliance verdict, supersession, declaration counts, lint, parse errors, query
traces, server-sent events, MCP tools and proposal validation. Nothing they receive
may name, quote or count a hidden declaration in a way that depends on its content,
and a hidden rule still blocks them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import LiveDaemon, start_daemon

WS = "acl"

RULES = """module acl.rules

boundary deploy.freeze {
  scope: global
  claim: "Never deploy during the zebra freeze."
  guard { deny_any: ["deploy now"] }
  evidence { source: "ops.md" quote: "Nobody deploys in the freeze." }
  access_policy { readers: [ops] }
}

boundary refunds.manager {
  scope: component("billing")
  claim: "Refunds above the quota need a manager."
  evidence { source: "support.md" quote: "Managers sign big refunds." }
  access_policy { readers: [ops] }
}

boundary merges.review {
  scope: global
  claim: "Every merge needs one approving review."
  guard { when_any: [merge] deny_any: ["merge without review"] }
  evidence { source: "handbook.md" quote: "Two eyes on every change." }
}
"""

FACTS = """module acl.facts

entity Project.Public { aliases: ["the launch"] }
entity Project.Zebra {
  aliases: ["the launch"]
  access_policy { readers: [ops] }
}

fact pricing.old {
  claim: "The starter plan costs 10 euros a month."
  evidence { source: "pricing.md" quote: "10 euros" }
}
fact pricing.new {
  claim: "The starter plan costs 12 euros a month from the spring launch on."
  supersedes: "pricing.old"
  evidence { source: "pricing.md" quote: "12 euros" }
  access_policy { readers: [finance] }
}

fact backups.hidden_copy {
  claim: "Backups run nightly at two."
  evidence { source: "ops.md" quote: "nightly" }
  access_policy { readers: [ops] }
}
fact backups.visible_copy {
  claim: "Backups run nightly at two."
  evidence { source: "ops.md" quote: "nightly" }
}
"""

SECRET = """module acl.secret

fact launch.codes {
  claim: "The zebra launch code is 4417."
  evidence { source: "vault.md" quote: "4417" }
  access_policy { readers: [ops] }
}
"""
# The same file, saved half-edited: its parse error quotes the hidden claim's text.
SECRET_BROKEN = SECRET.replace('claim: "The zebra launch code is 4417."', "claim zebra-4417")

# Everything a caller without the `ops` role must never see (`pricing.new`, which only
# `finance` may read, is checked on its own).
HIDDEN_IDS = (
    "deploy.freeze",
    "refunds.manager",
    "Project.Zebra",
    "backups.hidden_copy",
    "launch.codes",
)
HIDDEN_WORDS = ("zebra", "4417")
TOTAL = 10  # declarations in the workspace
VISIBLE_TO_NOBODY = 4  # merges.review, Project.Public, pricing.old, backups.visible_copy
VISIBLE_TO_FINANCE = 5  # ... and pricing.new
READER_SCOPES = "read:summary,read:search,write:candidate"


def assert_no_leak(payload: Any) -> None:
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    lowered = text.lower()
    for word in (*HIDDEN_IDS, *HIDDEN_WORDS):
        assert word.lower() not in lowered, f"{word!r} leaked in {text[:2000]}"


def write_workspace(root: Path, secret: str = SECRET) -> Path:
    root.mkdir(parents=True)
    (root / "rules.mem").write_text(RULES, encoding="utf-8")
    (root / "facts.mem").write_text(FACTS, encoding="utf-8")
    (root / "secret.mem").write_text(secret, encoding="utf-8")
    return root


def wait_for(predicate: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def get(daemon: LiveDaemon, secret: str, path: str, **params: Any) -> Any:
    with daemon.http(secret) as http:
        response = http.get(path, params=params or None)
    assert response.status_code == 200, response.text
    return response.json()


def post(daemon: LiveDaemon, secret: str, path: str, body: dict[str, Any]) -> httpx2.Response:
    with daemon.http(secret) as http:
        return http.post(path, json=body)


def text(daemon: LiveDaemon, secret: str, path: str, body: dict[str, Any] | None = None) -> str:
    """A route's text rendering (`Accept: text/plain`)."""
    with daemon.http(secret) as http:
        headers = {"accept": "text/plain"}
        if body is None:
            response = http.get(path, headers=headers)
        else:
            response = http.post(path, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.text


def health(daemon: LiveDaemon) -> str:
    return str(get(daemon, daemon.admin_token, f"/v1/workspaces/{WS}")["health"])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """A daemon over the workspace above, whose secret file was then saved broken."""
    base = tmp_path_factory.mktemp("role-hiding")
    root = write_workspace(base / "ws" / WS)
    with start_daemon(base, {WS: str(root)}) as live:
        live.add_token("nobody", READER_SCOPES, workspaces=[WS])
        live.add_token("finance", READER_SCOPES, workspaces=[WS], roles=["finance"])
        live.add_token("ops", READER_SCOPES, workspaces=[WS], roles=["ops"])
        (root / "secret.mem").write_text(SECRET_BROKEN, encoding="utf-8")
        wait_for(lambda: health(live) == "degraded")
        yield live


@pytest.fixture(params=["nobody", "finance"])
def reader(request: pytest.FixtureRequest, daemon: LiveDaemon) -> str:
    """A token without roles, and one whose roles do not include `ops`."""
    return daemon.tokens[request.param]


# --- compliance: a hidden rule still binds ---------------------------------------------


def test_a_hidden_rule_blocks_a_caller_who_cannot_read_it(daemon, reader) -> None:
    answer = post(
        daemon, reader, f"/v1/workspaces/{WS}/check", {"task": "ship", "candidate": "deploy now"}
    )
    assert answer.status_code == 200, answer.text
    pack = answer.json()
    assert pack["verdict"] == "block"
    assert pack["violations"] == []
    assert pack["withheld"]["violations"] == 1
    assert "blocked by 1 rule you cannot read; ask a reviewer" in pack["withheld"]["message"]
    assert_no_leak(pack)


def test_a_hidden_rule_blocks_in_the_text_answer_too(daemon, reader) -> None:
    body = {"task": "ship", "candidate": "deploy now"}
    answer = text(daemon, reader, f"/v1/workspaces/{WS}/check", body)
    assert answer.startswith("VERDICT: BLOCK")
    assert "blocked by 1 rule you cannot read; ask a reviewer" in answer
    assert_no_leak(answer)


def test_an_unguarded_hidden_rule_makes_the_check_need_review(daemon, reader) -> None:
    body = {"task": "handle the refunds above quota", "candidate": "refund 500 euros"}
    pack = post(daemon, reader, f"/v1/workspaces/{WS}/check", body).json()
    assert pack["verdict"] == "needs_review"
    assert pack["unknowns"] == []
    assert pack["withheld"] == {
        "violations": 0,
        "unknowns": 1,
        "message": "1 rule you cannot read needs review; ask a reviewer",
    }
    assert_no_leak(pack)


def test_a_role_limited_token_is_blocked_by_the_example_force_push_rule(
    tmp_path: Path,
) -> None:
    from tests.integration.conftest import copy_examples

    workspaces = copy_examples(tmp_path / "ws", ["team-coding"])
    with start_daemon(tmp_path, workspaces) as live:
        secret = live.add_token("agent", "read:summary,read:search", workspaces=["team-coding"])
        body = {"task": "push to main", "candidate": "git push --force origin main"}
        pack = post(live, secret, "/v1/workspaces/team-coding/check", body).json()
    assert pack["verdict"] == "block"
    assert pack["withheld"]["violations"] == 1
    assert "no_force_push_main" not in json.dumps(pack)


def test_a_caller_who_sees_everything_gets_no_withheld_section(daemon) -> None:
    body = {"task": "ship", "candidate": "deploy now"}
    pack = post(daemon, daemon.admin_token, f"/v1/workspaces/{WS}/check", body).json()
    assert pack["verdict"] == "block"
    assert [v["id"] for v in pack["violations"]] == ["boundary:deploy.freeze"]
    assert "withheld" not in pack


# --- supersession is the whole workspace's ----------------------------------------------


def test_a_hidden_newer_declaration_keeps_the_older_one_superseded(daemon, reader) -> None:
    if reader == daemon.tokens["finance"]:
        pytest.skip("finance reads the newer declaration")
    body = {"query": "starter plan costs euros month"}
    pack = post(daemon, reader, f"/v1/workspaces/{WS}/query", body).json()
    items = [item for layer in ("must", "should", "context") for item in pack[layer]]
    assert not any("pricing" in json.dumps(item) for item in items), items
    listing = get(daemon, reader, f"/v1/workspaces/{WS}/map")
    assert "pricing.old" not in json.dumps(listing)
    explained = get(daemon, reader, f"/v1/workspaces/{WS}/declarations/fact:pricing.old")
    assert explained["declaration"]["superseded_by_hidden"] is True
    assert "superseded by a declaration you cannot read" in explained["rendered_text"]
    for answer in (pack, explained):
        assert_no_leak(answer)
        assert "pricing.new" not in json.dumps(answer)


# --- counts and load problems: status, workspaces, workspace ----------------------------


def _summaries(daemon: LiveDaemon, secret: str) -> list[dict[str, Any]]:
    status = get(daemon, secret, "/v1/status")["workspaces"]
    listed = get(daemon, secret, "/v1/workspaces")["workspaces"]
    one = get(daemon, secret, f"/v1/workspaces/{WS}")
    return [*status, *listed, one]


def test_status_counts_only_the_declarations_the_caller_may_read(daemon) -> None:
    expected = {"nobody": VISIBLE_TO_NOBODY, "finance": VISIBLE_TO_FINANCE, "admin": TOTAL}
    for name, count in expected.items():
        for summary in _summaries(daemon, daemon.tokens[name]):
            assert summary["declarations"] == count, (name, summary)


def test_status_never_quotes_a_parse_error_to_a_role_limited_caller(daemon, reader) -> None:
    for summary in _summaries(daemon, reader):
        assert summary["health"] == "degraded"
        problem = summary["problems"][0]
        assert problem["kind"] == "parse_error"
        assert problem["file"].endswith("secret.mem") and problem["line"] == 4
        assert_no_leak(summary)
    admin = get(daemon, daemon.admin_token, f"/v1/workspaces/{WS}")
    assert "zebra-4417" in admin["problems"][0]["message"]


def test_status_shows_lint_counts_over_what_the_caller_may_read(daemon, reader) -> None:
    admin = get(daemon, daemon.admin_token, f"/v1/workspaces/{WS}")
    admin_lint = get(daemon, daemon.admin_token, f"/v1/workspaces/{WS}/lint")
    assert (admin["lint_errors"], admin["lint_warnings"]) == (
        admin_lint["errors"],
        admin_lint["warnings"],
    )
    assert admin["lint_warnings"] > 0
    mine = get(daemon, reader, f"/v1/workspaces/{WS}")
    lint = get(daemon, reader, f"/v1/workspaces/{WS}/lint")
    assert (mine["lint_errors"], mine["lint_warnings"]) == (lint["errors"], lint["warnings"])
    assert mine["lint_warnings"] < admin["lint_warnings"]


# --- lint --------------------------------------------------------------------------------


def test_lint_names_no_hidden_declaration_and_quotes_no_hidden_source(daemon, reader) -> None:
    lint = get(daemon, reader, f"/v1/workspaces/{WS}/lint")
    codes = {d["code"] for d in lint["diagnostics"]}
    assert "ambiguous_alias" not in codes  # its other owner is hidden
    assert "duplicate_declaration" not in codes  # it duplicates a hidden declaration
    assert lint["declarations"] == len(
        get(daemon, reader, f"/v1/workspaces/{WS}/declarations", include_inactive="true")["items"]
    )
    assert lint["source_problems"][0]["kind"] == "parse_error"
    assert_no_leak(lint)
    assert_no_leak(text(daemon, reader, f"/v1/workspaces/{WS}/lint"))


def test_lint_for_the_full_reader_still_reports_everything(daemon) -> None:
    lint = get(daemon, daemon.admin_token, f"/v1/workspaces/{WS}/lint")
    codes = {d["code"] for d in lint["diagnostics"]}
    assert {"ambiguous_alias", "duplicate_declaration", "unmarked_supersede_status"} <= codes


# --- query traces ------------------------------------------------------------------------


def test_the_hidden_count_of_a_query_does_not_depend_on_its_words(daemon, reader) -> None:
    traces = [
        post(daemon, reader, f"/v1/workspaces/{WS}/query", {"query": words}).json()["search_trace"]
        for words in ("freeze launch code", "weather in spring", "backups nightly")
    ]
    hidden = {trace["hidden_by_access_policy"] for trace in traces}
    must = {trace["hidden_must_rules"] for trace in traces}
    assert len(hidden) == 1 and len(must) == 1, traces
    assert must == {2}  # deploy.freeze and refunds.manager bind this caller unread
    for trace in traces:
        assert_no_leak(trace)


def test_a_query_tells_a_role_limited_caller_to_run_check(daemon, reader) -> None:
    answer = text(daemon, reader, f"/v1/workspaces/{WS}/query", {"query": "merge review"})
    assert "2 MUST rules of this workspace are hidden from you" in answer
    assert "run check" in answer
    assert_no_leak(answer)


def test_query_traces_redact_source_problems(daemon, reader) -> None:
    pack = post(daemon, reader, f"/v1/workspaces/{WS}/query", {"query": "launch"}).json()
    problems = pack["search_trace"]["source_problems"]
    assert [p["kind"] for p in problems] == ["parse_error"]
    assert_no_leak(pack)


# --- proposal validation is no name-guessing oracle -------------------------------------


def _proposal_errors(daemon: LiveDaemon, secret: str, source: str) -> list[dict[str, Any]]:
    answer = post(daemon, secret, f"/v1/workspaces/{WS}/proposals", {"source": source})
    body = answer.json()
    if "error" in body:
        body = body["error"]["detail"]
    return [*body.get("errors", []), *body.get("warnings", [])]


def test_validation_answers_alike_for_a_hidden_and_a_missing_symbol(daemon) -> None:
    nobody = daemon.tokens["nobody"]
    template = (
        'fact notes.about_{n} {{ subject: {subject} claim: "Noted." '
        'evidence {{ source: "s" quote: "q" }} }}'
    )
    hidden = _proposal_errors(daemon, nobody, template.format(n=1, subject="Project.Zebra"))
    missing = _proposal_errors(daemon, nobody, template.format(n=2, subject="Project.Nothing"))
    assert [e["code"] for e in hidden] == [e["code"] for e in missing]
    assert [e["code"] for e in hidden] == ["unresolved_symbol"]


def test_a_hidden_id_is_refused_without_saying_where_or_what_it_is(daemon) -> None:
    nobody = daemon.tokens["nobody"]
    source = (
        'fact backups.hidden_copy { claim: "Mine." evidence { source: "s" quote: "q" } '
        "access_policy { readers: [ops] } }"
    )
    answer = post(daemon, nobody, f"/v1/workspaces/{WS}/proposals", {"source": source})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["detail"]["errors"][0]["code"] == "declaration_exists"
    text = json.dumps(error)
    assert "facts.mem" not in text and "nightly" not in text.lower()


def test_validation_reveals_no_hidden_duplicate(daemon) -> None:
    # Guessing a hidden rule's exact text must not earn a "duplicates ..." warning.
    nobody = daemon.tokens["nobody"]
    source = (
        'boundary deploy.guess { scope: global claim: "Never deploy during the zebra freeze." '
        'exceptions: [none] evidence { source: "ops.md" quote: "freeze" } }'
    )
    issues = _proposal_errors(daemon, nobody, source)
    assert "duplicate_declaration" not in {issue["code"] for issue in issues}
    assert "withheld" not in json.dumps(issues)


# --- server-sent events ------------------------------------------------------------------

HIDDEN_PROPOSAL = (
    'fact ops.rota { claim: "The ops rota changes weekly." '
    'evidence { source: "s" quote: "q" } access_policy { readers: [ops] } }'
)
VISIBLE_PROPOSAL = (
    'fact team.lunch { claim: "Lunch is at noon." evidence { source: "s" quote: "q" } }'
)


def test_events_count_and_redact_for_each_subscriber(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws" / WS)
    with start_daemon(tmp_path, {WS: str(root)}) as live:
        nobody = live.add_token("nobody", READER_SCOPES, workspaces=[WS])
        streams = {"nobody": _listen(live, nobody), "admin": _listen(live, live.admin_token)}
        time.sleep(0.5)
        (root / "secret.mem").write_text(SECRET_BROKEN, encoding="utf-8")
        for received, _done in streams.values():
            wait_for(lambda received=received: _event(received, "degraded"))
        (root / "secret.mem").write_text(SECRET, encoding="utf-8")
        for received, _done in streams.values():
            wait_for(lambda received=received: _event(received, "recovered"))
            wait_for(lambda received=received: len(_events(received, "reloaded")) >= 2)
        proposed = [
            post(live, live.admin_token, f"/v1/workspaces/{WS}/proposals", {"source": source})
            for source in (HIDDEN_PROPOSAL, VISIBLE_PROPOSAL)
        ]
        hidden_id, visible_id = (answer.json()["proposal_id"] for answer in proposed)
        admin_seen = streams["admin"][0]
        wait_for(lambda: len(_events(admin_seen, "proposal_created")) >= 2)
        wait_for(lambda: _event(streams["nobody"][0], "proposal_created"))
    nobody_events, admin_events = streams["nobody"][0], streams["admin"][0]
    created = [e["proposal_id"] for e in _events(nobody_events, "proposal_created")]
    assert created == [visible_id] and hidden_id != visible_id
    assert _event(admin_events, "degraded")["problems"][0]["message"].endswith("'zebra-4417'")
    assert _event(nobody_events, "degraded")["problems"][0]["kind"] == "parse_error"
    assert {e["declarations"] for e in _events(admin_events, "reloaded")} == {TOTAL}
    # The last reload is still served when it is delivered, so it can be recounted.
    assert _events(nobody_events, "reloaded")[-1]["declarations"] == VISIBLE_TO_NOBODY
    assert_no_leak([line for line in nobody_events if line.startswith("data: ")])
    # Frames are numbered per stream: a gap would count the events left out
    ids = [int(line[4:]) for line in list(nobody_events) if line.startswith("id: ")]
    assert ids == list(range(1, len(ids) + 1))


def _listen(daemon: LiveDaemon, secret: str) -> tuple[list[str], threading.Event]:
    received: list[str] = []
    done = threading.Event()

    def run() -> None:
        try:
            with (
                daemon.http(secret, timeout=30) as client,
                client.stream("GET", "/v1/events") as response,
            ):
                for line in response.iter_lines():
                    received.append(line)
        except Exception:  # the daemon stopping ends the stream
            pass
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return received, done


def _events(lines: list[str], name: str) -> list[dict[str, Any]]:
    data = [json.loads(line[6:]) for line in list(lines) if line.startswith("data: ")]
    return [event for event in data if event["event"] == name]


def _event(lines: list[str], name: str) -> dict[str, Any] | None:
    found = _events(lines, name)
    return found[0] if found else None


# --- MCP -----------------------------------------------------------------------------


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, secret: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {secret}"}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    async with (
        http,
        Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as client,
    ):
        yield client


async def _tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


@pytest.mark.anyio
async def test_mcp_status_lint_query_and_check_hide_what_the_caller_may_not_read(
    daemon,
) -> None:
    async with mcp_client(daemon, daemon.tokens["nobody"]) as client:
        status = await _tool(client, "memory_status", {})
        lint = await _tool(client, "memory_lint", {"workspace": WS})
        query = await _tool(client, "memory_query", {"workspace": WS, "query": "launch code"})
        check = await _tool(
            client, "memory_check", {"workspace": WS, "task": "ship", "candidate": "deploy now"}
        )
    (summary,) = status["workspaces"]
    assert summary["declarations"] == VISIBLE_TO_NOBODY
    assert summary["problems"][0]["kind"] == "parse_error"
    assert lint["source_problems"][0]["kind"] == "parse_error"
    assert query["evidence_pack"]["search_trace"]["hidden_must_rules"] == 2
    assert check["compliance_pack"]["verdict"] == "block"
    assert "blocked by 1 rule you cannot read" in check["rendered_text"]
    for payload in (status, lint, query, check):
        assert_no_leak(payload)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
