"""A linear-scan EvidencePack builder: the plain reading of the query contract.

It rescans every declaration per query and exists only so tests can prove the indexed
engine (`memhubd.query.engine`) gives identical answers; never serve from it.
"""

from __future__ import annotations

from typing import Any

from memhubd.index.tokens import word_tokens
from memhubd.query.layers import Retrieval, assemble_pack, question_line, subject_hits
from memhubd.query.pack import EvidencePack, ScoredDeclaration
from memhubd.query.terms import QUERY_STOPWORDS, query_terms


def build_evidence_pack_linear(
    ws: Any,
    query: str,
    kinds: list[str] | None = None,
    subject: str | None = None,
    limit: int = 8,
    types: list[str] | None = None,
) -> EvidencePack:
    terms = query_terms(query)
    lowered = query.lower()
    matched = [(a, s) for a, s in ws.alias_map().items() if a in lowered]
    wanted = subject_hits(matched, subject)
    type_filter = types if types is not None else kinds
    superseded = ws.superseded_ids()

    def hidden(d: Any) -> bool:
        return d.id in superseded or d.name in superseded

    pool = [
        d
        for d in ws.active()
        if d.runtime_role != "symbol" and d.has_capability("searchable") and not hidden(d)
    ]
    candidates = [
        d
        for d in pool
        if (type_filter is None or d.kind in type_filter)
        and (subject is None or d.subject == subject)
    ]
    scored = [_score(d, terms, wanted) for d in candidates]
    hits = sorted((s for s in scored if s.score > 0), key=lambda s: -s.score)[:limit]
    excluded: list[ScoredDeclaration] = []
    if len(candidates) != len(pool):
        candidate_ids = {d.id for d in candidates}
        rest = (_score(d, terms, wanted) for d in pool if d.id not in candidate_ids)
        excluded = sorted((s for s in rest if s.score > 0), key=lambda s: -s.score)
    hit_ids = {s.declaration.id for s in hits}
    hit_scopes = {s.declaration.scope for s in hits if s.declaration.scope}
    hit_subjects = {s.declaration.subject for s in hits if s.declaration.subject}
    must = [
        d
        for d in ws.active()
        if d.runtime_role == "constraint"
        and not hidden(d)
        and (
            d.id in hit_ids
            or d.scope in hit_scopes
            or d.subject in hit_subjects
            or d.scope == "global"
        )
    ]
    questions = [
        question_line(s.declaration)
        for s in scored
        if s.declaration.runtime_role == "question" and s.score > 0
    ]
    return assemble_pack(
        Retrieval(
            query=query,
            terms=terms,
            matched_aliases=matched,
            subject=subject,
            type_filter=type_filter,
            candidates=len(candidates),
            hits=hits,
            excluded=excluded,
            excluded_total=len(excluded),
            questions=questions,
            must=must,
        )
    )


def _score(d: Any, terms: list[str], wanted: list[str]) -> ScoredDeclaration:
    hay = {t for t in word_tokens(d.searchable_text()) if t not in QUERY_STOPWORDS}
    matched = [t for t in set(terms) if t in hay]
    score = float(len(matched))
    if d.subject and d.subject in wanted:
        score += 2.0
        matched.append(f"subject:{d.subject}")
    if score > 0 and str(d.confidence or "") == "high":
        score += 0.25
    return ScoredDeclaration(d, score, sorted(matched))
