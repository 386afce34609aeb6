"""What the watcher does with the files of a watched directory that are not plain
transcripts: a FIFO renamed over a transcript's name, links, files it cannot read or
does not know, a store closed under a batch. None may hold the ingest slot or flood
the log."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import memhub_protocol.recall as protocol_recall
from memhub_protocol.recall import SourceFile
from memhubd.recall.shelf import RecallShelf
from memhubd.service import recall

WS = "team"
EXCHANGE = (
    '{"type":"user","message":{"role":"user","content":"Where does the quince export run?"}}\n'
    '{"type":"assistant","message":{"role":"assistant","content":"On batch-3, nightly."}}\n'
)


@pytest.fixture
def shelf(tmp_path: Path) -> Iterator[RecallShelf]:
    shelf = RecallShelf(tmp_path / "recall")
    yield shelf
    shelf.close()


@pytest.fixture
def watched(tmp_path: Path) -> Path:
    """The watched transcript directory, empty."""
    path = tmp_path / "sessions"
    path.mkdir()
    return path


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    lines: list[tuple[str, str, dict[str, Any]]] = []
    for level in ("info", "warning", "error"):
        monkeypatch.setattr(
            recall.log, level, lambda event, _l=level, **fields: lines.append((_l, event, fields))
        )
    monkeypatch.setattr(recall, "_SKIPS_LOGGED", {})
    return lines


def within(seconds: float, work: Callable[[], Any], release: Callable[[], None]) -> Any:
    """`work()`'s result, or a failed test when it has not returned after `seconds`
    (then `release` lets it go, so that no thread is left waiting)."""
    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        release()
        thread.join(5)
        pytest.fail(f"still waiting after {seconds} s")
    return outcome[0]


def _open_for_writing(fifo: Path) -> None:
    with contextlib.suppress(OSError):  # no reader: nothing waits
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_a_fifo_renamed_over_a_walked_transcript_is_skipped_without_waiting_for_a_writer(
    shelf: RecallShelf,
    watched: Path,
    monkeypatch: pytest.MonkeyPatch,
    logged: list[tuple[str, str, dict[str, Any]]],
) -> None:
    # Given a watched directory where a FIFO took a transcript's name after the walk
    # saw a regular file there
    fifo = watched / "racy.jsonl"
    os.mkfifo(fifo)

    def walked_before_the_rename(paths: Any, *_args: Any, **_kwargs: Any) -> Any:
        yield SourceFile(str(fifo), "racy.jsonl")

    monkeypatch.setattr(protocol_recall, "walk_sources", walked_before_the_rename)
    # When the watcher ingests it
    files = within(
        5,
        lambda: recall.ingest_watched(shelf, WS, str(watched), None),
        lambda: _open_for_writing(fifo),
    )
    # Then it is skipped at once, as the walk skips a FIFO, and said so
    assert files == []
    assert (
        "info",
        "watched file skipped",
        {"path": str(fifo), "reason": "not a regular file"},
    ) in logged


def test_links_made_while_watching_are_followed_exactly_as_the_start_scan_follows_them(
    shelf: RecallShelf,
    tmp_path: Path,
    watched: Path,
    monkeypatch: pytest.MonkeyPatch,
    logged: list[tuple[str, str, dict[str, Any]]],
) -> None:
    # Given a watched directory with a transcript, and a directory elsewhere full of files
    (watched / "normal.jsonl").write_text(EXCHANGE)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "bin").mkdir(parents=True)
    for n in range(50):
        (elsewhere / "bin" / f"tool{n}").write_bytes(b"\x7fELF\x00" * 10)
    (elsewhere / "other.jsonl").write_text(EXCHANGE)
    recall.ingest_watched(shelf, WS, str(watched), None)
    read: list[str] = []

    def reading(path: str, *args: Any, **kwargs: Any) -> bytes:
        read.append(path)
        return protocol_read(path, *args, **kwargs)

    protocol_read = protocol_recall.read_regular
    monkeypatch.setattr(protocol_recall, "read_regular", reading)
    monkeypatch.setattr(recall, "read_regular", reading)
    # When links to that directory and to the transcript are made while it is watched
    (watched / "usrlink").symlink_to(elsewhere)
    (watched / "alias.jsonl").symlink_to(watched / "normal.jsonl")
    links = [str(watched / p) for p in ("alias.jsonl", "usrlink", "usrlink/bin/tool3")]
    on_events = recall.ingest_watched(shelf, WS, str(watched), links)
    events_logged = list(logged)
    # Then nothing through them is read or ingested, and only the link to a file is
    # logged, as no regular file: what a scan from the start does too
    assert on_events == []
    assert read == []
    assert [(e, f["path"], f["reason"]) for _l, e, f in events_logged] == [
        ("watched file skipped", str(watched / "alias.jsonl"), "not a regular file")
    ]
    monkeypatch.setattr(recall, "_SKIPS_LOGGED", {})
    logged.clear()
    recall.ingest_watched(shelf, WS, str(watched), None)
    assert logged == events_logged
    assert read == [str(watched / "normal.jsonl")] * 2  # its head, then all of it


def test_a_watched_file_that_cannot_be_read_is_tried_again_not_skipped(
    shelf: RecallShelf,
    watched: Path,
    monkeypatch: pytest.MonkeyPatch,
    logged: list[tuple[str, str, dict[str, Any]]],
) -> None:
    # Given a watched transcript that cannot be read yet (its mode not set by its writer)
    locked = watched / "locked.jsonl"
    locked.write_text(EXCHANGE)
    protocol_read = protocol_recall.read_regular

    def refused(path: str, *args: Any, **kwargs: Any) -> bytes:
        if path == str(locked) and refusing:
            raise PermissionError(13, "Permission denied", path)
        return protocol_read(path, *args, **kwargs)

    refusing = True
    monkeypatch.setattr(protocol_recall, "read_regular", refused)
    monkeypatch.setattr(recall, "read_regular", refused)
    retries = recall._Retries(WS, str(watched))  # noqa: SLF001
    # When the watcher ingests it
    (file,) = recall.ingest_watched(shelf, WS, str(watched), None)
    assert retries.settle(None, [file], now=0.0)
    # Then it failed for a reason that may pass, with a warning, and is due again in 1 s
    assert (file.report.status, file.report.reason, file.passing) == (
        "failed",
        "unreadable: Permission denied",
        True,
    )
    assert [(level, event) for level, event, _f in logged] == [
        ("warning", "watched file not ingested, tried again later")
    ]
    assert retries.due(recall.WATCH_ROOT_CHECK_S) == [str(locked)]
    # and once it can be read, the try again ingests it
    refusing = False
    (file,) = recall.ingest_watched(shelf, WS, str(watched), [str(locked)])
    assert (file.report.status, file.report.chunks) == ("ingested", 1)


def test_a_watched_json_file_in_no_known_format_is_logged_once_as_skipped(
    shelf: RecallShelf, watched: Path, logged: list[tuple[str, str, dict[str, Any]]]
) -> None:
    # Given a watched JSONL file of a shape no importer knows
    unknown = watched / "events.jsonl"
    unknown.write_text('{"kind": "tick", "n": 1}\n{"kind": "tick", "n": 2}\n')
    # When the watcher ingests it twice, unchanged
    recall.ingest_watched(shelf, WS, str(watched), None)
    recall.ingest_watched(shelf, WS, str(watched), [str(unknown)])
    # Then it is logged once as skipped, with the reason, as a binary file would be
    skips = [f for _l, event, f in logged if event == "watched file skipped"]
    assert [f["path"] for f in skips] == [str(unknown)]
    assert "JSON" in skips[0]["reason"]


@pytest.mark.anyio
async def test_a_batch_whose_store_is_closed_under_it_stops_with_one_line(
    shelf: RecallShelf,
    watched: Path,
    monkeypatch: pytest.MonkeyPatch,
    logged: list[tuple[str, str, dict[str, Any]]],
) -> None:
    # Given a watched directory of many transcripts
    for n in range(40):
        (watched / f"s{n:02}.jsonl").write_text(EXCHANGE.replace("quince", f"quince{n}"))
    read: list[str] = []
    complete_lines = recall._complete_lines  # noqa: SLF001

    def removing_on_the_third(text: str) -> str:
        read.append(text)
        if len(read) == 3:
            shelf.retire(WS)  # the workspace is removed while the batch runs
        return complete_lines(text)

    monkeypatch.setattr(recall, "_complete_lines", removing_on_the_third)
    published: list[Any] = []
    hub = SimpleNamespace(events=SimpleNamespace(publish=lambda *a, **k: published.append(k)))
    retries = recall._Retries(WS, str(watched))  # noqa: SLF001
    # When the watcher ingests the directory
    done = await recall._ingest_watched_batch(hub, shelf, WS, str(watched), None, retries)  # noqa: SLF001
    # Then the batch stops at the first file the closed store refuses, said once at
    # info, and no file is promised a try again
    assert not done
    assert len(read) == 3
    assert [(level, event) for level, event, _f in logged] == [
        ("info", "watched batch abandoned: its recall store was closed")
    ]
    assert retries.failing == {}


@pytest.mark.anyio
async def test_a_large_watched_batch_lets_other_ingests_in_between_its_slices(
    shelf: RecallShelf, watched: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    # Given a watched directory where many transcripts appeared at once
    for n in range(40):
        (watched / f"s{n:02}.jsonl").write_text(EXCHANGE.replace("quince", f"quince{n}"))
    monkeypatch.setattr(recall, "WATCH_SLICE_SOURCES", 5, raising=False)
    order: list[str] = []
    complete_lines = recall._complete_lines  # noqa: SLF001

    def reading(text: str) -> str:
        order.append("watched")
        return complete_lines(text)

    monkeypatch.setattr(recall, "_complete_lines", reading)
    hub = SimpleNamespace(events=SimpleNamespace(publish=lambda *_a, **_k: None))
    retries = recall._Retries(WS, str(watched))  # noqa: SLF001
    # When another ingest asks for the ingest slot once the batch has begun
    async with anyio.create_task_group() as group:
        group.start_soon(recall._ingest_watched_batch, hub, shelf, WS, str(watched), None, retries)  # noqa: SLF001
        with anyio.fail_after(10):
            while not order:
                await anyio.sleep(0.001)
        await anyio.to_thread.run_sync(order.append, "other", limiter=recall._INGEST)  # noqa: SLF001
    # Then it got the slot within a slice or two, not after the whole batch
    assert order.count("watched") == 40
    assert order.index("other") <= 10
