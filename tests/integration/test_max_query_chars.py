"""`[limits] max_query_chars` is the one bound on a query, a check's task and candidate
and the recall texts, below the request body's size: an operator who raises it past
64 KiB gets longer queries and checks too, one who lowers it gets shorter ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
W = f"/v1/workspaces/{WS}"
LONG = "word " * 14_000  # 70,000 characters: more than 65,536


@pytest.fixture(scope="module")
def raised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("raised")
    with start_daemon(
        root, copy_examples(root / "ws", [WS]), **{"limits.max_query_chars": 100_000}
    ) as daemon:
        yield daemon


def post(daemon: LiveDaemon, path: str, body: dict[str, Any]) -> Any:
    with daemon.http(daemon.admin_token, timeout=60) as http:
        return http.post(path, json=body)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (W + "/query", {"query": LONG}),
        (W + "/check", {"task": LONG, "candidate": "git push"}),
        (W + "/check", {"task": "push", "candidate": LONG}),
        ("/v1/recall/compress", {"text": LONG}),
        (W + "/fact-check", {"text": LONG}),
    ],
)
def test_a_raised_limit_admits_a_text_longer_than_64_kib_everywhere(
    raised: LiveDaemon, path: str, body: dict[str, Any]
) -> None:
    answer = post(raised, path, body)
    assert answer.status_code == 200, answer.text[:300]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (W + "/query", {"query": "w" * 100_001}, "query"),
        (W + "/check", {"task": "w" * 100_001, "candidate": "x"}, "task"),
        (W + "/check", {"task": "t", "candidate": "w" * 100_001}, "candidate"),
    ],
)
def test_the_raised_limit_is_still_a_limit(
    raised: LiveDaemon, path: str, body: dict[str, Any], field: str
) -> None:
    answer = post(raised, path, body)
    assert answer.status_code == 413, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == "too_large" and error["detail"] == {"field": field}
    assert error["message"] == f"'{field}' is longer than 100000 characters"


def test_a_lowered_limit_refuses_queries_and_checks_beyond_it(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    with start_daemon(tmp_path, workspaces, **{"limits.max_query_chars": 50}) as daemon:
        within = post(daemon, W + "/query", {"query": "w" * 50})
        query = post(daemon, W + "/query", {"query": "w" * 51})
        check = post(daemon, W + "/check", {"task": "w" * 51, "candidate": "x"})
    assert within.status_code == 200, within.text[:300]
    assert query.status_code == 413 and query.json()["error"]["detail"] == {"field": "query"}
    assert check.status_code == 413 and check.json()["error"]["detail"] == {"field": "task"}
