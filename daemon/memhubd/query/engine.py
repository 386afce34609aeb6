"""The query engine: an EvidencePack from the workspace's lexical index.

Works on bitmaps of the query's term and subject postings, and on the constraints that
share an id, scope or subject with a hit; the answer is the one the linear reading of
the contract gives (`memhubd.query.reference`), by construction and by property test.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

from memhubd.index import workspace as lexical
from memhubd.index.tokens import word_tokens
from memhubd.query.layers import (
    EXCLUDED_SHOWN,
    MustLayer,
    Retrieval,
    assemble_pack,
    must_layer,
    subject_hits,
)
from memhubd.query.pack import EvidencePack, ScoredDeclaration
from memhubd.query.ranking import Ranking
from memhubd.query.terms import query_terms


def build_evidence_pack(
    ws: Any,
    query: str,
    kinds: list[str] | None = None,
    subject: str | None = None,
    limit: int = 8,
    types: list[str] | None = None,
) -> EvidencePack:
    """Answer `query` with MUST/SHOULD/CONTEXT/CONFLICT/MISSING (`types` overrides `kinds`)."""
    ix = lexical.index_for(ws)
    terms = query_terms(query)
    matched = ix.match_aliases(query.lower())
    wanted = subject_hits(matched, subject)
    type_filter = types if types is not None else kinds
    bonus = 0
    for symbol in set(wanted):
        bonus |= ix.bits(lexical.SUBJECT, symbol)
    unique_terms = set(terms)
    ranking = Ranking(
        ix.space,
        (ix.bits(lexical.TERM, t) for t in unique_terms),
        bonus,
        high=ix.high_confidence,
        universe=ix.pool,
    )
    candidates = ix.candidates(type_filter, subject)
    hits = _hits(ranking, candidates, limit)
    excluded: list[tuple[int, float]] = []
    excluded_total = 0
    if candidates != ix.pool:
        excluded, excluded_total = _excluded(ix, ranking, candidates)

    def scored(entry: tuple[int, float]) -> ScoredDeclaration:
        return _scored(ix, unique_terms, bonus, *entry)

    return assemble_pack(
        Retrieval(
            query=query,
            terms=terms,
            matched_aliases=matched,
            subject=subject,
            type_filter=type_filter,
            candidates=candidates.bit_count(),
            hits=[scored(entry) for entry in hits],
            excluded=[scored(entry) for entry in excluded],
            excluded_total=excluded_total,
            questions=ix.declarations.take(
                ix.space.ordered(ranking.touched & candidates & ix.questions)
            ),
            must=_must_layer(ix, _must(ix, [o for o, _ in hits])),
        )
    )


def _hits(ranking: Ranking, candidates: int, limit: int) -> list[tuple[int, float]]:
    """`sorted(scored, key=-score)[:limit]`, a negative limit dropping the tail."""
    if limit < 0:
        limit = max(0, (ranking.touched & candidates).bit_count() + limit)
    return ranking.best(candidates, limit)


def _excluded(
    ix: lexical.WorkspaceIndex, ranking: Ranking, candidates: int
) -> tuple[list[tuple[int, float]], int]:
    """The best few scored pool members the filters removed, and how many there are.

    A removed member whose id some candidate also has is not reported (memdsl
    compares ids); only declarations with duplicated ids can be affected.
    """
    removed = ranking.touched & ix.pool & ~candidates
    for o in ix.space.ordered(removed & ix.shared_ids):
        if any(ix.has_bit(candidates, twin) for twin in ix.ids[ix.ids_of[o]]):
            removed ^= ix.space.bitmap((o,))
    return ranking.best(removed, EXCLUDED_SHOWN), removed.bit_count()


def _scored(
    ix: lexical.WorkspaceIndex, terms: set[str], bonus: int, ordinal: int, score: float
) -> ScoredDeclaration:
    decl = ix.declarations[ordinal]
    matched = terms.intersection(word_tokens(decl.searchable_text()))
    if ix.has_bit(bonus, ordinal):
        matched.add(f"subject:{decl.subject}")
    return ScoredDeclaration(decl, score, sorted(matched))


def _must(ix: lexical.WorkspaceIndex, hits: list[int]) -> int:
    """Constraints sharing an id, scope or subject with a hit, plus every global one."""
    bits = ix.global_constraints
    same_id = []
    constraint_bits = _layers(ix).constraint_bits
    for o in hits:
        same_id.extend(c for c in ix.ids[ix.ids_of[o]] if ix.has_bit(ix.constraints, c))
        scope, subject = ix.scopes[o], ix.subjects[o]
        if scope:
            bits |= constraint_bits(ix, lexical.SCOPE, scope)
        if subject:
            bits |= constraint_bits(ix, lexical.SUBJECT, subject)
    if same_id:
        bits |= ix.space.bitmap(same_id)
    return bits  # type: ignore[no-any-return]


# MUST layers by their bitmap, per index (so per snapshot and view): with few scopes
# most queries meet one of a few sets of hundreds of rules each, and a workload that
# cycles through more sets than a count bound holds would miss every time. Bounded by
# the rules the layers hold (about 100 bytes each) plus their keys, charged at the same
# rate (a key is a bitmap as wide as its last rule's slot: 125 KB at 1M declarations);
# an index that is replaced takes its layers with it.
MUST_LAYER_RULES = 262_144


def _layer_cost(bits: int, size: int) -> int:
    """A layer's charge in rule units of about 100 bytes: its rules and its key."""
    return size + bits.bit_length() // 800


