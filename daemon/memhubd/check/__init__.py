"""The compliance gate (ALLOW / BLOCK / NEEDS_REVIEW) and its `eval compliance` benchmark."""

from memhubd.check.applicability import applicable_boundaries, applicable_constraints
from memhubd.check.benchmark import (
    BENCHMARK_SCHEMA,
    MODES,
    ComplianceCase,
    load_cases,
    render_benchmark_text,
    run_compliance_benchmark,
)
from memhubd.check.gate import GUARD_MATCH_FIELDS, check_compliance
from memhubd.check.pack import VERDICTS, CompliancePack

__all__ = [
    "BENCHMARK_SCHEMA",
    "GUARD_MATCH_FIELDS",
    "MODES",
    "VERDICTS",
    "ComplianceCase",
    "CompliancePack",
    "applicable_boundaries",
    "applicable_constraints",
    "check_compliance",
    "load_cases",
    "render_benchmark_text",
    "run_compliance_benchmark",
]
