"""Which constraints a compliance check must evaluate, found through the lexical index.

Selection is memdsl's: global scope, the given subject or scope, one shared content
word, or a `when_any` phrase inside the text. It must never truncate: enforcement
cannot drop a rule because some result limit was reached.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memhubd.index import workspace as lexical
from memhubd.index.tokens import word_tokens

# The compliance stopwords (28) differ from the query's: `never`, `must`, `user` and
# `before` say nothing about which rule applies.
COMPLIANCE_STOPWORDS = frozenset(
    """
    a an and are as at be before by for from in is it of on or the this to with my me
    i user never must any
    """.split()
)


def compliance_terms(text: str) -> set[str]:
    """The words of `text` that count for applicability."""
    return {t for t in word_tokens(text) if t not in COMPLIANCE_STOPWORDS}


def joined_text(task: str, candidate: str) -> str:
    """Task and candidate as applicability reads them: non-empty parts, newline, stripped."""
    return "\n".join(part for part in (task, candidate) if part).strip()


def applicable_constraints(
    ws: Any,
    task: str,
    candidate: str = "",
    *,
    subject: str | None = None,
    scope: str | None = None,
) -> list[Any]:
    """Active, non-superseded constraints relevant to the action, sorted by id."""
    ix = lexical.index_for(ws)
    text = joined_text(task, candidate)
    return ix.declarations.take(applicable_slots(ix, text, subject=subject, scope=scope))  # type: ignore[no-any-return]


def applicable_slots(
    ix: lexical.WorkspaceIndex, text: str, *, subject: str | None, scope: str | None
) -> Any:
    """Slots of the constraints `applicable_constraints` selects for the joined `text`,
    in its order (an int64 array)."""
    bits = ix.global_constraints
    if subject:
        bits |= ix.bits(lexical.SUBJECT, subject)
    if scope:
        bits |= ix.bits(lexical.SCOPE, scope)
    for term in compliance_terms(text):
        bits |= ix.bits(lexical.TERM, term)
    bits &= ix.constraints
    triggered = ix.trigger_phrases.slots_in(text.lower())
    if triggered:
        bits |= ix.space.bitmap(triggered)
    selected = ix.space.member_array(bits)
    # One entry per id; with duplicate ids the later declaration wins (memdsl keys
    # its selection by id while walking the workspace in order). Ordered by the rank
    # of each constraint's id, then by slot: the last of each rank is kept.
    ranks = ix.derived(
        "check.id_ranks", lambda: _id_ranks(ix), lambda old, slots: _carry_ranks(ix, old, slots)
    )[selected]
    order = np.lexsort((selected, ranks))
    ranked = ranks[order]
    last = np.ones(len(order), np.bool_)
    last[:-1] = ranked[1:] != ranked[:-1]
    return selected[order[last]]


# Constraints of changed files that take their ranks from other holders of their ids,
# at most; beyond that (or for an id no kept file holds) the ranks are built anew.
_CARRIED_RANKS = 4096


def _carry_ranks(ix: lexical.WorkspaceIndex, old: Any, slots: Any) -> Any:
    """The previous index's ranks for the slots it shares with `ix`; a live constraint
    in between takes the rank its id had before (in the changed files, or held by
    another of the shared slots). None when an id had no rank (its place among the
    ids is unknown) or too many constraints are in between."""
    if slots.size - slots.head - slots.tail > _CARRIED_RANKS:
        return None
    ranks = slots.array(old, -1)
    before = {ident: rank for ident, rank in slots.old_ids(old) if rank >= 0}
    constraints = ix.space.member_array(ix.constraints)
    unranked = constraints[ranks[constraints] < 0]
    if unranked.size > _CARRIED_RANKS:
        return None
    for slot in unranked.tolist():
        ident = ix.ids_of[slot]
        rank = before.get(ident)
        if rank is None:
            rank = max((int(ranks[o]) for o in ix.ids[ident]), default=-1)
            if rank < 0:
                return None
        ranks[slot] = rank
    return ranks


def _id_ranks(ix: lexical.WorkspaceIndex) -> Any:
    """slot -> the rank of its id among the ids of the live constraints (equal ids, equal
    ranks; -1 elsewhere): sorting a selection is then a sort of integers, not of strings
    scattered over the heap (about 15,000 per check at 1M declarations)."""
    slots = ix.space.member_array(ix.constraints)
    ids = ix.ids_of.take(slots)
    ranks = np.full(ix.space.size, -1, np.int32)
    if ids:
        order = sorted(range(len(ids)), key=ids.__getitem__)
        ordered = [ids[n] for n in order]
        # The rank goes up wherever the id differs from the one before it.
        steps = np.fromiter(map(str.__ne__, ordered[1:], ordered), np.int32, len(ids) - 1)
        ranks[slots[order]] = np.concatenate(([0], np.cumsum(steps, dtype=np.int32)))
    return ranks


def applicable_boundaries(
    ws: Any,
    task: str,
    candidate: str = "",
    *,
    subject: str | None = None,
    scope: str | None = None,
) -> list[Any]:
    """The pre-0.5 name of `applicable_constraints`."""
    return applicable_constraints(ws, task, candidate, subject=subject, scope=scope)
