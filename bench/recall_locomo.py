"""Recall retrieval on the LoCoMo development conversations (not a test; prints numbers).

Each turn becomes a drawer (`Speaker: text`, the speaker and the session date kept as
fields) in a fresh store per conversation; each question (categories 1-4) is searched
with the product's `recall.search`. Reports turn-level evidence hit@k, session-level
recall@k (an evidence session among the first k distinct sessions), MRR and p50/p99
latency, for BM25 alone, vectors alone and fused, plus the variants compared when
tuning. Only the dev split is used, for tuning and reporting alike.

    .venv/bin/python bench/recall_locomo.py [--data DIR] [--json OUT] [--variants]
        [--embedder static|onnx]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

# One BLAS thread per search, as the daemon should run (docs/recall.md): a threaded
# gemv on a busy machine was 30-100x slower than a single-threaded one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from memhubd.recall import search as search_module  # noqa: E402
from memhubd.recall.context import said_on  # noqa: E402
from memhubd.recall.embed import EmbedderSettings, load_embedder  # noqa: E402
from memhubd.recall.ids import content_hash, drawer_id  # noqa: E402
from memhubd.recall.search import Weights, search  # noqa: E402
from memhubd.recall.store import AuditEntry, DrawerFilter, EmbedderRecord, NewDrawer, open_store  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "locomo-dev"
KS = (1, 5, 10)
DEPTH = 50
CATEGORIES = {1, 2, 3, 4}
SPEAKER_GRID = (0.1, 0.2, 0.3, 0.5)
CHOSEN = Weights()  # the product's defaults (memhubd.recall.search.Weights)


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    said_at: int | None
    date: str


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


def session_date(text: str) -> int | None:
    """'1:56 pm on 8 May, 2023' -> epoch seconds (UTC)."""
    try:
        return int(datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").timestamp())
    except ValueError:
        return None


def load(path: Path) -> tuple[list[Turn], list[Question]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    convo = data.get("conversation", data)
    turns = []
    number = 1
    while f"session_{number}_date_time" in convo:
        date = convo[f"session_{number}_date_time"]
        for item in convo.get(f"session_{number}", []):
            text = item["text"]
            if item.get("blip_caption"):
                text += f" [shares a photo of {item['blip_caption']}]"
            turns.append(
                Turn(item["dia_id"], number, item["speaker"], text, session_date(date), date)
            )
        number += 1
    questions = [
        Question(q["question"], frozenset(q.get("evidence", [])), int(q["category"]))
        for q in data["qa"]
        if int(q.get("category", 0)) in CATEGORIES and q.get("evidence")
    ]
    return turns, questions


def session_of(dia_id: str) -> int | None:
    """The session number of `D3:12`; None for the few malformed evidence ids."""
    found = re.match(r"D(\d+):", dia_id.strip())
    return int(found.group(1)) if found else None


Render = Callable[[Turn], str]


def render_speaker(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


def render_plain(turn: Turn) -> str:
    return turn.text


def render_dated(turn: Turn) -> str:
    return f"{turn.speaker} ({turn.date}): {turn.text}"


@dataclass
class Corpus:
    store: Any
    by_rowid: dict[int, Turn]
    directory: tempfile.TemporaryDirectory[str]


def build(
    turns: list[Turn], embedder: Any, render: Render, context: str, vector_text: str
) -> Corpus:
    """A store of one conversation. `context`: none, prev or prev+next (the turns around
    each turn, in its session, stored as the drawer's context); `vector_text`: content,
    or content+context."""
    directory = tempfile.TemporaryDirectory(prefix="locomo-")
    store = open_store(Path(directory.name) / "c.db")
    contents = [render(t) for t in turns]

    def neighbour(i: int, session: int) -> str:
        """Turn i's text when it exists and belongs to `session`, else nothing."""
        return contents[i] if 0 <= i < len(turns) and turns[i].session == session else ""

    contexts = []
    for i, turn in enumerate(turns):
        # As ingest does: the day it was said, then the neighbouring turns.
        parts = [said_on(turn.said_at)] if context.endswith("+date") else []
        if context.startswith(("prev", "prev+next")):
            parts.append(neighbour(i - 1, turn.session))
        if context.startswith("prev+next"):
            parts.append(neighbour(i + 1, turn.session))
        contexts.append("\n".join(p for p in parts if p))
    drawers = [
        NewDrawer(
            id=drawer_id("locomo", "default", f"{t.dia_id}\n{content}"),
            room="default",
            content=content,
            source_file=f"locomo/session_{t.session}",
            source_kind="text",
            chunk_index=i,
            content_hash=content_hash(content),
            identity="bench",
            locator=t.dia_id,
            speaker=t.speaker,
            said_at=t.said_at,
            context=extra,
        )
        for i, (t, content, extra) in enumerate(zip(turns, contents, contexts, strict=True))
    ]
    texts = contents
    if vector_text == "content+context":
        texts = [
            f"{extra}\n{content}".strip() for content, extra in zip(contents, contexts, strict=True)
        ]
    vectors = embedder.embed(texts) if embedder is not None else None
    record = EmbedderRecord(embedder.name, embedder.dimension) if embedder is not None else None
    store.write(drawers, vectors, record, AuditEntry("bench", "bench", "ingest"))
    rows = {d.locator: d.rowid for batch in store.iter_live(10_000) for d in batch}
    by_rowid = {rows[t.dia_id]: t for t in turns if t.dia_id in rows}
    return Corpus(store, by_rowid, directory)


@contextmanager
def framing_kept() -> Iterator[None]:
    """Search as before question-framing words left the BM25 terms (for the step row)."""
    saved = search_module.QUESTION_FRAMING
    search_module.QUESTION_FRAMING = frozenset()
    try:
        yield
    finally:
        search_module.QUESTION_FRAMING = saved


def evaluate(
    corpora: list[tuple[Corpus, list[Question]]], embedder: Any, weights: Weights
) -> dict[str, Any]:
    hits = {k: 0 for k in KS}
    sessions = {k: 0 for k in KS}
    reciprocal = 0.0
    latencies = []
    total = 0
    for corpus, questions in corpora:
        for question in questions:
            started = time.perf_counter()
            result = search(corpus.store, embedder, question.text, DrawerFilter(), DEPTH, weights)
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = [corpus.by_rowid[h.drawer.rowid].dia_id for h in result.hits]
            total += 1
            first = next((i for i, d in enumerate(ranked) if d in question.evidence), None)
            if first is not None:
                reciprocal += 1 / (first + 1)
            wanted = {session_of(d) for d in question.evidence} - {None}
            order = list(dict.fromkeys(session_of(d) for d in ranked))
            for k in KS:
                hits[k] += first is not None and first < k
                sessions[k] += bool(wanted & set(order[:k]))
    return {
        "questions": total,
        **{f"turn_hit@{k}": round(hits[k] / total, 4) for k in KS},
        **{f"session_R@{k}": round(sessions[k] / total, 4) for k in KS},
        "MRR": round(reciprocal / total, 4),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(float(np.percentile(latencies, 99)), 2),
    }


def run(data: Path, variants: bool, embedder_kind: str = "static") -> list[dict[str, Any]]:
    embedder = load_embedder(EmbedderSettings(kind=embedder_kind))
    conversations = [load(p) for p in sorted(data.glob("*.json"))]
    rows: list[dict[str, Any]] = []

    def measure(setup: tuple[Render, str, str], weighted: list[tuple[str, Weights]]) -> None:
        render, context, vector_text = setup
        corpora = [(build(t, embedder, render, context, vector_text), q) for t, q in conversations]
        try:
            for label, weights in weighted:
                row = {"variant": label, **evaluate(corpora, embedder, weights)}
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            for corpus, _ in corpora:
                corpus.store.close()
                corpus.directory.cleanup()

    plain = (render_speaker, "none", "content")
    measure(
        plain,
        [
            ("1 bm25 only, turn text", Weights(bm25=1, vector=0, room=0, source=0, speaker=0)),
            ("2 vectors only, turn text", Weights(bm25=0, vector=1, room=0, source=0, speaker=0)),
            ("3 fused, equal RRF weights", Weights(bm25=1, vector=1, room=0, source=0, speaker=0)),
        ],
    )
    measure(
        (render_speaker, "prev+next", "content"),
        [
            (
                "4 bm25 only, neighbours as context",
                Weights(1, 0, 0, CHOSEN.context, source=0, speaker=0),
            )
        ],
    )
    measure(
        (render_speaker, "prev+next+date", "content"),
        [
            (
                "5 bm25 only, + the day said in the context",
                Weights(1, 0, 0, CHOSEN.context, source=0, speaker=0),
            ),
            (
                "6 fused, vector weight 0.2",
                Weights(1, CHOSEN.vector, 0, CHOSEN.context, source=0, speaker=0),
            ),
            ("7 fused + source boost", replace(CHOSEN, speaker=0)),
            ("8 + the speaker the question names (defaults)", CHOSEN),
            ("11 defaults with context words at weight 0.5 (before)", replace(CHOSEN, context=0.5)),
            (
                "12 bm25 alone as 5, context words at weight 0.5 (before)",
                Weights(1, 0, 0, 0.5, source=0, speaker=0),
            ),
        ],
    )
    with framing_kept():
        measure(
            (render_speaker, "prev+next+date", "content"),
            [
                (
                    "9 defaults with question-framing words kept in BM25 (before)",
                    CHOSEN,
                ),
                (
                    "10 bm25 alone with question-framing words kept (before)",
                    Weights(1, 0, 0, CHOSEN.context, source=0, speaker=0),
                ),
            ],
        )
    if variants:
        bm25 = Weights(1, 0, 0, source=0, speaker=0)
        measure((render_plain, "none", "content"), [("bm25 only, text without speaker", bm25)])
        measure((render_dated, "none", "content"), [("bm25 only, speaker and date", bm25)])
        measure(
            (render_speaker, "prev+next+date", "content"),
            [(f"defaults, speaker weight {w}", replace(CHOSEN, speaker=w)) for w in SPEAKER_GRID]
            + [("bm25 + speaker boost only", Weights(1, 0, 0, CHOSEN.context, source=0))],
        )
        for context in ("prev", "prev+next"):
            for vector_text in ("content", "content+context"):
                grid = [
                    (
                        f"{context}/{vector_text} ctx={c} vec={v}",
                        Weights(1, v, 0, c, source=0, speaker=0),
                    )
                    for c in (0.25, 0.5, 1.0)
                    for v in (0, 0.1, 0.2, 0.5)
                ]
                measure((render_speaker, context, vector_text), grid)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--variants", action="store_true", help="also the tuning variants")
    parser.add_argument(
        "--embedder",
        choices=("static", "onnx"),
        default="static",
        help="the embedder kind (onnx: MiniLM itself, the `onnx` extra; about 300x slower)",
    )
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no LoCoMo data at {args.data}", file=sys.stderr)
        return 2
    rows = run(args.data, args.variants, args.embedder)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
