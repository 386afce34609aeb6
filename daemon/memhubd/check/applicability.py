"""Which constraints a compliance check must evaluate, found through the lexical index.

Selection is memdsl's: global scope, the given subject or scope, one shared content
word, or a `when_any` phrase inside the text. It must never truncate: enforcement
cannot drop a rule because some result limit was reached.
"""

from __future__ import annotations

from typing import Any

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
    selected = ix.space.ordered(bits)
    # One entry per id; with duplicate ids the later declaration wins (memdsl keys
    # its selection by id while walking the workspace in order).
    by_id = dict(zip(ix.ids_of.take(selected), selected, strict=True))
    return ix.declarations.take(map(by_id.__getitem__, sorted(by_id)))


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
