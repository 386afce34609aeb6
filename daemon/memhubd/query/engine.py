"""The query engine: an EvidencePack from the workspace's lexical index.

Works on bitmaps of the query's term and subject postings, and on the constraints that
share an id, scope or subject with a hit; the answer is the one the linear reading of
the contract gives (`memhubd.query.reference`), by construction and by property test.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from memhubd.index import workspace as lexical
from memhubd.index.tokens import word_tokens
from memhubd.query.layers import (
    EXCLUDED_SHOWN,
    MustLayer,
    Retrieval,
    RuleFacts,
    assemble_pack,
    must_layer,
    question_line,
    rule_facts,
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
    must_gate: Callable[[Any, Any], None] | None = None,
) -> EvidencePack:
    """Answer `query` with MUST/SHOULD/CONTEXT/CONFLICT/MISSING (`types` overrides `kinds`).

    `must_gate(index, slots)`, when given, sees the MUST layer's slots (ascending, an int64
    array of `index`) as soon as they are known, before the layer is built: it may raise
    to stop a query whose answer is already known to be refused (a size limit).
    """
    ix = lexical.index_for(ws)
    terms = query_terms(query)
    matched = ix.match_aliases(query.lower())
    wanted = subject_hits(matched, subject)
    type_filter = types if types is not None else kinds
    bonus = 0
    for symbol in set(wanted):
        bonus |= ix.bits(lexical.SUBJECT, symbol)
    unique_terms = set(terms)
    term_bits = {t: ix.bits(lexical.TERM, t) for t in unique_terms}
    ranking = Ranking(
        ix.space,
        term_bits.values(),
        bonus,
        high=ix.high_confidence,
        universe=ix.pool,
    )
    candidates = ix.candidates(type_filter, subject)
    hits = _hits(ranking, candidates, limit)
    must = _must(ix, [o for o, _ in hits])
    if must_gate is not None:
        must_gate(ix, must)
    excluded: list[tuple[int, float]] = []
    excluded_total = 0
    if candidates != ix.pool:
        excluded, excluded_total = _excluded(ix, ranking, candidates)

    def scored(entry: tuple[int, float]) -> ScoredDeclaration:
        return _scored(ix, term_bits, bonus, *entry)

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
            questions=_question_lines(ix, ranking.touched & candidates & ix.questions),
            must=_must_layer(ix, must),
        )
    )


def _question_lines(ix: lexical.WorkspaceIndex, questions: int) -> list[str]:
    """The MISSING lines of the questions in `questions`, workspace order. Kept per slot
    with the index: a common word matches about 800 questions at 1M declarations, and
    reading each through its segment and formatting it would cost more than the rest of
    many queries."""
    lines: list[str | None] = ix.derived(
        "query.question_lines", lambda: [None] * ix.space.size, lambda old, slots: slots.list(old)
    )
    slots = ix.space.member_array(questions)
    found = list(map(lines.__getitem__, slots.tolist()))
    unread = [n for n, line in enumerate(found) if line is None]
    if unread:
        for n, decl in zip(unread, ix.declarations.take(slots[unread]), strict=True):
            found[n] = lines[slots[n]] = question_line(decl)
    return found  # type: ignore[return-value]


def _rules(ix: lexical.WorkspaceIndex, slots: Any) -> tuple[list[Any], list[RuleFacts]]:
    """The rules at `slots` and their `rule_facts`, kept per slot with the index: queries
    meet the same rules in ever new MUST layers, and reading a rule (and its id, name,
    subject and relations) costs more than the rest of building its layer."""
    kept: list[tuple[Any, RuleFacts] | None] = ix.derived(
        "query.rules", lambda: [None] * ix.space.size, lambda old, slots: slots.list(old)
    )
    at = slots.tolist()
    found = list(map(kept.__getitem__, at))
    unread = [n for n, entry in enumerate(found) if entry is None]
    if unread:
        for n, rule in zip(unread, ix.declarations.take(slots[unread]), strict=True):
            found[n] = kept[at[n]] = (rule, rule_facts(rule))
    return [entry[0] for entry in found], [entry[1] for entry in found]  # type: ignore[index]


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


# Up to this many bytes a bitmap (8 bits a declaration) is shifted faster than a hit's
# text is split into words; past it each test costs more than the split.
BIT_TEST_BYTES = 4096


def _scored(
    ix: lexical.WorkspaceIndex, term_bits: dict[str, int], bonus: int, ordinal: int, score: float
) -> ScoredDeclaration:
    """The hit at `ordinal` with the query terms it holds: read from the terms' postings
    (`term_bits`, the bitmap of each) in a small workspace, else from its words."""
    decl = ix.declarations[ordinal]
    if ix.space.nbytes <= BIT_TEST_BYTES:
        shift = ix.space.width - 1 - ordinal
        matched = {term for term, bits in term_bits.items() if bits >> shift & 1}
    else:
        matched = set(term_bits).intersection(word_tokens(decl.searchable_text()))
    if ix.has_bit(bonus, ordinal):
        matched.add(f"subject:{decl.subject}")
    return ScoredDeclaration(decl, score, sorted(matched))


def _must(ix: lexical.WorkspaceIndex, hits: list[int]) -> Any:
    """Constraints sharing an id, scope or subject with a hit, plus every global one:
    their slots, ascending (an int64 array). Gathered as slots, not bitmaps: at 1M
    declarations a bitmap is 125 KB to build and combine, a hit's rules a few dozen."""
    layers = _layers(ix)
    same_id: list[int] = []
    keys: set[tuple[str, str]] = set()
    for o in hits:
        id_, scope, subject = ix.keys_at(o)
        same_id.extend(ix.ids[id_])
        if scope:
            keys.add((lexical.SCOPE, scope))
        if subject:
            keys.add((lexical.SUBJECT, subject))
    # Hits share scopes and subjects: each one's constraints are taken once (at 10k a
    # union of 156 slots became 92, on the dense shape at 100k 2,997 became 1,910).
    parts = [layers.global_slots(ix)]
    parts.extend([layers.constraint_slots(ix, table, key) for table, key in keys])
    if same_id:
        parts.append(ix.only_constraints(np.array(same_id, np.int64)))
    return _union(np.concatenate(parts))


