"""Turns a retrieval (hits, excluded matches, MUST) into an EvidencePack.

Shared by the indexed engine and the linear reference, which differ only in how they
find those inputs; this module must not look at the workspace.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memhubd.query.pack import EvidencePack, ScoredDeclaration

# How many filter-excluded matches the trace lists (the total is always reported).
EXCLUDED_SHOWN = 5


@dataclass(frozen=True, slots=True, eq=False)
class MustLayer:
    """A MUST layer with what assembling a pack asks of it, worked out once.

    A retriever that meets the same MUST set again (few scopes, many rules: most
    queries do) hands the same object back, so the per-rule work (ids, names,
    `conflicts_with` targets) is not redone per query and `declarations`, the same
    tuple each time, can key caches of its encoded forms.
    """

    declarations: tuple[Any, ...]
    ids: frozenset[str]
    identities: frozenset[str]  # ids and names, as CONFLICT matches targets
    subjects: frozenset[Any]
    relations: tuple[tuple[Any, str], ...]  # (rule, conflicts_with target), in order


# What a MUST layer reads of one rule: (id, name, subject, `conflicts_with` targets).
RuleFacts = tuple[str, str, Any, tuple[str, ...]]


def rule_facts(d: Any) -> RuleFacts:
    """What `must_layer` reads of the rule `d`: a caller may keep it per rule."""
    return (d.id, d.name, d.subject, _conflict_targets(d))


def must_layer(declarations: Iterable[Any], facts: Sequence[RuleFacts] | None = None) -> MustLayer:
    """The MUST layer of `declarations` (in workspace order). `facts`, when given, must
    be `[rule_facts(d) for d in declarations]` (a caller may keep each rule's)."""
    items = tuple(declarations)
    if facts is None:
        facts = [rule_facts(d) for d in items]
    ids = frozenset([f[0] for f in facts])
    relations = []
    for d, (_id, _name, _subject, targets) in zip(items, facts, strict=True):
        if targets:  # most rules have none
            relations.extend([(d, target) for target in targets])
    return MustLayer(
        declarations=items,
        ids=ids,
        identities=ids.union([f[1] for f in facts]),
        subjects=frozenset([f[2] for f in facts]),
        relations=tuple(relations),
    )


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a retriever found for one query.

    `hits` are scored candidates in score order after `limit`; `excluded` are the
    best-scored pool members the filters removed (at least the first
    `EXCLUDED_SHOWN`; only looked for when the filters removed something) and
    `excluded_total` how many there are; `questions` are the MISSING lines
    (`question_line`) of the question declarations among the scored candidates, in
    workspace order; `must` is the MUST layer in workspace order, as declarations or
    as a `MustLayer`.
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
    questions: list[str]
    must: Sequence[Any] | MustLayer


def subject_hits(matched_aliases: list[tuple[str, list[str]]], subject: str | None) -> list[str]:
    """Symbols named by the matched aliases, then the subject parameter if given."""
    hits = [symbol for _, symbols in matched_aliases for symbol in symbols]
    if subject:
        hits.append(subject)
    return hits


def assemble_pack(r: Retrieval) -> EvidencePack:
    """Layer a retrieval: SHOULD and CONTEXT from hits, CONFLICT, MISSING, trace."""
    must = r.must if isinstance(r.must, MustLayer) else must_layer(r.must)
    should = [
        s.declaration
        for s in r.hits
        if s.declaration.id not in must.ids and s.declaration.runtime_role == "guidance"
    ]
    should_ids = {d.id for d in should}
    context = [
        s
        for s in r.hits
        if s.declaration.id not in must.ids
        and s.declaration.id not in should_ids
        and s.declaration.runtime_role == "assertion"
    ]
    others = should + [s.declaration for s in context]
    return EvidencePack(
        query=r.query,
        must=must.declarations,
        should=should,
        context=context,
        conflicts=_conflicts(must, others),
        missing=_missing(r, must, others),
        resolved_subjects=sorted(set(subject_hits(r.matched_aliases, r.subject))),
        trace=_trace(r),
    )


def _conflict_targets(d: Any) -> Sequence[str]:
    # The one relation, not the whole mapping `relations()` builds: a query reads this
    # for every rule of a MUST layer it has not met before.
    return d.relation_targets("conflicts_with")  # type: ignore[no-any-return]


def _conflicts(must: MustLayer, others: list[Any]) -> list[tuple[Any, str]]:
    """`conflicts_with` relations of the selected declarations (MUST, then `others`)
    whose target is selected too, by id, name, or the part after the first colon."""
    extra = {d.id for d in others} | {d.name for d in others}

    def selected(target: str) -> bool:
        tail = target.split(":", 1)[-1]
        known = must.identities
        return target in known or target in extra or tail in known or tail in extra

    out = [(d, target) for d, target in must.relations if selected(target)]
    for d in others:
        out.extend((d, target) for target in _conflict_targets(d) if selected(target))
    return out


def _missing(r: Retrieval, must: MustLayer, others: list[Any]) -> list[str]:
    out = []
    if not r.hits:
        # The term list is shown as a Python list repr, quotes and all.
        out.append(f"no declarations matched query terms: {r.terms!r}")
        if r.excluded_total:
            out.append(
                f"{r.excluded_total} declaration(s) matched the query but "
                "were excluded by type/subject filters"
            )
    if (
        r.subject
        and r.subject not in must.subjects
        and not any(d.subject == r.subject for d in others)
    ):
        out.append(f"no declarations found for subject '{r.subject}'")
    out.extend(r.questions)
    return out


def question_line(d: Any) -> str:
    """The MISSING line of a question declaration the query matched."""
    return f"question [{d.id}]: {d.claim_text}"


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
