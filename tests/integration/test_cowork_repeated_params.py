"""A cowork route given one of its query parameters twice refuses the request, as
recall search does, rather than taking the last one unseen; a refused drain takes
nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
AGENT = "read:summary,read:search,write:recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-repeated")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        live.add_token("twice-a", AGENT, workspaces=[TEAM])
        live.add_token("twice-b", AGENT, workspaces=[TEAM])
        yield live


def refusal(answer: httpx.Response) -> tuple[int, str, str]:
    error = answer.json()["error"]
    return answer.status_code, error["detail"].get("field"), error["message"]


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("max_bytes", ["15", "100"]),
        ("at_least_one", ["false", "true"]),
        ("weigh", ["content", "plain"]),
    ],
)
def test_a_drain_given_a_parameter_twice_is_refused_and_takes_nothing(
    daemon: LiveDaemon, name: str, values: list[str]
) -> None:
    with daemon.http(daemon.tokens["twice-a"]) as http:
        pushed = http.post(
            f"/v1/workspaces/{TEAM}/cowork/push", json={"to": "twice-b", "content": "still here"}
        )
        assert pushed.status_code == 201, pushed.text
    with daemon.http(daemon.tokens["twice-b"]) as http:
        route = f"/v1/workspaces/{TEAM}/cowork/drain"
        refused = http.post(route, params=[(name, value) for value in values])
        assert refusal(refused) == (422, name, f"'{name}' is given more than once")
        assert [m["content"] for m in http.post(route).json()["messages"]] == ["still here"]


@pytest.mark.parametrize(
    ("name", "values"),
    [("since", ["2099-01-01", "2000-01-01"]), ("limit", ["1", "50"])],
)
def test_a_peek_given_a_parameter_twice_is_refused(
    daemon: LiveDaemon, name: str, values: list[str]
) -> None:
    with daemon.http(daemon.tokens["twice-b"]) as http:
        route = f"/v1/workspaces/{TEAM}/cowork/peek/twice-a"
        refused = http.get(route, params=[(name, value) for value in values])
        assert refusal(refused) == (422, name, f"'{name}' is given more than once")
        assert http.get(route, params={name: values[-1]}).status_code == 200
