"""Query and check latency (p50, p99) of memhub and memdsl 0.5.1 on the same synthetic workspaces,
plus an agreement rate on a sample of the answers: a benchmark of wrong answers is worthless.

Each engine runs in its own child process: load once, time every operation, record sampled answers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
import query_report
import synth

OPS = {"query": "build_evidence_pack", "check": "check_compliance"}
SCRIPT = Path(__file__).resolve()
MIN_ITERATIONS = 10


def _digest(data: object) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def query_answer(pack_dict: dict) -> dict:
    """Ids per layer, plus a digest of the whole pack (matched_terms order is unspecified)."""
    for item in pack_dict["context"]:
        item["matched_terms"] = sorted(item["matched_terms"])
    return {
        "must": [d["id"] for d in pack_dict["must"]],
        "should": [d["id"] for d in pack_dict["should"]],
        "context": [d["id"] for d in pack_dict["context"]],
        "digest": _digest(pack_dict),
    }


def check_answer(pack_dict: dict) -> dict:
    return {
        "verdict": pack_dict["verdict"],
        "applicable": [d["id"] for d in pack_dict["applicable_constraints"]],
        "violations": [v["id"] for v in pack_dict["violations"]],
        "digest": _digest(pack_dict),
    }


def _index_builder(engine: str) -> Callable[[Any], Any] | None:
    """memhub's one-time lexical index build, when that internal hook exists."""
    if engine != "memhub":
        return None
    try:
        from memhubd.index.workspace import index_for
    except ImportError:
        return None
    return index_for


def _timed(
    call: Callable[[dict], Any], items: list[dict], budget: float, sample: int, op: str
) -> dict:
    """Time `call` on each item (and its as_dict); stop early once `budget` seconds are spent."""
    call_s, full_s, answers, sizes = [], [], [], []
    spent = 0.0
    for item in items:
        started = time.perf_counter()
        pack = call(item)
        called = time.perf_counter()
        as_dict = pack.as_dict()
        done = time.perf_counter()
        call_s.append(called - started)
        full_s.append(done - started)
        if op == "query":
            sizes.append([len(as_dict[layer]) for layer in ("must", "should", "context")])
        else:
            sizes.append([len(as_dict["applicable_constraints"]), as_dict["verdict"]])
        if len(answers) < sample:
            answers.append(query_answer(as_dict) if op == "query" else check_answer(as_dict))
        spent += done - started
        if spent > budget and len(call_s) >= MIN_ITERATIONS:
            break
    return {"call_s": call_s, "full_s": full_s, "answers": answers, "sizes": sizes}


def child(engine: str, root: str, args: argparse.Namespace) -> None:
    wanted = args.ops.split(",")
    ops = harness.load_engine(engine, ("Workspace", *(OPS[op] for op in wanted)))
    synth_ws = synth.SynthWorkspace.at(Path(root))
    started = time.perf_counter()
    ws = ops.Workspace.load([str(synth_ws.workspace)])
    loaded = time.perf_counter()
    result: dict = {"declarations": len(ws.declarations), "load_s": loaded - started}
    builder = _index_builder(engine)
    if builder is not None:
        builder(ws)
        result["index_s"] = time.perf_counter() - loaded
    budget = args.budget if engine == "memdsl" else float("inf")
    if "query" in wanted:
        first = time.perf_counter()
        ops.build_evidence_pack(ws, "warm up before timing")
        result["first_query_s"] = time.perf_counter() - first
        result["query"] = _timed(
            lambda q: ops.build_evidence_pack(
                ws, q["query"], subject=q["subject"], limit=q["limit"], types=q["types"]
            ),
            synth_ws.queries()[: args.iterations],
            budget,
            args.agree,
            "query",
        )
    if "check" in wanted:
        result["check"] = _timed(
            lambda c: ops.check_compliance(
                ws,
                c["task"],
                c["candidate"],
                subject=c["subject"],
                scope=c["scope"],
                exceptions=c["exceptions"] or None,
            ),
            synth_ws.checks()[: args.iterations],
            budget,
            args.agree,
            "check",
        )
    harness.write_result(args.out, result)


def measure(engine: str, python: str, ops: list[str], root: Path, args: argparse.Namespace) -> dict:
    extra = ["--ops", ",".join(ops), "--iterations", str(args.iterations)]
    extra += ["--budget", str(args.budget), "--agree", str(args.agree)]
    result = harness.run_child(python, SCRIPT, [engine, str(root), *extra], args.timeout)
    result["summary"] = {op: summarize(result[op], op) for op in ops}
    return result


