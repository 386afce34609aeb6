"""An exchange deleted on purpose is not found through its neighbours: each drawer's
context holds the end of the exchange before it and the start of the one after, and a
delete takes the deleted exchange's text out of them (FTS5 and the index in memory
follow, exactly and without a rebuild); a re-ingest of the source leaves it out, and a
purge takes out what a delete made before this left behind."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
import structlog
from recall_fakes import HashingEmbedder, options
from test_lexical import assert_same, from_fts
from test_store import fts_consistent

from memhubd.recall.context import leave_out, neighbours, with_day
from memhubd.recall.ingest import Ingestor, SourceLock
from memhubd.recall.store import AuditEntry, DrawerFilter, bm25, open_store
from memhubd.recall.store.sqlite import SQLiteStore

SOURCE = "claude/s5.jsonl"
SECRET = "hunter2-ZX81-secret"
EXCHANGES = [
    ("How do I rotate the deploy key?", "Run the rotate script in ops/keys."),
    (f"Oops, here is the prod password: {SECRET}, ignore it", "I will not store it."),
    ("Now what about the staging cluster?", "Staging uses the same rotate script."),
    ("And the canary hosts?", "They follow staging an hour later."),
]
BACKGROUND = "".join(
    f"# {topic}\n\nThe {topic} runbook lists owners, alerts and dashboards.\n\n"
    for topic in ("billing", "search", "mobile", "email", "identity", "storage")
)
QUERIES = (["hunter2"], ["zx81", "secret"], ["rotate"], ["staging", "canary"])
DELETE = AuditEntry("tester", "test", "delete")
PURGE = AuditEntry("tester", "test", "purge")


def transcript(count: int = len(EXCHANGES)) -> str:
    lines = []
    for number, (question, answer) in enumerate(EXCHANGES[:count]):
        stamp = f"2025-06-{3 + number:02d}T09:00:00Z"
        for role, text in (("user", question), ("assistant", answer)):
            message = {"role": role, "content": text}
            lines.append(json.dumps({"type": role, "timestamp": stamp, "message": message}))
    return "\n".join(lines) + "\n"


def opened(path: Path, count: int = len(EXCHANGES)) -> tuple[SQLiteStore, Ingestor]:
    store = open_store(path)
    assert isinstance(store, SQLiteStore)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(path.with_suffix(".locks")))
    ingestor.ingest_text("notes/runbooks.md", BACKGROUND, options())
    ingestor.ingest_text(SOURCE, transcript(count), options())
    return store, ingestor


def secret_drawer(store: SQLiteStore) -> str:
    (found,) = [d.id for b in store.iter_live(100) for d in b if SECRET in d.content]
    return found


def holding_secret(path: Path, *, live: bool = True) -> list[str]:
    """The ids of the live rows (or of every row) whose content or context holds it."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT id FROM drawers WHERE (content LIKE ? OR context LIKE ?) "
            f"{'AND deleted_at IS NULL' if live else ''} ORDER BY rowid",
            (f"%{SECRET}%", f"%{SECRET}%"),
        )
        return [r[0] for r in rows.fetchall()]


def live_contexts(path: Path) -> dict[str, str | None]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT id, context FROM drawers WHERE deleted_at IS NULL")
        return dict(rows.fetchall())


def assert_ranked_as_fts5(store: SQLiteStore) -> None:
    for terms in QUERIES:
        memory = store._lexical.ranked(terms, DrawerFilter(), 20, (1.0, 0.5, 0.5))
        assert memory is not None  # answered from memory, not handed to FTS5
        assert_same(
            store.lexical(terms, DrawerFilter(), 20), from_fts(store, terms, DrawerFilter(), 20)
        )


# -- the context itself -----------------------------------------------------------------


def test_leaving_out_an_exchange_removes_it_only_where_a_neighbour_stands() -> None:
    day = 1748941200  # 3 June 2025
    before, after = "> why?\nBecause.", "> and then?\nThen this."
    # Given the contexts an exchange takes from the one before it and the one after it
    both = with_day(day, neighbours(before, after))
    assert both == f"3 June 2025\n{before}\n{after}"
    # Then each leaves by its own place, the day staying
    assert leave_out(both, day, before) == f"3 June 2025\n{after}"
    assert leave_out(both, day, after) == f"3 June 2025\n{before}"
    assert leave_out(with_day(day, neighbours(before, None)), day, before) == "3 June 2025"
    assert leave_out(neighbours(None, after), None, after) == ""
    # and only the end of a long exchange before, the start of a long one after
    long = "x" * 200 + " " + "y" * 400
    assert leave_out(with_day(day, neighbours(long, after)), day, long) == f"3 June 2025\n{after}"
    assert leave_out(neighbours(before, long), None, long) == before
    # but text found elsewhere (the day itself, an exchange in the middle) is another's
    assert leave_out(both, day, "3 June 2025") == both
    assert leave_out(both, day, "Because.") == both


