"""Keyed proposals' answers on disk: bounded (rewritten with the live entries when the
file holds twice as many lines as a workspace keeps), expired after a day, read back
by a new daemon for the same root only."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from memhubd.review.keys import KeyFile, key_file
from memhubd.service import review


def keyed_with(state: Path, root: str = "/ws") -> review._Keyed:
    return review._Keyed(KeyFile(state, "team", root))


def answer(n: int) -> dict[str, object]:
    return {"proposal_id": f"p-{n}", "warnings": []}


def test_the_file_stays_bounded_and_keeps_the_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(review, "KEYED_KEPT", 3)
    keyed = keyed_with(tmp_path)

    async def make() -> None:
        for n in range(20):
            await keyed.put(("bot", frozenset({"dev"}), f"k{n}"), "f", answer(n))

    anyio.run(make)
    lines = key_file(tmp_path, "team").read_text(encoding="utf-8").splitlines()
    assert 3 <= len(lines) <= 6
    again = keyed_with(tmp_path)
    assert list(again.answers) == [("bot", frozenset({"dev"}), f"k{n}") for n in (17, 18, 19)]
    assert again.get(("bot", frozenset({"dev"}), "k19")) == ("f", answer(19))
    assert again.get(("bot", frozenset(), "k19")) is None  # other roles, another caller


def test_an_answer_older_than_a_day_is_not_read_back(tmp_path: Path) -> None:
    path = key_file(tmp_path, "team")
    path.parent.mkdir()
    old = {
        "root": "/ws", "identity": "bot", "roles": [], "key": "old",
        "made_at": time.time() - review.KEYED_FOR_S - 60, "fingerprint": "f",
        "answer": answer(1),
    }  # fmt: skip
    path.write_text(
        json.dumps(old) + "\n" + json.dumps({**old, "key": "new", "made_at": time.time()}) + "\n"
    )
    keyed = keyed_with(tmp_path)
    assert keyed.get(("bot", frozenset(), "old")) is None
    assert keyed.get(("bot", frozenset(), "new")) == ("f", answer(1))
    assert keyed_with(tmp_path, root="/elsewhere").answers == {}


def test_a_file_that_cannot_be_written_leaves_the_keys_in_memory(tmp_path: Path) -> None:
    (tmp_path / "review-keys").write_text("a file where the folder should be")
    keyed = keyed_with(tmp_path)
    key = ("bot", frozenset(), "k")
    anyio.run(keyed.put, key, "f", answer(1))
    assert keyed.get(key) == ("f", answer(1))


def test_a_line_torn_by_a_crash_costs_that_line_only(tmp_path: Path) -> None:
    # Given a file whose last line a crash cut in the middle (no newline after it)
    keyed = keyed_with(tmp_path)
    anyio.run(keyed.put, ("bot", frozenset(), "k1"), "f1", answer(1))
    path = key_file(tmp_path, "team")
    line = path.read_text(encoding="utf-8")
    path.write_text(line[: len(line) // 2], encoding="utf-8")
    # When the next daemon keeps another answer
    after = keyed_with(tmp_path)
    anyio.run(after.put, ("bot", frozenset(), "k2"), "f2", answer(2))
    # Then that one is read back by the one after it
    assert keyed_with(tmp_path).get(("bot", frozenset(), "k2")) == ("f2", answer(2))


def test_compactions_at_once_leave_the_latest_answers_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(review, "KEYED_KEPT", 2)
    keyed = keyed_with(tmp_path)
    rewrite = KeyFile.rewrite
    slow = iter([0.3, 0.0])  # the first compaction's disk is slower than the second's

    def slowly(self: KeyFile, live: list[object]) -> None:
        time.sleep(next(slow, 0.0))
        rewrite(self, live)  # type: ignore[arg-type]

    monkeypatch.setattr(KeyFile, "rewrite", slowly)

    async def make() -> None:
        for n in range(4):  # four lines: the next one over twice the kept count compacts
            await keyed.put(("bot", frozenset(), f"k{n}"), "f", answer(n))
        async with anyio.create_task_group() as group:
            group.start_soon(keyed.put, ("bot", frozenset(), "k4"), "f", answer(4))
            await anyio.sleep(0.05)
            group.start_soon(keyed.put, ("bot", frozenset(), "k5"), "f", answer(5))

    anyio.run(make)
    again = keyed_with(tmp_path)
    assert again.get(("bot", frozenset(), "k5")) == ("f", answer(5))
    assert again.get(("bot", frozenset(), "k4")) == ("f", answer(4))
