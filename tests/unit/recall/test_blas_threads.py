"""The daemon's entry point defaults BLAS to one thread before numpy is loaded."""

from __future__ import annotations

import os
import subprocess
import sys

from memhubd import cli

# Records what OPENBLAS_NUM_THREADS was when numpy was first looked up (the moment
# OpenBLAS reads it), then prints the variables after main ran.
SCRIPT = """
import io, os, sys
seen = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and not seen:
            seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
        return None
sys.meta_path.insert(0, Watch())
from memhubd import cli
sys.stdout = io.StringIO()
try:
    cli.main(["--version"])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
import numpy
print(seen[0], os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS"),
      os.environ.get("OPENBLAS_CORETYPE"))
"""


def _run(env: dict[str, str]) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in cli.BLAS_THREAD_VARIABLES}
    clean.pop("OPENBLAS_CORETYPE", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_main_sets_one_thread_before_numpy_is_imported() -> None:
    assert _run({}) == ["1", "1", "1", "None"]


def test_an_operator_setting_wins_and_coretype_is_left_alone() -> None:
    assert _run({"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Haswell"}) == [
        "2",
        "2",
        "1",
        "Haswell",
    ]
