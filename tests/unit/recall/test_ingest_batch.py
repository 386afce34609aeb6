"""Batch ingest (`Ingestor.ingest_texts`, one embedding call for many files) stores
exactly what ingesting the same files one by one stores."""

from __future__ import annotations

import contextvars
from pathlib import Path

from recall_fakes import HashingEmbedder, fixture_text, options

from memhubd.recall.ingest import Ingestor, SourceLock, SourceReport
from memhubd.recall.ingest import pipeline as pipeline_module
from memhubd.recall.ingest.pipeline import record_of
from memhubd.recall.store import DrawerFilter, DrawerStore, open_store

CLAUDE = "claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"


def sources() -> list[tuple[str, str]]:
    claude = fixture_text(CLAUDE)
    lines = claude.splitlines(keepends=True)
    return [
        ("a/s.jsonl", claude),
        ("b/notes.md", "# Plan\n\nShip the cache first.\n\n## Risks\n\nThe WAL grows.\n"),
        ("c/empty.txt", "   \n"),
        ("d/odd.jsonl", '{"type": "user"\nnot json\n'),  # read as plain text
        ("e/copy.jsonl", claude),  # same chunks under another source: duplicates
        ("f/part.jsonl", "".join(lines[:4])),
    ]


def snapshot(store: DrawerStore) -> list[tuple]:
    rows = [d for batch in store.iter_live(1000) for d in batch]
    return sorted(
        (d.id, d.room, d.content, d.source_file, d.chunk_index, d.speaker, d.said_at) for d in rows
    )


def self_similarity(store: DrawerStore, embedder: HashingEmbedder) -> list[float]:
    """Each live drawer's cosine with the embedding of its own content."""
    scores = []
    for batch in store.iter_live(1000):
        for drawer in batch:
            query = embedder.embed([drawer.content])[0]
            best = store.nearest(query, record_of(embedder), DrawerFilter(), 1)[0]
            scores.append(best.score)
    return scores


def run(tmp_path: Path, name: str, batched: bool):
    store = open_store(tmp_path / f"{name}.db")
    embedder = HashingEmbedder()
    ingestor = Ingestor(store, embedder, SourceLock(tmp_path / f"{name}-locks"))
    if batched:
        reports = ingestor.ingest_texts(sources(), options())
    else:
        reports = [ingestor.ingest_text(s, t, options()) for s, t in sources()]
    return store, embedder, [(r.source, r.status, r.chunks, r.duplicates) for r in reports]


def test_batch_ingest_stores_what_one_by_one_ingest_stores(tmp_path: Path) -> None:
    one, embedder, one_reports = run(tmp_path, "one", batched=False)
    many, _embedder, many_reports = run(tmp_path, "many", batched=True)
    assert many_reports == one_reports
    assert [r[1] for r in many_reports] == [
        "ingested",
        "ingested",
        "skipped",
        "ingested",
        "unchanged",
        "ingested",
    ]
    assert snapshot(many) == snapshot(one)
    # Every stored drawer's vector is its own content's embedding (found first, cosine 1).
    assert all(abs(score - 1.0) < 1e-5 for score in self_similarity(many, embedder))
    one.close()
    many.close()


def test_groups_smaller_than_the_batch_give_the_same_store(tmp_path: Path, monkeypatch) -> None:
    one, _embedder, one_reports = run(tmp_path, "one", batched=False)
    monkeypatch.setattr(pipeline_module, "EMBED_BATCH", 2)
    many, _embedder, many_reports = run(tmp_path, "many", batched=True)
    assert many_reports == one_reports
    assert snapshot(many) == snapshot(one)
    one.close()
    many.close()


def test_a_failing_file_is_reported_by_the_guard_and_the_rest_is_stored(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db")
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    original = ingestor._store
    seen = []

    def store_or_fail(report, drawers, opts, **kwargs):
        if report.source == "b/notes.md":
            raise RuntimeError("disk on fire")
        return original(report, drawers, opts, **kwargs)

    def guard(work, source):
        try:
            return work()
        except RuntimeError as error:
            seen.append(source)
            return SourceReport(source, "failed", str(error))

    ingestor._store = store_or_fail  # type: ignore[method-assign]
    reports = ingestor.ingest_texts(sources()[:2], options(), guard)
    assert [(r.source, r.status) for r in reports] == [
        ("a/s.jsonl", "ingested"),
        ("b/notes.md", "failed"),
    ]
    assert seen == ["b/notes.md"]
    assert {d.source_file for batch in store.iter_live(1000) for d in batch} == {"a/s.jsonl"}
    store.close()


def test_files_are_written_in_order_with_the_callers_context(tmp_path: Path, monkeypatch) -> None:
    # Given groups of two drawers, written by a second thread while the next is embedded
    monkeypatch.setattr(pipeline_module, "EMBED_BATCH", 2)
    store = open_store(tmp_path / "s.db")
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(tmp_path / "locks"))
    request = contextvars.ContextVar("request", default="none")
    request.set("req-7")
    seen: list[tuple[str, str]] = []

    def guard(work, source):
        seen.append((source, request.get()))
        return work()

    # When a batch is ingested
    reports = ingestor.ingest_texts(sources(), options(), guard)
    # Then each file was prepared, then written, in source order, with the caller's context
    names = [name for name, _text in sources()]
    assert [r.source for r in reports] == names
    calls = [name for name, _ in seen]
    prepared = [name for i, name in enumerate(calls) if name not in calls[:i]]
    written = [name for i, name in enumerate(calls) if name in calls[:i]]
    assert prepared == names
    assert written == [r.source for r in reports if r.status != "skipped"]
    assert {value for _, value in seen} == {"req-7"}
    store.close()
