"""Hybrid search over one store: BM25 (FTS5) + exact cosine, fused by weighted RRF.

The query is reduced to terms (never passed to FTS5 as syntax); each retriever
returns its candidates best first; reciprocal-rank fusion with k = 60 sums
`weight / (k + rank)` per signal; rooms the query names through the taxonomy add
a boost, never a filter, and so does the one speaker the query names. Every hit keeps
each signal's rank and score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog

from memhubd.recall.ingest.pipeline import Embeds, record_of
from memhubd.recall.rooms import rooms_for_query, terms
from memhubd.recall.store import (
    CONTEXT_WEIGHT,
    Drawer,
    DrawerFilter,
    DrawerStore,
    Facets,
    RankedRow,
    VectorsUnavailable,
)

log = structlog.get_logger("memhubd.recall.search")

RRF_K = 60
MIN_CANDIDATES = 200  # per retriever; also what fusion and the source boost see
SOURCE_TOP = 3
SPEAKER_TOP = 100  # the speaker boost looks at this many of the best candidates
# The phrase boost reads the text of this many of the best candidates, however many hits
# are asked for (at most 100 at every door), so that the first hits never depend on that.
PHRASE_TOP = 100
# An identifier: words held together by `_ . / : @ #` (`tenant_id`, `src/quay/cache.py`,
# `a@b`), or by a hyphen where a digit or a leading dash says it is no English compound
# (`PROJ-1234`, `rate-limiter-v2`, `--dry-run`; not `self-care`, nor `Caroline's`).
_JOINED = re.compile(r"\w[_./:@#]+\w")
_HYPHENATED = re.compile(r"\w-+\w")

# Words that carry no topic: with an OR query they only add noise to BM25.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve""".split()
)

# Words that frame a question without naming its topic ("what kind of art does Caroline
# make?", "what might John say about ..."). They match many turns that have nothing to do
# with the topic, so BM25 leaves them out; the vector query keeps the whole question. On
# LoCoMo dev: session R@5 0.937 -> 0.945, turn hit@10 0.845 -> 0.843 (bench/recall_locomo.py).
QUESTION_FRAMING = frozenset(
    """kind kinds type types likely describe describes described mention mentions mentioned
    say says said make makes made might something things thing""".split()
)


@dataclass(frozen=True, slots=True)
class Weights:
    """Per-signal RRF weights (tuned on the LoCoMo dev set: bench/recall_locomo.py)."""

    bm25: float = 1.0
    vector: float = 0.2
    room: float = 0.5
    context: float = CONTEXT_WEIGHT  # a context word's BM25 weight, relative to content
    source: float = 0.1  # share of its source's best fused scores a candidate gains
    speaker: float = 0.15  # fused score share gained by a drawer of the speaker asked about
    phrase: float = 1.0  # RRF weight of holding a phrase of the query (an identifier) whole


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True, slots=True)
class Signal:
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class Hit:
    drawer: Drawer
    fused: float
    signals: dict[str, Signal]

    def as_dict(self) -> dict[str, Any]:
        data = self.drawer.as_dict()
        data["fused_score"] = round(self.fused, 6)
        data["signals"] = {
            name: {"rank": s.rank, "score": round(s.score, 6)} for name, s in self.signals.items()
        }
        return data


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    terms: list[str]
    boosted_rooms: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    signals_used: list[str] = field(default_factory=list)


def query_phrases(query: str) -> list[tuple[str, ...]]:
    """The identifiers a query holds (see `_JOINED`: a name, a path, a version, a flag
    written as one token), each as its words: `tenant_id` -> (tenant, id). BM25
    searches their words apart. Plain words and English compounds are none: on LoCoMo
    dev, holding hyphenated words and quoted titles whole cost turn hits."""
    pieces = [token for token in query.split() if _identifier(token)]
    found: list[tuple[str, ...]] = []
    for piece in pieces:
        words = tuple(terms(piece))
        if len(words) >= 2 and words not in found:
            found.append(words)
    return found


def _identifier(token: str) -> bool:
    if _JOINED.search(token):
        return True
    hyphenated = _HYPHENATED.search(token) is not None
    return hyphenated and (token.startswith("-") or any(c.isdigit() for c in token))


def query_terms(query: str) -> list[str]:
    """Distinct content terms of a query, in order; all terms if all are stopwords."""
    words = terms(query)
    kept = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(kept))


def lexical_terms(words: Sequence[str]) -> list[str]:
    """The query terms BM25 searches: `words` without question-framing words, unless
    nothing else is left ("what did they say?" still searches "say")."""
    return [w for w in words if w not in QUESTION_FRAMING] or list(words)


