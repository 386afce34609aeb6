"""Bad input on the recall, graph, cowork and diary routes: a clear 4xx, never a 500.

Times with thousands of digits or outside the years 1-9999, FTS5 syntax in search
text, transcripts nested past the JSON parser's depth, NUL bytes and out-of-range
limits, each sent to a real daemon. Uploaded content is content: a file name that
looks like a path on the daemon's disk is only a citation. (Every route, new ones
included, is also fuzzed from the OpenAPI document in `test_fuzz_openapi.py`.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
WS = f"/v1/workspaces/{TEAM}"
HUGE = "9" * 5000  # past int()'s 4,300-digit limit
FAR = 10**20  # past SQLite's 64-bit integers


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("new-inputs")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        with live.http(live.admin_token) as http:
            answer = http.post(
                f"{WS}/recall/ingest",
                json={"content": "the heron migration runs on thursdays", "room": "ops"},
            )
            assert answer.status_code == 201, answer.text
        yield live


def assert_refused(answer: httpx.Response, field: str | None = None) -> dict[str, Any]:
    assert 400 <= answer.status_code < 500, f"{answer.status_code}: {answer.text[:300]}"
    error = answer.json()["error"]
    assert {"code", "message", "detail"} <= set(error)
    if field is not None:
        assert error["detail"].get("field") == field, error
    return error  # type: ignore[no-any-return]


@pytest.mark.parametrize("value", [HUGE, "-" + HUGE, str(FAR), str(-FAR), FAR, -FAR])
@pytest.mark.parametrize("field", ["since", "until"])
def test_search_times_out_of_range_are_422(daemon: LiveDaemon, field: str, value: Any) -> None:
    with daemon.http(daemon.admin_token) as http:
        posted = http.post(f"{WS}/recall/search", json={"query": "heron", field: value})
        got = http.get(f"{WS}/recall/search", params={"q": "heron", field: str(value)})
        everywhere = http.post("/v1/recall/search", json={"query": "heron", field: value})
    for answer in (posted, got, everywhere):
        assert_refused(answer, field)


@pytest.mark.parametrize("value", [HUGE, str(-FAR), -FAR, FAR])
def test_purge_before_out_of_range_is_422_and_purges_nothing(
    daemon: LiveDaemon, value: Any
) -> None:
    with daemon.http(daemon.admin_token) as http:
        assert_refused(http.post(f"{WS}/recall/purge", json={"before": value}), "before")


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/kg/triples", {"as_of": HUGE}),
        ("/kg/triples", {"as_of": str(-FAR)}),
        ("/cowork/peek/auto", {"since": HUGE}),
    ],
)
def test_graph_and_peek_times_out_of_range_are_422(
    daemon: LiveDaemon, path: str, params: dict[str, str]
) -> None:
    with daemon.http(daemon.admin_token) as http:
        assert_refused(http.get(WS + path, params=params))


def test_times_within_the_years_1_to_9999_still_work(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"{WS}/recall/search",
            json={"query": "heron", "since": "0001-01-01T00:00:00Z", "until": 253402300799},
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["hits"]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"heron',
        "heron NEAR(migration)",
        'NEAR("heron" "thursdays", 2)',
        "content:heron",
        "{content context}: heron",
        "heron*",
        "*",
        "^heron",
        "(",
        ")",
        "heron AND OR NOT",
        "-heron",
        "heron\x00migration",
        "'; DROP TABLE drawers; --",
    ],
)
def test_fts5_syntax_in_a_query_is_plain_text(daemon: LiveDaemon, query: str) -> None:
    with daemon.http(daemon.admin_token) as http:
        posted = http.post(f"{WS}/recall/search", json={"query": query})
        diary = http.get(f"{WS}/diary", params={"q": query})
    assert posted.status_code == 200, posted.text
    assert "syntax" not in posted.text.lower() and "fts5" not in posted.text.lower()
    assert diary.status_code == 200, diary.text
    if "heron" in query:
        assert posted.json()["hits"], query


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("deep.json", "[" * 50_000 + "]" * 50_000),
        ("deep.jsonl", '{"a":' * 20_000 + "1" + "}" * 20_000),
    ],
)
def test_a_transcript_nested_past_the_parsers_depth_is_no_internal_error(
    daemon: LiveDaemon, name: str, content: str
) -> None:
    with daemon.http(daemon.admin_token) as http:
        detected = http.post(
            f"{WS}/recall/ingest",
            json={"files": [{"name": name, "content": content}], "dry_run": True},
        )
        forced = http.post(
            f"{WS}/recall/ingest",
            json={"files": [{"name": name, "content": content}], "format": "claude-code"},
        )
    for answer in (detected, forced):
        assert answer.status_code < 500, answer.text[:300]
        assert "internal error" not in answer.text and "RecursionError" not in answer.text
    # Detected as what it is to a JSON parser (not JSON): text, stored as content
    assert not detected.json()["failed"], detected.text[:300]
    # Forced as a transcript: refused for that file with a reason, the batch answered
    (failure,) = forced.json()["failed"]
    assert failure["source"] == name and "nested too deeply" in failure["reason"]


def test_an_uploaded_file_name_is_a_citation_never_a_path_the_daemon_reads(
    daemon: LiveDaemon,
) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"{WS}/recall/ingest",
            json={"files": [{"name": "../../../../etc/hostname", "content": "uploaded words"}]},
        )
        assert answer.status_code == 201, answer.text
        (drawer,) = answer.json()["sources"][0]["drawer_ids"]
        stored = http.get(f"{WS}/recall/drawers/{drawer}").json()["drawer"]
    assert stored["content"] == "uploaded words"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/kg/triples",
            {"subject": "a", "predicate": "b", "object": "c", "valid_from": HUGE},
            "valid_from",
        ),
        (
            "/kg/triples",
            {"subject": "a", "predicate": "b", "object": "c", "confidence": 2},
            "confidence",
        ),
        ("/kg/triples", {"subject": "x" * 501, "predicate": "b", "object": "c"}, "subject"),
        ("/kg/triples/triple_x/invalidate", {"at": HUGE}, "at"),
        ("/fact-check", {"text": "heron", "now": HUGE}, "now"),
        ("/fact-check", {"text": "   "}, "text"),
        ("/diary", {"type": "LESSON", "content": "x", "importance": 99}, "importance"),
        ("/diary", {"type": "RUMOUR", "content": "x"}, "type"),
        ("/cowork/push", {"to": "nobody", "content": 5}, "content"),
        ("/recall/taxonomy", {"room": "ops", "keywords": ["k"] * 101}, "keywords"),
    ],
)
def test_malformed_bodies_on_new_routes_are_422(
    daemon: LiveDaemon, path: str, body: dict[str, Any], field: str
) -> None:
    with daemon.http(daemon.admin_token) as http:
        assert_refused(http.post(WS + path, json=body), field)


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/recall/wake-up", {"limit": "-1"}),
        ("/recall/wake-up", {"budget": "10"}),
        ("/recall/wake-up", {"limit": "9" * 5000}),
        ("/kg/triples", {"limit": "0"}),
        ("/cowork/peek/auto", {"limit": "51"}),
        ("/diary", {"limit": "-3"}),
        ("/recall/search", {"q": "heron", "limit": "-1"}),
    ],
)
def test_limits_out_of_range_on_new_routes_are_422(
    daemon: LiveDaemon, path: str, params: dict[str, str]
) -> None:
    with daemon.http(daemon.admin_token) as http:
        assert_refused(http.get(WS + path, params=params))


def test_the_daemon_still_serves_after_all_of_it(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        assert http.get("/healthz").status_code == 200
        assert http.post(f"{WS}/recall/search", json={"query": "heron"}).json()["hits"]


def test_a_number_too_long_to_read_is_named_in_the_daemons_words(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"{WS}/recall/search",
            content=b'{"query": "heron", "limit": ' + HUGE.encode() + b"}",
            headers={"content-type": "application/json"},
        )
    assert answer.status_code == 422, answer.text
    message = answer.json()["error"]["message"]
    assert "more than 4300 digits" in message and "sys." not in message
