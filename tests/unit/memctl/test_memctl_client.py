"""MemhubClient against a canned daemon: the URLs, bodies and headers it sends, and
how it reads answers, errors and server-sent events."""

from __future__ import annotations

import pytest
from memctl_fakes import Canned, FakeDaemon

from memctl.client import MemhubClient, ServerError, parse_sse
from memhub_protocol import CheckRequest, ErrorCode, QueryRequest, TokenCreateRequest

WS = "/v1/workspaces/team"


def test_query_posts_the_request_model_and_asks_for_text(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("POST", WS + "/query", Canned("MUST\n- (none)"))
    request = QueryRequest(query="deploy friday", types=("rule",), subject="ci", limit=3)
    with MemhubClient.connect(fake_daemon.url) as client:
        answer = client.query("team", request, text=True)
    assert answer == "MUST\n- (none)"
    (seen,) = fake_daemon.seen
    assert seen.body == request.to_json()
    assert seen.headers["accept"] == "text/plain"
    assert QueryRequest.from_json(seen.body) == request  # the daemon accepts what we send


def test_check_sends_exceptions_as_a_list(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("POST", WS + "/check", Canned({"verdict": "allow"}))
    request = CheckRequest(task="t", candidate="c", exceptions=("hotfix",))
    with MemhubClient.connect(fake_daemon.url) as client:
        assert client.check("team", request) == {"verdict": "allow"}
    assert fake_daemon.seen[0].body["exceptions"] == ["hotfix"]
    assert fake_daemon.seen[0].headers["accept"] == "application/json"


def test_list_passes_its_filters_as_query_parameters(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("GET", WS + "/declarations", Canned({"declarations": []}))
    with MemhubClient.connect(fake_daemon.url) as client:
        client.list("team", type="rule", subject="ci", include_inactive=True, limit=5)
    assert fake_daemon.seen[0].query == {
        "include_inactive": ["true"],
        "type": ["rule"],
        "subject": ["ci"],
        "limit": ["5"],
    }


def test_path_parameters_are_escaped_so_ids_with_slashes_stay_one_segment(
    fake_daemon: FakeDaemon,
) -> None:
    fake_daemon.on("GET", WS + "/files/notes/a b.mem", Canned("module a\n"))
    with MemhubClient.connect(fake_daemon.url) as client:
        assert client.file("team", "notes/a b.mem") == "module a\n"


def test_token_create_posts_the_model(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("POST", "/v1/tokens", Canned({"name": "ci", "token": "x"}, status=201))
    request = TokenCreateRequest(name="ci", scopes=("read:search",), roles=("dev",))
    with MemhubClient.connect(fake_daemon.url) as client:
        assert client.token_create(request)["token"] == "x"
    assert TokenCreateRequest.from_json(fake_daemon.seen[0].body) == request


def test_an_error_envelope_becomes_a_server_error_with_its_status(fake_daemon: FakeDaemon) -> None:
    envelope = {"error": {"code": "forbidden", "message": "needs admin", "detail": {"s": 1}}}
    fake_daemon.on("GET", "/v1/tokens", Canned(envelope, status=403))
    with MemhubClient.connect(fake_daemon.url) as client, pytest.raises(ServerError) as caught:
        client.tokens()
    assert caught.value.code is ErrorCode.FORBIDDEN
    assert (caught.value.message, caught.value.detail) == ("needs admin", {"s": 1})
    assert caught.value.status == 403


def test_an_error_without_envelope_is_named_after_its_status(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("GET", "/v1/status", Canned("<html>Bad Gateway</html>", status=502))
    with MemhubClient.connect(fake_daemon.url) as client, pytest.raises(ServerError) as caught:
        client.status()
    assert caught.value.code is ErrorCode.INTERNAL
    assert caught.value.status == 502
    assert caught.value.message.startswith("HTTP 502")


def test_a_success_that_is_not_json_is_an_error_not_a_crash(fake_daemon: FakeDaemon) -> None:
    fake_daemon.on("GET", "/v1/status", Canned("hello"))
    with MemhubClient.connect(fake_daemon.url) as client, pytest.raises(ServerError) as caught:
        client.status()
    assert caught.value.status == 502


def test_events_are_read_from_the_stream(fake_socket_daemon: FakeDaemon) -> None:
    stream = (
        'event: reload\ndata: {"workspace": "team"}\n\n: keep-alive\n\nevent: health\ndata: ok\n\n'
    )
    fake_socket_daemon.on("GET", "/v1/events", Canned(stream, content_type="text/event-stream"))
    with MemhubClient.connect(fake_socket_daemon.url) as client:
        events = list(client.events())
    assert events == [("reload", {"workspace": "team"}), ("health", "ok")]
    assert fake_socket_daemon.seen[0].headers["accept"] == "text/event-stream"


def test_sse_parsing_joins_data_lines_and_defaults_the_event_name() -> None:
    lines = ["data: first", "data: second", "", "event: x", "data:{}", ""]
    assert list(parse_sse(lines)) == [("message", "first\nsecond"), ("x", {})]
