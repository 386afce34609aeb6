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
