"""The knowledge graph, tunnels and fact-check against callers who may not read everything.

A stored triple citing a drawer hidden from the caller, a triple derived from a hidden
declaration and a tunnel through a hidden entity are probed from a token without roles
on a real daemon: through add, query, invalidate, stats and tunnels, none of them may be
shown, counted or named (ids of drawers, declarations or writers included). A long
draft's fact-check stays bounded by the near names, not every pair of names.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.security.test_role_hiding import write_workspace

TEAM, ACL = "team-coding", "acl"
AGENT = "read:summary,read:search,write:recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("graph-access")
    workspaces = copy_examples(root / "ws", [TEAM])
    workspaces[ACL] = str(write_workspace(Path(root) / ACL))
    with start_daemon(root, workspaces) as live:
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str = AGENT, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def hidden_drawer(daemon: LiveDaemon, writer: str, text: str) -> str:
    with daemon.http(writer) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"content": text, "room": "board", "readers": ["board"]},
        )
    assert answer.status_code == 201, answer.text
    return answer.json()["sources"][0]["drawer_ids"][0]  # type: ignore[no-any-return]


def test_adding_a_triple_already_stated_from_a_hidden_drawer_names_nothing_of_it(
    daemon: LiveDaemon,
) -> None:
    # Given a triple stated by `board-writer`, citing a drawer only `board` may read
    writer = token(daemon, "board-writer", workspaces=[TEAM], roles=["board"])
    drawer = hidden_drawer(daemon, writer, "the board agreed to sell the harbour site")
    triple = {"subject": "harbour site", "predicate": "sold_to", "object": "Acme"}
    with daemon.http(writer) as http:
        stated = http.post(
            f"/v1/workspaces/{TEAM}/kg/triples",
            json={**triple, "source_drawer": drawer, "confidence": 0.7},
        )
    assert stated.status_code == 201, stated.text
    # When a caller without the role states the same triple
    guesser = token(daemon, "triple-guesser", workspaces=[TEAM])
    with daemon.http(guesser) as http:
        again = http.post(f"/v1/workspaces/{TEAM}/kg/triples", json=triple)
        listed = http.get(f"/v1/workspaces/{TEAM}/kg/triples", params={"all": "true"})
        stats = http.get(f"/v1/workspaces/{TEAM}/kg/stats").json()["stats"]
    # Then the answer shows none of the stored period: not its drawer, writer or confidence
    assert again.status_code == 200, again.text
    assert again.json()["triples"] == []
    for secret in (drawer, "board-writer", "0.7"):
        assert secret not in again.text
    # And the graph the caller reads still holds no trace of it
    assert "harbour" not in listed.text and stats["stored"] == 0
    with daemon.http(writer) as http:  # nothing changed for the writer
        own = http.get(f"/v1/workspaces/{TEAM}/kg/triples", params={"subject": "harbour site"})
    assert [t["source_drawer"] for t in own.json()["triples"]] == [drawer]


def test_a_hidden_drawers_triple_cannot_be_invalidated_or_told_apart(daemon: LiveDaemon) -> None:
    writer = token(daemon, "board-writer", workspaces=[TEAM], roles=["board"])
    drawer = hidden_drawer(daemon, writer, "the board named a new treasurer in june")
    with daemon.http(writer) as http:
        stated = http.post(
            f"/v1/workspaces/{TEAM}/kg/triples",
            json={
                "subject": "treasurer",
                "predicate": "is",
                "object": "Ines",
                "source_drawer": drawer,
            },
        )
    hidden_id = stated.json()["triples"][0]["id"]
    guesser = token(daemon, "triple-guesser", workspaces=[TEAM])
    with daemon.http(guesser) as http:
        hidden = http.post(f"/v1/workspaces/{TEAM}/kg/triples/{hidden_id}/invalidate", json={})
        missing = http.post(
            f"/v1/workspaces/{TEAM}/kg/triples/triple_nope_0000/invalidate", json={}
        )
        timeline = http.get(f"/v1/workspaces/{TEAM}/kg/timeline", params={"entity": "treasurer"})
    assert hidden.status_code == missing.status_code == 404
    assert drawer not in hidden.text and timeline.json()["triples"] == []
    with daemon.http(writer) as http:  # still valid for those who may read it
        own = http.get(f"/v1/workspaces/{TEAM}/kg/triples", params={"subject": "treasurer"})
    assert [t["valid_to"] for t in own.json()["triples"]] == [None]


def test_a_triple_derived_from_a_hidden_declaration_is_never_shown_or_named(
    daemon: LiveDaemon,
) -> None:
    # `pricing.new` (readers: finance) supersedes `pricing.old`: a derived triple
    with daemon.http(daemon.admin_token) as http:
        every = http.get(f"/v1/workspaces/{ACL}/kg/triples", params={"all": "true"}).json()
    derived = [t for t in every["triples"] if "pricing.new" in (t["source_declaration"] or "")]
    assert derived, every
    reader = token(daemon, "acl-reader", workspaces=[ACL, TEAM])
    with daemon.http(reader) as http:
        listed = http.get(f"/v1/workspaces/{ACL}/kg/triples", params={"all": "true"})
        stats = http.get(f"/v1/workspaces/{ACL}/kg/stats")
        refused = http.post(
            f"/v1/workspaces/{ACL}/kg/triples/{derived[0]['id']}/invalidate", json={}
        )
    assert "pricing.new" not in listed.text and "pricing.new" not in stats.text
    assert stats.json()["stats"]["derived"] == 0
    # A derived id it may not read is "no triple", not "propose a change to pricing.new"
    assert refused.status_code == 404 and "pricing.new" not in refused.text


def test_a_tunnel_through_a_hidden_entity_is_not_shown(daemon: LiveDaemon) -> None:
    # Given a recall room in team-coding named as an entity of acl only `ops` may read
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"content": "notes on the striped launch project", "room": "Project.Zebra"},
        )
        assert answer.status_code == 201, answer.text
        admin = http.get("/v1/tunnels").json()
    assert "Project.Zebra" in {t["room"] for t in admin["tunnels"]}, admin
    # Then a caller granted both workspaces without the role sees no such tunnel
    reader = token(daemon, "tunnel-reader", workspaces=[ACL, TEAM])
    with daemon.http(reader) as http:
        tunnels = http.get("/v1/tunnels")
        hits = http.post(
            "/v1/recall/search", json={"query": "striped launch project notes"}
        ).json()["hits"]
    assert "Project.Zebra" not in {t["room"] for t in tunnels.json()["tunnels"]}
    assert hits and all(h["tunnel_hints"] == [] for h in hits if h["room"] == "Project.Zebra")


def test_fact_check_compares_a_name_only_with_known_names_near_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A long draft against a big graph once compared every pair of names (minutes of a
    # worker thread per request): the work must follow the near pairs, not the product.
    from memhubd.graph import factcheck

    rng = random.Random(3)

    def name() -> str:
        return "".join(rng.choices(string.ascii_lowercase, k=9)).capitalize()

    known = {name(): {"source_drawer": "d"} for _ in range(2000)}
    typo = next(iter(known))[:-1] + "q"  # one edit from a known name
    draft = " ".join([typo, *(name() for _ in range(1000))])
    calls = 0
    measured = factcheck.edit_distance

    def counting(left: str, right: str, ceiling: int = factcheck.MAX_DISTANCE) -> int:
        nonlocal calls
        calls += 1
        return measured(left, right, ceiling)

    monkeypatch.setattr(factcheck, "edit_distance", counting)
    result = factcheck.fact_check(draft, [], known, 0)
    assert [i["mentioned"] for i in result["issues"]] == [typo]
    assert calls < 1000, calls  # the product is 2,000,000


def test_a_triple_stays_hidden_once_its_hidden_drawer_is_purged(daemon: LiveDaemon) -> None:
    # Given a triple citing a drawer only `board` may read
    writer = token(daemon, "board-writer", workspaces=[TEAM], roles=["board"])
    drawer = hidden_drawer(daemon, writer, "the board will close the lisbon office in may")
    triple = {"subject": "lisbon office", "predicate": "closes_in", "object": "May"}
    with daemon.http(writer) as http:
        added = http.post(
            f"/v1/workspaces/{TEAM}/kg/triples", json={**triple, "source_drawer": drawer}
        )
    assert added.status_code == 201, added.text
    # When the drawer is deleted and purged for good
    with daemon.http(daemon.admin_token) as http:
        assert http.delete(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}").status_code == 200
        assert http.post(f"/v1/workspaces/{TEAM}/recall/purge", json={}).json()["purged"] >= 1
    # Then a caller without the role still sees nothing of the triple: an unknown
    # drawer's readers are unknown, so it is hidden, never shown by default
    reader = token(daemon, "purge-reader", workspaces=[TEAM])
    with daemon.http(reader) as http:
        listed = http.get(f"/v1/workspaces/{TEAM}/kg/triples", params={"all": "true"})
        timeline = http.get(f"/v1/workspaces/{TEAM}/kg/timeline", params={"entity": "May"})
    assert "lisbon" not in listed.text and timeline.json()["triples"] == []


def test_a_writer_cites_its_own_private_diary_entry_and_no_one_else_sees_it(
    daemon: LiveDaemon,
) -> None:
    # Given a private diary entry
    writer = token(daemon, "kg-diarist", workspaces=[TEAM])
    with daemon.http(writer) as http:
        entry = {"type": "LESSON", "content": "the otter service needs two replicas"}
        written = http.post(f"/v1/workspaces/{TEAM}/diary", json=entry)
    assert written.status_code == 201, written.text
    drawer = written.json()["drawer_id"]
    triple = {"subject": "otter service", "predicate": "needs", "object": "two replicas"}
    # When its writer states a triple from it
    with daemon.http(writer) as http:
        stated = http.post(
            f"/v1/workspaces/{TEAM}/kg/triples", json={**triple, "source_drawer": drawer}
        )
        own = http.get(f"/v1/workspaces/{TEAM}/kg/triples", params={"subject": "otter service"})
    # Then the writer reads it back as it reads the entry in recall search
    assert stated.status_code == 201, stated.text
    assert [t["source_drawer"] for t in own.json()["triples"]] == [drawer]
    # And a teammate sees neither the triple nor the entry
    mate = token(daemon, "kg-diary-mate", workspaces=[TEAM])
    with daemon.http(mate) as http:
        theirs = http.get(f"/v1/workspaces/{TEAM}/kg/triples", params={"subject": "otter service"})
        cite = http.post(
            f"/v1/workspaces/{TEAM}/kg/triples", json={**triple, "source_drawer": drawer}
        )
    assert theirs.json()["triples"] == [] and drawer not in theirs.text
    assert cite.status_code == 404, cite.text


def test_a_query_page_counts_only_triples_the_caller_may_read(daemon: LiveDaemon) -> None:
    # Given two triples anyone may read and, between them in the answer's order, one
    # citing a drawer only `board` may read
    writer = token(daemon, "board-writer", workspaces=[TEAM], roles=["board"])
    drawer = hidden_drawer(daemon, writer, "the board set the pager budget")
    path = f"/v1/workspaces/{TEAM}/kg/triples"
    with daemon.http(writer) as http:
        for target, confidence, cited in (("Alpha", 1.0, None), ("Hidden", 0.8, drawer)):
            body = {"subject": "pager", "predicate": "pages", "object": target}
            added = http.post(path, json={**body, "confidence": confidence, "source_drawer": cited})
            assert added.status_code == 201, added.text
        body = {"subject": "pager", "predicate": "pages", "object": "Omega", "confidence": 0.5}
        assert http.post(path, json=body).status_code == 201
    reader = token(daemon, "page-reader", workspaces=[TEAM])

    def page(secret: str, **params: Any) -> dict[str, Any]:
        with daemon.http(secret) as http:
            answer = http.get(path, params={"subject": "pager", **params})
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]

    # When a caller without the role reads every triple it may read in one page
    whole = page(reader, limit=2)
    # Then the hidden triple does not make the page look cut
    assert [t["object"] for t in whole["triples"]] == ["Alpha", "Omega"]
    assert (whole["truncated"], whole["next_offset"]) == (False, None)
    # And pages of one skip it without a trace: the second page is the last
    first, second = page(reader, limit=1), page(reader, limit=1, offset=1)
    assert (first["truncated"], first["next_offset"]) == (True, 1)
    assert [t["object"] for t in second["triples"]] == ["Omega"]
    assert (second["truncated"], second["next_offset"]) == (False, None)
    # While the writer, who may read it, is told there is more
    own = page(writer, limit=2)
    assert [t["object"] for t in own["triples"]] == ["Alpha", "Hidden"]
    assert (own["truncated"], own["next_offset"]) == (True, 2)
