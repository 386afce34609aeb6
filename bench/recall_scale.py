"""Recall at scale (not a test; prints numbers): ingest throughput including embedding,
and search latency and RSS at growing store sizes.

Synthetic text: Zipf-distributed words over a made-up vocabulary, 15-60 words per
drawer, in chat transcripts of 20 exchanges (ingest) or as drawers written in batches
(for the larger sizes). Search: 200 queries of 2-6 words, hybrid (BM25 + vectors),
timed once the vector index and the in-memory BM25 index are built (exact below 20,000
vectors, IVF above); each size also reports the BM25 and vector parts alone, BM25 from
memory against FTS5 (interleaved, alone and within the whole search), the BM25 index's
bytes per drawer, the share of the exact vector top 200 the index finds, and how much
of the fused top 10 matches an exact-vector search.

    .venv/bin/python bench/recall_scale.py [--sizes 10000,100000] [--ingest 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

# One BLAS thread per search, as the daemon should run (docs/recall.md): a threaded
# gemv on a busy machine was 30-100x slower than a single-threaded one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from memhubd.recall import vectors  # noqa: E402
from memhubd.recall.embed import load_embedder  # noqa: E402
from memhubd.recall.ids import content_hash, drawer_id  # noqa: E402
from memhubd.recall.ingest import IngestOptions, Ingestor, SourceLock  # noqa: E402
from memhubd.recall.search import query_terms, search  # noqa: E402
from memhubd.recall.store import (  # noqa: E402
    AuditEntry,
    DrawerFilter,
    EmbedderRecord,
    NewDrawer,
    bm25,
    open_store,
)

SYLLABLES = "ka lo mi ne ru ta shi po ve da gu re so ni ba te fo ly".split()
QUERIES = 200
STOP_RANKS = 200


class Words:
    """A deterministic Zipf sampler over 20,000 made-up words."""

    def __init__(self, seed: int = 7) -> None:
        rng = random.Random(seed)
        self.vocabulary = [
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(20_000)
        ]
        ranks = np.arange(1, len(self.vocabulary) + 1)
        weights = 1 / ranks**1.1
        self.cumulative = np.cumsum(weights / weights.sum())
        self.rng = np.random.default_rng(seed)

    def query(self, low: int, high: int) -> str:
        """Query words skip the 200 most frequent ones, as the product's stopword list
        does for English (a term found in nearly every drawer makes BM25 score them all)."""
        count = int(self.rng.integers(low, high + 1))
        picks = self.rng.integers(STOP_RANKS, 5000, size=count)
        return " ".join(self.vocabulary[i] for i in picks)

    def text(self, low: int, high: int) -> str:
        count = int(self.rng.integers(low, high + 1))
        picks = np.searchsorted(self.cumulative, self.rng.random(count))
        return " ".join(self.vocabulary[min(i, len(self.vocabulary) - 1)] for i in picks)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def transcript(words: Words, exchanges: int) -> str:
    lines = []
    for _ in range(exchanges):
        lines.append(
            json.dumps({"type": "user", "message": {"role": "user", "content": words.text(8, 25)}})
        )
        lines.append(
            json.dumps(
                {
                    "type": "assistant",
                    "message": {"role": "assistant", "content": words.text(15, 60)},
                }
            )
        )
    return "\n".join(lines) + "\n"


def measure_ingest(
    directory: Path, embedder: object, words: Words, chunks: int
) -> dict[str, float]:
    store = open_store(directory / "ingest.db")
    ingestor = Ingestor(store, embedder, SourceLock(directory / "locks"))  # type: ignore[arg-type]
    options = IngestOptions(workspace="bench", identity="bench", door="bench")
    files = [transcript(words, 20) for _ in range(chunks // 20)]
    load = os.getloadavg()[0]
    started, cpu = time.perf_counter(), time.process_time()
    reports = ingestor.ingest_texts(((f"s{i}.jsonl", t) for i, t in enumerate(files)), options)
    written = sum(report.chunks for report in reports)
    seconds = time.perf_counter() - started
    # CPU time of every thread: steadier than wall time on a shared machine.
    cpu = time.process_time() - cpu
    store.close()
    return {
        "chunks": written,
        "seconds": round(seconds, 2),
        "chunks_per_s": round(written / seconds),
        "cpu_s": round(cpu, 2),
        "chunks_per_cpu_s": round(written / cpu),
        "load": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def grow(store: object, embedder: object, words: Words, start: int, stop: int) -> None:
    record = EmbedderRecord(embedder.name, embedder.dimension)  # type: ignore[attr-defined]
    for first in range(start, stop, 5000):
        texts = [words.text(15, 60) for _ in range(first, min(stop, first + 5000))]
        drawers = [
            NewDrawer(
                id=drawer_id("bench", "default", f"{first + i}\n{t}"),
                room=f"room{(first + i) % 20}",
                content=t,
                source_file=f"synthetic/{(first + i) // 100}",
                source_kind="text",
                chunk_index=(first + i) % 100,
                content_hash=content_hash(t),
                identity="bench",
            )
            for i, t in enumerate(texts)
        ]
        vectors = embedder.embed(texts)  # type: ignore[attr-defined]
        store.write(drawers, vectors, record, AuditEntry("bench", "bench", "ingest"))  # type: ignore[attr-defined]


def timed(run: object, count: int) -> list[float]:
    latencies = []
    for i in range(count):
        started = time.perf_counter()
        run(i)  # type: ignore[operator]
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def measure_search(store: object, embedder: object, words: Words) -> dict[str, float]:
    queries = [words.query(2, 6) for _ in range(QUERIES)]
    started = time.perf_counter()
    store.settle_vectors()  # type: ignore[attr-defined]  # loads vectors, builds the index
    settle_s = time.perf_counter() - started
    started = time.perf_counter()
    store.settle_lexical()  # type: ignore[attr-defined]  # builds the BM25 index
    lexical_settle_s = time.perf_counter() - started
    search(store, embedder, queries[0], DrawerFilter(), 10)  # type: ignore[arg-type]  # warm the cache
    latencies = timed(lambda i: search(store, embedder, queries[i], DrawerFilter(), 10), QUERIES)  # type: ignore[arg-type]
    record = EmbedderRecord(embedder.name, embedder.dimension)  # type: ignore[attr-defined]
    query_vectors = embedder.embed(queries)  # type: ignore[attr-defined]
    lexical = timed(
        lambda i: store.lexical(query_terms(queries[i]), DrawerFilter(), 200),  # type: ignore[attr-defined]
        QUERIES,
    )
    memory_ms, fts_ms = bm25_interleaved(store, queries)
    search_memory_ms, search_fts_ms = bm25_interleaved(store, queries, embedder)
    nearest = timed(
        lambda i: store.nearest(query_vectors[i], record, DrawerFilter(), 200),  # type: ignore[attr-defined]
        QUERIES,
    )
    return {
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(float(np.percentile(latencies, 99)), 2),
        "bm25_p50_ms": round(statistics.median(lexical), 2),
        "bm25_memory_vs_fts5_p50_ms": [
            round(statistics.median(memory_ms), 2),
            round(statistics.median(fts_ms), 2),
        ],
        "search_bm25_memory_vs_fts5_p50_ms": [
            round(statistics.median(search_memory_ms), 2),
            round(statistics.median(search_fts_ms), 2),
        ],
        "vector_p50_ms": round(statistics.median(nearest), 2),
        "index_settle_s": round(settle_s, 1),
        "bm25_index_settle_s": round(lexical_settle_s, 1),
        "bm25_index_bytes_per_drawer": round(
            store._lexical.nbytes / max(1, store.status().drawer_count)  # type: ignore[attr-defined]
        ),
        **compare_exact(store, embedder, queries, query_vectors, record),
    }


def bm25_interleaved(
    store: object, queries: list[str], embedder: object | None = None
) -> tuple[list[float], list[float]]:
    """BM25 alone (or, given the embedder, the whole search) with BM25 from the in-memory
    index and from FTS5, query by query in turn (so the ratio holds on a busy machine)."""
    memory, fts = [], []
    for query in queries:
        for enabled, into in ((True, memory), (False, fts)):
            bm25.ENABLED = enabled
            try:
                started = time.perf_counter()
                if embedder is None:
                    store.lexical(query_terms(query), DrawerFilter(), 200)  # type: ignore[attr-defined]
                else:
                    search(store, embedder, query, DrawerFilter(), 10)  # type: ignore[arg-type]
                into.append((time.perf_counter() - started) * 1000)
            finally:
                bm25.ENABLED = True
    return memory, fts


def compare_exact(
    store: object, embedder: object, queries: list[str], query_vectors: np.ndarray, record: object
) -> dict[str, float]:
    """The index against an exact scan (every list probed) on the same queries: time,
    the share of the exact top 200 found, and the fused top 10 left unchanged."""
    found, fused, exact_ms, index_ms = [], [], [], []
    approximate = [
        [h.drawer.id for h in search(store, embedder, q, DrawerFilter(), 10).hits]  # type: ignore[arg-type]
        for q in queries
    ]
    share = vectors.PROBE_SHARE
    vectors.PROBE_SHARE = 1.0  # probing every list is an exact scan
    try:
        for i, query in enumerate(queries):
            started = time.perf_counter()
            exact = store.nearest(query_vectors[i], record, DrawerFilter(), 200)  # type: ignore[attr-defined]
            exact_ms.append((time.perf_counter() - started) * 1000)
            vectors.PROBE_SHARE = share
            started = time.perf_counter()
            approx = store.nearest(query_vectors[i], record, DrawerFilter(), 200)  # type: ignore[attr-defined]
            index_ms.append((time.perf_counter() - started) * 1000)
            vectors.PROBE_SHARE = 1.0
            found.append(
                len({r.rowid for r in exact} & {r.rowid for r in approx}) / max(1, len(exact))
            )
            hits = [h.drawer.id for h in search(store, embedder, query, DrawerFilter(), 10).hits]  # type: ignore[arg-type]
            fused.append(len(set(hits) & set(approximate[i])) / max(1, len(hits)))
    finally:
        vectors.PROBE_SHARE = share
    return {
        # Interleaved, so the ratio holds on a busy machine.
        "vector_exact_vs_index_p50_ms": [
            round(statistics.median(exact_ms), 2),
            round(statistics.median(index_ms), 2),
        ],
        "vector_recall_at_200": round(statistics.mean(found), 3),
        "fused_top10_same": round(statistics.mean(fused), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="store sizes to search")
    parser.add_argument("--ingest", type=int, default=20_000, help="chunks to ingest")
    args = parser.parse_args(argv)
    embedder = load_embedder()
    words = Words()
    with tempfile.TemporaryDirectory(prefix="recall-scale-") as name:
        directory = Path(name)
        if args.ingest:
            print(
                json.dumps({"ingest": measure_ingest(directory, embedder, words, args.ingest)}),
                flush=True,
            )
        store = open_store(directory / "search.db")
        size = 0
        for target in sorted(int(s) for s in args.sizes.split(",") if s):
            grow(store, embedder, words, size, target)
            size = target
            row = {
                "drawers": size,
                **measure_search(store, embedder, words),
                "max_rss_mb": round(rss_mb()),
            }
            print(json.dumps(row), flush=True)
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
