"""memctl reads each walked file through one descriptor opened without waiting: a FIFO
renamed over a walked file's name since the walk is skipped, never waited on."""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path

from memctl.recall import _sources
from memhub_protocol.recall import NOT_REGULAR, SourceFile


def test_a_fifo_in_place_of_a_walked_file_is_skipped_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)  # as if it took the name after the walk found a regular file there
    regular = tmp_path / "notes.md"
    regular.write_text("# Notes\n\nThe ledger rounds half to even.\n")
    args = argparse.Namespace(paths=[str(tmp_path)], source=None, max_file_bytes=1 << 20)
    walked = [SourceFile(str(fifo), "session.jsonl"), SourceFile(str(regular), "notes.md")]
    found: list = []
    reader = threading.Thread(target=lambda: found.extend(_sources(args, walked)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "waited on the FIFO for a writer"
    assert [(s.name, s.skip) for s, _ in found] == [
        ("session.jsonl", NOT_REGULAR),
        ("notes.md", None),
    ]
    assert "half to even" in found[1][1]
