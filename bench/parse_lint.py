"""Load + lint time and peak memory of memhub and memdsl 0.5.1 on the synthetic workspaces.

Every measurement runs in a fresh child process so each peak RSS belongs to one engine and one
size only. Prints numbers; it asserts nothing (the diagnostics digests say whether answers agree).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import resource
import sys
import time
from pathlib import Path

import harness
import synth

NAMES = ("Workspace", "lint")
SCRIPT = Path(__file__).resolve()
TODAY = datetime.date(2026, 11, 30)  # synth.REFERENCE_DATE, pinned so staleness never drifts


def _maxrss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def child(engine: str, workspace: str, traced: bool, out: str) -> None:
    """One load + lint inside this process; timings, memory and a digest of the diagnostics."""
    ops = harness.load_engine(engine, NAMES)
    base_kib = _maxrss_kib()
    if traced:
        import tracemalloc

        tracemalloc.start()
    started = time.perf_counter()
    ws = ops.Workspace.load([workspace])
    loaded = time.perf_counter()
    diagnostics = ops.lint(ws, today=TODAY)
    linted = time.perf_counter()
    traced_peak = None
    if traced:
        traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    rendered = "\n".join(d.render() for d in diagnostics)
    harness.write_result(
        out,
        {
            "declarations": len(ws.declarations),
            "load_s": loaded - started,
            "lint_s": linted - loaded,
            "base_rss_kib": base_kib,
            "peak_rss_kib": _maxrss_kib(),
            "traced_peak_bytes": traced_peak,
            "errors": sum(1 for d in diagnostics if d.severity == "error"),
            "warnings": sum(1 for d in diagnostics if d.severity == "warning"),
            "digest": hashlib.sha256(rendered.encode("utf-8")).hexdigest()[:16],
        },
    )


def measure(interp: harness.Interpreter, workspace: Path, args: argparse.Namespace) -> dict:
    """Median timings over --repeat fresh processes, plus one traced run for the Python heap."""
    runs = []
    for _ in range(args.repeat):
        runs.append(
            harness.run_child(interp.python, SCRIPT, [interp.engine, str(workspace)], args.timeout)
        )
    summary = {
        "engine": interp.engine,
        "declarations": runs[0]["declarations"],
        "load_s": harness.median([r["load_s"] for r in runs]),
        "lint_s": harness.median([r["lint_s"] for r in runs]),
        "total_s": harness.median([r["load_s"] + r["lint_s"] for r in runs]),
        "total_min_s": min(r["load_s"] + r["lint_s"] for r in runs),
        "peak_rss_mib": harness.median([r["peak_rss_kib"] for r in runs]) / 1024,
        "rss_growth_mib": harness.median([r["peak_rss_kib"] - r["base_rss_kib"] for r in runs])
        / 1024,
        "errors": runs[0]["errors"],
        "warnings": runs[0]["warnings"],
        "digest": runs[0]["digest"],
        "runs": len(runs),
        "traced_peak_mib": None,
    }
    if args.tracemalloc:
        traced = harness.run_child(
            interp.python, SCRIPT, [interp.engine, str(workspace), "--traced", "1"], args.timeout
        )
        summary["traced_peak_mib"] = traced["traced_peak_bytes"] / 2**20
    return summary


def compare(memhub: dict | None, memdsl: dict | None) -> dict:
    if not memhub or not memdsl:
        return {"speedup": None, "memory_ratio": None, "same_diagnostics": None}
    return {
        "speedup": memdsl["total_s"] / memhub["total_s"],
        "memory_ratio": memhub["peak_rss_mib"] / memdsl["peak_rss_mib"],
        "same_diagnostics": memhub["digest"] == memdsl["digest"],
    }


def render(report: dict) -> str:
    headers = [
        "size",
        "engine",
        "decls",
        "load s",
        "lint s",
        "total s",
        "peak RSS MiB",
        "RSS growth MiB",
        "py heap MiB",
        "errors/warnings",
    ]
    rows = []
    for entry in report["sizes"]:
        label = synth.size_label(entry["size"])
        for engine in harness.ENGINES:
            m = entry.get(engine)
            if m is None:
                rows.append([label, engine, "not measured"] + ["-"] * 7)
                continue
            heap = "-" if m["traced_peak_mib"] is None else f"{m['traced_peak_mib']:.0f}"
            rows.append(
                [
                    label,
                    engine,
                    str(m["declarations"]),
                    f"{m['load_s']:.3f}",
                    f"{m['lint_s']:.3f}",
                    f"{m['total_s']:.3f}",
                    f"{m['peak_rss_mib']:.0f}",
                    f"{m['rss_growth_mib']:.0f}",
                    heap,
                    f"{m['errors']}/{m['warnings']}",
                ]
            )
        c = entry["comparison"]
        same = {True: "identical", False: "DIFFERENT", None: "n/a"}[c["same_diagnostics"]]
        rows.append(
            [
                label,
                "ratio",
                "",
                "",
                "",
                f"speedup {harness.fmt_ratio(c['speedup'])}",
                "",
                f"memory {harness.fmt_ratio(c['memory_ratio'])}",
                "",
                f"diagnostics {same}",
            ]
        )
    return "\n".join([harness.table(headers, rows), "", *goal_lines(report)])


def goal_lines(report: dict) -> list[str]:
    """The targets: >= 3x faster than memdsl at 10k and 100k, with peak RSS no higher."""
    lines = []
    for entry in report["sizes"]:
        if entry["size"] not in (10_000, 100_000):
            continue
        c, label = entry["comparison"], synth.size_label(entry["size"])
        for text, value, met in (
            (">= 3x faster than memdsl", c["speedup"], lambda v: v >= 3),
            ("peak RSS no higher than memdsl", c["memory_ratio"], lambda v: v <= 1),
        ):
            verdict = "not measured" if value is None else ("met" if met(value) else "MISSED")
            lines.append(f"goal: load+lint {text} at {label}: {verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1k,10k,100k")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per engine/size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memdsl-python", help="interpreter with memdsl 0.5.1 ($MEMDSL_PYTHON)")
    parser.add_argument("--memhub-python", help="interpreter with memhub (default: this one)")
    parser.add_argument(
        "--no-tracemalloc",
        dest="tracemalloc",
        action="store_false",
        help="skip the extra traced run that measures the Python heap peak",
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per child")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--save", metavar="FILE", help="also write the JSON report to FILE")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--traced", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        engine, workspace = args.child
        child(engine, workspace, bool(args.traced), args.out)
        return 0

    interps = {
        "memhub": harness.find_memhub(args.memhub_python, NAMES),
        "memdsl": harness.find_memdsl(args.memdsl_python, NAMES),
    }
    report: dict = {
        "benchmark": "parse_lint",
        "repeat": args.repeat,
        "seed": args.seed,
        "unavailable": {e: i.problem for e, i in interps.items() if not i.usable},
        "sizes": [],
    }
    for size in (synth.parse_size(s) for s in args.sizes.split(",")):
        workspace = synth.ensure_workspace(size, args.seed).workspace
        entry: dict = {"size": size}
        for engine, interp in interps.items():
            entry[engine] = measure(interp, workspace, args) if interp.usable else None
            print(f"... {synth.size_label(size)} {engine} done", file=sys.stderr, flush=True)
        entry["comparison"] = compare(entry["memhub"], entry["memdsl"])
        report["sizes"].append(entry)
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
        for engine, problem in report["unavailable"].items():
            print(f"\n{engine} {problem}; ratios unavailable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
