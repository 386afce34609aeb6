"""Which files a directory ingest sends and how it judges them: a file name that is not
UTF-8 fails alone, and a text with a few bytes that are not UTF-8 is text, as the
daemon's watcher and the session-end hook take it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memhub_protocol.recall import (
    BINARY,
    NAME_NOT_UTF8,
    NOT_REGULAR,
    NotRegular,
    SourceFile,
    is_failure,
    looks_binary,
    read_regular,
    read_text,
    walk_sources,
)

LINE = b"the deploy runs from the release branch only\n"


def test_a_file_name_that_is_not_utf8_fails_alone(tmp_path: Path) -> None:
    # given a directory with a Latin-1 file name beside a good one
    (tmp_path / "good.md").write_text("ok\n")
    os.mkdir(tmp_path / "sub")
    Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9.md")).write_text("hi\n")
    Path(os.fsdecode(os.fsencode(tmp_path) + b"/sub/.hidd\xe9n")).write_text("hi\n")
    # when it is walked
    walked = {source.name: source.skip for source in walk_sources([str(tmp_path)])}
    # then the bad name is a failure shown with U+FFFD, the others are as ever
    assert walked == {
        "caf\ufffd.md": NAME_NOT_UTF8,
        "good.md": None,
        "sub/.hidd\ufffdn": "hidden file",
    }
    assert is_failure(NAME_NOT_UTF8)
    for name in walked:
        name.encode("utf-8")  # every citation can be sent


def test_a_file_named_directly_with_a_bad_name_fails(tmp_path: Path) -> None:
    path = os.fsdecode(os.fsencode(tmp_path) + b"/r\xe9sum\xe9.txt")
    Path(path).write_text("hi\n")
    (source,) = walk_sources([path])
    assert (source.name, source.skip) == ("r\ufffdsum\ufffd.txt", NAME_NOT_UTF8)


def test_a_text_with_one_latin1_byte_is_text_read_with_a_replacement() -> None:
    data = LINE * 10 + b"caf\xe9\n" + LINE * 4
    assert not looks_binary(data)
    assert "caf\ufffd" in read_text(data)


def test_a_short_text_may_hold_one_bad_byte() -> None:
    assert not looks_binary(b"caf\xe9")
    assert looks_binary(b"\xe9\xe9")


def test_more_than_one_bad_character_in_a_hundred_is_binary() -> None:
    assert looks_binary(b"\xe9\xff" * 20 + LINE * 10)
    assert not looks_binary(b"\xe9" * 4 + LINE * 10)


def test_a_nul_is_binary_and_a_cut_last_character_is_not() -> None:
    assert looks_binary(LINE + b"\x00" + LINE)
    assert not looks_binary(LINE * 3 + "é".encode()[:1])


def test_a_walked_text_with_a_stray_byte_is_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(LINE * 10 + b"\xe9\n")
    (tmp_path / "blob.bin").write_bytes(b"\xe9\xff" * 100)
    walked = {source.name: source.skip for source in walk_sources([str(tmp_path)])}
    assert walked == {"blob.bin": BINARY, "notes.txt": None}


def test_a_fifo_that_took_a_files_name_after_its_check_is_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a FIFO in a walked directory, which the walk took for a regular file (it was
    # one when looked at, and was renamed over before being opened)
    fifo = tmp_path / "racy.jsonl"
    os.mkfifo(fifo)
    monkeypatch.setattr(os.path, "isfile", lambda path: path == str(fifo))
    # when the directory is walked
    walked: list[SourceFile] = []
    worker = threading.Thread(target=lambda: walked.extend(walk_sources([str(tmp_path)])))
    worker.daemon = True
    worker.start()
    worker.join(5)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # let the walk go
        pytest.fail("the walk waited for a writer to the FIFO")
    # then the FIFO is skipped as no regular file, never read
    assert [(s.name, s.skip) for s in walked] == [("racy.jsonl", NOT_REGULAR)]


def test_a_regular_file_is_read_through_one_descriptor_and_a_link_only_when_followed(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.md").write_bytes(LINE)
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    os.mkfifo(tmp_path / "pipe")
    assert read_regular(str(tmp_path / "a.md"), 1000) == LINE
    assert read_regular(str(tmp_path / "link.md"), 1000, follow=True) == LINE
    for path, reason in (("link.md", NOT_REGULAR), ("pipe", NOT_REGULAR), ("a.md", "larger")):
        with pytest.raises(NotRegular) as refused:
            read_regular(str(tmp_path / path), 10)
        assert refused.value.reason.startswith(reason)
