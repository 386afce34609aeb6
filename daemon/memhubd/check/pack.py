"""The CompliancePack: a check's verdict with the rules it read and why, in JSON and text.

Key orders and legacy aliases (`applicable_must`, `boundary_id`, `kind`) are memdsl's
contract; this module must not evaluate anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

VERDICTS = ("allow", "block", "needs_review")


@dataclass(frozen=True, slots=True)
class CompliancePack:
    """Verdict plus the per-rule evidence: evaluated, violations, exceptions, unknowns."""

    task: str
    candidate: str
    subject: str = ""
    scope: str = ""
    asserted_exceptions: list[str] = field(default_factory=list)
    verdict: str = "allow"
    applicable_must: list[Any] = field(default_factory=list)
    evaluated: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    exceptions_applied: list[dict[str, Any]] = field(default_factory=list)
    unknowns: list[dict[str, Any]] = field(default_factory=list)

    @property
    def applicable_constraints(self) -> list[Any]:
        return self.applicable_must

    def as_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "candidate": self.candidate,
            "subject": self.subject,
            "scope": self.scope,
            "asserted_exceptions": list(self.asserted_exceptions),
            "verdict": self.verdict,
            "applicable_must": [constraint_dict(d) for d in self.applicable_must],
            "applicable_constraints": [constraint_dict(d) for d in self.applicable_must],
            "evaluated": [dict(item) for item in self.evaluated],
            "violations": [dict(item) for item in self.violations],
            "exceptions_applied": [dict(item) for item in self.exceptions_applied],
            "unknowns": [dict(item) for item in self.unknowns],
        }

    def render_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False)

    def render_text(self) -> str:
        lines = [f"VERDICT: {self.verdict.upper()}", "", "APPLICABLE MUST"]
        lines.extend(f"- [{d.id}] {d.claim_text}" for d in self.applicable_must)
        if not self.applicable_must:
            lines.append("- (none)")
        if self.violations:
            lines += ["", "VIOLATIONS"]
            lines.extend(_violation_line(item) for item in self.violations)
        if self.exceptions_applied:
            lines += ["", "EXCEPTIONS APPLIED"]
            lines.extend(
                f"- [{item['id']}] {', '.join(item['exceptions'])}"
                for item in self.exceptions_applied
            )
        if self.unknowns:
            lines += ["", "NEEDS REVIEW"]
            lines.extend(f"- [{item['id']}] {item['reason']}" for item in self.unknowns)
        return "\n".join(lines)


def constraint_dict(d: Any) -> dict[str, Any]:
    """An applicable constraint as the pack's JSON shows it."""
    out = {
        "id": d.id,
        "type": d.kind,
        "kind": d.kind,
        "runtime_role": d.runtime_role,
        "capabilities": sorted(d.capabilities),
        "rule": d.claim_text,
        "force": d.force,
        "scope": d.scope,
        "subject": d.subject,
        "file": d.file,
        "line": d.line,
    }
    if d.evidence:
        out["evidence"] = d.evidence
    return out


def rule_ref(d: Any) -> dict[str, Any]:
    """The identifying head of every per-rule item (`boundary_id` is the 0.4 name)."""
    return {"id": d.id, "type": d.kind, "runtime_role": d.runtime_role, "boundary_id": d.id}


def _violation_line(item: dict[str, Any]) -> str:
    matched = ", ".join(item.get("matched", []))
    suffix = f" (matched: {matched})" if matched else ""
    return f"- [{item['id']}] {item['reason']}{suffix}"
