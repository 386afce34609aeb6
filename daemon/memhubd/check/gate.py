"""The compliance gate: evaluate each applicable constraint's guard against a candidate.

Rules without an executable guard are never guessed at; they make the verdict
`needs_review`. Deny/require checks read the candidate only; `when_any` reads the task
too. This module must not decide applicability (that is `applicability`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memhubd.check import patterns
from memhubd.check.applicability import applicable_constraints
from memhubd.check.pack import CompliancePack, rule_ref
from memhubd.index.tokens import field_values

GUARD_MATCH_FIELDS = ("when_any", "deny_any", "deny_regex", "require_any", "require_regex")
REGEX_FIELDS = ("deny_regex", "require_regex")


def check_compliance(
    ws: Any,
    task: str,
    candidate: str,
    *,
    subject: str | None = None,
    scope: str | None = None,
    exceptions: Sequence[str] | None = None,
    regex_timeout: float = patterns.DEFAULT_TIMEOUT,
) -> CompliancePack:
    """Preflight a proposed action or draft against the constraints that apply to it.

    `regex_timeout` bounds each guard-regex search (seconds); a search that runs out
    makes its rule `needs_review` instead of hanging the caller.
    """
    return evaluate_constraints(
        lambda t, c: applicable_constraints(ws, t, c, subject=subject, scope=scope),
        task,
        candidate,
        subject=subject,
        scope=scope,
        exceptions=exceptions,
        regex_timeout=regex_timeout,
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
) -> CompliancePack:
    """Normalise the inputs, select constraints with `select(task, candidate)`, judge each."""
    task_text = str(task or "").strip()
    candidate_text = str(candidate or "").strip()
    supplied = {str(item).strip() for item in (exceptions or []) if str(item).strip()}
    applicable = select(task_text, candidate_text)
    text = _Texts(
        candidate=candidate_text,
        combined="\n".join(part for part in (task_text, candidate_text) if part),
        timeout=regex_timeout,
    )
    buckets: dict[str, list[dict[str, Any]]] = {
        "violations": [],
        "exceptions_applied": [],
        "unknowns": [],
    }
    evaluated = []
    for decl in applicable:
        status, bucket, item = _judge(decl, text, supplied)
        if bucket:
            buckets[bucket].append({**rule_ref(decl), **item})
        evaluated.append({**rule_ref(decl), "status": status})
    return CompliancePack(
        task=task_text,
        candidate=candidate_text,
        subject=str(subject or ""),
        scope=str(scope or ""),
        asserted_exceptions=sorted(supplied),
        verdict=_verdict(buckets),
        applicable_must=applicable,
        evaluated=evaluated,
        **buckets,
    )


@dataclass(frozen=True, slots=True)
class _Texts:
    candidate: str
    combined: str
    timeout: float


# (status, bucket or None, bucket item without the rule reference)
_Judgement = tuple[str, str | None, dict[str, Any]]


def _judge(decl: Any, text: _Texts, supplied: set[str]) -> _Judgement:
    """One rule, in memdsl's order: guard, trigger, exception, capability, regex, checks."""
    applied = sorted(set(field_values(decl.fields.get("exceptions"))) & supplied)
    rule = decl.claim_text
    exception = ("exception_applied", "exceptions_applied", {"exceptions": applied, "rule": rule})
    guard = decl.fields.get("guard")
    if not isinstance(guard, dict):
        if applied:
            return exception
        return _review("constraint has no executable guard", rule)
    when = field_values(guard.get("when_any"))
    if when and not _phrases_in(text.combined, when):
        return ("not_triggered", None, {})
    if applied:
        return exception
    if not (decl.has_capability("enforceable") and decl.has_capability("guardable")):
        return _review(
            f"memory type '{decl.kind}' is a constraint but does not "
            "declare enforceable + guardable capabilities",
            rule,
        )
    invalid = [
        f"{name}={pattern!r}: {error}"
        for name in REGEX_FIELDS
        for pattern in field_values(guard.get(name))
        if (error := patterns.regex_error(pattern)) is not None
    ]
    if invalid:
        return _review("invalid guard regex: " + "; ".join(invalid), rule)
    return _run_checks(decl, guard, text)


def _run_checks(decl: Any, guard: dict[str, Any], text: _Texts) -> _Judgement:
    rule = decl.claim_text
    deny_any = field_values(guard.get("deny_any"))
    require_any = field_values(guard.get("require_any"))
    deny_regex = field_values(guard.get("deny_regex"))
    require_regex = field_values(guard.get("require_regex"))
    if not (deny_any or deny_regex or require_any or require_regex):
        return _review("guard has no deny or require condition", rule)
    denied_patterns, deny_late = _regex_hits(text, "deny_regex", deny_regex)
    required_patterns, require_late = _regex_hits(text, "require_regex", require_regex)
    reasons: list[str] = []
    matched: list[str] = []
    if denied := _phrases_in(text.candidate, deny_any):
        reasons.append("candidate contains a denied phrase")
        matched += denied
    if denied_patterns:
        reasons.append("candidate matches a denied pattern")
        matched += denied_patterns
    if require_any and not _phrases_in(text.candidate, require_any):
        reasons.append("candidate is missing a required phrase")
        matched += require_any
    # A required pattern counts as missing only when none matched and none timed out.
    if require_regex and not required_patterns and not require_late:
        reasons.append("candidate is missing a required pattern")
        matched += require_regex
    if reasons:
        finding = {"rule": rule, "reason": "; ".join(reasons), "matched": sorted(set(matched))}
        finding |= {"file": decl.file, "line": decl.line}
        if decl.evidence:
            finding["evidence"] = decl.evidence
        return ("violated", "violations", finding)
    if deny_late or require_late:
        return _review("guard regex timed out: " + "; ".join(deny_late + require_late), rule)
    return ("passed", None, {})


def _regex_hits(text: _Texts, name: str, pats: list[str]) -> tuple[list[str], list[str]]:
    """Patterns that match the candidate, and `name='pattern'` for those that timed out."""
    hits, late = [], []
    for pattern in pats:
        try:
            if patterns.search(pattern, text.candidate, text.timeout):
                hits.append(pattern)
        except patterns.GuardRegexTimeout:
            late.append(f"{name}={pattern!r}")
    return hits, late


def _phrases_in(text: str, phrases: list[str]) -> list[str]:
    """Phrases found in the text, case-insensitively, as plain substrings (no word edges)."""
    lowered = text.lower()
    return [phrase for phrase in phrases if phrase.lower() in lowered]


def _review(reason: str, rule: str) -> _Judgement:
    return ("needs_review", "unknowns", {"reason": reason, "rule": rule})


def _verdict(buckets: dict[str, list[dict[str, Any]]]) -> str:
    if buckets["violations"]:
        return "block"
    if buckets["unknowns"]:
        return "needs_review"
    return "allow"
