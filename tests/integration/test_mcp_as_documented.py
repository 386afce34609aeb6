"""MCP answers as docs/mcp-clients.md and docs/api.md describe them: a query whose
budget leaves MUST rules out still matched, every method but POST on /mcp is the
daemon's 405, a too-large answer names its workspace, and memhub's own tools name the
arguments a caller got wrong in one line, by the tool's names."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from memhubd.mcp import text
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.test_mcp import (
    TEAM,
    call,
    mcp_client,
    mcp_daemon_at,
    mcp_mounted,
    team_reader,
    token,
    tool_error,
)

pytestmark = pytest.mark.anyio

FORCE_PUSH = "force push main"  # a query whose answer holds MUST rules


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with mcp_daemon_at(tmp_path_factory.mktemp("mcp-documented")) as live:
        yield live


# --- a budget that leaves MUST rules out ----------------------------------------------


@pytest.mark.parametrize("budget", [{"max_must": 0}, {"max_bytes": 300}])
async def test_a_budget_that_leaves_every_must_rule_out_still_answers_ok(daemon, budget) -> None:
    arguments = {"query": FORCE_PUSH, "workspace": TEAM, **budget}
    async with mcp_client(daemon, team_reader(daemon)) as client:
        whole = await call(client, "memory_query", {"query": FORCE_PUSH, "workspace": TEAM})
        cut = await call(client, "memory_query", arguments)
    with daemon.http(team_reader(daemon)) as http:
        api = http.post(f"/v1/workspaces/{TEAM}/query", json={"query": FORCE_PUSH, **budget})
    assert api.status_code == 200, api.text

    pack = cut["evidence_pack"]
    assert whole["status"] == "ok" and whole["evidence_pack"]["must"]
    assert pack == api.json()  # the JSON API's pack, budget and all
    applying = len(whole["evidence_pack"]["must"])
    assert pack["must"] == [] and pack["budget"]["must_omitted"] == applying
    # The rules apply: no "no match", no retry hint, no vocabulary to rephrase with.
    assert cut["status"] == "ok" and cut["ok"] is True
    assert text.NEXT_NO_MATCH not in cut["next_actions"] and "vocabulary" not in cut
    assert pack["budget"]["next_step"] in cut["next_actions"]
    assert "(no constraints apply)" not in cut["rendered_text"]
    assert text.MUST_LEFT_OUT in cut["rendered_text"] and "MORE MUST" in cut["rendered_text"]


async def test_a_budget_that_leaves_some_must_rules_out_says_how_many_apply(daemon) -> None:
    arguments = {"query": FORCE_PUSH, "workspace": TEAM, "max_must": 1}
    async with mcp_client(daemon, team_reader(daemon)) as client:
        cut = await call(client, "memory_query", arguments)
    budget = cut["evidence_pack"]["budget"]
    assert cut["status"] == "ok" and len(cut["evidence_pack"]["must"]) == 1
    assert budget["must_omitted"] >= 1
    assert cut["next_actions"][:2] == [text.NEXT_EXPLAIN_BEFORE_CITING, budget["next_step"]]


async def test_a_budget_on_a_query_that_misses_is_still_no_match(daemon) -> None:
    arguments = {"query": "zzqx unheard of", "workspace": TEAM, "max_must": 0}
    async with mcp_client(daemon, team_reader(daemon)) as client:
        missed = await call(client, "memory_query", arguments)
    assert missed["status"] == "no_match" and "vocabulary" in missed
    assert missed["evidence_pack"]["budget"]["must_total"] == 0
    assert missed["next_actions"][-1] == text.NEXT_NO_MATCH


# --- methods on /mcp --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("with_token", [True, False])
def test_every_method_but_post_is_the_daemons_405_with_allow(daemon, method, with_token) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if with_token:
        headers["Authorization"] = f"Bearer {team_reader(daemon)}"
    with httpx2.Client(timeout=10) as http:
        answer = http.request(method, f"{daemon.url}/mcp", headers=headers)
    assert answer.status_code == 405, answer.text
    assert answer.headers["allow"] == "POST"
    if method == "HEAD":
        return  # no body
    error = answer.json()["error"]["data"]["error"]  # the envelope, in a JSON-RPC error
    assert error["code"] == "method_not_allowed"
    assert error["detail"]["allow"] == ["POST"]
    assert error["message"] == f"{method} is not served here; use POST"


def test_a_method_but_post_over_the_unix_socket_is_405_too(daemon) -> None:
    transport = httpx2.HTTPTransport(uds=daemon.socket_path)
    with httpx2.Client(transport=transport, timeout=10) as http:
        answer = http.delete("http://memhub/mcp")
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    assert answer.json()["error"]["data"]["error"]["detail"]["allow"] == ["POST"]


# --- answers over max_result_bytes name their workspace ---------------------------------


@pytest.fixture(scope="module")
def small_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("mcp-documented-small")
    with mcp_mounted():
        workspaces = copy_examples(root / "ws", [TEAM])
        with start_daemon(root, workspaces, **{"limits.max_result_bytes": 3000}) as live:
            yield live


TOO_LARGE = {
    "memory_map": {},
    "memory_query": {"query": "deploy main api version release push", "limit": 50},
    "memory_check": {"task": "push to main", "candidate": "git push --force origin main"},
    "memory_list": {},
    "memory_status": {"workspace": TEAM},
}


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize("tool", list(TOO_LARGE))
async def test_a_too_large_answer_names_its_workspace(small_daemon, tool, named) -> None:
    arguments = {**TOO_LARGE[tool], **({"workspace": TEAM} if named else {})}
    secret = token(
        small_daemon, "one-workspace", "read:summary,read:search", workspaces=[TEAM], roles="*"
    )
    async with mcp_client(small_daemon, secret) as client:
        refused = await call(client, tool, arguments)
    assert refused["status"] == "too_large" and refused["ok"] is False, refused
    # Named, or the caller's only workspace chosen for it (memory_status names it always).
    assert refused["workspace"] == TEAM


async def test_a_too_large_search_of_one_workspace_names_it(small_daemon) -> None:
    secret = token(small_daemon, "searcher", "read:search,write:recall", workspaces=[TEAM])
    async with mcp_client(small_daemon, secret) as client:
        for n in range(3):
            note = f"deploy note {n}: " + "the nightly deploy waits for the freeze. " * 40
            await call(client, "memory_ingest", {"content": note, "wing": TEAM})
        refused = await call(client, "memory_search", {"query": "nightly deploy", "wing": TEAM})
    assert refused["status"] == "too_large" and refused["workspace"] == TEAM


async def test_a_too_large_status_of_every_workspace_names_none(small_daemon) -> None:
    async with mcp_client(small_daemon, small_daemon.admin_token) as client:
        refused = await call(client, "memory_status", {})
    assert refused["status"] == "too_large" and "workspace" not in refused


# --- memhub's own tools name what is wrong, by their own names --------------------------


@pytest.mark.parametrize("tool", ["memory_status", "memory_workspaces"])
async def test_memhubs_status_tools_refuse_an_unknown_argument_in_one_line(daemon, tool) -> None:
    async with mcp_client(daemon, team_reader(daemon)) as client:
        refused = await tool_error(client, tool, {"colour": 1})
        typed = await tool_error(client, tool, {"workspace": 5})
        unknown = await tool_error(client, tool, {"workspace": "no-such-workspace"})
    assert refused == "invalid: 'colour' is not an argument of this tool"
    assert typed == "invalid: 'workspace' must be a string"
    assert unknown.startswith("workspace_not_found: ") and "Error executing" not in unknown


async def test_the_diary_names_its_entry_type_argument(daemon) -> None:
    writer = token(daemon, "mcp-diary-writer", "read:summary,write:recall", workspaces=[TEAM])
    async with mcp_client(daemon, writer) as client:
        written = await tool_error(
            client, "memory_diary", {"action": "write", "content": "x", "entry_type": "note"}
        )
        read = await tool_error(client, "memory_diary", {"action": "read", "entry_type": "note"})
    for refused in (written, read):
        assert refused.startswith("invalid: 'entry_type' must be one of "), refused
        assert "'type'" not in refused