def _union(slots: Any) -> Any:
    """`np.unique(slots)` by sorting: numpy 2's `unique` hashes first, 0.5 ms for the
    2,000 slots of a dense workspace's MUST layer where a sort takes 0.03 ms."""
    slots.sort()
    keep = np.empty(len(slots), bool)
    keep[:1] = True
    np.not_equal(slots[1:], slots[:-1], out=keep[1:])
    return slots[keep]


# MUST layers by their rules' slots, per index (so per snapshot and view): with few
# scopes most queries meet one of a few sets of hundreds of rules each, and a workload
# that cycles through more sets than a count bound holds would miss every time. Bounded
# by the bytes the layers hold: their tuples and sets as allocated (180-400 bytes a
# rule; the rules themselves belong to the snapshot) and their keys (8 bytes a rule).
# An index that is replaced takes its layers with it.
MUST_LAYER_BYTES = 64 * 1024 * 1024
_LAYER_OVERHEAD = 200  # the MustLayer, its key's bytes object and its dict entry, roughly


def _layer_cost(key: bytes, layer: MustLayer) -> int:
    """A kept layer's bytes: its key, and its containers as allocated (not the rules
    they refer to)."""
    return (
        len(key)
        + _LAYER_OVERHEAD
        + sys.getsizeof(layer.declarations)
        + sys.getsizeof(layer.ids)
        + sys.getsizeof(layer.identities)
        + sys.getsizeof(layer.subjects)
        + sys.getsizeof(layer.relations)
    )


# The constraints under one scope or subject, as slots, per index: a hit's scope and
# subject are met again by many queries, and the index reads a key held by few files
# anew on every call. Bounded by the arrays' bytes; started over when full.
CONSTRAINT_SLOTS_BYTES = 8 * 1024 * 1024
_ARRAY_OVERHEAD = 112  # an ndarray's header, its key tuple and dict entry, roughly


class _Layers:
    __slots__ = ("by_slots", "layer_bytes", "constraints", "constraint_bytes", "_global")

    def __init__(self) -> None:
        self.by_slots: OrderedDict[bytes, MustLayer] = OrderedDict()
        self.layer_bytes = 0
        self.constraints: dict[tuple[str, str], Any] = {}
        self.constraint_bytes = 0
        self._global: Any = None

    def global_slots(self, ix: lexical.WorkspaceIndex) -> Any:
        """Slots of the index's global constraints (an int64 array)."""
        if self._global is None:
            self._global = np.array(ix.space.members(ix.global_constraints), np.int64)
        return self._global

    def constraint_slots(self, ix: lexical.WorkspaceIndex, table: str, key: str) -> Any:
        """`ix.constraint_slots(table, key)`, remembered."""
        slots = self.constraints.get((table, key))
        if slots is None:
            slots = ix.constraint_slots(table, key)
            cost = slots.nbytes + _ARRAY_OVERHEAD
            with _LAYERS_LOCK:
                if self.constraint_bytes + cost > CONSTRAINT_SLOTS_BYTES:
                    self.constraints.clear()
                    self.constraint_bytes = 0
                self.constraints[(table, key)] = slots
                self.constraint_bytes += cost
        return slots


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


def _must_layer(ix: lexical.WorkspaceIndex, slots: Any) -> MustLayer:
    layers = _layers(ix)
    key = slots.tobytes()
    with _LAYERS_LOCK:
        layer = layers.by_slots.get(key)
        if layer is not None:
            layers.by_slots.move_to_end(key)
            return layer
    layer = must_layer(*_rules(ix, slots))
    size = _layer_cost(key, layer)
    if size > MUST_LAYER_BYTES // 4:
        return layer  # one layer must not push out most of the others
    with _LAYERS_LOCK:
        kept = layers.by_slots.get(key)
        if kept is not None:
            return kept
        layers.by_slots[key] = layer
        layers.layer_bytes += size
        while layers.layer_bytes > MUST_LAYER_BYTES:
            dropped_key, dropped = layers.by_slots.popitem(last=False)
            layers.layer_bytes -= _layer_cost(dropped_key, dropped)
    return layer
