"""A partner peek's `since` through the JSON API takes RFC 3339 with a lower case "t"
and "z" (section 5.6) as it takes the upper case."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
AGENT = "read:summary,read:search,write:recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-since")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        live.add_token("since-a", AGENT, workspaces=[TEAM])
        live.add_token("since-b", AGENT, workspaces=[TEAM])
        yield live


def test_a_lower_case_since_is_read_as_rfc_3339(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.tokens["since-a"]) as http:
        for query in ("first", "second"):
            answer = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": query})
            assert answer.status_code == 200, answer.text
    with daemon.http(daemon.tokens["since-b"]) as http:
        route = f"/v1/workspaces/{TEAM}/cowork/peek/since-a"
        shown = http.get(route).json()["entries"]
        assert [e["text"] for e in shown] == ["first", "second"]
        for since in ("1970-01-01t00:00:00z", shown[0]["at"].lower()):
            answer = http.get(route, params={"since": since})
            assert answer.status_code == 200, answer.text
            upper = http.get(route, params={"since": since.upper()}).json()["entries"]
            assert answer.json()["entries"] == upper
        newer = http.get(route, params={"since": shown[0]["at"].lower()}).json()["entries"]
        assert [e["text"] for e in newer] == ["second"]
