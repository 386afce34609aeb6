"""What a daemon's start imports before it listens."""

from __future__ import annotations

import subprocess
import sys


def test_a_start_does_not_import_rich_through_structlog() -> None:
    # Given a fresh interpreter (rich is installed in development venvs)
    # When the daemon's server and logging are imported
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, memhubd.server, memhubd.runtime.logging;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    # Then rich is not among the imported modules
    assert found.stdout.strip() == "[]"


def test_rich_imports_as_usual_after_memhubd() -> None:
    found = subprocess.run(
        [sys.executable, "-c", "import memhubd, structlog, rich; print(rich.__name__)"],
        capture_output=True,
        text=True,
    )
    # Then rich is importable as usual (where it is installed)
    assert found.returncode == 0 or "No module named 'rich'" in found.stderr
    assert found.stdout.strip() in ("rich", "")
