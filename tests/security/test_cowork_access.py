"""Cowork inboxes and partner peek against callers probing each other.

Against a real daemon: a drain takes only the caller's own messages, a push cannot tell
a missing identity from one without a grant, a flood stops at the inbox's budget, and
peek shows a partner's counts only when the partner could read no more than the peeker,
never a push's recipient to a third party, and nothing of a workspace without a grant.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM, OTHER = "team-coding", "writing"
AGENT = "read:summary,read:search,write:recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-access")
    with start_daemon(root, copy_examples(root / "ws", [TEAM, OTHER])) as live:
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str = AGENT, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def push(daemon: LiveDaemon, secret: str, to: str, content: str, ws: str = TEAM) -> Any:
    with daemon.http(secret) as http:
        return http.post(f"/v1/workspaces/{ws}/cowork/push", json={"to": to, "content": content})


def test_a_drain_takes_only_the_callers_own_messages(daemon: LiveDaemon) -> None:
    sender = token(daemon, "d-sender", workspaces=[TEAM])
    token(daemon, "d-recipient", workspaces=[TEAM])
    thief = token(daemon, "d-thief", workspaces=[TEAM])
    assert (
        push(daemon, sender, "d-recipient", "the deploy key is in the blue folder").status_code
        == 201
    )
    with daemon.http(thief) as http:
        drained = http.post(f"/v1/workspaces/{TEAM}/cowork/drain").json()
        status = http.get(f"/v1/workspaces/{TEAM}/cowork/status").json()
    assert drained["count"] == 0 and drained["messages"] == []
    assert status["count"] == 0 and "blue folder" not in str(status)
    with daemon.http(daemon.tokens["d-recipient"]) as http:
        mine = http.post(f"/v1/workspaces/{TEAM}/cowork/drain").json()
    assert [m["content"] for m in mine["messages"]] == ["the deploy key is in the blue folder"]


def test_a_push_cannot_tell_a_missing_identity_from_one_without_a_grant(
    daemon: LiveDaemon,
) -> None:
    prober = token(daemon, "p-prober", workspaces=[TEAM])
    token(daemon, "p-elsewhere", workspaces=[OTHER])  # exists, but not in TEAM
    token(daemon, "p-mute", "read:search", workspaces=[TEAM])  # could never drain
    answers = [push(daemon, prober, to, "hello") for to in ("p-elsewhere", "p-mute", "p-ghost")]
    assert {a.status_code for a in answers} == {404}
    messages = [
        a.json()["error"]["message"].replace(to, "X")
        for a, to in zip(answers, ("p-elsewhere", "p-mute", "p-ghost"), strict=True)
    ]
    assert len(set(messages)) == 1, messages
    assert all(OTHER not in a.text and "read:summary" not in a.text for a in answers)


def test_a_flood_stops_at_the_inbox_budget_and_the_inbox_still_drains(
    daemon: LiveDaemon,
) -> None:
    flooder = token(daemon, "f-flooder", workspaces=[TEAM])
    victim = token(daemon, "f-victim", workspaces=[TEAM])
    codes = [
        push(daemon, flooder, "f-victim", f"spam {n} " + "x" * 1000).status_code for n in range(40)
    ]
    accepted = codes.count(201)
    assert 0 < accepted < 40 and set(codes[accepted:]) == {409}, codes
    with daemon.http(victim) as http:
        drained = http.post(f"/v1/workspaces/{TEAM}/cowork/drain").json()
    assert drained["count"] == accepted
    assert push(daemon, flooder, "f-victim", "after the drain").status_code == 201


def test_peek_withholds_counts_of_a_partner_who_reads_more(daemon: LiveDaemon) -> None:
    # Given a partner holding a role the peeker lacks, who searched recall and memory
    partner = token(daemon, "k-partner", workspaces=[TEAM], roles=["ops"])
    peeker = token(daemon, "k-peeker", workspaces=[TEAM])
    with daemon.http(partner) as http:
        assert (
            http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": "deploy"}).status_code
            == 200
        )
        assert (
            http.post(
                f"/v1/workspaces/{TEAM}/query",
                json={"query": "deploy on friday"},
            ).status_code
            == 200
        )
    # When the peeker peeks at it
    with daemon.http(peeker) as http:
        seen = http.get(f"/v1/workspaces/{TEAM}/cowork/peek/k-partner").json()
    # Then it sees what was asked, never a count computed over what it may not read
    kinds = {e["kind"] for e in seen["entries"]}
    assert {"search", "query"} <= kinds, seen
    assert all(e["counts"] is None for e in seen["entries"]), seen
    # And the partner, peeking back at a caller reading less, sees the counts
    with daemon.http(peeker) as http:
        http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": "deploy"})
    with daemon.http(partner) as http:
        back = http.get(f"/v1/workspaces/{TEAM}/cowork/peek/k-peeker").json()
    assert back["entries"] and back["entries"][-1]["counts"] is not None


def test_peek_counts_leave_out_the_partners_private_diary(daemon: LiveDaemon) -> None:
    # Given a partner with the peeker's roles, whose private diary holds a rare word
    partner = token(daemon, "y-partner", workspaces=[TEAM], roles=["dev"])
    peeker = token(daemon, "y-peeker", workspaces=[TEAM], roles=["dev"])
    with daemon.http(partner) as http:
        entry = {"type": "LESSON", "content": "the wombat flag hides a slow path"}
        assert http.post(f"/v1/workspaces/{TEAM}/diary", json=entry).status_code == 201
        # When it searches recall and finds that entry
        found = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": "wombat"})
    assert found.status_code == 200 and len(found.json()["hits"]) == 1
    # Then a peek shows its search with the count a peer with its roles could find
    with daemon.http(peeker) as http:
        seen = http.get(f"/v1/workspaces/{TEAM}/cowork/peek/y-partner").json()
    (search,) = [e for e in seen["entries"] if e["kind"] == "search"]
    assert search["counts"] == {"hits": 0}, seen


def test_peek_never_names_a_pushs_recipient_to_a_third_party(daemon: LiveDaemon) -> None:
    sender = token(daemon, "r-sender", workspaces=[TEAM])
    token(daemon, "r-recipient", workspaces=[TEAM])
    third = token(daemon, "r-third", workspaces=[TEAM])
    assert push(daemon, sender, "r-recipient", "meet at noon").status_code == 201
    with daemon.http(third) as http:
        seen = http.get(f"/v1/workspaces/{TEAM}/cowork/peek/r-sender").json()
    pushes = [e for e in seen["entries"] if e["kind"] == "push"]
    assert pushes and all(e["to"] is None for e in pushes)
    assert "r-recipient" not in str(seen) and "noon" not in str(seen)


def test_no_cowork_door_opens_on_a_workspace_without_a_grant(daemon: LiveDaemon) -> None:
    outsider = token(daemon, "o-outsider", workspaces=[OTHER])
    token(daemon, "o-insider", workspaces=[TEAM])
    with daemon.http(outsider) as http:
        base = f"/v1/workspaces/{TEAM}/cowork"
        answers = [
            http.get(f"{base}/peek/o-insider"),
            http.get(f"{base}/peek/auto"),
            http.get(f"{base}/status"),
            http.post(f"{base}/drain"),
            http.post(f"{base}/push", json={"to": "o-insider", "content": "hi"}),
        ]
    for answer in answers:
        assert answer.status_code == 404, answer.text  # as a workspace that does not exist
        assert "o-insider" not in answer.text


def test_a_scoped_admin_learns_nothing_of_tokens_beyond_its_grants(daemon: LiveDaemon) -> None:
    # A token beyond an admin's grants is one it may not list: a refused push explains
    # it exactly as a name that does not exist
    scoped = token(daemon, "s-admin", "all", workspaces=[TEAM])
    token(daemon, "s-elsewhere", workspaces=[OTHER])
    token(daemon, "s-ops-mute", "read:search", workspaces=[TEAM], roles=["ops"])
    names = ("s-elsewhere", "s-ops-mute", "s-ghost")
    answers = [push(daemon, scoped, to, "hello") for to in names]
    assert {a.status_code for a in answers} == {404}
    messages = {
        a.json()["error"]["message"].replace(to, "X") for a, to in zip(answers, names, strict=True)
    }
    assert messages == {"cannot push to 'X': no live token named 'X'"}, messages
    # While a full admin is told why
    with daemon.http(daemon.admin_token) as http:
        full = http.post(
            f"/v1/workspaces/{TEAM}/cowork/push", json={"to": "s-elsewhere", "content": "hello"}
        )
    assert full.status_code == 404 and "has no grant for workspace" in full.text


def test_peek_tells_no_count_where_a_private_entry_took_a_place(daemon: LiveDaemon) -> None:
    """With hits cut at `limit`, a private entry among them means a peer could have
    found more public ones than are left: such a count would tell the entry is there."""
    partner = token(daemon, "z-partner", workspaces=[TEAM], roles=["dev"])
    peeker = token(daemon, "z-peeker", workspaces=[TEAM], roles=["dev"])
    with daemon.http(partner) as http:
        entry = {"type": "LESSON", "content": "the quokka flag quokka quokka slows quokka"}
        assert http.post(f"/v1/workspaces/{TEAM}/diary", json=entry).status_code == 201
        note = {"files": [{"name": "quokka.md", "content": "A quokka note for everyone."}]}
        assert http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json=note).status_code in (
            200,
            201,
        )
        found = http.post(
            f"/v1/workspaces/{TEAM}/recall/search", json={"query": "quokka", "limit": 1}
        ).json()["hits"]
    assert len(found) == 1 and found[0]["content"].startswith("LESSON:")
    with daemon.http(peeker) as http:
        seen = http.get(f"/v1/workspaces/{TEAM}/cowork/peek/z-partner").json()
        public = http.post(
            f"/v1/workspaces/{TEAM}/recall/search", json={"query": "quokka", "limit": 1}
        ).json()["hits"]
    assert len(public) == 1  # what a peer finds: the public note
    (search,) = [e for e in seen["entries"] if e["kind"] == "search"]
    assert search["counts"] == {"hits": None}, seen
