"""Agent-sized answers: `max_bytes` and `max_must` cut MUST in memdsl's order, say how
many rules were left out and what to do next, at every door; without them the answer
is memdsl's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, start_daemon

WS = "rules"
RULES = 30  # global boundaries: every query's MUST holds all of them
HIDDEN = 4  # of them readable by `ops` only
READER = "read:summary,read:search"
QUERY = {"query": "deploy nightly"}


def write_workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    lines = []
    for i in range(RULES):
        policy = " access_policy { readers: [ops] }" if i >= RULES - HIDDEN else ""
        lines.append(
            f"boundary rules.r{i:02d} {{ scope: global "
            f'claim: "Rule {i}: never deploy on a holiday without sign-off number {i}."{policy} }}'
        )
    lines.append(
        'fact deploy.nightly { claim: "Deploys run nightly from the release branch." '
        'evidence { source: "ops.md" quote: "nightly" } }'
    )
    (root / "rules.mem").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    base = tmp_path_factory.mktemp("budget")
    root = write_workspace(base / "ws" / WS)
    with start_daemon(base, {WS: str(root)}) as live:
        live.add_token("reader", READER, workspaces=[WS])
        yield live


def query(daemon: LiveDaemon, body: dict[str, Any], token: str | None = None, **headers: str):
    with daemon.http(token or daemon.admin_token) as client:
        return client.post(f"/v1/workspaces/{WS}/query", json=body, headers=headers)


def must_ids(pack: dict[str, Any]) -> list[str]:
    return [item["id"] for item in pack["must"]]


def test_without_a_budget_the_answer_has_every_must_and_no_budget_key(daemon) -> None:
    pack = query(daemon, QUERY).json()

    assert len(pack["must"]) == RULES
    assert "budget" not in pack


def test_max_must_keeps_the_first_rules_in_order_and_counts_the_rest(daemon) -> None:
    full = must_ids(query(daemon, QUERY).json())

    pack = query(daemon, {**QUERY, "max_must": 3}).json()

    assert must_ids(pack) == full[:3]
    assert pack["budget"]["must_total"] == RULES
    assert pack["budget"]["must_shown"] == 3
    assert pack["budget"]["must_omitted"] == RULES - 3
    assert (
        pack["budget"]["next_step"] == f"{RULES - 3} more MUST rules apply: run check before acting"
    )
    assert pack["should"] == query(daemon, QUERY).json()["should"]


def test_max_bytes_bounds_the_answer_and_keeps_a_prefix_of_must(daemon) -> None:
    full = query(daemon, QUERY)
    budget = len(full.content) // 2

    answer = query(daemon, {**QUERY, "max_bytes": budget})
    pack = answer.json()

    assert len(answer.content) <= budget
    shown = must_ids(pack)
    assert 0 < len(shown) < RULES
    assert shown == must_ids(full.json())[: len(shown)]
    assert pack["budget"]["must_omitted"] == RULES - len(shown)
    assert pack["context"] == full.json()["context"]


def test_a_budget_that_holds_everything_omits_nothing(daemon) -> None:
    pack = query(daemon, {**QUERY, "max_bytes": 10_000_000, "max_must": 1000}).json()

    assert len(pack["must"]) == RULES
    assert pack["budget"]["must_omitted"] == 0
    assert pack["budget"]["next_step"] == ""


def test_the_text_form_names_the_next_step(daemon) -> None:
    answer = query(daemon, {**QUERY, "max_must": 1}, accept="text/plain")

    assert answer.text.count("- [boundary:rules.") == 1
    assert answer.text.endswith(
        f"MORE MUST\n- {RULES - 1} more MUST rules apply: run check before acting"
    )


def test_a_text_whose_must_layer_the_budget_emptied_says_so(daemon) -> None:
    answer = query(daemon, {**QUERY, "max_must": 0}, accept="text/plain")
    assert answer.status_code == 200
    lines = answer.text.splitlines()
    at = lines.index("MUST")
    assert lines[at + 1] == "- (none shown: the budget left every MUST rule out; see MORE MUST)"
    assert "(no constraints apply)" not in answer.text
    assert "MORE MUST" in answer.text


def test_a_role_limited_caller_counts_only_what_it_may_read_plus_the_hidden(daemon) -> None:
    reader = daemon.tokens["reader"]

    pack = query(daemon, {**QUERY, "max_must": 2}, reader).json()

    visible = RULES - HIDDEN
    assert pack["budget"]["must_total"] == visible
    assert pack["budget"]["must_omitted"] == visible - 2
    assert pack["budget"]["next_step"] == (
        f"{visible - 2} more MUST rules apply (and {HIDDEN} hidden from you may): "
        "run check before acting"
    )
    assert pack["search_trace"]["hidden_must_rules"] == HIDDEN


@pytest.mark.parametrize(
    "body",
    [{"max_bytes": 0}, {"max_bytes": "1000"}, {"max_must": -1}, {"max_must": True}],
)
def test_a_bad_budget_is_an_invalid_request(daemon, body) -> None:
    answer = query(daemon, {**QUERY, **body})

    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "invalid"


def test_check_still_evaluates_every_rule(daemon) -> None:
    with daemon.http(daemon.admin_token) as client:
        pack = client.post(
            f"/v1/workspaces/{WS}/check",
            json={"task": "deploy nightly", "candidate": "deploy on a holiday"},
        ).json()

    assert len(pack["applicable_must"]) == RULES


@pytest.mark.anyio
async def test_mcp_memory_query_takes_the_same_budget(daemon) -> None:
    from tests.integration.test_mcp import mcp_client

    async with mcp_client(daemon, daemon.admin_token) as client:
        result = await client.call_tool(
            "memory_query", {"query": "deploy nightly", "workspace": WS, "max_must": 5}
        )
    payload = json.loads(result.content[0].text)

    pack = payload["evidence_pack"]
    assert len(pack["must"]) == 5
    assert pack["budget"]["must_omitted"] == RULES - 5
    assert "MORE MUST" in payload["rendered_text"]


def test_memctl_query_takes_the_same_budget(daemon) -> None:
    import subprocess
    import sys

    argv = ["--url", daemon.socket_url, "-w", WS, "--json", "query", "-q", "deploy nightly"]
    result = subprocess.run(
        [sys.executable, "-m", "memctl", *argv, "--max-must", "2", "--max-bytes", "100000"],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    pack = json.loads(result.stdout)
    assert len(pack["must"]) == 2
    assert pack["budget"]["must_omitted"] == RULES - 2
