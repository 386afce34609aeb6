"""`memhubd bench longmemeval FILE`: retrieval on LongMemEval's JSON format, with
mempal's modes, granularities and metrics (spec §11), run through recall's own
store and hybrid search.

Per question a fresh temporary store holds the haystack (one drawer per session of
user turns, or per user turn), the question is searched, un-retrieved items are
appended in corpus order, and recall-any@k and NDCG@k are computed at session and
turn level. Modes: `raw` (text as is), `rooms` (mempal's five keyword rooms, which
here boost and never filter) and `aaak` (each item stored and searched as its AAAK
document: wing `longmemeval`, room `benchmark`, the session's date, the corpus id).

Every selected question is checked before the first one runs, and the `--out` file
opened: a malformed question or an unwritable output refuses the run at once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from memhubd.offline import CommandFailure
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


class OutputError(OSError):
    """A per-question line could not be written to the `--out` file."""


BAR_WIDTH = 30


class Progress:
    """`[####....] 12/500 questions, 34 s` redrawn on one line of `stream`, when enabled."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.started = time.perf_counter()
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        filled = min(BAR_WIDTH, BAR_WIDTH * done // max(total, 1))
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        seconds = round(time.perf_counter() - self.started)
        self.stream.write(f"\r[{bar}] {done}/{total} questions, {seconds} s")
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def malformed(entry: Any) -> str | None:
    """Why `entry` is not a LongMemEval question this benchmark can run, or None.

    Required: `question` (a string), `haystack_sessions` (lists of `{role, content}`
    objects of strings), `haystack_session_ids` (one id, a string or an integer, per
    session) and `answer_session_ids` (a list of ids). `haystack_dates`, when present,
    is one string per session. Other fields are read as they come; unknown ones are
    ignored."""
    if not isinstance(entry, dict):
        return f"not a JSON object but {_json_kind(entry)}"
    if not isinstance(entry.get("question"), str):
        return "`question` is missing or not a string"
    sessions = entry.get("haystack_sessions")
    if not isinstance(sessions, list):
        return "`haystack_sessions` is missing or not a list"
    for n, session in enumerate(sessions):
        if not isinstance(session, list):
            return f"`haystack_sessions[{n}]` is not a list of turns"
        for m, turn in enumerate(session):
            if not (
                isinstance(turn, dict)
                and isinstance(turn.get("role"), str)
                and isinstance(turn.get("content"), str)
            ):
                return (
                    f"`haystack_sessions[{n}][{m}]` is not an object with string role and content"
                )
    ids = entry.get("haystack_session_ids")
    if not isinstance(ids, list) or not all(_is_id(i) for i in ids):
        return "`haystack_session_ids` is missing or not a list of ids"
    if len(ids) != len(sessions):
        return f"{len(ids)} `haystack_session_ids` for {len(sessions)} sessions"
    dates = entry.get("haystack_dates")
    if dates is not None:
        if not isinstance(dates, list) or not all(isinstance(d, str) for d in dates):
            return "`haystack_dates` is not a list of strings"
        if len(dates) != len(sessions):
            return f"{len(dates)} `haystack_dates` for {len(sessions)} sessions"
    answers = entry.get("answer_session_ids")
    if not isinstance(answers, list) or not all(_is_id(i) for i in answers):
        return "`answer_session_ids` is missing or not a list of ids"
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


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
                for n, text in enumerate(turns)
            )
    return items


