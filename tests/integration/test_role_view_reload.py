"""A role-limited caller's view follows every reload: its index is composed over the
previous view's, what the caller may not read stays hidden in each generation, and the
views of stored tokens are made off the request path before they ask."""

from __future__ import annotations

import json
import time
from pathlib import Path

from memhubd.service import access

SECRET_BUG = "teamcode.bug_pattern:payments.sandbox_key_in_logs"
QUERY = {"query": "payment sdk sandbox key logs debug ledger retry"}

NEW_BUG = """
teamcode.bug_pattern payments.retry_key_in_trace {
  subject: Service.Ledger
  scope: component("billing")
  claim: "The ledger retry trace prints the payment SDK sandbox key."
  fix: "Redact the key before the retry trace is written."
  evidence {
    source: "incidents/2026-09-retry-trace.md"
    quote: "The retry trace held the sandbox key."
  }
  access_policy {
    readers: [maintainer, security]
    writers: [security]
    export: none
  }
}
"""
NEW_FACT = (
    'fact payments.ledger_retry { claim: "The ledger retries a payment SDK call twice '
    'before it logs the failure." evidence { source: "runbook" quote: "two retries" } }\n'
)


def _answer_with(daemon, token: str, text: str) -> dict:
    """The query's answer once it holds `text` (polled while the edit is picked up)."""
    deadline = time.monotonic() + 20
    with daemon.http(token) as client:
        while True:
            response = client.post("/v1/workspaces/team-coding/query", json=QUERY)
            assert response.status_code == 200
            if text in response.text:
                return response.json()
            assert time.monotonic() < deadline, f"{text} not served"
            time.sleep(0.05)


def test_a_role_limited_view_follows_edits_and_keeps_hiding(live_daemon) -> None:
    agent = live_daemon.add_token("agent", "read:summary,read:search", roles=["coding_agent"])
    root = Path(live_daemon.workspaces["team-coding"])
    before = _answer_with(live_daemon, agent, "search_trace")
    assert SECRET_BUG not in json.dumps(before)

    for round_ in range(3):  # each edit's view is composed over the one before
        with (root / "bugs.mem").open("a", encoding="utf-8") as handle:
            handle.write(NEW_BUG.replace("retry_key_in_trace", f"retry_key_{round_}"))
        (root / f"retry{round_}.mem").write_text(
            NEW_FACT.replace("ledger_retry", f"ledger_retry_{round_}"), encoding="utf-8"
        )
        seen = json.dumps(_answer_with(live_daemon, agent, f"payments.ledger_retry_{round_}"))
        assert "retry_key_" not in seen and SECRET_BUG not in seen
        assert json.loads(seen)["search_trace"]["hidden_by_access_policy"] >= 2

    with live_daemon.http(live_daemon.admin_token) as client:
        whole = json.dumps(client.post("/v1/workspaces/team-coding/query", json=QUERY).json())
    assert "retry_key_2" in whole and SECRET_BUG in whole


def _view_made(workspace: str, roles: frozenset[str], holding: str) -> bool:
    """Whether a served snapshot of `workspace` keeps a view for `roles` that holds the
    declaration named `holding`."""
    with access._CUTS_LOCK:
        kept = [
            cuts[roles]
            for snapshot, cuts in list(access._CUTS.items())
            if snapshot.name == workspace and roles in cuts
        ]
    return any(any(d.name == holding for d in cut.workspace.declarations) for cut in kept)


def test_the_views_of_stored_tokens_are_made_before_they_ask(live_daemon) -> None:
    # A token is stored; it has not asked anything yet
    live_daemon.add_token("quiet", "read:summary,read:search", roles=["coding_agent"])
    key = ("team-coding", frozenset({"coding_agent"}))
    # When the workspace is reloaded
    root = Path(live_daemon.workspaces["team-coding"])
    (root / "warm.mem").write_text(NEW_FACT, encoding="utf-8")
    # Then its view of the new snapshot is made off the request path (its own, or one
    # it shares with a role set that leaves out the same declarations)
    deadline = time.monotonic() + 20
    while not _view_made(key[0], key[1], "payments.ledger_retry"):
        assert time.monotonic() < deadline, "the stored token's view was not warmed"
        time.sleep(0.05)
