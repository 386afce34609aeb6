"""Messages to a recipient that can no longer receive (its token revoked, or its grant
gone) are deleted once they are `UNRECEIVED_KEPT_S` old, at a push or status of the
workspace: nothing would ever drain them, so inboxes left behind would grow without end.
A token made again under the same name in time (a rotation) keeps its messages."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memhubd.auth.tokens import TokenStore
from memhubd.cowork import inbox
from tests.integration.conftest import LiveDaemon, start_daemon

WS = "w"
AGENT = "read:summary,read:search,write:recall"
PUSH = f"/v1/workspaces/{WS}/cowork/push"
STATUS = f"/v1/workspaces/{WS}/cowork/status"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    root = tmp_path / "ws" / WS
    root.mkdir(parents=True)
    (root / "a.mem").write_text("module w.a\n", encoding="utf-8")
    with start_daemon(tmp_path, {WS: str(root)}) as live:
        for name in ("alice", "bob", "carol"):
            live.add_token(name, AGENT, workspaces=[WS])
        yield live


def push(daemon: LiveDaemon, sender: str, to: str, content: str) -> None:
    with daemon.http(daemon.tokens[sender]) as http:
        answer = http.post(PUSH, json={"to": to, "content": content})
    assert answer.status_code == 201, answer.text


def stored(daemon: LiveDaemon) -> list[tuple[str, str]]:
    path = daemon.state_dir / "cowork" / f"{WS}.sqlite"
    with sqlite3.connect(path) as db:
        return db.execute("SELECT recipient, content FROM messages ORDER BY id").fetchall()


def sent_undelivered(daemon: LiveDaemon, sender: str) -> list[dict[str, object]]:
    with daemon.http(daemon.tokens[sender]) as http:
        answer = http.get(STATUS)
    assert answer.status_code == 200, answer.text
    return answer.json()["sent_undelivered"]  # type: ignore[no-any-return]


def test_messages_to_a_revoked_recipient_go_once_old(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        push(daemon, "alice", "bob", f"for bob {n}")
    push(daemon, "alice", "carol", "for carol")
    TokenStore(daemon.state_dir).revoke("bob")
    # Recent: kept (a rotation may give bob a token again)
    assert [r for r, _ in stored(daemon)].count("bob") == 3
    assert {"to": "bob", "count": 3} in sent_undelivered(daemon, "alice")
    # Old enough, at the next look over the workspace: gone, carol's kept
    monkeypatch.setattr(inbox, "UNRECEIVED_KEPT_S", 0.0)
    monkeypatch.setattr(inbox, "SWEEP_EVERY_S", 0.0)
    assert sent_undelivered(daemon, "alice") == [{"to": "carol", "count": 1}]
    assert stored(daemon) == [("carol", "for carol")]


def test_a_token_made_again_under_its_name_keeps_its_messages(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    push(daemon, "alice", "bob", "rotate me")
    store = TokenStore(daemon.state_dir)
    store.revoke("bob")
    daemon.add_token("bob", AGENT, workspaces=[WS])
    monkeypatch.setattr(inbox, "UNRECEIVED_KEPT_S", 0.0)
    monkeypatch.setattr(inbox, "SWEEP_EVERY_S", 0.0)
    push(daemon, "alice", "carol", "a push looks the workspace over")
    assert ("bob", "rotate me") in stored(daemon)
    with daemon.http(daemon.tokens["bob"]) as http:
        drained = http.post(f"/v1/workspaces/{WS}/cowork/drain").json()
    assert [m["content"] for m in drained["messages"]] == ["rotate me"]


def test_a_recipient_whose_grant_went_loses_old_messages(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    push(daemon, "alice", "bob", "before the grant went")
    store = TokenStore(daemon.state_dir)
    store.revoke("bob")
    daemon.add_token("bob", AGENT, workspaces=["elsewhere"])
    monkeypatch.setattr(inbox, "UNRECEIVED_KEPT_S", 0.0)
    monkeypatch.setattr(inbox, "SWEEP_EVERY_S", 0.0)
    push(daemon, "alice", "carol", "a push looks the workspace over")
    assert [r for r, _ in stored(daemon)] == ["carol"]


def test_the_days_count_from_when_the_recipient_went_not_from_the_push(tmp_path: Path) -> None:
    store = inbox.InboxStore(tmp_path / "w.sqlite")
    try:
        day = 86400.0
        start = 1_000_000_000.0
        store.push("alice", "bob", "left long ago", now=start - 30 * day)
        gone = lambda _to: False  # noqa: E731
        back = lambda _to: True  # noqa: E731
        # Found gone now: a message 30 days old is still kept for 7 days from here
        assert store.sweep(gone, now=start) == 0
        assert store.sweep(gone, now=start + 7 * day - 1) == 0
        # Able to receive again in between: the count starts afresh
        assert store.sweep(back, now=start + 7 * day - 1) == 0
        assert store.sweep(gone, now=start + 7 * day) == 0
        assert store.sweep(gone, now=start + 14 * day - 1) == 0
        assert store.sweep(gone, now=start + 14 * day) == 1
        assert store.state("bob").count == 0
    finally:
        store.close()


def test_a_recipient_rotated_after_a_week_idle_keeps_its_messages(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    push(daemon, "alice", "bob", "waited a week")
    path = daemon.state_dir / "cowork" / f"{WS}.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE messages SET pushed_at = pushed_at - 8 * 86400")
    TokenStore(daemon.state_dir).revoke("bob")
    monkeypatch.setattr(inbox, "SWEEP_EVERY_S", 0.0)
    sent_undelivered(daemon, "alice")  # a sweep finds bob gone, just now
    daemon.add_token("bob", AGENT, workspaces=[WS])
    with daemon.http(daemon.tokens["bob"]) as http:
        drained = http.post(f"/v1/workspaces/{WS}/cowork/drain").json()
    assert [m["content"] for m in drained["messages"]] == ["waited a week"]
