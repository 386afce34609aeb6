"""The compliance gate: evaluate each applicable constraint's guard against a candidate.

Rules without an executable guard are never guessed at; they make the verdict
`needs_review`. Deny/require checks read the candidate only; `when_any` reads the task
too. This module must not decide applicability (that is `applicability`).

Access policy hides content, never the obligation: every applicable rule is judged,
including those the caller may not read; a hidden rule's finding changes the verdict
but only its count reaches the pack (`withheld_*`), never its id or text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memhubd.check import patterns
from memhubd.check.applicability import applicable_slots, joined_text
from memhubd.check.pack import CompliancePack
from memhubd.check.rules import Rule, Texts, judge
from memhubd.index import workspace as lexical

GUARD_MATCH_FIELDS = ("when_any", "deny_any", "deny_regex", "require_any", "require_regex")


def check_compliance(
    ws: Any,
    task: str,
    candidate: str,
    *,
    subject: str | None = None,
    scope: str | None = None,
    exceptions: Sequence[str] | None = None,
    regex_timeout: float = patterns.DEFAULT_TIMEOUT,
    hidden: Callable[[Any], bool] | None = None,
) -> CompliancePack:
    """Preflight a proposed action or draft against the constraints that apply to it.

    `regex_timeout` bounds each guard-regex search (seconds); a search that runs out
    makes its rule `needs_review` instead of hanging the caller. `ws` must be the whole
    workspace; `hidden(decl)` says which of its rules the caller may not read (they
    still bind the caller: see `evaluate_constraints`).
    """
    ix = lexical.index_for(ws)
    # Rules are read once per index, kept by slot: a check reads about 15,000 of them at
    # 1M declarations, and a list lookup per slot costs less than reaching each
    # declaration through its file's segment.
    by_slot: list[Rule | None] = ix.derived(
        "check.rules", lambda: [None] * ix.space.size, lambda old, slots: slots.list(old)
    )

    def select(task_text: str, candidate_text: str) -> list[Rule]:
        text = joined_text(task_text, candidate_text)
        slots = applicable_slots(ix, text, subject=subject, scope=scope)
        rules = list(map(by_slot.__getitem__, slots.tolist()))
        unread = [n for n, rule in enumerate(rules) if rule is None]
        if unread:
            for n, decl in zip(unread, ix.declarations.take(slots[unread]), strict=True):
                rules[n] = by_slot[slots[n]] = Rule.of(decl)
        return rules  # type: ignore[return-value]

    return evaluate_rules(
        select,
        task,
        candidate,
        subject=subject,
        scope=scope,
        exceptions=exceptions,
        regex_timeout=regex_timeout,
        hidden=hidden,
        phrases_in=ix.trigger_phrases.phrases_in,
    )


def evaluate_constraints(
    select: Callable[[str, str], list[Any]],
    task: str,
    candidate: str,
    *,
    subject: str | None,
    scope: str | None,
    exceptions: Iterable[Any] | None,
    regex_timeout: float = patterns.DEFAULT_TIMEOUT,
    rule_of: Callable[[Any], Rule] = Rule.of,
    hidden: Callable[[Any], bool] | None = None,
) -> CompliancePack:
    """`evaluate_rules` over the constraints `select(task, candidate)` gives, each read
    with `rule_of`."""
    return evaluate_rules(
        lambda t, c: [rule_of(decl) for decl in select(t, c)],
        task,
        candidate,
        subject=subject,
        scope=scope,
        exceptions=exceptions,
        regex_timeout=regex_timeout,
        hidden=hidden,
    )


def evaluate_rules(
    select: Callable[[str, str], list[Rule]],
    task: str,
    candidate: str,
    *,
    subject: str | None,
    scope: str | None,
    exceptions: Iterable[Any] | None,
    regex_timeout: float = patterns.DEFAULT_TIMEOUT,
    hidden: Callable[[Any], bool] | None = None,
    phrases_in: Callable[[str], Iterable[str]] | None = None,
) -> CompliancePack:
    """Normalise the inputs, select rules with `select(task, candidate)`, judge each.

    A rule for which `hidden(decl)` is true is judged like any other and counts towards
    the verdict, but the pack only counts its violation or open question: it is left
    out of `applicable_must`, `evaluated` and every per-rule list. `phrases_in(text)`,
    when given, must give every `when_any` phrase of the selected rules that occurs in
    the lowered text (the rest are then not tested rule by rule).
    """
    task_text = str(task or "").strip()
    candidate_text = str(candidate or "").strip()
    supplied = {str(item).strip() for item in (exceptions or []) if str(item).strip()}
    applicable = select(task_text, candidate_text)
    combined = "\n".join(part for part in (task_text, candidate_text) if part)
    lowered = combined.lower()
    fired = frozenset(phrases_in(lowered)) if phrases_in is not None else None
    text = Texts(candidate_text, candidate_text.lower(), lowered, regex_timeout, fired)
    buckets: dict[str, list[dict[str, Any]]] = {
        "violations": [],
        "exceptions_applied": [],
        "unknowns": [],
    }
    evaluated = []
    readable = []
    withheld = {"violations": 0, "exceptions_applied": 0, "unknowns": 0}
    for rule in applicable:
        status, bucket, item = judge(rule, text, supplied)
        if hidden is not None and hidden(rule.decl):
            if bucket:
                withheld[bucket] += 1
            continue
        readable.append(rule.decl)
        if bucket:
            buckets[bucket].append({**rule.ref, **item})
        evaluated.append({**rule.ref, "status": status})
    return CompliancePack(
        task=task_text,
        candidate=candidate_text,
        subject=str(subject or ""),
        scope=str(scope or ""),
        asserted_exceptions=sorted(supplied),
        verdict=_verdict(buckets, withheld),
        applicable_must=readable,
        evaluated=evaluated,
        withheld_violations=withheld["violations"],
        withheld_unknowns=withheld["unknowns"],
        **buckets,
    )


def _verdict(buckets: dict[str, list[dict[str, Any]]], withheld: dict[str, int]) -> str:
    if buckets["violations"] or withheld["violations"]:
        return "block"
    if buckets["unknowns"] or withheld["unknowns"]:
        return "needs_review"
    return "allow"
