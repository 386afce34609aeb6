"""Embedder benchmark: load time, throughput on short and 100-word texts, one-query latency, RSS.

A script, not a test: it prints numbers and asserts only that vectors came back.

    python bench/embed.py [--kind static|onnx] [--short 20000] [--long 2000] [--json]

Texts are word windows over the standard library's docstrings (real English, deterministic
for a given Python). Throughput is measured in batches of --batch texts, as an ingest would
call the embedder. Run it on an otherwise idle machine: the numbers are CPU-bound.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import random
import re
import statistics
import time

from memhubd.recall.embed import EmbedderSettings, load_embedder

DOC_MODULES = (
    "argparse asyncio collections concurrent.futures csv datetime decimal email.message "
    "functools http.client inspect json logging os pathlib random re shutil sqlite3 "
    "statistics subprocess tarfile threading typing unittest urllib.parse zipfile"
).split()


def corpus_words() -> list[str]:
    """Every word of the docstrings of DOC_MODULES and their public members, in order."""
    words: list[str] = []
    for name in DOC_MODULES:
        module = importlib.import_module(name)
        docs = [inspect.getdoc(module) or ""]
        for attribute in sorted(dir(module)):
            if not attribute.startswith("_"):
                docs.append(inspect.getdoc(getattr(module, attribute, None)) or "")
        for doc in docs:
            words.extend(re.findall(r"\S+", doc))
    return words


def texts(words: list[str], count: int, low: int, high: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        length = rng.randint(low, high)
        start = rng.randrange(0, len(words) - length)
        out.append(" ".join(words[start : start + length]))
    return out


def proc_status_mb(field: str) -> float:
    """A memory figure of this process from /proc (VmRSS: now, VmHWM: peak), in MB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def throughput(embedder, batch: list[str], batch_size: int) -> tuple[float, float]:
    """Texts per wall-clock second and per CPU second (all threads); the second is less
    sensitive to other load on a shared machine."""
    started, cpu_started = time.perf_counter(), time.process_time()
    for start in range(0, len(batch), batch_size):
        vectors = embedder.embed(batch[start : start + batch_size])
        assert vectors.shape[1] == embedder.dimension
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return len(batch) / wall, len(batch) / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="static", choices=("static", "onnx"))
    parser.add_argument("--short", type=int, default=20_000, help="short texts (3-12 words)")
    parser.add_argument("--long", type=int, default=2_000, help="100-word texts")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--queries", type=int, default=500, help="single-text calls timed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    words = corpus_words()
    short = texts(words, args.short, 3, 12, seed=1)
    long = texts(words, args.long, 100, 100, seed=2)
    rss_before = proc_status_mb("VmRSS")

    started = time.perf_counter()
    embedder = load_embedder(EmbedderSettings(kind=args.kind))
    embedder.load()  # type: ignore[attr-defined]  # both local backends have it
    load_s = time.perf_counter() - started
    rss_loaded = proc_status_mb("VmRSS")

    embedder.embed(short[:256])  # warm the allocator and tokenizer caches
    short_rate = throughput(embedder, short, args.batch)
    long_rate = throughput(embedder, long, args.batch)
    latencies = []
    for text in short[: args.queries]:
        t0 = time.perf_counter()
        embedder.embed([text])
        latencies.append((time.perf_counter() - t0) * 1000)
    result = {
        "embedder": embedder.name,
        "dimension": embedder.dimension,
        "load_s": round(load_s, 3),
        "short_texts_per_s": round(short_rate[0]),
        "short_texts_per_cpu_s": round(short_rate[1]),
        "long_texts_per_s": round(long_rate[0]),
        "long_texts_per_cpu_s": round(long_rate[1]),
        "query_p50_ms": round(statistics.median(latencies), 3),
        "query_p99_ms": round(statistics.quantiles(latencies, n=100)[98], 3),
        "rss_model_mb": round(rss_loaded - rss_before, 1),
        "peak_rss_mb": round(proc_status_mb("VmHWM"), 1),
        "batch": args.batch,
        "texts": {"short": len(short), "long": len(long)},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"embedder          {result['embedder']} ({result['dimension']}-d)")
    print(f"load              {result['load_s']} s (+{result['rss_model_mb']} MB RSS)")
    print(
        f"short (3-12 w)    {result['short_texts_per_s']:,} texts/s, "
        f"{result['short_texts_per_cpu_s']:,} per CPU-s  (batches of {args.batch})"
    )
    print(
        f"100 words         {result['long_texts_per_s']:,} texts/s, "
        f"{result['long_texts_per_cpu_s']:,} per CPU-s"
    )
    print(f"one query         p50 {result['query_p50_ms']} ms, p99 {result['query_p99_ms']} ms")
    print(f"peak RSS          {result['peak_rss_mb']} MB (whole process)")


if __name__ == "__main__":
    main()