# -- a delete ---------------------------------------------------------------------------


@pytest.mark.parametrize("in_memory", [True, False], ids=["index", "fts5"])
def test_a_deleted_exchange_is_not_found_through_its_neighbours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: bool
) -> None:
    monkeypatch.setattr(bm25, "ENABLED", in_memory)
    # Given a transcript whose second exchange holds a secret, searched once
    path = tmp_path / "ws.db"
    store, _ingestor = opened(path)
    try:
        assert len(store.lexical(["hunter2"], DrawerFilter(), 10)) == 3
        before = {d.id: d for b in store.iter_live(100) for d in b}
        secret = secret_drawer(store)
        # When that exchange is deleted
        assert store.soft_delete(secret, DELETE) is not None
        # Then no live drawer holds the secret, and BM25 finds nothing by it
        assert holding_secret(path) == []
        assert store.lexical(["hunter2"], DrawerFilter(), 10) == []
        assert store.lexical(["zx81", "secret"], DrawerFilter(), 10) == []
        # and the neighbours are the same drawers still (id, text, writer, time, vector)
        after = {d.id: d for b in store.iter_live(100) for d in b}
        assert set(after) == set(before) - {secret}
        for identifier, drawer in after.items():
            assert replace(drawer, rowid=0, updated_at=0) == replace(
                before[identifier], rowid=0, updated_at=0
            )
        with sqlite3.connect(path) as connection:
            unvectored = connection.execute(
                "SELECT count(*) FROM drawers d LEFT JOIN vectors v ON v.rowid = d.rowid "
                "WHERE d.deleted_at IS NULL AND v.rowid IS NULL"
            ).fetchone()[0]
        assert unvectored == 0
        fts_consistent(path)
    finally:
        store.close()


def test_the_index_in_memory_follows_a_delete_exactly_and_without_a_rebuild(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.db"
    store, _ingestor = opened(path)
    try:
        assert store.settle_lexical()
        built = store._lexical._current
        store.soft_delete(secret_drawer(store), DELETE)
        assert_ranked_as_fts5(store)
        assert store._lexical._current is built
        assert store._lexical.ranked(["hunter2"], DrawerFilter(), 10, (1.0, 0.5, 0.5)) == []
    finally:
        store.close()


def test_a_purge_after_a_delete_leaves_no_row_holding_the_text(tmp_path: Path) -> None:
    path = tmp_path / "ws.db"
    store, _ingestor = opened(path)
    try:
        store.soft_delete(secret_drawer(store), DELETE)
        store.purge(None, PURGE)
        assert holding_secret(path, live=False) == []
        assert store.lexical(["hunter2"], DrawerFilter(), 10) == []
        fts_consistent(path)
    finally:
        store.close()


def test_a_purge_right_after_a_delete_is_followed_without_a_rebuild(tmp_path: Path) -> None:
    # Given the index in memory, a delete (whose neighbours are stored again) and a purge
    # before any search catches up with either
    path = tmp_path / "ws.db"
    store, _ingestor = opened(path)
    try:
        store.settle_lexical()
        built = store._lexical._current
        store.soft_delete(secret_drawer(store), DELETE)
        assert store.purge(None, PURGE) == 3
        # When a search catches up: the purged rows leave, the neighbours' copies stay
        with structlog.testing.capture_logs() as logs:
            assert_ranked_as_fts5(store)
        # Then the index follows without dropping itself (FTS5 would answer meanwhile)
        assert store._lexical._current is built
        assert not [e for e in logs if "disagrees" in e["event"]]
    finally:
        store.close()


# -- a re-ingest ------------------------------------------------------------------------


def test_re_ingesting_the_source_leaves_the_deleted_exchange_out_of_the_context(
    tmp_path: Path,
) -> None:
    # Given the first three exchanges ingested, the secret's deleted
    path = tmp_path / "ws.db"
    store, ingestor = opened(path, 3)
    try:
        store.soft_delete(secret_drawer(store), DELETE)
        # When the same file comes again, then grown by an exchange
        again = ingestor.ingest_text(SOURCE, transcript(3), options())
        grown = ingestor.ingest_text(SOURCE, transcript(4), options())
        # Then the first writes nothing (the contexts are as the delete left them), and
        # neither brings the exchange or its text back
        assert (again.status, again.deleted, again.chunks) == ("unchanged", 1, 0)
        assert (grown.deleted, grown.chunks) == (1, 1)
        assert holding_secret(path) == []
        # while the exchange before the new one took its start, as it would have
        (third,) = [c for c in live_contexts(path).values() if c and EXCHANGES[3][0] in c]
        assert third.startswith("5 June 2025\n")
        assert store.lexical(["hunter2"], DrawerFilter(), 10) == []
        assert_ranked_as_fts5(store)
        fts_consistent(path)
    finally:
        store.close()


# -- stores deleted in before this ------------------------------------------------------


def delete_as_before(path: Path, store: SQLiteStore) -> None:
    """Soft-delete the secret's drawer as a store did before deletes reached the
    neighbours' context (its audit entry naming it, so it reads as deleted on purpose)."""
    identifier = secret_drawer(store)
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE drawers SET deleted_at = 1, updated_at = 1 WHERE id = ?", (identifier,)
        )
        connection.execute(
            "INSERT INTO audit (at, identity, door, action, detail) VALUES (1, 't', 't', "
            "'delete', ?)",
            (json.dumps({"drawer_id": identifier}),),
        )


