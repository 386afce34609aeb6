"""In-process cost of one query's answer on a synthetic workspace: the engine alone, and
the engine plus the JSON joined from per-snapshot pieces (as the daemon builds it).

Also times what a response cache holding only gzip bytes would pay to serve a client that
does not accept gzip (one decompression per request), against computing the answer again.
Every query is answered once before timing, so per-snapshot state (MUST layers, encoded
pieces and sections) is warm, as in a daemon that has served a while; that first pass is
reported too, in CPU time (what each distinct question costs a new snapshot).
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402


class _Snapshot:
    """What the encoding caches need of a snapshot: its workspace (and a weak reference)."""

    def __init__(self, workspace: Any) -> None:
        self.workspace = workspace


def _ms(samples: list[float]) -> str:
    return f"p50 {statistics.median(samples) * 1000:.2f} ms, mean {statistics.fmean(samples) * 1000:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10k")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shape", choices=synth.SHAPES, default="dense")
    args = parser.parse_args(argv)

    from memhubd.index.workspace import index_for
    from memhubd.model import Workspace
    from memhubd.query import build_evidence_pack
    from memhubd.query.pack import declaration_json
    from memhubd.service import encoding

    size = synth.parse_size(args.size)
    generated = synth.ensure_workspace(size, args.seed, shape=args.shape)
    ws = Workspace.load([str(generated.workspace)])
    index_for(ws)
    snapshot = _Snapshot(ws)
    piece = encoding.pieces(snapshot, "query", declaration_json)
    must_json = None
    if hasattr(encoding, "sections"):  # a daemon that keeps MUST sections (else: joined)
        from memhubd.query.pack import join_pieces

        must_json = encoding.sections(snapshot, "query", lambda must: join_pieces(must, piece))
    queries = generated.queries()

    def pack(q: dict) -> Any:
        return build_evidence_pack(
            ws, q["query"], subject=q["subject"], limit=q["limit"], types=q["types"]
        )

    def answer(q: dict) -> bytes:
        if must_json is None:
            return b"".join(pack(q).json_parts(piece))
        return b"".join(pack(q).json_parts(piece, None, must_json))

    # The first pass is what a daemon pays for each distinct question on a new snapshot
    # (postings, MUST layers and encoded pieces met for the first time), timed in CPU
    # time of this thread, which the machine's load moves less than the wall clock.
    started = time.thread_time()
    bodies = [answer(q) for q in queries]
    first_cpu = (time.thread_time() - started) / len(queries)
    engine, full = [], []
    for q in queries:
        started = time.perf_counter()
        pack(q)
        engine.append(time.perf_counter() - started)
    for q in queries:
        started = time.perf_counter()
        answer(q)
        full.append(time.perf_counter() - started)
    packed = [gzip.compress(body, 1, mtime=0) for body in bodies]
    unpack = []
    for data in packed:
        started = time.perf_counter()
        gzip.decompress(data)
        unpack.append(time.perf_counter() - started)
    median_kb = statistics.median(len(b) for b in bodies) / 1024
    print(f"{size} declarations ({args.shape}, seed {args.seed}), {len(queries)} queries")
    print(f"median answer {median_kb:.0f} KB; all answers {sum(map(len, bodies)) / 2**20:.1f} MiB")
    print(f"first pass, engine + JSON:   CPU {first_cpu * 1000:.2f} ms a query (mean)")
    print(f"engine:                      {_ms(engine)}")
    print(f"engine + answer JSON joined: {_ms(full)}")
    print(f"gzip -1 of every answer:     {sum(map(len, packed)) / 2**20:.1f} MiB")
    print(f"gunzip of one answer:        {_ms(unpack)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
