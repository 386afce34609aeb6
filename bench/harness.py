"""What both benchmark scripts share: finding the two engines' interpreters, running one measured
child process, percentiles and plain-text tables.

Standard library only: children import this module under memdsl's interpreter too.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

REPO_ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("memhub", "memdsl")

# The names each engine exposes for the benchmarked operations (the memhub contract mirrors
# memdsl's public API, so only the module paths differ).
ENGINE_MODULES = {
    "memhub": {
        "Workspace": ("memhubd.model", "Workspace"),
        "lint": ("memhubd.lint", "lint"),
        "build_evidence_pack": ("memhubd.query", "build_evidence_pack"),
        "check_compliance": ("memhubd.check", "check_compliance"),
    },
    "memdsl": {
        "Workspace": ("memdsl.model", "Workspace"),
        "lint": ("memdsl.linter", "lint"),
        "build_evidence_pack": ("memdsl.query", "build_evidence_pack"),
        "check_compliance": ("memdsl.compliance", "check_compliance"),
    },
}


@dataclass(frozen=True, slots=True)
class Interpreter:
    """A Python that can run one engine, or the reason it cannot."""

    engine: str
    python: str | None
    problem: str = ""

    @property
    def usable(self) -> bool:
        return self.python is not None and not self.problem


def load_engine(engine: str, names: tuple[str, ...]) -> SimpleNamespace:
    """Import the named operations of one engine (inside a child process)."""
    found = {}
    for name in names:
        module_name, attribute = ENGINE_MODULES[engine][name]
        module = __import__(module_name, fromlist=[attribute])
        found[name] = getattr(module, attribute)
    return SimpleNamespace(**found)


def _probe(python: str, engine: str, names: tuple[str, ...]) -> str:
    """Empty string when `python` can import the engine's names, else the error's last line."""
    imports = "; ".join(
        f"from {ENGINE_MODULES[engine][n][0]} import {ENGINE_MODULES[engine][n][1]}" for n in names
    )
    try:
        done = subprocess.run(
            [python, "-c", imports], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
        )
    except OSError as exc:
        return str(exc)
    if done.returncode == 0:
        return ""
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit code {done.returncode}"


def find_memdsl(option: str | None, names: tuple[str, ...]) -> Interpreter:
    """--memdsl-python, else $MEMDSL_PYTHON, else this interpreter if it can import memdsl."""
    python = option or os.environ.get("MEMDSL_PYTHON")
    if python:
        problem = _probe(python, "memdsl", names)
        return Interpreter("memdsl", python, f"unusable ({problem})" if problem else "")
    if importlib.util.find_spec("memdsl") is None:
        return Interpreter("memdsl", None, "not found (pass --memdsl-python or set MEMDSL_PYTHON)")
    return Interpreter("memdsl", sys.executable, _probe(sys.executable, "memdsl", names))


def find_memhub(option: str | None, names: tuple[str, ...]) -> Interpreter:
    python = option or sys.executable
    problem = _probe(python, "memhub", names)
    return Interpreter("memhub", python, f"not measured yet ({problem})" if problem else "")


def run_child(python: str, script: Path, args: list[str], timeout: float) -> dict:
    """Run `script --child ... --out FILE` in a fresh process and return the JSON it wrote."""
    with tempfile.TemporaryDirectory(prefix="memhub-bench-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [python, str(script), "--child", *args, "--out", str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)
        if done.returncode != 0 or not out.exists():
            tail = "\n".join(done.stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"child failed ({' '.join(cmd[:4])} ...):\n{tail}")
        return json.loads(out.read_text(encoding="utf-8"))


def write_result(path: str, data: dict) -> None:
    Path(path).write_text(json.dumps(data), encoding="utf-8")


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: an observed value, never an interpolation."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def median(values: list[float]) -> float:
    return percentile(values, 0.5)


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def fmt_ratio(value: float | None, suffix: str = "x") -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.1f}{suffix}" if value >= 10 else f"{value:.2f}{suffix}"


def fmt_ms(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "-"
    ms = seconds * 1000
    if ms >= 100:
        return f"{ms:.0f}"
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}"
