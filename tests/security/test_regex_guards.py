"""Attack: a guard regex that backtracks forever, to freeze the daemon for everyone.

Guard patterns come from workspace files; candidates come from callers. Whatever a
pattern's syntax, a check is bounded by `limits.regex_timeout_ms` for all its
searches together, an unfinished guard makes the verdict `needs_review` naming it,
and other requests are served while a check is running.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.integration.conftest import start_daemon

# Each only `re` reads as intended, and each doubles its running time per extra "a".
RUNAWAY_GUARDS = [
    r"(\x61+)+$",
    r"(\u0061+)+$",
    r"((?:a|[:])+)+$",
    r"((?:a|{)+)+$",
    r"(a+)+é",
]
HOSTILE = "a" * 40 + "!"


def _workspace(root: Path, pattern: str) -> dict[str, str]:
    root.mkdir()
    escaped = pattern.replace("\\", "\\\\")
    (root / "rules.mem").write_text(
        "boundary no_runaway {\n"
        '  rule: "Commands must not match the runaway pattern."\n'
        "  scope: global\n"
        f'  guard {{ deny_regex: ["{escaped}"] }}\n'
        "}\n",
        encoding="utf-8",
    )
    return {"guards": str(root)}


@pytest.mark.parametrize("pattern", RUNAWAY_GUARDS)
def test_a_runaway_guard_gives_needs_review_naming_it(tmp_path: Path, pattern: str) -> None:
    workspaces = _workspace(tmp_path / "guards", pattern)
    settings = {"limits.regex_timeout_ms": 200}
    with (
        start_daemon(tmp_path, workspaces, **settings) as daemon,
        daemon.http(daemon.admin_token, timeout=60) as client,
    ):
        response = client.post(
            "/v1/workspaces/guards/check", json={"task": "run", "candidate": HOSTILE}
        )

    assert response.status_code == 200
    pack = response.json()
    assert pack["verdict"] == "needs_review"
    assert pack["unknowns"][0]["reason"] == f"guard regex timed out: deny_regex={pattern!r}"


def test_other_requests_are_served_while_a_check_runs(tmp_path: Path) -> None:
    workspaces = _workspace(tmp_path / "guards", RUNAWAY_GUARDS[0])
    # A long budget keeps the check in flight while the probes are sent.
    with start_daemon(tmp_path, workspaces, **{"limits.regex_timeout_ms": 3000}) as daemon:
        finished: dict[str, float] = {}

        def run_check() -> None:
            with daemon.http(daemon.admin_token, timeout=60) as client:
                response = client.post(
                    "/v1/workspaces/guards/check", json={"task": "run", "candidate": HOSTILE}
                )
            finished["check"] = time.monotonic()
            finished["verdict"] = response.json()["verdict"]

        worker = threading.Thread(target=run_check)
        worker.start()
        time.sleep(0.5)
        with daemon.http(timeout=60) as client:
            for _ in range(5):
                assert client.get("/healthz").status_code == 200
            finished["probes"] = time.monotonic()
        probes_done_while_checking = "check" not in finished
        worker.join(60)

    assert probes_done_while_checking, "the probes waited for the check to finish"
    assert finished["probes"] < finished["check"]
    assert finished["verdict"] == "needs_review"
