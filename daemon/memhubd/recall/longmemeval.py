"""`memhubd bench longmemeval FILE`: retrieval on LongMemEval's JSON format, with
mempal's modes, granularities and metrics (spec §11), run through recall's own
store and hybrid search.

Per question a fresh temporary store holds the haystack (one drawer per session of
user turns, or per user turn), the question is searched, un-retrieved items are
appended in corpus order, and recall-any@k and NDCG@k are computed at session and
turn level. Modes: `raw` (text as is), `rooms` (mempal's five keyword rooms, which
here boost and never filter) and `aaak` (each item stored and searched as its AAAK
document: wing `longmemeval`, room `benchmark`, the session's date, the corpus id).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from memhubd.recall import aaak
from memhubd.recall.ids import content_hash, drawer_id
from memhubd.recall.ingest.pipeline import Embeds, record_of
from memhubd.recall.rooms import route
from memhubd.recall.search import search
from memhubd.recall.store import AuditEntry, DrawerFilter, NewDrawer, TaxonomyEntry, open_store

KS = (1, 3, 5, 10, 30, 50)
ROOMS = {
    "technical": "code python function bug error api database server deploy git test debug refactor",
    "planning": "plan roadmap milestone deadline priority sprint backlog scope requirement spec",
    "decisions": "decided chose picked switched migrated replaced trade-off alternative option approach",
    "personal": "family friend birthday vacation hobby health feeling love home weekend",
    "knowledge": "learn study degree school university course research paper book reading",
}


class BenchError(ValueError):
    """The data file or the arguments cannot be used."""


@dataclass(frozen=True, slots=True)
class Item:
    corpus_id: str
    session_id: str
    text: str
    date: str


def corpus(entry: dict[str, Any], granularity: str) -> list[Item]:
    """mempal's corpus: user turns only, per session or per turn."""
    sessions = entry.get("haystack_sessions") or []
    ids = entry.get("haystack_session_ids") or [str(i) for i in range(len(sessions))]
    dates = entry.get("haystack_dates") or [""] * len(sessions)
    items: list[Item] = []
    for session, session_id, date in zip(sessions, ids, dates, strict=False):
        turns = [
            str(t.get("content", ""))
            for t in session
            if isinstance(t, dict) and t.get("role") == "user"
        ]
        if granularity == "session":
            if turns:
                items.append(Item(str(session_id), str(session_id), "\n".join(turns), str(date)))
        else:
            items.extend(
                Item(f"{session_id}_turn_{n}", str(session_id), text, str(date))
                for n, text in enumerate(turns, 1)
            )
    return items


def retrieval_text(item: Item, mode: str) -> str:
    """What is stored and searched for `item`: its text, or in `aaak` mode its AAAK
    document (mempal's meta: wing `longmemeval`, room `benchmark`)."""
    if mode != "aaak":
        return item.text
    return aaak.encode(item.text, "longmemeval", "benchmark", item.date, item.corpus_id).document


def ndcg(relevances: list[int], k: int) -> float:
    """Binary NDCG@k with mempal's convention: the ideal ordering is the retrieved
    top-k's own relevances, sorted."""
    top = relevances[:k]
    dcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(top))
    ideal = sum(rel / math.log2(i + 2) for i, rel in enumerate(sorted(top, reverse=True)))
    return dcg / ideal if ideal else 0.0


def rank(
    entry: dict[str, Any], items: list[Item], mode: str, top_k: int, embedder: Embeds | None
) -> list[int]:
    """Indexes of `items`, best first: the search's hits, then the rest in corpus order."""
    with tempfile.TemporaryDirectory(prefix="lme-") as directory:
        store = open_store(Path(directory) / "q.db")
        try:
            taxonomy = [TaxonomyEntry(room, tuple(words.split())) for room, words in ROOMS.items()]
            audit = AuditEntry("bench", "bench", "ingest")
            if mode == "rooms":
                for entry_room in taxonomy:
                    store.set_taxonomy(entry_room, audit)
            drawers = []
            texts = [retrieval_text(item, mode) for item in items]
            for ordinal, (item, text) in enumerate(zip(items, texts, strict=True)):
                routed = route(item.text, taxonomy) if mode == "rooms" else None
                room = routed[0] if routed else "default"
                drawers.append(
                    NewDrawer(
                        id=drawer_id("longmemeval", room, f"{ordinal}\n{item.corpus_id}\n{text}"),
                        room=room,
                        content=text,
                        source_file=f"longmemeval://{item.corpus_id}",
                        source_kind="text",
                        chunk_index=ordinal,
                        content_hash=content_hash(text),
                        identity="bench",
                    )
                )
            vectors = embedder.embed(texts) if embedder is not None else None
            store.write(drawers, vectors, record_of(embedder), audit)
            result = search(store, embedder, str(entry.get("question", "")), DrawerFilter(), top_k)
            ranked = [hit.drawer.chunk_index for hit in result.hits]
        finally:
            store.close()
    seen = set(ranked)
    return ranked + [i for i in range(len(items)) if i not in seen]