@dataclass(slots=True)
class Fused:
    """Every retriever's candidates, fused: rowids ascending, one score each, and per
    list each candidate's rank (0: not in that list) and score there. Boosts add to
    `scores` and mark the candidates they lifted in `boosted`."""

    rowids: np.ndarray
    scores: np.ndarray
    ranks: dict[str, np.ndarray]
    raw: dict[str, np.ndarray]
    boosted: dict[str, np.ndarray] = field(default_factory=dict)

    def signals(self, i: int) -> dict[str, Signal]:
        """Candidate `i`'s signals: its lists in order, then its boosts."""
        out = {
            name: Signal(int(ranks[i]), float(self.raw[name][i]))
            for name, ranks in self.ranks.items()
            if ranks[i]
        }
        out.update((name, Signal(1, 1.0)) for name, lifted in self.boosted.items() if lifted[i])
        return out

    def best(self, count: int) -> np.ndarray:
        """Positions of the `count` best candidates, ties to the lower rowid."""
        return np.argsort(-self.scores, kind="stable")[:count]


def fuse(lists: dict[str, Sequence[RankedRow]], weights: dict[str, float], k: int = RRF_K) -> Fused:
    """Weighted reciprocal-rank fusion: each list adds weight/(k + rank) per row."""
    ids = {
        name: np.fromiter((row.rowid for row in rows), np.int64, len(rows))
        for name, rows in lists.items()
    }
    rowids = np.unique(np.concatenate(list(ids.values()))) if ids else np.zeros(0, np.int64)
    fused = Fused(rowids, np.zeros(len(rowids)), {}, {})
    for name, rows in lists.items():
        at = np.searchsorted(rowids, ids[name])
        ranks = np.arange(1, len(rows) + 1)
        # Lists are added in turn, as a sum per candidate in that order would be.
        fused.scores[at] += weights.get(name, 1.0) / (k + ranks)
        fused.ranks[name] = np.zeros(len(rowids), np.int64)
        fused.ranks[name][at] = ranks
        fused.raw[name] = np.zeros(len(rowids))
        fused.raw[name][at] = np.fromiter((row.score for row in rows), np.float64, len(rows))
    return fused


def search(
    store: DrawerStore,
    embedder: Embeds | None,
    query: str,
    where: DrawerFilter,
    limit: int = 10,
    weights: Weights = DEFAULT_WEIGHTS,
    *,
    query_vector: np.ndarray | None = None,
    candidates: int | None = None,
) -> SearchResult:
    """The `limit` best live drawers for `query` among those `where` allows."""
    words = query_terms(query)
    result = SearchResult([], words)
    if limit <= 0 or not query.strip():
        return result
    depth = candidates or max(MIN_CANDIDATES, limit * 5)
    lists: dict[str, Sequence[RankedRow]] = {}
    if weights.bm25 > 0 and words:
        lists["bm25"] = store.lexical(
            lexical_terms(words), where, depth, context_weight=weights.context
        )
    if weights.vector > 0 and (embedder is not None or query_vector is not None):
        lists["vector"] = _vector_rows(store, embedder, query, where, depth, result, query_vector)
    result.signals_used = [name for name in lists]
    fused = fuse(lists, {"bm25": weights.bm25, "vector": weights.vector})
    if not len(fused.rowids):
        return result
    # Room, source and speaker of every candidate, from memory; full rows are read only
    # for the hits returned. A candidate no longer stored (purged meanwhile) is left out.
    facets = store.facets(fused.rowids.tolist())
    if weights.source > 0:
        _boost_sources(facets, fused, weights.source)
    result.boosted_rooms = rooms_for_query(query, store.taxonomy()) if weights.room > 0 else {}
    if result.boosted_rooms:
        rooms = result.boosted_rooms
        lifted = np.fromiter(
            (
                stored and room in rooms
                for stored, room in zip(facets.stored, facets.rooms, strict=True)
            ),
            bool,
            len(facets.rooms),
        )
        fused.scores[lifted] += weights.room / (RRF_K + 1)
        fused.boosted["room"] = lifted
    if weights.speaker > 0:
        _boost_speaker(query, facets, fused, weights.speaker, max(SPEAKER_TOP, limit))
    phrases = query_phrases(query) if weights.phrase > 0 else []
    if phrases:
        _boost_phrases(store, phrases, fused, weights.phrase, PHRASE_TOP)
    order = fused.best(len(fused.rowids))
    order = order[np.asarray(facets.stored, bool)[order]][:limit].tolist()
    drawers = store.get(fused.rowids[order].tolist())
    result.hits = [
        Hit(drawers[rowid], float(fused.scores[i]), fused.signals(i))
        for i, rowid in zip(order, fused.rowids[order].tolist(), strict=True)
        if rowid in drawers
    ]
    return result


