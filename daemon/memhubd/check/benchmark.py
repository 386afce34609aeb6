"""`eval compliance`: score four ways of answering "may I do this?" on labelled cases.

Modes: no memory, flat word-overlap context, the EvidencePack's MUST layer, and the
compliance gate. Report layout, metric rounding and text columns are memdsl's; this
module must not change how any mode decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memhubd.check.gate import check_compliance
from memhubd.index import workspace as lexical
from memhubd.index.tokens import word_tokens
from memhubd.query.engine import build_evidence_pack

BENCHMARK_SCHEMA = "memdsl.compliance.benchmark.v1"
MODES = ("no_memory", "flat_context", "evidence_pack", "compliance_gate")
_VERDICTS = ("allow", "block", "needs_review")
_REQUIRED = ("id", "task", "candidate", "expected_verdict")


@dataclass(frozen=True, slots=True)
class ComplianceCase:
    """One labelled case of a JSONL suite."""

    id: str
    task: str
    candidate: str
    expected_verdict: str
    expected_must: list[str] = field(default_factory=list)
    expected_violations: list[str] = field(default_factory=list)
    expected_exceptions: list[str] = field(default_factory=list)
    subject: str = ""
    scope: str = ""
    exceptions: list[str] = field(default_factory=list)


def load_cases(path: str) -> list[ComplianceCase]:
    """Read a JSONL suite (blank and `#` lines skipped); ValueError names file and line."""
    cases = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            text = line.strip()
            if text and not text.startswith("#"):
                cases.append(_parse_case(text, f"{path}:{line_no}"))
    if not cases:
        raise ValueError(f"{path}: no benchmark cases found")
    if len({case.id for case in cases}) != len(cases):
        raise ValueError(f"{path}: duplicate case ids")
    return cases


def _parse_case(text: str, where: str) -> ComplianceCase:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: invalid JSON: {exc}") from exc
    missing = [key for key in _REQUIRED if not str(raw.get(key, "")).strip()]
    if missing:
        raise ValueError(f"{where}: missing required field(s): {', '.join(missing)}")
    verdict = str(raw["expected_verdict"])
    if verdict not in _VERDICTS:
        raise ValueError(f"{where}: invalid expected_verdict {verdict!r}")

    def strings(key: str) -> list[str]:
        return [str(x) for x in raw.get(key, [])]

    return ComplianceCase(
        id=str(raw["id"]),
        task=str(raw["task"]),
        candidate=str(raw["candidate"]),
        expected_verdict=verdict,
        expected_must=strings("expected_must"),
        expected_violations=strings("expected_violations"),
        expected_exceptions=strings("expected_exceptions"),
        subject=str(raw.get("subject", "")),
        scope=str(raw.get("scope", "")),
        exceptions=strings("exceptions"),
    )


def run_compliance_benchmark(ws: Any, cases: Iterable[ComplianceCase]) -> dict[str, Any]:
    """Run every mode over every case; the status follows the compliance-gate rows."""
    case_list = list(cases)
    modes = {}
    for mode in MODES:
        rows = [_row(case, _predict(ws, case, mode)) for case in case_list]
        modes[mode] = {"metrics": _metrics(rows), "cases": rows}
    gate_rows = modes["compliance_gate"]["cases"]
    passed = sum(1 for row in gate_rows if row["passed"])
    return {
        "schema_version": BENCHMARK_SCHEMA,
        "status": "passed" if passed == len(gate_rows) else "failed",
        "cases": len(gate_rows),
        "passed": passed,
        "modes": modes,
    }


def _prediction(
    verdict: str, must: list[str], violations: Iterable[str] = (), exceptions: Iterable[str] = ()
) -> dict[str, Any]:
    return {
        "verdict": verdict,
        "applicable_must": must,
        "violations": list(violations),
        "exceptions_applied": list(exceptions),
    }


def _predict(ws: Any, case: ComplianceCase, mode: str) -> dict[str, Any]:
    if mode == "no_memory":
        return _prediction("allow", [])
    if mode == "flat_context":
        ids = _flat_context_ids(ws, case.task + " " + case.candidate)
        return _prediction("needs_review" if ids else "allow", ids)
    if mode == "evidence_pack":
        pack = build_evidence_pack(
            ws, case.task + "\n" + case.candidate, subject=case.subject or None, limit=100
        )
        ids = [d.id for d in pack.must]
        return _prediction("needs_review" if ids else "allow", ids)
    if mode == "compliance_gate":
        pack = check_compliance(
            ws,
            case.task,
            case.candidate,
            subject=case.subject or None,
            scope=case.scope or None,
            exceptions=case.exceptions,
        )
        return _prediction(
            pack.verdict,
            [d.id for d in pack.applicable_must],
            [item["id"] for item in pack.violations],
            [item["id"] for item in pack.exceptions_applied],
        )
    raise ValueError(f"unknown benchmark mode: {mode}")


def _flat_context_ids(ws: Any, text: str) -> list[str]:
    """Sorted ids of active constraints sharing any word with the text (no stopwords)."""
    ix = lexical.index_for(ws)
    bits = 0
    for term in set(word_tokens(text)):
        bits |= ix.bits(lexical.TERM, term)
    return sorted(ix.ids_of[o] for o in ix.space.ordered(bits & ix.constraints))


def _row(case: ComplianceCase, predicted: dict[str, Any]) -> dict[str, Any]:
    row = {
        "id": case.id,
        "expected_verdict": case.expected_verdict,
        "expected_must": case.expected_must,
        "expected_violations": case.expected_violations,
        "expected_exceptions": case.expected_exceptions,
        **predicted,
    }
    row["passed"] = (
        row["verdict"] == case.expected_verdict
        and set(case.expected_must).issubset(row["applicable_must"])
        and set(row["violations"]) == set(case.expected_violations)
        and set(row["exceptions_applied"]) == set(case.expected_exceptions)
    )
    return row


def _ratio(numerator: int, denominator: int, empty: float) -> float:
    return round(numerator / denominator, 4) if denominator else empty


def _metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    blocks = [row for row in rows if row["expected_verdict"] == "block"]
    others = [row for row in rows if row["expected_verdict"] != "block"]
    expected = sum(len(row["expected_must"]) for row in rows)
    found = sum(len(set(row["expected_must"]) & set(row["applicable_must"])) for row in rows)
    cited = sum(len(row["violations"]) for row in rows)
    valid = sum(len(set(row["violations"]) & set(row["applicable_must"])) for row in rows)
    recall = _ratio(found, expected, 1.0)
    return {
        "cases": len(rows),
        "verdict_accuracy": round(
            sum(row["verdict"] == row["expected_verdict"] for row in rows) / len(rows), 4
        ),
        "unsafe_allow_rate": _ratio(sum(r["verdict"] == "allow" for r in blocks), len(blocks), 0.0),
        "false_block_rate": _ratio(sum(r["verdict"] == "block" for r in others), len(others), 0.0),
        "constraint_recall": recall,
        "boundary_recall": recall,  # the 0.4 name, kept for old clients
        "citation_accuracy": _ratio(valid, cited, 1.0),
    }


def render_benchmark_text(report: dict[str, Any]) -> str:
    """The text report: a summary line, one metrics row per mode, then failed cases."""
    lines = [
        f"constraint-compliance benchmark: {report['status'].upper()} "
        f"({report['passed']}/{report['cases']} compliance cases)",
        "",
        "MODE              VERDICT  UNSAFE_ALLOW  FALSE_BLOCK  MUST_RECALL",
    ]
    for mode in MODES:
        m = report["modes"][mode]["metrics"]
        lines.append(
            f"{mode:17} {m['verdict_accuracy']:.3f}    {m['unsafe_allow_rate']:.3f}"
            f"         {m['false_block_rate']:.3f}        {m['constraint_recall']:.3f}"
        )
    failed = [row for row in report["modes"]["compliance_gate"]["cases"] if not row["passed"]]
    if failed:
        lines += ["", "FAILED CASES"]
        lines.extend(
            f"- {row['id']}: expected {row['expected_verdict']}, got {row['verdict']}"
            for row in failed
        )
    return "\n".join(lines)
