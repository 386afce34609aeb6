"""A watched transcript directory whose watch cannot be armed is tried again, and the
failure never leaves its watcher: it would end the daemon's lifespan (every workspace's
reloads with it) while the server kept answering."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
import watchfiles

from memhubd.service import recall

pytestmark = pytest.mark.anyio

EXCHANGE = (
    '{{"type":"user","message":{{"role":"user","content":"Where does the {0} export run?"}}}}\n'
    '{{"type":"assistant","message":{{"role":"assistant","content":"On {0}-3."}}}}\n'
)


async def test_a_watch_that_cannot_be_armed_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def refused(path: str, **_settings: Any) -> Any:
        calls.append(path)
        raise OSError("OS file watch limit reached")

    monkeypatch.setattr(watchfiles, "awatch", refused)
    monkeypatch.setattr(recall, "WATCH_ROOT_CHECK_S", 0.02)
    served = SimpleNamespace(succeeded_by=None)  # the workspace the directory is watched for
    hub = SimpleNamespace(recall=object(), hosts={"w": served}, events=None)
    with anyio.move_on_after(1.0):
        await recall._watch_one(hub, "w", str(tmp_path))  # noqa: SLF001
    assert len(calls) >= 3  # tried again, and nothing escaped


async def test_a_store_that_cannot_be_opened_is_logged_once_not_on_every_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.recall.shelf import RecallShelf

    tracebacks: list[str] = []
    monkeypatch.setattr(recall.log, "exception", lambda event, **_fields: tracebacks.append(event))
    shelf = RecallShelf(tmp_path / "recall")
    shelf.retire("team")  # its store refuses to open, on every try alike
    watched = tmp_path / "sessions"
    watched.mkdir()
    session = watched / "a.jsonl"
    session.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    hub = SimpleNamespace(events=SimpleNamespace(publish=lambda *_a, **_k: None))
    retries = recall._Retries("team", str(watched))  # noqa: SLF001
    await recall._ingest_watched_batch(hub, shelf, "team", str(watched), [str(session)], retries)  # noqa: SLF001
    for _ in range(5):
        due = retries.due(float("inf"))
        assert due == [str(session)]  # still tried again
        await recall._ingest_watched_batch(hub, shelf, "team", str(watched), due, retries)  # noqa: SLF001
    assert tracebacks == ["watched ingest failed"]


async def test_a_directory_whose_watch_cannot_be_armed_is_scanned_and_polled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.recall.shelf import RecallShelf

    # Given a watched directory holding a transcript, and a subdirectory the daemon may
    # not read, so that no recursive watch can be armed on it
    def refused(path: str, **_settings: Any) -> Any:
        raise PermissionError(f"Permission denied (os error 13) about [{path}/.private]")

    monkeypatch.setattr(watchfiles, "awatch", refused)
    monkeypatch.setattr(recall, "WATCH_ROOT_CHECK_S", 0.02)
    errors: list[str] = []
    monkeypatch.setattr(recall.log, "error", lambda event, **_fields: errors.append(event))
    watched = tmp_path / "sessions"
    watched.mkdir()
    (watched / "before.jsonl").write_text(EXCHANGE.format("quince"))
    shelf = RecallShelf(tmp_path / "recall")
    added: list[int] = []
    served = SimpleNamespace(succeeded_by=None)
    hub = SimpleNamespace(
        recall=shelf,
        hosts={"team": served},
        events=SimpleNamespace(publish=lambda *_a, chunks, **_k: added.append(chunks)),
    )
    # When it is watched, and a transcript is written there meanwhile
    async with anyio.create_task_group() as group:
        group.start_soon(recall._watch_one, hub, "team", str(watched))  # noqa: SLF001
        with anyio.fail_after(10):
            while sum(added) < 1:
                await anyio.sleep(0.02)
            (watched / "after.jsonl").write_text(EXCHANGE.format("medlar"))
            while sum(added) < 2:
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()
    shelf.close()
    # Then both were ingested (the one there at start, the one written later), and the
    # failure to arm the watch was said once
    assert sum(added) == 2
    assert errors == ["watching transcripts failed: polled until a watch can be armed"]


async def test_a_polled_directory_whose_full_ingest_keeps_failing_is_tried_ever_less_often(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polled because no watch can be armed, with a full ingest that fails every time: it
    is tried again as a watched directory's is, ever less often, not at every look; and
    the failure to arm the watch is logged with its cause, not the task group's wrapper."""

    def refused(path: str, **_settings: Any) -> Any:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [PermissionError("no .private")])

    monkeypatch.setattr(watchfiles, "awatch", refused)
    monkeypatch.setattr(recall, "WATCH_ROOT_CHECK_S", 0.02)
    logged: list[dict] = []
    monkeypatch.setattr(recall.log, "error", lambda event, **fields: logged.append(fields))
    tries: list[list[str] | None] = []

    async def failing(_hub: Any, _shelf: Any, _name: str, _root: str, paths: Any, _r: Any) -> bool:
        tries.append(paths)
        return False

    monkeypatch.setattr(recall, "_ingest_watched_batch", failing)
    watched = tmp_path / "sessions"
    watched.mkdir()
    served = SimpleNamespace(succeeded_by=None)
    hub = SimpleNamespace(recall=object(), hosts={"team": served}, events=None)
    with anyio.move_on_after(1.5):
        await recall._watch_one(hub, "team", str(watched))  # noqa: SLF001
    # 0.02 s doubling: about seven tries in 1.5 s, where a try at each look made 75
    assert 3 <= len(tries) <= 12, len(tries)
    assert logged and logged[0]["error"] == "PermissionError: no .private"


def test_a_watched_path_that_cannot_be_a_directory_is_none() -> None:
    from memhubd.service.recall import _directory_identity

    assert _directory_identity("/tmp/a\0b") is None
    assert _directory_identity("/proc/self/status") is None


async def test_a_whole_directory_ingested_says_once_what_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.recall.shelf import RecallSettings, RecallShelf

    told: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(recall.log, "info", lambda event, **fields: told.append((event, fields)))
    shelf = RecallShelf(tmp_path / "recall", RecallSettings(vectors=False))
    watched = tmp_path / "sessions"
    watched.mkdir()
    for name in ("a", "b"):
        (watched / f"{name}.jsonl").write_text(EXCHANGE.format(name))
    hub = SimpleNamespace(events=SimpleNamespace(publish=lambda *_a, **_k: None))
    try:
        for _ in range(2):  # a start's scan, then another finding nothing new
            retries = recall._Retries("team", str(watched))  # noqa: SLF001
            await recall._ingest_watched_batch(hub, shelf, "team", str(watched), None, retries)  # noqa: SLF001
        (watched / "a.jsonl").write_text(EXCHANGE.format("c"))  # a changed file
        await recall._ingest_watched_batch(hub, shelf, "team", str(watched), None, retries)  # noqa: SLF001
    finally:
        shelf.close()
    scans = [fields for event, fields in told if event == "watched directory ingested"]
    assert [(s["files"], s["chunks"], s["replaced"]) for s in scans] == [(2, 2, 0), (1, 1, 1)]
