"""Renders the report of `bench/query.py` as text: the latency table, agreement, workload, goals.

Formatting only; every number comes from the report dict.
"""

from __future__ import annotations

import harness
import synth

# (label, size, operation, "speedup" (memhub vs memdsl p50) or "p50" (memhub seconds), bound)
GOALS = (
    ("query >= 50x faster than memdsl at 10k", 10_000, "query", "speedup", 50.0),
    ("query >= 200x faster than memdsl at 100k", 100_000, "query", "speedup", 200.0),
    ("memhub query p50 <= 2 ms at 100k", 100_000, "query", "p50", 0.002),
    ("memhub check p50 <= 2 ms at 10k", 10_000, "check", "p50", 0.002),
)
HEADERS = [
    "size", "engine", "load s", "index s", "1st query ms",
    "query p50 ms", "p99", "+as_dict p50", "n",
    "check p50 ms", "p99", "+as_dict p50", "n",
]  # fmt: skip


def goal_lines(report: dict) -> list[str]:
    by_size = {e["size"]: e for e in report["sizes"]}
    lines = []
    for label, size, op, kind, bound in GOALS:
        entry = by_size.get(size) or {}
        if kind == "speedup":
            value = entry.get("comparison", {}).get(op, {}).get("speedup_p50")
            met = None if value is None else value >= bound
        else:
            summary = (entry.get("memhub") or {}).get("summary", {}).get(op)
            met = None if summary is None else summary["p50_s"] <= bound
        verdict = {None: "not measured", True: "met", False: "MISSED"}[met]
        lines.append(f"goal: {label}: {verdict}")
    return lines


def _op_cells(result: dict, op: str) -> list[str]:
    s = result["summary"].get(op)
    if s is None:
        return ["not measured yet", "-", "-", "-"]
    return [
        harness.fmt_ms(s["p50_s"]),
        harness.fmt_ms(s["p99_s"]),
        harness.fmt_ms(s["full_p50_s"]),
        str(s["n"]),
    ]


def _engine_row(label: str, engine: str, result: dict | None) -> list[str]:
    if result is None:
        return [label, engine, "not measured"] + ["-"] * 10
    index = result.get("index_s")
    first = result.get("first_query_s")
    return [
        label,
        engine,
        f"{result['load_s']:.2f}",
        "-" if index is None else f"{index:.3f}",
        "-" if first is None else f"{first * 1000:.1f}",
        *_op_cells(result, "query"),
        *_op_cells(result, "check"),
    ]


def _ratio_row(label: str, comparison: dict) -> list[str]:
    cells = [label, "speedup", "", "", ""]
    for op in ("query", "check"):
        c = comparison.get(op)
        if c is None:
            cells += ["n/a", "", "", ""]
        else:
            cells += [harness.fmt_ratio(c["speedup_p50"]), "", "", f"over {c['over']}"]
    return cells


def _notes(label: str, entry: dict) -> list[str]:
    notes = []
    for op, c in entry["comparison"].items():
        a = c["agreement"]
        notes.append(
            f"{label} {op} agreement with memdsl: same ids {a['same_ids']}/{a['compared']}, "
            f"identical JSON {a['identical']}/{a['compared']}"
        )
    # Workload sizes come from the reference engine when it ran, over the operations it ran.
    source = "memdsl" if entry.get("memdsl") else "memhub"
    ref = entry.get(source)
    if ref:
        q = ref["summary"].get("query")
        k = ref["summary"].get("check")
        if q and q["mean_sizes"]:
            m = q["mean_sizes"]
            notes.append(
                f"{label} workload ({source}, {q['n']} queries): mean MUST {m['must']:.1f}, "
                f"SHOULD {m['should']:.1f}, CONTEXT {m['context']:.1f}"
            )
        if k and k["mean_sizes"]:
            m = k["mean_sizes"]
            notes.append(
                f"{label} workload ({source}, {k['n']} checks): mean {m['applicable']:.1f} "
                f"applicable constraints, verdicts {m['verdicts']}"
            )
    return notes


def render(report: dict) -> str:
    rows, notes = [], []
    for entry in report["sizes"]:
        label = synth.size_label(entry["size"])
        for engine in harness.ENGINES:
            rows.append(_engine_row(label, engine, entry.get(engine)))
        if entry["comparison"]:
            rows.append(_ratio_row(label, entry["comparison"]))
        notes.extend(_notes(label, entry))
    problems = [
        f"{who}: {problem}" + ("; speedups unavailable" if who == "memdsl" else "")
        for who, problem in report["unavailable"].items()
    ]
    return "\n".join(
        [harness.table(HEADERS, rows), "", *notes, "", *goal_lines(report), "", *problems]
    ).rstrip()