def run(
    data: list[dict[str, Any]],
    *,
    mode: str,
    granularity: str,
    top_k: int,
    embedder: Embeds | None,
    out: TextIO | None = None,
) -> dict[str, Any]:
    ks = [k for k in KS if k <= top_k]
    totals: dict[str, dict[str, float]] = {
        "session": defaultdict(float),
        "turn": defaultdict(float),
    }
    by_type: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counted = 0
    started = time.perf_counter()
    for entry in data:
        items = corpus(entry, granularity)
        if not items:
            continue
        order = rank(entry, items, mode, top_k, embedder)
        answers = {str(s) for s in entry.get("answer_session_ids") or []}
        turn_rel = [int(items[i].session_id in answers) for i in order]
        sessions = list(dict.fromkeys(items[i].session_id for i in order))
        levels = {"session": [int(s in answers) for s in sessions], "turn": turn_rel}
        metrics: dict[str, dict[str, float]] = {"session": {}, "turn": {}}
        for level, relevance in levels.items():
            # Turn level: every item of an answer session is relevant; session level
            # ranks each session once, where its first item ranks.
            for k in ks:
                recall = float(any(relevance[:k]))
                metrics[level][f"recall_any@{k}"] = recall
                metrics[level][f"ndcg_any@{k}"] = ndcg(relevance, k)
                totals[level][f"recall_any@{k}"] += recall
                totals[level][f"ndcg_any@{k}"] += metrics[level][f"ndcg_any@{k}"]
        kind = str(entry.get("question_type", "unknown"))
        by_type[kind]["count"] += 1
        for key in ("recall_any@5", "recall_any@10", "ndcg_any@10"):
            by_type[kind][key] += metrics["session"].get(key, 0.0)
        counted += 1
        if out is not None:
            ranked_items = [
                {
                    "corpus_id": items[i].corpus_id,
                    "text": " ".join(items[i].text.split())[:500],
                    "timestamp": items[i].date,
                }
                for i in order[:top_k]
            ]
            record = {
                "question_id": entry.get("question_id"),
                "question_type": kind,
                "question": entry.get("question"),
                "answer": str(entry.get("answer")),
                "retrieval_results": {
                    "query": entry.get("question"),
                    "ranked_items": ranked_items,
                    "metrics": metrics,
                },
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if not counted:
        raise BenchError("no question with a non-empty haystack in this file")
    return {
        "questions": counted,
        "mode": mode,
        "granularity": granularity,
        "seconds": round(time.perf_counter() - started, 2),
        "session": {key: round(value / counted, 4) for key, value in totals["session"].items()},
        "turn": {key: round(value / counted, 4) for key, value in totals["turn"].items()},
        "by_question_type": {
            kind: {
                "count": int(values["count"]),
                **{
                    key: round(values[key] / values["count"], 4)
                    for key in ("recall_any@5", "recall_any@10", "ndcg_any@10")
                },
            }
            for kind, values in sorted(by_type.items())
        },
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        "LongMemEval retrieval (memhub recall: BM25 + vectors, RRF)",
        f"questions={report['questions']} mode={report['mode']} "
        f"granularity={report['granularity']} elapsed={report['seconds']}s",
    ]
    for level in ("session", "turn"):
        for key, value in report[level].items():
            if key.startswith("recall"):
                k = key.split("@")[1]
                lines.append(
                    f"{level:7} Recall@{k:<3} {value:.3f}   NDCG@{k:<3} {report[level][f'ndcg_any@{k}']:.3f}"
                )
    for kind, values in report["by_question_type"].items():
        lines.append(
            f"{kind}: n={values['count']} R@5={values['recall_any@5']:.3f} "
            f"R@10={values['recall_any@10']:.3f} NDCG@10={values['ndcg_any@10']:.3f}"
        )
    return "\n".join(lines)


def cmd_longmemeval(args: argparse.Namespace) -> int:
    try:
        if args.top_k < 1:
            raise BenchError("--top-k must be at least 1")
        try:
            data = json.loads(args.file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise BenchError(f"{args.file}: {error}") from None
        if not isinstance(data, list):
            raise BenchError(f"{args.file}: expected a JSON array of questions")
        data = data[args.skip :]
        if args.limit:
            data = data[: args.limit]
        embedder = None
        if not args.no_vectors:
            from memhubd.recall.embed import load_embedder

            embedder = load_embedder()
        out = args.out.open("w", encoding="utf-8") if args.out else None
        try:
            report = run(
                data,
                mode=args.mode,
                granularity=args.granularity,
                top_k=args.top_k,
                embedder=embedder,
                out=out,
            )
        finally:
            if out is not None:
                out.close()
    except BenchError as error:
        print(f"memhubd bench: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0