# The constraints under one scope or subject, per index: a hit's scope and subject are
# met again by many queries, and the index assembles a key held by few files anew on
# every call (at 10k most of them). Bounded by bytes, as wide as the index's bitmaps
# (125 KB at 1M declarations); started over when full.
CONSTRAINT_BITS_BYTES = 8 * 1024 * 1024


class _Layers:
    __slots__ = ("by_bits", "rules", "constraints", "constraint_bytes")

    def __init__(self) -> None:
        self.by_bits: OrderedDict[int, MustLayer] = OrderedDict()
        self.rules = 0
        self.constraints: dict[tuple[str, str], int] = {}
        self.constraint_bytes = 0

    def constraint_bits(self, ix: lexical.WorkspaceIndex, table: str, key: str) -> int:
        """`ix.constraint_bits(table, key)`, remembered."""
        bits = self.constraints.get((table, key))
        if bits is None:
            bits = ix.constraint_bits(table, key)
            cost = bits.bit_length() // 8 + 64
            with _LAYERS_LOCK:
                if self.constraint_bytes + cost > CONSTRAINT_BITS_BYTES:
                    self.constraints.clear()
                    self.constraint_bytes = 0
                self.constraints[(table, key)] = bits
                self.constraint_bytes += cost
        return bits


_LAYERS: weakref.WeakKeyDictionary[Any, _Layers] = weakref.WeakKeyDictionary()
_LAYERS_LOCK = threading.Lock()


def _layers(ix: lexical.WorkspaceIndex) -> _Layers:
    layers = _LAYERS.get(ix)
    if layers is None:
        with _LAYERS_LOCK:
            layers = _LAYERS.get(ix)
            if layers is None:
                layers = _LAYERS[ix] = _Layers()
    return layers


def _must_layer(ix: lexical.WorkspaceIndex, bits: int) -> MustLayer:
    layers = _layers(ix)
    with _LAYERS_LOCK:
        layer = layers.by_bits.get(bits)
        if layer is not None:
            layers.by_bits.move_to_end(bits)
            return layer
    layer = must_layer(ix.declarations.take(ix.space.ordered(bits)))
    size = _layer_cost(bits, len(layer.declarations))
    if size > MUST_LAYER_RULES // 4:
        return layer  # one layer must not push out most of the others
    with _LAYERS_LOCK:
        kept = layers.by_bits.get(bits)
        if kept is not None:
            return kept
        layers.by_bits[bits] = layer
        layers.rules += size
        while layers.rules > MUST_LAYER_RULES:
            dropped_bits, dropped = layers.by_bits.popitem(last=False)
            layers.rules -= _layer_cost(dropped_bits, len(dropped.declarations))
    return layer