def test_a_purge_takes_the_text_out_of_the_context_an_older_delete_left(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.db"
    store, _ingestor = opened(path)
    try:
        store.settle_lexical()
        delete_as_before(path, store)
        assert len(holding_secret(path)) == 2  # its neighbours
        # When the store is purged
        assert store.purge(None, PURGE) == 1
        # Then no row holds the text any more, and both rankings agree on it
        assert holding_secret(path, live=False) == []
        assert store.lexical(["hunter2"], DrawerFilter(), 10) == []
        assert_ranked_as_fts5(store)
        fts_consistent(path)
    finally:
        store.close()


def test_a_re_ingest_takes_the_text_out_of_the_context_an_older_delete_left(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.db"
    store, ingestor = opened(path)
    try:
        delete_as_before(path, store)
        report = ingestor.ingest_text(SOURCE, transcript(), options())
        assert (report.deleted, report.chunks) == (1, 0)
        assert holding_secret(path) == []
        assert store.lexical(["hunter2"], DrawerFilter(), 10) == []
        fts_consistent(path)
    finally:
        store.close()


def test_a_delete_leaves_another_writers_copy_of_the_source_as_it_is(tmp_path: Path) -> None:
    def live_of(identity: str) -> dict[str, tuple[int, str | None]]:
        with sqlite3.connect(path) as connection:
            rows = connection.execute(
                "SELECT id, rowid, context FROM drawers WHERE deleted_at IS NULL AND identity = ?",
                (identity,),
            )
            return {i: (rowid, context) for i, rowid, context in rows.fetchall()}

    # Given the same transcript ingested by alice for leads only, and by bob in his room
    path = tmp_path / "ws.db"
    store = open_store(path)
    assert isinstance(store, SQLiteStore)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(path.with_suffix(".locks")))
    alice = options(identity="alice", readers=("lead",), room="leads", replaces_others=False)
    bob = options(identity="bob", room="bobs", replaces_others=False)
    try:
        ingestor.ingest_text(SOURCE, transcript(), alice)
        ingestor.ingest_text(SOURCE, transcript(), bob)
        alices = live_of("alice")
        (bobs_secret,) = [
            d.id
            for b in store.iter_live(100)
            for d in b
            if d.identity == "bob" and SECRET in d.content
        ]
        # When bob deletes his copy of the exchange
        assert store.soft_delete(bobs_secret, DELETE) is not None
        # Then alice's drawers, which bob may not read, are the same rows as before
        assert live_of("alice") == alices
        assert sum(SECRET in (c or "") for _r, c in alices.values()) == 2  # her neighbours
        # and bob's neighbours lost the text
        assert not any(SECRET in (c or "") for _r, c in live_of("bob").values())
    finally:
        store.close()
