"""A caller whose roles are `*` is answered from every stored period of a graph larger
than the 10,000 periods a caller with other roles reads: a query's best triple, a
fact-check against the newest triple, and a timeline that says when it is cut."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from memhubd.graph import triple_id
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
KG = f"/v1/workspaces/{WS}/kg"
T0 = 1_700_000_000
BULK = 10_000


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("graph-scan")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        live.add_token(
            "dev", "read:summary,read:search,write:recall", workspaces=[WS], roles=["developer"]
        )
        with live.http(live.admin_token, timeout=60) as http:
            assert http.get(f"{KG}/stats").status_code == 200  # the store exists
            # 10,000 older periods of confidence 0.5, written at once.
            rows = [
                (triple_id("Hub", "bulk", f"n{i}"), "Hub", "bulk", f"n{i}", T0 + i, 0.5)
                for i in range(BULK)
            ]
            with sqlite3.connect(live.state_dir / "recall" / f"{WS}.db") as db:
                db.executemany(
                    "INSERT INTO triples (id, subject, predicate, object, valid_from, "
                    "confidence, identity, created_at) VALUES (?, ?, ?, ?, ?, ?, 'seed', ?)",
                    [(*row, T0) for row in rows],
                )
            db.close()
            for subject, predicate, obj in (
                ("Hub", "bulk", "last"),
                ("Marco", "husband_of", "Ines"),
            ):
                added = http.post(
                    f"{KG}/triples",
                    json={"subject": subject, "predicate": predicate, "object": obj},
                )
                assert added.status_code == 201, added.text
        yield live


def get(daemon: LiveDaemon, secret: str, path: str, **params: Any) -> dict[str, Any]:
    with daemon.http(secret, timeout=60) as http:
        answer = http.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def post(daemon: LiveDaemon, secret: str, path: str, body: dict[str, Any]) -> httpx2.Response:
    with daemon.http(secret, timeout=60) as http:
        return http.post(path, json=body)


def test_the_best_triple_of_a_large_graph_comes_first(daemon) -> None:
    answer = get(daemon, daemon.admin_token, f"{KG}/triples", predicate="bulk", limit=1)
    assert [(t["object"], t["confidence"]) for t in answer["triples"]] == [("last", 1.0)]
    every = get(daemon, daemon.admin_token, f"{KG}/triples", predicate="bulk", limit=1000)
    assert every["triples"][0]["object"] == "last"
    assert len(every["triples"]) == 1000
    assert get(daemon, daemon.admin_token, f"{KG}/stats")["stats"]["stored"] == BULK + 2


def test_fact_check_reads_every_period(daemon) -> None:
    answer = post(
        daemon,
        daemon.admin_token,
        f"/v1/workspaces/{WS}/fact-check",
        {"text": "Marco is Ines's brother."},
    )
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert [i["kind"] for i in found["issues"]] == ["relation_contradiction"]
    assert found["issues"][0]["triple_id"] == triple_id("Marco", "husband_of", "Ines")
    assert found["kg_triples_scanned"] >= BULK + 2
    # A name close to the newest triple's is known from it.
    near = post(
        daemon, daemon.admin_token, f"/v1/workspaces/{WS}/fact-check", {"text": "Ask Marko."}
    ).json()
    assert [(i["kind"], i["known_entity"]) for i in near["issues"]] == [
        ("similar_name_conflict", "Marco")
    ]
    assert near["issues"][0]["source"]["triple_id"] == triple_id("Marco", "husband_of", "Ines")


def test_a_timeline_lists_its_oldest_periods_and_says_when_it_is_cut(daemon) -> None:
    answer = get(daemon, daemon.admin_token, f"{KG}/timeline", entity="Hub")
    objects = [t["object"] for t in answer["triples"]]
    assert len(objects) == BULK and objects[0] == "n0" and objects[-1] == f"n{BULK - 1}"
    assert answer["truncated"] is True
    small = get(daemon, daemon.admin_token, f"{KG}/timeline", entity="Marco")
    assert [t["object"] for t in small["triples"]] == ["Ines"]
    assert small["truncated"] is False


def test_a_caller_with_other_roles_is_still_answered(daemon) -> None:
    dev = daemon.tokens["dev"]
    started = time.monotonic()
    query = get(daemon, dev, f"{KG}/triples", predicate="bulk", limit=1)
    assert len(query["triples"]) == 1
    timeline = get(daemon, dev, f"{KG}/timeline", entity="Hub")
    assert len(timeline["triples"]) == 10_000
    # The periods past those it reads are not told of: some could be hidden from it.
    assert timeline["truncated"] is False
    assert time.monotonic() - started < 30
