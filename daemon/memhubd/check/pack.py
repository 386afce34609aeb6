"""The CompliancePack: a check's verdict with the rules it read and why, in JSON and text.

Key orders and legacy aliases (`applicable_must`, `boundary_id`, `kind`) are memdsl's
contract; this module must not evaluate anything. Findings of rules the caller may not
read appear only as counts (`withheld`), and only when there are any, so a pack without
them is exactly memdsl's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memhubd.query.pack import compact_json

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
    # Rules the caller may not read that block, or need review: counted, never named.
    withheld_violations: int = 0
    withheld_unknowns: int = 0

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
            **self._withheld_dict(),
        }

    def json_parts(self, piece: Callable[[Any], bytes]) -> list[bytes]:
        """`as_dict()` as compact JSON in parts to join; `piece(d)` gives
        `compact_json(constraint_dict(d))`, kept by the caller per snapshot."""
        head = {
            "task": self.task,
            "candidate": self.candidate,
            "subject": self.subject,
            "scope": self.scope,
            "asserted_exceptions": list(self.asserted_exceptions),
            "verdict": self.verdict,
        }
        rules = b",".join([piece(d) for d in self.applicable_must])
        tail = {  # encoded as they are: no copy of each item (15,000 at 1M declarations)
            "evaluated": self.evaluated,
            "violations": self.violations,
            "exceptions_applied": self.exceptions_applied,
            "unknowns": self.unknowns,
            **self._withheld_dict(),
        }
        return [
            compact_json(head)[:-1],
            b',"applicable_must":[',
            rules,
            b'],"applicable_constraints":[',
            rules,
            b"],",
            compact_json(tail)[1:],
        ]

    def withheld_message(self) -> str:
        """One line on the findings of rules the caller cannot read; "" when there are none."""
        parts = []
        if self.withheld_violations:
            parts.append(f"blocked by {_rules(self.withheld_violations)} you cannot read")
        if self.withheld_unknowns:
            count = self.withheld_unknowns
            verb = "needs" if count == 1 else "need"
            parts.append(f"{_rules(count)} you cannot read {verb} review")
        return "; ".join(parts) + "; ask a reviewer" if parts else ""

    def _withheld_dict(self) -> dict[str, Any]:
        if not (self.withheld_violations or self.withheld_unknowns):
            return {}
        return {
            "withheld": {
                "violations": self.withheld_violations,
                "unknowns": self.withheld_unknowns,
                "message": self.withheld_message(),
            }
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
        withheld = self.withheld_message()
        if withheld:
            lines += ["", "WITHHELD", f"- {withheld}"]
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


def constraint_json(d: Any) -> bytes:
    """`constraint_dict(d)` as the JSON API encodes it: one piece of an answer."""
    return compact_json(constraint_dict(d))


def rule_ref(d: Any) -> dict[str, Any]:
    """The identifying head of every per-rule item (`boundary_id` is the 0.4 name)."""
    return {"id": d.id, "type": d.kind, "runtime_role": d.runtime_role, "boundary_id": d.id}


def _rules(count: int) -> str:
    return f"{count} rule" if count == 1 else f"{count} rules"


def _violation_line(item: dict[str, Any]) -> str:
    matched = ", ".join(item.get("matched", []))
    suffix = f" (matched: {matched})" if matched else ""
    return f"- [{item['id']}] {item['reason']}{suffix}"
