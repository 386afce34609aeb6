"""A partner's search over several workspaces, peeked at in one of them: its hit count
is what that workspace alone gave, never shaped by hits in workspaces the peeker has no
grant for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM, OTHER = "team-coding", "writing"
AGENT = "read:summary,read:search,write:recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-counts")
    with start_daemon(root, copy_examples(root / "ws", [TEAM, OTHER])) as live:
        live.add_token("counts-wide", AGENT, workspaces=[TEAM, OTHER], roles=["developer"])
        live.add_token("counts-one", AGENT, workspaces=[TEAM], roles=["developer"])
        yield live


def ingest(daemon: LiveDaemon, workspace: str, content: str, source: str) -> None:
    with daemon.http(daemon.admin_token) as http:
        route = f"/v1/workspaces/{workspace}/recall/ingest"
        answer = http.post(route, json={"content": content, "source": source})
        assert answer.status_code == 201, answer.text


def test_a_count_is_what_the_workspace_alone_gave(daemon: LiveDaemon) -> None:
    for i in range(12):  # the better matches, where the peeker has no grant
        ingest(daemon, OTHER, f"zebra migration plan zebra number {i} zebra", f"z{i}")
    for i in range(8):
        ingest(daemon, TEAM, f"zebra note {i} about something else entirely", f"tz{i}")
    query = {"query": "zebra migration", "limit": 10}
    with daemon.http(daemon.tokens["counts-wide"]) as http:
        both = http.post("/v1/recall/search", json={**query, "workspaces": [TEAM, OTHER]})
        assert both.status_code == 200, both.text
        assert {h["workspace"] for h in both.json()["hits"]} == {TEAM, OTHER}
    with daemon.http(daemon.tokens["counts-one"]) as http:
        alone = http.post(f"/v1/workspaces/{TEAM}/recall/search", json=query).json()["hits"]
        peeked = http.get(f"/v1/workspaces/{TEAM}/cowork/peek/counts-wide").json()["entries"]
    assert [e["counts"] for e in peeked] == [{"hits": len(alone)}]
    assert len(alone) == 8
