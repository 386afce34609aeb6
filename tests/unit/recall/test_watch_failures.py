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
