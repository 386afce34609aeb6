"""Linear-scan applicability and compliance: the plain reading of the contract.

Rescans every declaration per check and exists only so tests can prove the indexed
selection (`memhubd.check.applicability`) gives identical answers; never serve from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memhubd.check.applicability import compliance_terms, joined_text
from memhubd.check.gate import evaluate_constraints
from memhubd.check.pack import CompliancePack
from memhubd.index.tokens import field_values


def applicable_constraints_linear(
    ws: Any,
    task: str,
    candidate: str = "",
    *,
    subject: str | None = None,
    scope: str | None = None,
) -> list[Any]:
    text = joined_text(task, candidate)
    terms = compliance_terms(text)
    superseded = ws.superseded_ids()
    selected: dict[str, Any] = {}
    for d in ws.active():
        if d.runtime_role != "constraint" or d.id in superseded or d.name in superseded:
            continue
        guard = d.fields.get("guard")
        triggers = field_values(guard.get("when_any")) if isinstance(guard, dict) else []
        if (
            d.scope == "global"
            or (subject and d.subject == subject)
            or (scope and d.scope == scope)
            or terms & compliance_terms(d.searchable_text())
            or any(p.lower() in text.lower() for p in triggers)
        ):
            selected[d.id] = d
    return sorted(selected.values(), key=lambda d: d.id)


def check_compliance_linear(
    ws: Any,
    task: str,
    candidate: str,
    *,
    subject: str | None = None,
    scope: str | None = None,
    exceptions: Sequence[str] | None = None,
) -> CompliancePack:
    return evaluate_constraints(
        lambda t, c: applicable_constraints_linear(ws, t, c, subject=subject, scope=scope),
        task,
        candidate,
        subject=subject,
        scope=scope,
        exceptions=exceptions,
    )
