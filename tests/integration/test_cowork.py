"""Cowork through a real daemon: push and at-most-once drain between two tokens over the
JSON API, MCP and memctl, racing drains, budgets, refused pushes, messages surviving a
restart, and partner peek showing only what the peeker may see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memhubd.auth.tokens import TokenStore
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM, OTHER = "team-coding", "writing"
AGENT = "read:summary,read:search,write:recall,write:candidate"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork")
    with start_daemon(root, copy_examples(root / "ws", [TEAM, OTHER])) as live:
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str = AGENT, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def pair(daemon: LiveDaemon, prefix: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """Two fresh partners of TEAM: (name, secret) each; the first reads more roles."""
    first, second = f"{prefix}-a", f"{prefix}-b"
    roles_a = ["developer", "maintainer", "security"]
    return (
        (first, token(daemon, first, workspaces=[TEAM], roles=roles_a)),
        (second, token(daemon, second, workspaces=[TEAM], roles=["developer"])),
    )


def call(daemon: LiveDaemon, secret: str, method: str, route: str, **kwargs: Any) -> Any:
    with daemon.http(secret) as http:
        return http.request(method, f"/v1/workspaces/{TEAM}/cowork/{route}", **kwargs)


def push(daemon: LiveDaemon, secret: str, to: str, content: str) -> Any:
    return call(daemon, secret, "POST", "push", json={"to": to, "content": content})


def drain(daemon: LiveDaemon, secret: str) -> list[dict[str, Any]]:
    answer = call(daemon, secret, "POST", "drain")
    assert answer.status_code == 200, answer.text
    return answer.json()["messages"]  # type: ignore[no-any-return]


def memctl(
    url: str, secret: str | None, *argv: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["XDG_CONFIG_HOME"] = "/nonexistent"  # no client.toml of the machine's user
    options = ["--url", url] + (["--token", secret] if secret else [])
    return subprocess.run(
        [sys.executable, "-m", "memctl", *options, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        input=stdin,
    )


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, secret: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


# --------------------------------------------------------------------------- push and drain


def test_a_pushed_message_is_drained_once_by_its_recipient(daemon: LiveDaemon) -> None:
    (alice, a_secret), (bob, b_secret) = pair(daemon, "once")
    answer = push(daemon, a_secret, bob, "the migration lock is mine until 18:00")
    assert answer.status_code == 201, answer.text
    receipt = answer.json()
    assert receipt["from"] == alice and receipt["to"] == bob
    assert receipt["inbox_count_after"] == 1
    status = call(daemon, b_secret, "GET", "status").json()
    assert status["count"] == 1 and status["previews"][0]["from"] == alice
    assert call(daemon, a_secret, "GET", "status").json()["sent_undelivered"] == [
        {"to": bob, "count": 1}
    ]
    assert drain(daemon, a_secret) == []  # the sender's own inbox is another one
    first = drain(daemon, b_secret)
    assert [m["content"] for m in first] == ["the migration lock is mine until 18:00"]
    assert first[0]["from"] == alice
    assert drain(daemon, b_secret) == []
    assert call(daemon, b_secret, "GET", "status").json()["count"] == 0


@pytest.mark.anyio
async def test_mcp_push_reaches_memctl_drain_exactly_once(daemon: LiveDaemon) -> None:
    (alice, a_secret), (bob, b_secret) = pair(daemon, "mcp")
    async with mcp_client(daemon, a_secret) as client:
        # mempal's arguments as a mempal client sends them, `cwd` included
        result = await client.call_tool(
            "memory_cowork_push",
            {"content": "review PR 42 next", "target_tool": bob, "cwd": "/home/a/src/billing"},
        )
        refused = await client.call_tool(
            "memory_cowork_push", {"content": "hello me", "target_tool": alice}
        )
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text)["target_tool"] == bob
    assert refused.is_error and "yourself" in refused.content[0].text
    first = memctl(daemon.url, b_secret, "-w", TEAM, "cowork", "drain")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("[Partner inbox (1 message since last check)")
    assert f"from {alice} in {TEAM}: review PR 42 next" in first.stdout
    assert first.stdout.rstrip().endswith("[End partner inbox]")
    second = memctl(daemon.url, b_secret, "-w", TEAM, "cowork", "drain")
    assert second.returncode == 0 and second.stdout == ""


def test_memctl_push_status_and_hook_json_drain(daemon: LiveDaemon) -> None:
    (alice, a_secret), (bob, b_secret) = pair(daemon, "cli")
    pushed = memctl(
        daemon.url, a_secret, "-w", TEAM, "cowork", "push", "--to", bob, "-", stdin="x\n\x1b[31mred"
    )
    assert pushed.returncode == 0, pushed.stderr
    assert f"to {bob} in {TEAM}" in pushed.stdout
    status = memctl(daemon.url, b_secret, "-w", TEAM, "cowork", "status")
    assert status.returncode == 0 and "inbox: 1 message(s)" in status.stdout
    drained = memctl(daemon.url, b_secret, "cowork", "drain", "--format", "hook-json")
    assert drained.returncode == 0, drained.stderr
    context = json.loads(drained.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert "\x1b" not in context["additionalContext"]  # escape sequences never reach a prompt
    assert "x\n  [31mred" in context["additionalContext"]


def race_drains(daemon: LiveDaemon, secret: str, drainers: int = 8) -> list[str]:
    """Contents delivered to `drainers` threads draining at once, three times each."""
    start = threading.Barrier(drainers)
    got: list[str] = []
    lock = threading.Lock()

    def drainer() -> None:
        start.wait()
        for _ in range(3):
            messages = drain(daemon, secret)
            with lock:
                got.extend(m["content"] for m in messages)

    threads = [threading.Thread(target=drainer) for _ in range(drainers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return got


def test_racing_drains_deliver_every_message_exactly_once(daemon: LiveDaemon) -> None:
    (_alice, a_secret), (bob, b_secret) = pair(daemon, "race")
    for round_ in range(3):
        sent = [f"round {round_} message {i}" for i in range(16)]
        for content in sent:
            assert push(daemon, a_secret, bob, content).status_code == 201
        assert sorted(race_drains(daemon, b_secret)) == sorted(sent)  # once each, none twice


# --------------------------------------------------------------------------- refusals


def test_a_full_inbox_and_a_large_message_are_clear_errors(daemon: LiveDaemon) -> None:
    (_alice, a_secret), (bob, b_secret) = pair(daemon, "full")
    too_big = push(daemon, a_secret, bob, "x" * (8 * 1024 + 1))
    assert too_big.status_code == 413
    assert too_big.json()["error"]["detail"]["reason"] == "message_too_large"
    for _ in range(4):  # exactly the 32 KiB budget is accepted
        assert push(daemon, a_secret, bob, "y" * (8 * 1024)).status_code == 201
    full = push(daemon, a_secret, bob, "z")
    assert full.status_code == 409
    error = full.json()["error"]
    assert error["code"] == "conflict" and error["detail"]["reason"] == "inbox_full"
    assert error["detail"]["current_count"] == 4
    assert error["detail"]["current_bytes"] == 32 * 1024
    assert "do not retry" in error["message"]
    assert len(drain(daemon, b_secret)) == 4
    for i in range(16):
        assert push(daemon, a_secret, bob, f"n{i}").status_code == 201
    assert (
        push(daemon, a_secret, bob, "one too many").json()["error"]["detail"]["current_count"] == 16
    )


def test_self_push_and_empty_messages_are_refused(daemon: LiveDaemon) -> None:
    (alice, a_secret), (bob, _b) = pair(daemon, "self")
    answer = push(daemon, a_secret, alice, "note to self")
    assert answer.status_code == 422
    assert answer.json()["error"]["detail"]["reason"] == "self_push"
    assert push(daemon, a_secret, bob, "   ").status_code == 422


def test_a_push_to_an_identity_without_a_grant_is_refused_neutrally(daemon: LiveDaemon) -> None:
    (_alice, a_secret), _bob = pair(daemon, "grant")
    token(daemon, "elsewhere", workspaces=[OTHER])
    token(daemon, "no-summary", "read:search", workspaces=[TEAM])
    answers = [push(daemon, a_secret, to, "hi") for to in ("elsewhere", "nobody", "no-summary")]
    assert {a.status_code for a in answers} == {404}
    messages = [a.json()["error"]["message"] for a in answers]
    assert all("may receive messages" in m for m in messages)
    assert "no grant" not in " ".join(messages) and "no live token" not in " ".join(messages)
    # An admin may list tokens anyway: it hears why.
    admin = [push(daemon, daemon.admin_token, to, "hi") for to in ("elsewhere", "nobody")]
    assert "no grant for workspace" in admin[0].json()["error"]["message"]
    assert "no live token" in admin[1].json()["error"]["message"]


def test_scopes_and_grants_guard_every_cowork_route(daemon: LiveDaemon) -> None:
    reader = token(daemon, "reader-only", "read:summary", workspaces=[TEAM])
    outsider = token(daemon, "outsider", AGENT, workspaces=[OTHER])
    assert push(daemon, reader, "admin", "hi").status_code == 403
    assert call(daemon, reader, "GET", "peek/auto").status_code == 403
    assert call(daemon, reader, "POST", "drain").status_code == 200
    for method, route in (("POST", "drain"), ("GET", "status"), ("GET", "peek/auto")):
        assert call(daemon, outsider, method, route).status_code == 404  # as if unknown


def test_memctl_drain_exits_0_and_prints_nothing_when_it_cannot_deliver(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    down = memctl(f"unix://{tmp_path}/no.sock", None, "cowork", "drain")
    assert down.returncode == 0 and down.stdout == ""
    assert "cannot reach memhubd" in down.stderr
    refused = memctl("http://127.0.0.1:9", None, "cowork", "drain", "--format", "hook-json")
    assert refused.returncode == 0 and refused.stdout == ""
    bad = memctl(daemon.url, "mh_bad_token", "cowork", "drain")
    assert bad.returncode == 0 and bad.stdout == "" and "unauthorized" in bad.stderr


# --------------------------------------------------------------------------- restart


def test_undelivered_messages_survive_a_restart(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [TEAM])
    with start_daemon(tmp_path, workspaces) as first:
        sender = first.add_token("sender", AGENT, workspaces=[TEAM])
        receiver = first.add_token("receiver", AGENT, workspaces=[TEAM])
        assert push(first, sender, "receiver", "kept across restarts").status_code == 201
        assert push(first, sender, "receiver", "and in order").status_code == 201
    TokenStore(first.state_dir).revoke("admin")  # start_daemon mints a new one
    with start_daemon(tmp_path, workspaces) as second:
        contents = [m["content"] for m in drain(second, receiver)]
        assert contents == ["kept across restarts", "and in order"]
        assert drain(second, receiver) == []


# --------------------------------------------------------------------------- peek


PROPOSAL = """teamcode.bug_pattern payments.card_number_in_traces {
  subject: Service.Ledger
  scope: component("billing")
  claim: "Card numbers reach the tracing spans of the payment worker."
  fix: "Mask the card field before the span is opened."
  evidence {
    source: "incidents/2026-11-trace.md"
    quote: "The span attributes held the full card number."
  }
  access_policy {
    readers: [security]
    writers: [security]
    export: none
  }
}
"""


def test_peek_shows_a_partners_activity_only_as_the_peeker_may_see_it(daemon: LiveDaemon) -> None:
    (alice, a_secret), (bob, b_secret) = pair(daemon, "peek")
    with daemon.http(b_secret) as http:
        assert (
            http.post(f"/v1/workspaces/{TEAM}/query", json={"query": "ledger rounding"}).status_code
            == 200
        )
    with daemon.http(a_secret) as http:
        answer = http.post(f"/v1/workspaces/{TEAM}/query", json={"query": "payment sdk logs"})
        assert answer.status_code == 200
        proposed = http.post(f"/v1/workspaces/{TEAM}/proposals", json={"source": PROPOSAL})
        assert proposed.status_code == 201, proposed.text
        searched = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": "cent drift"})
        assert searched.status_code == 200
    assert push(daemon, a_secret, bob, "look at the trace masking").status_code == 201

    # Alice reads every role Bob has: she sees his query and its counts.
    seen_by_alice = call(daemon, a_secret, "GET", f"peek/{bob}").json()
    assert seen_by_alice["partner"] == bob and seen_by_alice["partner_active"] is True
    (query,) = seen_by_alice["entries"]
    assert query["kind"] == "query" and query["text"] == "ledger rounding"
    assert query["counts"] is not None and "must" in query["counts"]

    # Bob reads less than Alice: no counts, and not the id of a declaration only
    # security may read; the push to him names him.
    seen_by_bob = call(daemon, b_secret, "GET", f"peek/{alice}").json()
    kinds = [e["kind"] for e in seen_by_bob["entries"]]
    assert kinds == ["query", "propose", "search", "push"]
    assert all(e["counts"] is None for e in seen_by_bob["entries"])
    proposal = seen_by_bob["entries"][1]
    assert proposal["text"] is None
    assert "card_number" not in json.dumps(seen_by_bob)
    assert seen_by_bob["entries"][3]["to"] == bob
    assert "look at the trace" not in json.dumps(seen_by_bob)  # never message content
    # An admin sees the proposal's declaration id.
    admin = call(daemon, daemon.admin_token, "GET", f"peek/{alice}").json()
    assert admin["entries"][1]["text"] == "teamcode.bug_pattern:payments.card_number_in_traces"

    # auto: whoever else acted last; self-peek is refused; limit keeps the latest.
    assert call(daemon, b_secret, "GET", "peek/auto").json()["partner"] != bob
    assert call(daemon, a_secret, "GET", f"peek/{alice}").status_code == 422
    latest = call(daemon, b_secret, "GET", f"peek/{alice}", params={"limit": 1}).json()
    assert [e["kind"] for e in latest["entries"]] == ["push"] and latest["truncated"] is True
    # since: strictly newer than the time shown, so polling with the last `at` repeats none
    shown = seen_by_bob["entries"]
    for entry in shown:
        newer = call(daemon, b_secret, "GET", f"peek/{alice}", params={"since": entry["at"]})
        expected = [e["at"] for e in shown if e["at"] > entry["at"]]  # one format: text order
        assert [e["at"] for e in newer.json()["entries"]] == expected


def test_peek_never_crosses_into_a_workspace_without_a_grant(daemon: LiveDaemon) -> None:
    wide = token(daemon, "wide", AGENT, workspaces=[TEAM, OTHER])
    narrow = token(daemon, "narrow", AGENT, workspaces=[TEAM])
    with daemon.http(wide) as http:
        http.post(f"/v1/workspaces/{OTHER}/query", json={"query": "secret writing plans"})
    seen = call(daemon, narrow, "GET", "peek/wide").json()
    assert "secret writing plans" not in json.dumps(seen)
    with daemon.http(narrow) as http:
        assert http.get(f"/v1/workspaces/{OTHER}/cowork/peek/wide").status_code == 404


def test_a_refused_peek_names_the_routes_identity(daemon: LiveDaemon) -> None:
    # Given a partner name over 200 characters, and the caller's own name
    secret = token(daemon, "self-peeker")
    # When each is peeked at over the JSON API
    too_long = call(daemon, secret, "GET", "peek/" + "x" * 201)
    own = call(daemon, secret, "GET", "peek/self-peeker")
    # Then the refusal names the route's parameter, not the MCP tool's argument
    for answer in (too_long, own):
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["detail"]["field"] == "identity"
    assert "'identity' must be at most 200 characters" in too_long.json()["error"]["message"]


@pytest.mark.anyio
async def test_mcp_peek_partner_takes_mempals_arguments(daemon: LiveDaemon) -> None:
    (alice, a_secret), (bob, b_secret) = pair(daemon, "mcppeek")
    with daemon.http(a_secret) as http:
        http.post(f"/v1/workspaces/{TEAM}/query", json={"query": "release tagging"})
    async with mcp_client(daemon, b_secret) as client:
        result = await client.call_tool("memory_peek_partner", {"tool": alice, "limit": 5})
        tools = {tool.name for tool in (await client.list_tools()).tools}
    assert {"memory_cowork_push", "memory_peek_partner"} <= tools
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    assert data["partner_tool"] == alice
    assert [e["text"] for e in data["entries"]] == ["release tagging"]
