"""An approval reads the files held back while their saves settle, to see whether one
declares the proposal's id on disk: a FIFO renamed over such a file must not make it
wait for a writer (it held the review lock and the workspace's reloads meanwhile)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from memhubd.review import ReviewStore
from memhubd.service.review import _held_back_declaring


def held_back(store: ReviewStore, held: dict, declaration: str) -> list[bool]:
    found: list[bool] = []
    worker = threading.Thread(
        target=lambda: found.append(_held_back_declaring(held, store, "notes.mem", declaration)),
        daemon=True,
    )
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "waited for a writer on the FIFO"
    return found


def test_a_fifo_in_place_of_a_held_back_file_is_waited_out_not_opened_for_good(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    store = ReviewStore(str(root))
    fifo = root / "other.mem"
    os.mkfifo(fifo)
    # Not readable as it is now: the approval waits for the save to settle.
    assert held_back(store, {str(fifo): None}, "fact:two.c") == [True]


def test_a_held_back_file_is_read_for_the_id_it_declares(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    store = ReviewStore(str(root))
    other = root / "other.mem"
    other.write_text('fact two.c {\n  claim: "Renamed."\n}\n', "utf-8")
    assert held_back(store, {str(other): None}, "fact:two.c") == [True]
    assert held_back(store, {str(other): None}, "fact:two.d") == [False]
    assert held_back(store, {str(root / "gone.mem"): None}, "fact:two.c") == [False]
