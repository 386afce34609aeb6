"""The inbox engine: mempal's budgets, refusals, FIFO order, durability across reopen,
and at-most-once delivery with drains racing in threads and in processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlite_contention import contended_connections, journal_mode

from memhubd.cowork import (
    EmptyMessage,
    InboxFull,
    InboxLimits,
    InboxStore,
    MessageTooLarge,
    SelfPush,
)

WORKER = Path(__file__).with_name("drain_worker.py")


@pytest.fixture
def store(tmp_path: Path) -> InboxStore:
    return InboxStore(tmp_path / "cowork" / "team.sqlite")


def test_drain_returns_messages_oldest_first_and_only_once(store: InboxStore) -> None:
    store.push("alice", "bob", "first")
    store.push("carol", "bob", "second")
    store.push("bob", "alice", "for alice")
    drained = store.drain("bob")
    assert [(m.sender, m.content) for m in drained] == [("alice", "first"), ("carol", "second")]
    assert store.drain("bob") == []
    assert [m.content for m in store.drain("alice")] == ["for alice"]


def test_self_push_and_empty_messages_are_refused(store: InboxStore) -> None:
    with pytest.raises(SelfPush):
        store.push("alice", "alice", "hello me")
    with pytest.raises(EmptyMessage):
        store.push("alice", "bob", " \n\t")


def test_message_size_counts_utf8_bytes(store: InboxStore) -> None:
    store.push("alice", "bob", "é" * 4096)  # 8192 bytes: exactly the limit
    with pytest.raises(MessageTooLarge) as refused:
        store.push("alice", "bob", "é" * 4096 + "x")
    assert refused.value.size == 8193 and refused.value.limit == 8192


def test_the_total_budget_accepts_exactly_its_size_then_refuses(store: InboxStore) -> None:
    for _ in range(4):
        store.push("alice", "bob", "x" * 8192)
    with pytest.raises(InboxFull) as full:
        store.push("alice", "bob", "y")
    assert (full.value.count, full.value.size) == (4, 32768)
    store.drain("bob")
    store.push("alice", "bob", "y")  # drained: room again


def test_the_message_budget_is_sixteen(store: InboxStore) -> None:
    receipts = [store.push("alice", "bob", f"m{i}") for i in range(16)]
    assert receipts[-1].count_after == 16
    with pytest.raises(InboxFull):
        store.push("carol", "bob", "seventeenth")
    store.push("alice", "carol", "another inbox is not full")


def test_concurrent_pushes_never_overshoot_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "team.sqlite"
    stores = [InboxStore(path, InboxLimits(max_messages=5)) for _ in range(4)]
    accepted: list[int] = []
    lock = threading.Lock()

    def pusher(store: InboxStore) -> None:
        for i in range(10):
            try:
                receipt = store.push("alice", "bob", f"m{i}")
            except InboxFull:
                continue
            with lock:
                accepted.append(receipt.message_id)

    threads = [threading.Thread(target=pusher, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(accepted) == 5 and len(stores[0].drain("bob")) == 5


def test_messages_survive_closing_and_reopening_the_store(tmp_path: Path) -> None:
    path = tmp_path / "team.sqlite"
    first = InboxStore(path)
    first.push("alice", "bob", "still here")
    first.close()
    again = InboxStore(path)
    assert [m.content for m in again.drain("bob")] == ["still here"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_state_previews_without_draining_and_lists_own_undelivered_pushes(
    store: InboxStore,
) -> None:
    for i in range(5):
        store.push("alice", "bob", f"message {i} " + "z" * 300)
    store.push("bob", "carol", "hi")
    state = store.state("bob")
    assert state.count == 5 and len(state.previews) == 3
    assert len(state.previews[0].content) == 120
    assert state.sent == (("carol", 1),)
    assert len(store.drain("bob")) == 5


def test_racing_threads_on_separate_connections_deliver_each_message_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "team.sqlite"
    writer = InboxStore(path, InboxLimits(max_messages=1000, max_total_bytes=1 << 20))
    readers = [InboxStore(path) for _ in range(6)]
    got: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()

    def drainer(store: InboxStore) -> None:
        while not stop.is_set():
            for message in store.drain("bob"):
                with lock:
                    got.append(message.id)

    threads = [threading.Thread(target=drainer, args=(r,)) for r in readers]
    for thread in threads:
        thread.start()
    sent = []
    for i in range(200):
        sent.append(writer.push("alice", "bob", f"m{i}").message_id)
    time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join()
    got.extend(m.id for m in writer.drain("bob"))
    assert sorted(got) == sorted(sent)


def test_racing_processes_deliver_each_message_once(tmp_path: Path) -> None:
    path = tmp_path / "team.sqlite"
    store = InboxStore(path, InboxLimits(max_messages=1000, max_total_bytes=1 << 20))
    sent = [store.push("alice", "bob", f"m{i}").message_id for i in range(300)]
    start_at = time.time() + 1.5
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(path), "bob", str(start_at)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    got: list[int] = []
    for worker in workers:
        out, _ = worker.communicate(timeout=60)
        got.extend(json.loads(out))
    assert sorted(got) == sorted(sent)


def test_an_inbox_opened_as_another_process_switches_it_to_wal_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = contended_connections(monkeypatch, refusals=2)

    store = InboxStore(tmp_path / "cowork" / "team.sqlite")
    store.push("alice", "bob", "kept")

    assert len(refused) == 2
    assert [m.content for m in store.drain("bob")] == ["kept"]
    assert journal_mode(monkeypatch, tmp_path / "cowork" / "team.sqlite") == "wal"


def test_an_inbox_locked_past_the_busy_timeout_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.cowork import inbox

    monkeypatch.setattr(inbox, "BUSY_TIMEOUT_MS", 50)
    contended_connections(monkeypatch, refusals=10**9)

    from memhubd.sqlite import UnusableDatabase

    with pytest.raises(UnusableDatabase, match="not a usable cowork inbox: database is locked"):
        InboxStore(tmp_path / "cowork" / "team.sqlite")


def test_an_inbox_written_by_a_newer_memhub_is_refused_and_left_as_it_is(tmp_path) -> None:
    import sqlite3

    from memhubd.cowork.inbox import SCHEMA_VERSION
    from memhubd.sqlite import UnusableDatabase

    path = tmp_path / "inbox.sqlite"
    InboxStore(path).close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("ALTER TABLE messages ADD COLUMN newer TEXT")
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    # As a backup leaves it (rollback journal), so that a switch to WAL would show too.
    connection.execute("PRAGMA journal_mode = DELETE")
    connection.close()
    before = path.read_bytes()

    with pytest.raises(UnusableDatabase, match="written by a newer memhub"):
        InboxStore(path)
    assert path.read_bytes() == before
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


@pytest.mark.parametrize(
    "content",
    ["\u0000", "\u0000\u0000", "\u202e\u200b", " \u200b\n", "\u200d \u200c", "\ufe0f\U000e0080"],
)
def test_a_message_of_nothing_readable_is_empty(tmp_path, content: str) -> None:
    from memhubd.cowork.inbox import EmptyMessage

    store = InboxStore(tmp_path / "inbox.sqlite")
    with pytest.raises(EmptyMessage):
        store.push("alice", "bob", content)
    store.close()


@pytest.mark.parametrize("content", ["\U0001fae8", "\u200d\U0001fae8\u200d"])
def test_a_message_of_a_letter_newer_than_pythons_tables_is_kept(tmp_path, content) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite")
    store.push("alice", "bob", content)
    assert [m.content for m in store.drain("bob")] == [content]
    store.close()


def test_a_removed_workspaces_inbox_is_not_opened_again_until_it_is_added(tmp_path) -> None:
    from memhubd.cowork.shelf import CoworkShelf
    from memhubd.sqlite import UnusableDatabase

    shelf = CoworkShelf(tmp_path)
    shelf.store("team").push("alice", "bob", "before")
    shelf.retire("team")

    # A request that began before the removal: answered as unavailable, the file closed.
    with pytest.raises(UnusableDatabase, match="its workspace was removed"):
        shelf.store("team")
    (tmp_path / "team.sqlite").rename(tmp_path / "moved.sqlite")  # the archive's move
    assert not (tmp_path / "team.sqlite").exists()

    shelf.admit("team")
    assert shelf.store("team").drain("bob") == []  # a new inbox
    shelf.close()
