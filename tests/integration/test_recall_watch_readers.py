"""A watched transcript narrowed to some readers stays narrowed as the session goes on:
the watcher names no readers, and the exchanges it adds take those the file's stored
chunks have, not every caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.conftest import LiveDaemon, start_daemon
from tests.integration.recall_watching import WS, exchange, wait_for_status, watched_session

SOURCE = "-srv-billing/a.jsonl"


def hits(daemon: LiveDaemon, token: str, query: str) -> list[dict[str, Any]]:
    with daemon.http(token) as http:
        answer = http.post(f"/v1/workspaces/{WS}/recall/search", json={"query": query})
    assert answer.status_code == 200, answer.text
    return answer.json()["hits"]


def test_an_exchange_appended_to_a_narrowed_watched_session_stays_narrowed(
    tmp_path: Path,
) -> None:
    # Given a watched session, ingested by the watcher
    sessions, workspaces = watched_session(tmp_path)
    with start_daemon(tmp_path, workspaces) as daemon:
        assert wait_for_status(daemon, lambda s: s["drawer_count"] == 3)["drawer_count"] == 3
        # and narrowed to leads by sending it again under its citation
        with daemon.http(daemon.admin_token) as http:
            upload = {"name": SOURCE, "content": (sessions / "a.jsonl").read_text()}
            body = {"files": [upload], "format": "claude-code", "readers": ["leads"]}
            narrowed = http.post(f"/v1/workspaces/{WS}/recall/ingest", json=body)
        assert narrowed.status_code == 200, narrowed.text
        assert narrowed.json()["sources"][0]["status"] == "ingested"
        nobody = daemon.add_token("nobody", "read:search", workspaces=[WS])
        lead = daemon.add_token("lead", "read:search", workspaces=[WS], roles=["leads"])
        # When the session appends an exchange and the watcher ingests it
        with (sessions / "a.jsonl").open("a") as handle:
            handle.write(
                exchange(
                    "Did the quarantine of the flaky ledger shard finish?",
                    "Yes, the flaky ledger shard is quarantined until the fsck reruns.",
                )
            )
        assert wait_for_status(daemon, lambda s: s["drawer_count"] == 4)["drawer_count"] == 4
        # Then a caller with no role finds none of it; a lead finds the new exchange
        query = "quarantine flaky ledger shard fsck"
        assert hits(daemon, nobody, query) == []
        found = hits(daemon, lead, query)
        assert found and found[0]["source_file"] == SOURCE
        assert "fsck" in found[0]["content"] and found[0]["readers"] == ["leads"]