def answer_text(answer: Any) -> str:
    """An answer as mempal writes it: text as it is, `true`/`false`, and numbers in their
    shortest plain decimal form (`3` for 3.0, no exponent)."""
    if isinstance(answer, bool):
        return "true" if answer else "false"
    if isinstance(answer, float) and math.isfinite(answer):
        return format(Decimal(repr(answer)).normalize(), "f")
    return str(answer)


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
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The report on `data` (questions as `malformed` accepts them). Each question's
    line is written to `out` as it is done (OutputError when that fails), and
    `progress(done, total)` is called after each question."""
    ks = [k for k in KS if k <= top_k]
    totals: dict[str, dict[str, float]] = {
        "session": defaultdict(float),
        "turn": defaultdict(float),
    }
    by_type: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counted = 0
    started = time.perf_counter()
    for done, entry in enumerate(data, 1):
        if progress is not None:
            progress(done - 1, len(data))
        items = corpus(entry, granularity)
        if not items:
            continue
        order = rank(entry, items, mode, top_k, embedder)
        answers = {str(s) for s in entry.get("answer_session_ids") or []}
        # mempal's levels: each ranked item stands for its session (session level) and
        # for itself, relevant when its session is an answer's (turn level). Items are
        # never merged by session, so at turn granularity both levels read alike.
        relevance = [int(items[i].session_id in answers) for i in order]
        metrics: dict[str, dict[str, float]] = {"session": {}, "turn": {}}
        for level in ("session", "turn"):
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
                "answer": answer_text(entry.get("answer")),
                "retrieval_results": {
                    "query": entry.get("question"),
                    "ranked_items": ranked_items,
                    "metrics": metrics,
                },
            }
            try:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
            except OSError as error:
                raise OutputError(error.errno, error.strerror or str(error)) from error
    if progress is not None and data:
        progress(len(data), len(data))
    if not counted:
        raise BenchError("no question with a non-empty haystack in this file")
    return {
        "questions": counted,
        "mode": mode,
        "granularity": granularity,
        "embedder": embedder.name if embedder is not None else None,
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
    embedder = report.get("embedder")
    searched = f"BM25 + vectors ({embedder}), RRF" if embedder else "BM25 only, no vectors"
    lines = [
        f"LongMemEval retrieval (memhub recall: {searched})",
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


def _reason(error: BaseException) -> str:
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 (byte {error.object[error.start]:#04x} at offset {error.start})"
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg} at line {error.lineno} column {error.colno})"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


def _failure(line: str, code: str, message: str, **detail: Any) -> CommandFailure:
    return CommandFailure(line, {"code": code, "message": message, "detail": detail})


def load(path: Path) -> list[Any]:
    """The questions of `path`, a JSON array; CommandFailure when it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        reason = _reason(error)
        raise _failure(
            f"cannot read {path}: {reason}", "cannot_read", reason, file=str(path)
        ) from None
    except ValueError as error:  # not UTF-8, not JSON
        reason = _reason(error)
        raise _failure(f"{path}: {reason}", "invalid_data", reason, file=str(path)) from None
    if not isinstance(data, list):
        reason = f"expected a JSON array of questions, not {_json_kind(data)}"
        raise _failure(f"{path}: {reason}", "invalid_data", reason, file=str(path))
    return data


def cmd_longmemeval(args: argparse.Namespace) -> int:
    """`memhubd bench longmemeval`: exit 0 with the report, 2 when the file, its questions,
    the `--out` file or the embedder cannot be used (CommandFailure: one line on stderr,
    with `--json` an error envelope on stdout)."""
    path: Path = args.file
    data = load(path)
    selected = data[args.skip :]
    if args.limit:
        selected = selected[: args.limit]
    if not selected:
        reason = (
            f"no question left after --skip {args.skip} (the file has {len(data)})"
            if data
            else "no questions in the file"
        )
        raise _failure(f"{path}: {reason}", "invalid_data", reason, file=str(path))
    for index, entry in enumerate(selected, args.skip):
        problem = malformed(entry)
        if problem is not None:
            reason = f"the question at index {index}: {problem}"
            raise _failure(f"{path}: {reason}", "invalid_data", reason, file=str(path), index=index)
    out: TextIO | None = None
    if args.out is not None:
        try:
            out = args.out.open("w", encoding="utf-8")
        except OSError as error:
            reason = _reason(error)
            raise _failure(
                f"cannot write {args.out}: {reason}", "cannot_write", reason, file=str(args.out)
            ) from None
    embedder = None
    embedder_errors: tuple[type[Exception], ...] = ()
    if not args.no_vectors:
        from memhubd.recall.embed import EmbedderError

        embedder_errors = (EmbedderError,)
    progress = Progress(sys.stderr, enabled=not args.json and sys.stderr.isatty())
    try:
        if not args.no_vectors:
            from memhubd.recall.embed import load_embedder

            embedder = load_embedder()  # its model loads on first use, in `run`
        report = run(
            selected,
            mode=args.mode,
            granularity=args.granularity,
            top_k=args.top_k,
            embedder=embedder,
            out=out,
            progress=progress,
        )
        if out is not None:
            try:
                out.close()  # the last lines are written now
            except OSError as error:
                raise OutputError(error.errno, error.strerror or str(error)) from error
    except OutputError as error:
        reason = _reason(error)
        raise _failure(
            f"cannot write {args.out}: {reason}", "cannot_write", reason, file=str(args.out)
        ) from None
    except BenchError as error:
        raise _failure(f"{path}: {error}", "invalid_data", str(error), file=str(path)) from None
    except embedder_errors as error:
        raise _failure(f"the embedder failed: {error}", "embedder", str(error)) from None
    finally:
        progress.finish()
        if out is not None and not out.closed:
            with contextlib.suppress(OSError):
                out.close()
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0
