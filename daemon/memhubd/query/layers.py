"""Turns a retrieval (hits, excluded matches, MUST) into an EvidencePack.

Shared by the indexed engine and the linear reference, which differ only in how they
find those inputs; this module must not look at the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memhubd.query.pack import EvidencePack, ScoredDeclaration

# How many filter-excluded matches the trace lists (the total is always reported).
EXCLUDED_SHOWN = 5


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a retriever found for one query.

    `hits` are scored candidates in score order after `limit`; `excluded` are the
    best-scored pool members the filters removed (at least the first
    `EXCLUDED_SHOWN`; only looked for when the filters removed something) and
    `excluded_total` how many there are; `questions` are the question declarations
    among the scored candidates, in workspace order; `must` is the MUST layer in
    workspace order.
    """

    query: str
    terms: list[str]
    matched_aliases: list[tuple[str, list[str]]]
    subject: str | None
    type_filter: Any
    candidates: int
    hits: list[ScoredDeclaration]
    excluded: list[ScoredDeclaration]
    excluded_total: int
    questions: list[Any]
    must: list[Any]


def subject_hits(matched_aliases: list[tuple[str, list[str]]], subject: str | None) -> list[str]:
    """Symbols named by the matched aliases, then the subject parameter if given."""
    hits = [symbol for _, symbols in matched_aliases for symbol in symbols]
    if subject:
        hits.append(subject)
    return hits


def assemble_pack(r: Retrieval) -> EvidencePack:
    """Layer a retrieval: SHOULD and CONTEXT from hits, CONFLICT, MISSING, trace."""
    must_ids = {d.id for d in r.must}
    should = [
        s.declaration
        for s in r.hits
        if s.declaration.id not in must_ids and s.declaration.runtime_role == "guidance"
    ]
    taken = must_ids | {d.id for d in should}
    context = [
        s
        for s in r.hits
        if s.declaration.id not in taken and s.declaration.runtime_role == "assertion"
    ]
    selected = r.must + should + [s.declaration for s in context]
    return EvidencePack(
        query=r.query,
        must=list(r.must),
        should=should,
        context=context,
        conflicts=_conflicts(selected),
        missing=_missing(r, selected),
        resolved_subjects=sorted(set(subject_hits(r.matched_aliases, r.subject))),
        trace=_trace(r),
    )


def _conflicts(selected: list[Any]) -> list[tuple[Any, str]]:
    identities = {d.id for d in selected} | {d.name for d in selected}
    out = []
    for d in selected:
        for target in d.relations().get("conflicts_with", []):
            if target in identities or target.split(":", 1)[-1] in identities:
                out.append((d, target))
    return out


def _missing(r: Retrieval, selected: list[Any]) -> list[str]:
    out = []
    if not r.hits:
        # The term list is shown as a Python list repr, quotes and all.
        out.append(f"no declarations matched query terms: {r.terms!r}")
        if r.excluded_total:
            out.append(
                f"{r.excluded_total} declaration(s) matched the query but "
                "were excluded by type/subject filters"
            )
    if r.subject and not any(d.subject == r.subject for d in selected):
        out.append(f"no declarations found for subject '{r.subject}'")
    out.extend(f"question [{d.id}]: {d.claim_text}" for d in r.questions)
    return out


def _trace(r: Retrieval) -> dict[str, Any]:
    return {
        "query_terms": list(r.terms),
        "matched_aliases": {alias: sorted(set(symbols)) for alias, symbols in r.matched_aliases},
        "filters": {
            "types": list(r.type_filter) if r.type_filter is not None else None,
            "subject": r.subject,
        },
        "candidates_considered": r.candidates,
        "hits": len(r.hits),
        "excluded_by_filters_total": r.excluded_total,
        "excluded_by_filters": [
            {
                "id": s.declaration.id,
                "type": s.declaration.kind,
                "subject": s.declaration.subject,
                "matched_terms": sorted(s.matched_terms),
            }
            for s in r.excluded[:EXCLUDED_SHOWN]
        ],
    }