def summarize(data: dict, op: str) -> dict:
    return {
        "n": len(data["call_s"]),
        "p50_s": harness.percentile(data["call_s"], 0.5),
        "p99_s": harness.percentile(data["call_s"], 0.99),
        "full_p50_s": harness.percentile(data["full_s"], 0.5),
        "mean_sizes": _mean_sizes(data["sizes"], op),
    }


def _mean_sizes(sizes: list[list], op: str) -> dict:
    if not sizes:
        return {}
    n = len(sizes)
    if op == "query":
        layers = ("must", "should", "context")
        return {k: sum(s[i] for s in sizes) / n for i, k in enumerate(layers)}
    verdicts: dict[str, int] = {}
    for _, verdict in sizes:
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    return {"applicable": sum(s[0] for s in sizes) / n, "verdicts": verdicts}


def agreement(fast: dict, slow: dict, op: str) -> dict:
    pairs = list(zip(fast["answers"], slow["answers"], strict=False))
    if op == "query":
        keys = ("must", "should", "context")
    else:
        keys = ("verdict", "applicable", "violations")
    same_ids = sum(all(a[k] == b[k] for k in keys) for a, b in pairs)
    return {
        "compared": len(pairs),
        "same_ids": same_ids,
        "identical": sum(a["digest"] == b["digest"] for a, b in pairs),
        "first_difference": next((i for i, (a, b) in enumerate(pairs) if a != b), None),
    }


def compare(memhub: dict | None, memdsl: dict | None) -> dict:
    """Per operation: p50 speedup over the common prefix (memdsl may stop early), agreement."""
    if not memhub or not memdsl:
        return {}
    out: dict = {}
    for op in OPS:
        if op not in memhub or op not in memdsl:
            continue
        n = len(memdsl[op]["call_s"])
        fast = harness.percentile(memhub[op]["call_s"][:n], 0.5)
        slow = harness.percentile(memdsl[op]["call_s"][:n], 0.5)
        out[op] = {
            "speedup_p50": slow / fast if fast else None,
            "over": n,
            "agreement": agreement(memhub[op], memdsl[op], op),
        }
    return out


def _interpreters(args: argparse.Namespace) -> tuple[dict, dict]:
    """Which engine can run which operations; memhub may have only some of them yet."""
    found, problems = {}, {}
    memdsl = harness.find_memdsl(args.memdsl_python, ("Workspace", *OPS.values()))
    if memdsl.usable:
        found["memdsl"] = (memdsl.python, list(OPS))
    else:
        problems["memdsl"] = memdsl.problem
    hub_ops = []
    for op, name in OPS.items():
        hub = harness.find_memhub(args.memhub_python, ("Workspace", name))
        if hub.usable:
            hub_ops.append(op)
        else:
            problems[f"memhub {op}"] = hub.problem
    if hub_ops:
        found["memhub"] = (hub.python, hub_ops)
    return found, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1k,10k,100k")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--iterations",
        type=int,
        default=synth.QUERY_COUNT,
        help=f"queries and checks per engine (at most {synth.QUERY_COUNT})",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds memdsl may spend per operation kind before it stops early "
        f"(it always runs at least {MIN_ITERATIONS})",
    )
    parser.add_argument("--agree", type=int, default=50, help="answers compared per operation")
    parser.add_argument("--memdsl-python", help="interpreter with memdsl 0.5.1 ($MEMDSL_PYTHON)")
    parser.add_argument("--memhub-python", help="interpreter with memhub (default: this one)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per child")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--save", metavar="FILE", help="also write the JSON report to FILE")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--ops", default="query,check", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child, args)
        return 0

    found, problems = _interpreters(args)
    report: dict = {
        "benchmark": "query",
        "seed": args.seed,
        "iterations": args.iterations,
        "memdsl_budget_s": args.budget,
        "unavailable": problems,
        "sizes": [],
    }
    for size in (synth.parse_size(s) for s in args.sizes.split(",")):
        root = synth.ensure_workspace(size, args.seed).root
        entry: dict = {"size": size}
        for engine in harness.ENGINES:
            python, ops = found.get(engine, (None, []))
            entry[engine] = measure(engine, python, ops, root, args) if python else None
            print(f"... {synth.size_label(size)} {engine} done", file=sys.stderr, flush=True)
        entry["comparison"] = compare(entry["memhub"], entry["memdsl"])
        report["sizes"].append(entry)
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2) if args.json else query_report.render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
