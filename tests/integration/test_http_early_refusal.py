"""Through the daemon, a query whose MUST rules alone are over `limits.max_result_bytes`
gets the same 413 as one whose whole answer is, first time and asked again, and answers
within the limit are served as without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, start_daemon

WS = "dense"
LIMIT = 3000
ROUTE = f"/v1/workspaces/{WS}/query"
# 30 rules of one scope: their MUST section is about 10 KB, over the limit on its own.
EARLY = {"query": "rule deploy", "types": ["boundary"]}
# Facts of a scope without rules: no MUST, eight long claims over the limit together.
LATE = {"query": "fact release", "types": ["fact"], "limit": 8}
WITHIN = {"query": "fact release", "types": ["fact"], "limit": 1}


def write_workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    lines = [
        f'boundary rules.r{n:02d} {{ scope: repository("big") '
        f'claim: "Rule {n}: never deploy on a holiday without sign-off number {n}." }}'
        for n in range(30)
    ]
    lines += [
        f'fact facts.f{n} {{ scope: repository("none") claim: "Fact {n}: the release '
        + "train leaves every second Tuesday after the review; " * 8
        + '" evidence { source: "notes.md" quote: "release" } }'
        for n in range(10)
    ]
    (root / "rules.mem").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def daemons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveDaemon, LiveDaemon]]:
    base = tmp_path_factory.mktemp("early")
    root = write_workspace(base / "ws" / WS)
    with (
        start_daemon(
            base / "limited", {WS: str(root)}, **{"limits.max_result_bytes": LIMIT}
        ) as limited,
        start_daemon(base / "open", {WS: str(root)}) as unlimited,
    ):
        yield limited, unlimited


def must_section_size(body: bytes) -> int:
    start = body.index(b',"must":[') + len(b',"must":[')
    return body.index(b'],"should":[', start) - start


def post(daemon: LiveDaemon, body: dict):  # noqa: ANN201
    with daemon.http(daemon.admin_token) as client:
        return client.post(ROUTE, json=body, headers={"accept-encoding": "identity"})


def test_a_must_layer_over_the_limit_gets_the_same_413_as_a_whole_answer(daemons) -> None:
    limited, unlimited = daemons
    # given answers whose MUST section alone, or only the whole answer, is over the limit
    early_whole, late_whole = post(unlimited, EARLY), post(unlimited, LATE)
    assert len(early_whole.content) > LIMIT and len(late_whole.content) > LIMIT
    assert must_section_size(early_whole.content) > LIMIT
    assert must_section_size(late_whole.content) == 0
    # when both are asked of a daemon with the limit, twice
    early, again, late = post(limited, EARLY), post(limited, EARLY), post(limited, LATE)
    # then all are the same refusal, naming only the limit
    assert early.status_code == again.status_code == late.status_code == 413
    assert early.content == again.content == late.content
    assert early.json()["error"]["detail"] == {"limit": LIMIT}


def test_an_answer_within_the_limit_is_served_as_without_it(daemons) -> None:
    limited, unlimited = daemons
    served, reference = post(limited, WITHIN), post(unlimited, WITHIN)
    assert served.status_code == reference.status_code == 200
    assert len(served.content) <= LIMIT
    assert served.content == reference.content
