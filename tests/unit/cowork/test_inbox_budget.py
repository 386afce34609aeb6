"""A drain within a byte budget: the oldest messages while their content fits, the first
whatever its size unless the caller asks for a strict budget, the rest left in order and
counted, and still each message handed out once when budgeted drains race."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memhubd.cowork import InboxStore


@pytest.fixture
def store(tmp_path: Path) -> InboxStore:
    return InboxStore(tmp_path / "cowork" / "team.sqlite")


def fill(store: InboxStore, *sizes: int) -> list[str]:
    contents = [f"{i}:" + "x" * (size - 2) for i, size in enumerate(sizes)]
    for content in contents:
        store.push("alice", "bob", content)
    return contents


def test_a_budgeted_drain_takes_the_oldest_that_fit_and_counts_the_rest(
    store: InboxStore,
) -> None:
    sent = fill(store, 3000, 3000, 3000)
    first = store.take("bob", 6500)
    assert [m.content for m in first.messages] == sent[:2] and first.remaining == 1
    second = store.take("bob", 6500)
    assert [m.content for m in second.messages] == sent[2:] and second.remaining == 0
    assert store.take("bob", 6500).messages == () and store.drain("bob") == []


def test_a_budget_is_inclusive_of_its_last_byte(store: InboxStore) -> None:
    sent = fill(store, 100, 100)
    assert [m.content for m in store.take("bob", 200).messages] == sent


def test_the_oldest_message_comes_even_when_it_alone_is_over_the_budget(
    store: InboxStore,
) -> None:
    sent = fill(store, 8192, 10)
    taken = store.take("bob", 100)
    assert [m.content for m in taken.messages] == sent[:1] and taken.remaining == 1


def test_a_strict_budget_takes_nothing_over_it_and_leaves_the_message_waiting(
    store: InboxStore,
) -> None:
    sent = fill(store, 500)
    kept = store.take("bob", 499, at_least_one=False)
    assert kept.messages == () and kept.remaining == 1
    assert store.take("bob", 0, at_least_one=False).remaining == 1
    assert [m.content for m in store.take("bob", 500, at_least_one=False).messages] == sent


def test_a_smaller_later_message_never_overtakes_one_that_did_not_fit(store: InboxStore) -> None:
    sent = fill(store, 100, 5000, 10)
    taken = store.take("bob", 1000)
    assert [m.content for m in taken.messages] == sent[:1] and taken.remaining == 2
    assert [m.content for m in store.drain("bob")] == sent[1:]


def test_the_budget_counts_utf8_bytes_not_characters(store: InboxStore) -> None:
    store.push("alice", "bob", "é" * 100)  # 200 bytes
    store.push("alice", "bob", "a")
    taken = store.take("bob", 200)
    assert len(taken.messages) == 1 and taken.remaining == 1


def test_racing_budgeted_drains_hand_out_each_message_exactly_once(store: InboxStore) -> None:
    sent = fill(store, *([1000] * 16))
    got: list[str] = []
    start = threading.Barrier(8)

    def drainer() -> None:
        start.wait()
        for _ in range(6):
            got.extend(m.content for m in store.take("bob", 1500).messages)

    threads = [threading.Thread(target=drainer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == sorted(sent)  # none lost, none twice
    assert store.take("bob").remaining == 0
