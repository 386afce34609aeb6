"""A search by a caller of limited roles waits for a store's BM25 index being built
without holding one of the search slots every workspace shares, for a bounded time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from test_lexical import _alike_but_one_word, stall_index_builds

from memhubd.recall.shelf import RecallSettings, RecallShelf
from memhubd.service import recall as recall_service

pytestmark = pytest.mark.anyio


@pytest.fixture
def stalled(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Index builds wait for the event (a large store's first seconds)."""
    release = stall_index_builds(monkeypatch)
    yield release
    release.set()


@pytest.fixture
def shelf(tmp_path: Path) -> Iterator[RecallShelf]:
    opened = RecallShelf(tmp_path / "recall", RecallSettings(vectors=False))
    _alike_but_one_word(opened.store("w"), hidden=40)  # type: ignore[arg-type]
    yield opened
    opened.close()


async def test_the_wait_holds_no_search_slot_and_ends_when_the_index_is_there(
    shelf: RecallShelf, stalled: threading.Event
) -> None:
    roles = frozenset({"dev"})
    done: list[bool] = []

    async def wait() -> None:
        await recall_service.lexical_ready(shelf, ["w"], roles)
        done.append(True)

    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        await anyio.sleep(0.5)
        # While it waits, every search slot is free for other workspaces' searches
        assert not done
        assert recall_service._SEARCH.borrowed_tokens == 0
        stalled.set()
    assert done
    assert shelf.store("w").lexical_ready(roles)


async def test_the_wait_is_bounded(
    shelf: RecallShelf, stalled: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_service, "LEXICAL_WAIT_S", 0.3)
    with anyio.fail_after(5):
        await recall_service.lexical_ready(shelf, ["w"], frozenset({"dev"}))
    assert not shelf.store("w").lexical_ready(frozenset({"dev"}))
    # A caller hidden nothing never waits
    with anyio.fail_after(1):
        await recall_service.lexical_ready(shelf, ["w"], None)
