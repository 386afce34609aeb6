"""HTTP caching of query answers: cached answers equal fresh ones, `ETag` changes when
and only when the answer can (snapshot generation, the caller's roles, the request),
`If-None-Match` gets a 304, large answers are gzip-compressed when accepted, and an
answer over `limits.max_result_bytes` is refused."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, start_daemon
from tests.integration.test_query_budget import READER, WS, write_workspace

QUERY = {"query": "deploy nightly"}
ROUTE = f"/v1/workspaces/{WS}/query"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    root = write_workspace(tmp_path / "ws" / WS)
    with start_daemon(tmp_path, {WS: str(root)}) as live:
        live.add_token("reader", READER, workspaces=[WS])
        yield live


def post(daemon: LiveDaemon, body: dict[str, Any], token: str | None = None, **headers: str):
    with daemon.http(token or daemon.admin_token) as client:
        return client.post(ROUTE, json=body, headers=headers)


def compact(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_a_cached_answer_is_the_fresh_answer(daemon) -> None:
    first = post(daemon, QUERY)
    second = post(daemon, QUERY)

    assert first.status_code == second.status_code == 200
    assert second.content == first.content
    assert first.content == compact(first.json())  # the API's own encoding
    assert first.headers["etag"] == second.headers["etag"]


def test_if_none_match_with_the_tag_is_a_304_without_a_body(daemon) -> None:
    tag = post(daemon, QUERY).headers["etag"]

    answer = post(daemon, QUERY, **{"if-none-match": tag})

    assert answer.status_code == 304
    assert answer.content == b""
    assert answer.headers["etag"] == tag
    assert post(daemon, QUERY, **{"if-none-match": f"W/{tag}"}).status_code == 304


def test_another_tag_gets_the_answer(daemon) -> None:
    answer = post(daemon, QUERY, **{"if-none-match": '"not-this-one"'})

    assert answer.status_code == 200
    assert answer.json()["must"]


def test_the_tag_depends_on_the_request_the_form_and_the_callers_roles(daemon) -> None:
    base = post(daemon, QUERY).headers["etag"]

    assert post(daemon, {**QUERY, "limit": 3}).headers["etag"] != base
    assert post(daemon, {**QUERY, "max_must": 2}).headers["etag"] != base
    assert post(daemon, QUERY, accept="text/plain").headers["etag"] != base
    reader = post(daemon, QUERY, daemon.tokens["reader"])
    assert reader.headers["etag"] != base
    assert len(reader.json()["must"]) < len(post(daemon, QUERY).json()["must"])
    # A caller with the same roles shares the answer and its tag.
    other = daemon.add_token("reader2", READER, workspaces=[WS])
    assert post(daemon, QUERY, other).headers["etag"] == reader.headers["etag"]


def test_a_reload_changes_the_tag_and_the_answer(daemon) -> None:
    before = post(daemon, QUERY)
    path = Path(daemon.workspaces[WS]) / "more.mem"

    path.write_text(
        'boundary rules.added { scope: global claim: "Never deploy nightly builds on Fridays." }\n'
    )
    after = _wait_for_generation(daemon, int(before.headers["x-memhub-generation"]) + 1)

    assert after.headers["etag"] != before.headers["etag"]
    assert "boundary:rules.added" in [item["id"] for item in after.json()["must"]]
    stale = post(daemon, QUERY, **{"if-none-match": before.headers["etag"]})
    assert stale.status_code == 200 and stale.content == after.content


def _wait_for_generation(daemon: LiveDaemon, generation: int) -> Any:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        answer = post(daemon, QUERY)
        if int(answer.headers["x-memhub-generation"]) >= generation:
            return answer
        time.sleep(0.05)
    raise AssertionError(f"generation {generation} was never served")


def test_large_answers_are_gzipped_when_accepted(daemon) -> None:
    plain = post(daemon, QUERY, **{"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers

    with daemon.http(daemon.admin_token) as client:
        request = client.build_request(
            "POST", ROUTE, json=QUERY, headers={"accept-encoding": "gzip"}
        )
        zipped = client.send(request, stream=True)
        raw = b"".join(zipped.iter_raw())
        zipped.close()

    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.headers["etag"] == plain.headers["etag"][:-1] + '-gzip"'
    unchanged = post(daemon, QUERY, **{"if-none-match": zipped.headers["etag"]})
    assert unchanged.status_code == 304
    assert len(raw) < len(plain.content)
    assert gzip.decompress(raw) == plain.content
    # httpx decodes it as any client would: the same JSON.
    assert post(daemon, QUERY, **{"accept-encoding": "gzip"}).json() == plain.json()


def test_gzip_refused_with_q_zero_is_not_used(daemon) -> None:
    answer = post(daemon, QUERY, **{"accept-encoding": "gzip;q=0"})

    assert "content-encoding" not in answer.headers


def test_an_answer_over_the_result_limit_is_refused_and_a_budget_fits_it(tmp_path) -> None:
    root = write_workspace(tmp_path / "ws" / WS)
    with start_daemon(tmp_path, {WS: str(root)}, **{"limits.max_result_bytes": 2000}) as live:
        refused = post(live, QUERY)
        again = post(live, QUERY)  # refused from the size noted the first time
        fitted = post(live, {**QUERY, "max_bytes": 1900})

    assert refused.status_code == 413
    assert refused.json()["error"]["code"] == "too_large"
    assert refused.json()["error"]["detail"] == {"limit": 2000}
    assert again.status_code == 413 and again.content == refused.content
    assert fitted.status_code == 200
    assert fitted.json()["budget"]["must_omitted"] > 0
