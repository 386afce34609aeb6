"""watch_workspace on real files: which changes reach on_change, and how it recovers."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from memhubd.runtime import watcher
from memhubd.runtime.watcher import watch_workspace, workspace_signature

pytestmark = pytest.mark.anyio

WAIT_S = 5  # generous upper bound; a call normally arrives within ~30 ms


class Handler:
    """An on_change that records its arguments and raises while `fail_next` > 0."""

    def __init__(self) -> None:
        self._send, self.calls = anyio.create_memory_object_stream[set[Path] | None](100)
        self.fail_next = 0

    async def __call__(self, paths: set[Path] | None) -> None:
        await self._send.send(paths)
        if self.fail_next > 0:
            self.fail_next -= 1
            raise RuntimeError("reload failed")


@asynccontextmanager
async def watching(root: Path, **options: Any) -> AsyncIterator[Handler]:
    handler = Handler()
    stop = anyio.Event()
    options.setdefault("rescan_interval_s", 0)
    with anyio.fail_after(30):  # a watcher that ignores stop_event fails the test, not hangs it
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: watch_workspace(root, handler, stop_event=stop, **options))
            yield handler
            stop.set()


async def next_call(handler: Handler) -> set[Path] | None:
    with anyio.fail_after(WAIT_S):
        return await handler.calls.receive()


async def no_call_within(handler: Handler, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        await handler.calls.receive()
        return False
    return True


async def until_watching(root: Path, handler: Handler) -> None:
    """Touch a probe source until the watcher reports it, then drop stray calls."""
    probe = root / "probe.mem"
    with anyio.fail_after(WAIT_S):
        while True:
            probe.write_text(str(time.monotonic()))
            with anyio.move_on_after(0.05):
                if probe in ((await handler.calls.receive()) or ()):
                    break
    await anyio.sleep(0.05)
    while not await no_call_within(handler, 0.05):
        pass


@pytest.fixture(autouse=True)
def quick_root_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    # How often a vanished root is looked for; production waits longer between looks.
    monkeypatch.setattr(watcher, "ROOT_CHECK_S", 0.1)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.mem").write_text('fact a { claim: "one" }\n')
    (root / "sub" / "b.mem").write_text('fact b { claim: "two" }\n')
    return root


async def test_edit_create_and_delete_report_the_paths(workspace: Path) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        (workspace / "a.mem").write_text('fact a { claim: "edited" }\n')
        assert await next_call(handler) == {workspace / "a.mem"}

        (workspace / "sub" / "new.mem").write_text('fact n { claim: "new" }\n')
        assert await next_call(handler) == {workspace / "sub" / "new.mem"}

        (workspace / "sub" / "b.mem").unlink()
        assert await next_call(handler) == {workspace / "sub" / "b.mem"}


async def test_manifest_and_schema_changes_are_reported(workspace: Path) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        (workspace / "memdsl.json").write_text('{"schemas": ["team.memschema.json"]}')
        assert await next_call(handler) == {workspace / "memdsl.json"}
        (workspace / "team.memschema.json").write_text("{}")
        assert await next_call(handler) == {workspace / "team.memschema.json"}


async def test_atomic_rename_save_reports_the_target_only(workspace: Path) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        temp = workspace / ".a.mem.tmp-1234"
        temp.write_text('fact a { claim: "saved atomically" }\n')
        os.replace(temp, workspace / "a.mem")

        assert await next_call(handler) == {workspace / "a.mem"}


async def test_rename_reports_old_and_new_names(workspace: Path) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        os.rename(workspace / "a.mem", workspace / "c.mem")

        seen: set[Path] = set()
        while seen != {workspace / "a.mem", workspace / "c.mem"}:
            seen |= await next_call(handler) or set()


async def test_irrelevant_files_are_ignored(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        # (a `.mem` under `.git` is a source, as a start reads it: not noise)
        for name in ("notes.txt", ".#a.mem", "a.mem~", ".a.mem.swp", "data.json", ".git/x.txt"):
            (workspace / name).write_text("noise")
        await anyio.sleep(0.1)
        (workspace / "a.mem").write_text('fact a { claim: "after the noise" }\n')

        assert await next_call(handler) == {workspace / "a.mem"}


async def test_a_directory_moved_in_or_out_asks_for_a_full_rescan(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "more").mkdir(parents=True)
    (outside / "more" / "c.mem").write_text('fact c { claim: "three" }\n')
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        os.rename(outside / "more", workspace / "more")
        assert await next_call(handler) is None

        os.rename(workspace / "sub", outside / "sub")
        assert await next_call(handler) is None


async def test_deleted_and_recreated_root_is_watched_again(workspace: Path) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        shutil.rmtree(workspace)
        assert await next_call(handler) is None  # gone: re-read (the loader keeps serving)

        workspace.mkdir()
        (workspace / "a.mem").write_text('fact a { claim: "back" }\n')
        assert await next_call(handler) is None  # back: re-read everything

        (workspace / "later.mem").write_text('fact l { claim: "seen" }\n')
        assert await next_call(handler) == {workspace / "later.mem"}


async def test_root_missing_at_start_is_awaited(tmp_path: Path) -> None:
    root = tmp_path / "not-yet"
    async with watching(root) as handler:
        await anyio.sleep(0.05)
        root.mkdir()
        (root / "a.mem").write_text('fact a { claim: "one" }\n')

        assert await next_call(handler) is None


async def test_rescan_catches_changes_that_no_event_reported(workspace: Path) -> None:
    async with watching(workspace, events=False, rescan_interval_s=0.05) as handler:
        assert await no_call_within(handler, 0.2)  # nothing changed, nothing reported

        # A same-size rewrite within the same second: what polling never reports.
        stat = (workspace / "a.mem").stat()
        (workspace / "a.mem").write_text('fact a { claim: "two" }\n')
        os.utime(workspace / "a.mem", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))

        assert await next_call(handler) is None
        assert await no_call_within(handler, 0.2)


async def test_a_failing_handler_does_not_stop_the_watcher(workspace: Path) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)
        handler.fail_next = 2

        (workspace / "a.mem").write_text('fact a { claim: "again" }\n')
        assert await next_call(handler) == {workspace / "a.mem"}
        (workspace / "a.mem").write_text('fact a { claim: "and again" }\n')
        assert await next_call(handler) == {workspace / "a.mem"}
        assert handler.fail_next == 0


async def test_rescan_retries_after_a_failed_handler(workspace: Path) -> None:
    async with watching(workspace, events=False, rescan_interval_s=0.05) as handler:
        assert await no_call_within(handler, 0.2)
        handler.fail_next = 1

        (workspace / "a.mem").write_text('fact a { claim: "edited" }\n')
        assert await next_call(handler) is None  # this call fails

        assert await next_call(handler) is None  # retried, though nothing changed since
        assert await no_call_within(handler, 0.2)  # and not again once it succeeded


async def test_polling_mode_reports_edits(workspace: Path) -> None:
    async with watching(workspace, force_polling=True) as handler:
        await until_watching(workspace, handler)

        (workspace / "sub" / "b.mem").write_text('fact b { claim: "polled" }\n')

        assert await next_call(handler) == {workspace / "sub" / "b.mem"}


async def test_stops_promptly_when_asked(workspace: Path) -> None:
    stop = anyio.Event()

    async def on_change(paths: set[Path] | None) -> None:
        pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: watch_workspace(workspace, on_change, stop_event=stop, rescan_interval_s=60)
        )
        await anyio.sleep(0.1)
        started = time.monotonic()
        stop.set()
    assert time.monotonic() - started < 0.3


def test_signature_covers_sources_only(workspace: Path) -> None:
    before = workspace_signature(workspace)
    (workspace / "notes.txt").write_text("ignored")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "x.txt").write_text("ignored")

    assert workspace_signature(workspace) == before
    (workspace / ".git" / "x.mem").write_text("a source, as a start reads it")
    assert workspace_signature(workspace) != before
    assert [entry[0] for entry in before or ()] == ["a.mem", os.path.join("sub", "b.mem")]
    assert workspace_signature(workspace / "absent") is None


async def test_a_batch_costs_its_paths_not_a_walk(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = []

    def counted(root: Path) -> Any:
        walks.append(root)
        return workspace_signature(root)

    monkeypatch.setattr(watcher, "workspace_signature", counted)
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)
        before = len(walks)

        # When batches of events are delivered
        (workspace / "sub" / "new.mem").write_text('fact n { claim: "new" }\n')
        assert await next_call(handler) == {workspace / "sub" / "new.mem"}
        (workspace / "a.mem").unlink()
        assert await next_call(handler) == {workspace / "a.mem"}

        # Then only their paths were looked at
        assert len(walks) == before


async def test_the_rescan_agrees_with_what_batches_reported(workspace: Path) -> None:
    async with watching(workspace, rescan_interval_s=0.2) as handler:
        await until_watching(workspace, handler)

        # Given edits reported as batches of paths
        (workspace / "sub" / "new.mem").write_text('fact n { claim: "new" }\n')
        (workspace / "a.mem").unlink()
        while not await no_call_within(handler, 0.5):
            pass

        # Then the periodic re-scan finds nothing more
        assert await no_call_within(handler, 1.0)
