"""A purge removes the ingest lock files of the sources it purged: a watched directory
with one transcript per session made one lock file per session, kept forever."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from recall_fakes import options

import memhubd.recall.store.sqlite as sqlite_store
from memhub_protocol.scopes import ADMIN
from memhubd.auth.identity import Identity
from memhubd.recall.ids import content_hash, source_key
from memhubd.recall.ingest import SourceLock
from memhubd.recall.shelf import RecallSettings, RecallShelf
from memhubd.recall.store import AuditEntry
from memhubd.service import recall_admin

pytestmark = pytest.mark.anyio

ROOT = Identity("root", frozenset({ADMIN}), roles=frozenset({"*"}))
DELETE = AuditEntry("root", "test", "delete")


@pytest.fixture
def shelf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecallShelf]:
    monkeypatch.setattr(recall_admin, "host_for", lambda *_args: None)
    opened = RecallShelf(tmp_path / "recall", RecallSettings(vectors=False))
    yield opened
    opened.close()


def session(n: int) -> str:
    return f"# Session {n}\n\nWe talked about topic number {n} and what to do next.\n"


def lock_files(shelf: RecallShelf) -> set[str]:
    return {p.name for p in (shelf.directory / "locks" / "w").glob("*.lock")}


def named(*sources: str) -> set[str]:
    return {f"{source_key(s)}.lock" for s in sources}


def delete_source(shelf: RecallShelf, report_ids: list[str]) -> None:
    store = shelf.store("w")
    for drawer in report_ids:
        assert store.soft_delete(drawer, DELETE) is not None


async def purge(shelf: RecallShelf, before: int | None = None) -> dict[str, object]:
    hub = SimpleNamespace(recall=shelf)
    return await recall_admin.purge(hub, ROOT, "w", before, "api")  # type: ignore[arg-type]


async def test_sources_ingested_deleted_and_purged_leave_no_lock_files(
    shelf: RecallShelf,
) -> None:
    ingestor = shelf.ingestor("w")
    sources = [(f"sessions/{n}.md", session(n)) for n in range(60)]
    reports = ingestor.ingest_texts(sources, options(workspace="w"))
    assert all(r.status == "ingested" for r in reports), [r.as_dict() for r in reports]
    assert len(lock_files(shelf)) == 60
    for report in reports:
        delete_source(shelf, report.drawer_ids)
    answer = await purge(shelf)
    assert answer == {"workspace": "w", "before": None, "purged": 60, "reclaimed_bytes": 0}
    assert lock_files(shelf) == set()


async def test_purge_keeps_stripes_and_the_locks_of_sources_still_stored(
    shelf: RecallShelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingestor = shelf.ingestor("w")
    w = options(workspace="w")
    live = ingestor.ingest_text("live.md", session(1), w)
    old = ingestor.ingest_text("old.md", session(2), w)
    recent = ingestor.ingest_text("recent.md", session(3), w)
    note = ingestor.ingest_content("a note that locks on a stripe", w, "notes/today")
    assert all(r.status == "ingested" for r in (live, old, recent, note))
    stripe = f"manual-content:{content_hash('a note that locks on a stripe')[:2]}"
    assert lock_files(shelf) == named("live.md", "old.md", "recent.md", stripe)

    with monkeypatch.context() as clock:
        clock.setattr(sqlite_store, "_now", lambda: 1_000)
        delete_source(shelf, old.drawer_ids)
        clock.setattr(sqlite_store, "_now", lambda: 2_000)
        delete_source(shelf, recent.drawer_ids)

    # Deleted before 1,500: `old.md` goes; `recent.md` stays deleted and may come back.
    answer = await purge(shelf, before=1_500)
    assert answer["purged"] == len(old.drawer_ids)
    assert lock_files(shelf) == named("live.md", "recent.md", stripe)
    assert shelf.store("w").sources() == {"live.md", "recent.md", "notes/today"}


async def test_a_lock_held_during_the_purge_is_left(shelf: RecallShelf) -> None:
    ingestor = shelf.ingestor("w")
    report = ingestor.ingest_text("held.md", session(4), options(workspace="w"))
    delete_source(shelf, report.drawer_ids)
    with SourceLock(shelf.directory / "locks" / "w").hold("held.md"):
        assert (await purge(shelf))["purged"] == len(report.drawer_ids)
        assert lock_files(shelf) == named("held.md")
    await purge(shelf)
    assert lock_files(shelf) == set()


async def test_a_failure_to_prune_is_logged_and_the_purge_still_answers(
    shelf: RecallShelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingestor = shelf.ingestor("w")
    report = ingestor.ingest_text("x.md", session(5), options(workspace="w"))
    delete_source(shelf, report.drawer_ids)

    def broken(self: SourceLock, keep: object) -> int:
        raise PermissionError("lock directory not writable")

    monkeypatch.setattr(SourceLock, "prune", broken)
    # A recording logger of its own: structlog's capture misses a logger another test
    # of the same process already used (loggers are cached on first use).
    warned: list[str] = []
    recorder = SimpleNamespace(
        warning=lambda event, **_kw: warned.append(event),
        info=lambda *_a, **_kw: None,
        exception=lambda *_a, **_kw: None,
    )
    monkeypatch.setattr(recall_admin, "log", recorder)
    answer = await purge(shelf)
    assert answer["purged"] == len(report.drawer_ids)
    assert warned == ["ingest lock files not pruned"]
    assert shelf.store("w").sources() == set()


async def test_space_is_given_back_outside_the_slot_ingests_share(
    shelf: RecallShelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import anyio

    from memhubd.service import recall as recall_service

    report = shelf.ingestor("w").ingest_text("notes/a.md", session(1), options(workspace="w"))
    delete_source(shelf, list(report.drawer_ids))
    # Given a reclaim that takes as long as a first VACUUM of a large store
    started, release = threading.Event(), threading.Event()

    def slow_reclaim(self: object) -> int:
        started.set()
        release.wait(10)
        return 4096

    monkeypatch.setattr(sqlite_store.SQLiteStore, "reclaim", slow_reclaim)
    answers: list[dict[str, object]] = []

    async def run_purge() -> None:
        answers.append(await purge(shelf))

    async with anyio.create_task_group() as group:
        group.start_soon(run_purge)
        await anyio.to_thread.run_sync(started.wait, 10)
        # When another workspace ingests meanwhile, it does not wait for the reclaim
        with anyio.fail_after(5):
            await anyio.to_thread.run_sync(lambda: None, limiter=recall_service._INGEST)
        release.set()
    assert answers[0]["purged"] == 1 and answers[0]["reclaimed_bytes"] == 4096
