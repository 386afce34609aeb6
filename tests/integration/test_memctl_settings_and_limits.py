"""Small promises of memctl's command line: a bad MEMHUB_WORKSPACE is named, a query
limit below 1 is a usage error, and an ingest whose every source was left out here
still says which workspace and schema its totals are of."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DOWN = "http://127.0.0.1:9"


pytestmark = pytest.mark.usefixtures("no_user_config")


def memctl(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memctl", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_a_workspace_variable_that_is_not_utf8_is_named() -> None:
    bad = os.fsdecode(b"t\xff")
    result = memctl("--url", DOWN, "list", env={"MEMHUB_WORKSPACE": bad})
    assert result.returncode == 2
    assert result.stderr == "memctl: MEMHUB_WORKSPACE is not valid UTF-8 text\n"


@pytest.mark.parametrize("limit", ["-1", "0"])
def test_a_query_limit_below_1_is_a_usage_error(limit: str) -> None:
    result = memctl("--url", DOWN, "-w", "team", "query", "deploy", "--limit", limit)
    assert result.returncode == 2
    assert f"argument --limit: must be at least 1, not {limit}" in result.stderr


def test_ingest_totals_name_the_workspace_when_nothing_was_sent(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    result = memctl("--url", DOWN, "-w", "team", "recall", "ingest", missing, "--json")
    assert result.returncode == 1, result.stderr
    totals = json.loads(result.stdout)
    assert totals["workspace"] == "team"
    assert totals["schema_version"] == "memhub.recall.ingest.v1"
    assert totals["failed"] == [{"source": missing, "reason": "no such file or directory"}]
