"""One constraint's guard, read once, and the judgement of a candidate against it.

A `Rule` holds everything judging needs except the texts, so repeated checks do not
re-read fields or re-compile patterns. The order of the steps is memdsl's and part of
the contract: guard, trigger, exception, capability, regex validity, deny/require.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import structlog

from memhubd.check import patterns, re_sandbox
from memhubd.check.pack import rule_ref
from memhubd.index.tokens import field_values

REGEX_FIELDS = ("deny_regex", "require_regex")

log = structlog.get_logger("memhubd.check")

# (status, bucket or None, bucket item without the rule reference)
Judgement = tuple[str, str | None, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Texts:
    """The texts every rule of one check reads (lowercased once, not once per rule).

    `timeout` is the budget of ALL the guard-regex searches of the check, counted from
    the moment the texts are made: each search gets what is left of it, so a workspace
    with many slow patterns cannot multiply the bound. `fired`, when given, holds every
    `when_any` phrase of the judged rules that occurs in `combined_lowered` (found once
    through an index instead of rule by rule).
    """

    candidate: str
    candidate_lowered: str
    combined_lowered: str
    timeout: float
    fired: frozenset[str] | None = None
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "deadline", time.monotonic() + self.timeout)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


@dataclass(frozen=True, slots=True)
class Rule:
    """A constraint's guard and exceptions as the gate reads them (raw fields, no defaults).

    `blocked` is why a triggered guard cannot run (missing capabilities, then invalid
    regexes), or None. Phrase lists keep the text as written, paired with its lowercase.
    """

    decl: Any
    ref: dict[str, Any]
    rule: str
    declared: frozenset[str]
    guarded: bool
    when: tuple[str, ...]
    blocked: str | None
    deny_any: tuple[tuple[str, str], ...]
    require_any: tuple[tuple[str, str], ...]
    deny_regex: tuple[str, ...]
    require_regex: tuple[str, ...]
    # The judgement of an unguarded rule when none of its exceptions is asserted.
    unguarded: Judgement | None

    @classmethod
    def of(cls, decl: Any) -> Rule:
        guard = decl.fields.get("guard")
        guarded = isinstance(guard, dict)
        fields = guard if isinstance(guard, dict) else {}

        def values(name: str) -> tuple[str, ...]:
            return tuple(field_values(fields.get(name)))

        rule = decl.claim_text
        return cls(
            decl=decl,
            ref=rule_ref(decl),
            rule=rule,
            declared=frozenset(field_values(decl.fields.get("exceptions"))),
            guarded=guarded,
            when=tuple(p.lower() for p in values("when_any")),
            blocked=_blocked(decl, fields) if guarded else None,
            deny_any=tuple((p, p.lower()) for p in values("deny_any")),
            require_any=tuple((p, p.lower()) for p in values("require_any")),
            deny_regex=values("deny_regex"),
            require_regex=values("require_regex"),
            unguarded=None if guarded else _review_of(_UNGUARDED, rule),
        )


def _blocked(decl: Any, guard: dict[str, Any]) -> str | None:
    if not (decl.has_capability("enforceable") and decl.has_capability("guardable")):
        return (
            f"memory type '{decl.kind}' is a constraint but does not "
            "declare enforceable + guardable capabilities"
        )
    invalid = [
        f"{name}={pattern!r}: {error}"
        for name in REGEX_FIELDS
        for pattern in field_values(guard.get(name))
        if (error := patterns.regex_error(pattern)) is not None
    ]
    return "invalid guard regex: " + "; ".join(invalid) if invalid else None


def judge(rule: Rule, text: Texts, supplied: set[str]) -> Judgement:
    """The status of one rule for this task and candidate, and what to report."""
    # Most rules declare no exception and most checks assert none: no set work then.
    applied = sorted(rule.declared & supplied) if rule.declared and supplied else None
    if rule.unguarded is not None:
        return _excepted(applied, rule) if applied else rule.unguarded
    if rule.when:
        fired = text.fired
        if fired is None:
            if not any(map(text.combined_lowered.__contains__, rule.when)):
                return _NOT_TRIGGERED
        elif fired.isdisjoint(rule.when):
            return _NOT_TRIGGERED
    if applied:
        return _excepted(applied, rule)
    if rule.blocked:
        return _review(rule.blocked, rule)
    if not (rule.deny_any or rule.deny_regex or rule.require_any or rule.require_regex):
        return _review("guard has no deny or require condition", rule)
    return _run_checks(rule, text)


def _excepted(applied: list[str], rule: Rule) -> Judgement:
    return ("exception_applied", "exceptions_applied", {"exceptions": applied, "rule": rule.rule})


_UNGUARDED = "constraint has no executable guard"


def _run_checks(rule: Rule, text: Texts) -> Judgement:
    denied_patterns, deny_late = _regex_hits(text, "deny_regex", rule.deny_regex)
    required_patterns, require_late = _regex_hits(text, "require_regex", rule.require_regex)
    reasons: list[str] = []
    matched: list[str] = []
    # Phrases are plain case-insensitive substrings: no word edges, `son` is in `person`.
    if denied := [p for p, low in rule.deny_any if low in text.candidate_lowered]:
        reasons.append("candidate contains a denied phrase")
        matched += denied
    if denied_patterns:
        reasons.append("candidate matches a denied pattern")
        matched += denied_patterns
    if rule.require_any and not any(low in text.candidate_lowered for _, low in rule.require_any):
        reasons.append("candidate is missing a required phrase")
        matched += [p for p, _ in rule.require_any]
    # A required pattern counts as missing only when none matched and none timed out.
    if rule.require_regex and not required_patterns and not require_late:
        reasons.append("candidate is missing a required pattern")
        matched += rule.require_regex
    if reasons:
        decl = rule.decl
        finding = {"rule": rule.rule, "reason": "; ".join(reasons), "matched": sorted(set(matched))}
        finding |= {"file": decl.file, "line": decl.line}
        if decl.evidence:
            finding["evidence"] = decl.evidence
        return ("violated", "violations", finding)
    # A requirement some pattern met does not care about the ones that timed out.
    late = deny_late + ([] if required_patterns else require_late)
    if late:
        return _review("guard regex timed out: " + "; ".join(late), rule)
    return ("passed", None, {})


def _regex_hits(text: Texts, name: str, pats: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Patterns that match the candidate, and `name='pattern'` for those that timed out."""
    hits, late = [], []
    for pattern in pats:
        try:
            if patterns.search(pattern, text.candidate, text.remaining()):
                hits.append(pattern)
        except patterns.GuardRegexTimeout:
            late.append(f"{name}={pattern!r}")
        except re_sandbox.SandboxError as error:
            # An undecided guard is a reason for review, never a silent pass.
            log.warning("guard regex helper failed", pattern=pattern, error=str(error))
            late.append(f"{name}={pattern!r}")
    return hits, late


def _review(reason: str, rule: Rule) -> Judgement:
    return _review_of(reason, rule.rule)


def _review_of(reason: str, rule: str) -> Judgement:
    return ("needs_review", "unknowns", {"reason": reason, "rule": rule})


# Judgements' items are read, never changed (the gate copies them into its findings),
# so the common ones are shared.
_NOT_TRIGGERED: Judgement = ("not_triggered", None, {})