# The speakers a transcript gives its turns when it names no one (Claude Code, Codex,
# ChatGPT): a query saying "user" or "tool" (`user_id`, "the tool failed") names nobody.
ROLE_SPEAKERS = frozenset({"user", "assistant", "tool", "summary", "system"})


def names_speaker(speaker: str, words: set[str]) -> bool:
    """True when every word of `speaker` ("Caroline", "Jon Snow") is among `words`, and
    `speaker` is someone's name, not a role (`ROLE_SPEAKERS`)."""
    parts = terms(speaker)
    if not parts or speaker.strip().lower() in ROLE_SPEAKERS:
        return False
    return all(part in words for part in parts)


def _boost_speaker(query: str, facets: Facets, fused: Fused, weight: float, top: int) -> None:
    """When the query names exactly one speaker of its `top` best candidates, each of
    that speaker's drawers among them gains `weight` times its fused score: "what did
    Caroline research?" is answered by what Caroline said (on LoCoMo dev: MRR +0.05,
    turn hit@10 +0.015). A query naming two speakers, or none, boosts nothing."""
    best = fused.best(top).tolist()
    words = set(terms(query))
    speakers = facets.speakers
    named = {speakers[i] for i in best if speakers[i] and names_speaker(speakers[i], words)}
    if len(named) != 1:
        return
    speaker = named.pop()
    lifted = np.zeros(len(fused.rowids), bool)
    lifted[[i for i in best if speakers[i] == speaker]] = True
    fused.scores[lifted] *= 1 + weight
    fused.boosted["speaker"] = lifted


def _boost_phrases(
    store: DrawerStore, phrases: list[tuple[str, ...]], fused: Fused, weight: float, top: int
) -> None:
    """Each of the `top` best candidates whose text holds one of `phrases` whole (its
    words in a row) gains `weight / (k + 1)`, as if first in a list of that weight: BM25
    ranks the words of `tenant_id` apart, so exchanges saying "tenant" and "id" here and
    there would outrank the one that names it. Only candidates' own text is read, never
    another drawer's, so what the caller may not read plays no part."""
    best = fused.best(top).tolist()
    rows = store.get(fused.rowids[best].tolist())
    wanted = [f" {' '.join(words)} " for words in phrases]
    lifted = np.zeros(len(fused.rowids), bool)
    for i in best:
        drawer = rows.get(int(fused.rowids[i]))
        if drawer is None:
            continue
        said = f" {' '.join(terms(drawer.content))} "
        lifted[i] = any(phrase in said for phrase in wanted)
    fused.scores[lifted] += weight / (RRF_K + 1)
    fused.boosted["phrase"] = lifted


def _boost_sources(facets: Facets, fused: Fused, weight: float) -> None:
    """Each candidate gains `weight` times the sum of its source's best three fused
    scores: a conversation that matches in several places is likelier the one asked
    about (on LoCoMo dev: turn hit@10 +0.015)."""
    codes: dict[str, int] = {}
    group = np.fromiter(
        (codes.setdefault(source, len(codes)) for source in facets.sources),
        np.int64,
        len(facets.sources),
    )
    scores = fused.scores
    order = np.lexsort((-scores, group))  # by source, best first within each
    grouped = group[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    within = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    totals = np.zeros(len(codes))
    for place in range(SOURCE_TOP):  # added best first, as `sum` over the sorted scores
        picked = within == place
        totals[grouped[picked]] += scores[order[picked]]
    scores += weight * totals[group]


def _vector_rows(
    store: DrawerStore,
    embedder: Embeds | None,
    query: str,
    where: DrawerFilter,
    depth: int,
    result: SearchResult,
    query_vector: np.ndarray | None,
) -> list[RankedRow]:
    record = record_of(embedder)
    if record is None:
        return []
    try:
        vector = query_vector if query_vector is not None else embedder.embed([query])[0]  # type: ignore[union-attr]
        return store.nearest(np.asarray(vector, dtype=np.float32), record, where, depth)
    except VectorsUnavailable as error:
        result.warnings.append(str(error))
    except Exception as error:  # an embedder backend failing must not stop BM25
        log.warning("vector search failed", error=str(error))
        result.warnings.append(f"vector search unavailable: {error}")
    return []
