"""Files uploaded in parts: kept in order until the last part, bounded in size and
number, and an abandoned upload let go when its time is up, whether or not another
part of any upload arrives."""

from __future__ import annotations

import time

import pytest

from memhubd.recall.uploads import PartAssembler, PartError, TooLarge


def test_the_parts_join_into_the_text_when_the_last_arrives() -> None:
    uploads = PartAssembler(max_file_bytes=100, max_bytes=400)
    assert uploads.add(("me", "a.md", "u1"), 0, 3, "one ") is None
    assert uploads.add(("me", "a.md", "u1"), 1, 3, "two ") is None
    assert uploads.add(("me", "a.md", "u1"), 2, 3, "three") == "one two three"
    assert uploads.pending() == 0


def test_a_part_out_of_order_or_too_large_is_refused() -> None:
    uploads = PartAssembler(max_file_bytes=10, max_bytes=40)
    uploads.add(("me", "a.md", "u1"), 0, 3, "abc")
    with pytest.raises(PartError):
        uploads.add(("me", "a.md", "u1"), 2, 3, "def")
    uploads.add(("me", "b.md", "u2"), 0, 2, "abcdef")
    with pytest.raises(TooLarge):
        uploads.add(("me", "b.md", "u2"), 1, 2, "ghijkl")


def test_an_abandoned_upload_expires_with_no_other_part_arriving() -> None:
    uploads = PartAssembler(max_file_bytes=100, max_bytes=400, ttl_s=0.2)
    uploads.add(("me", "a.md", "u1"), 0, 2, "held")
    assert uploads.pending() == 1
    deadline = time.monotonic() + 5
    while uploads.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert uploads.pending() == 0
    with pytest.raises(PartError):  # its last part finds nothing to continue
        uploads.add(("me", "a.md", "u1"), 1, 2, "late")


def test_a_part_arriving_in_time_keeps_its_upload() -> None:
    uploads = PartAssembler(max_file_bytes=100, max_bytes=400, ttl_s=0.5)
    uploads.add(("me", "a.md", "u1"), 0, 3, "a")
    time.sleep(0.3)
    uploads.add(("me", "a.md", "u1"), 1, 3, "b")
    time.sleep(0.3)  # past the first part's time, within the second's
    assert uploads.add(("me", "a.md", "u1"), 2, 3, "c") == "abc"
