"""Lint judges staleness on the day it is asked, as memdsl's lint does: a workspace
nobody edits is linted again once the date changes, for every caller's view."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import memhubd.lint
from tests.integration.conftest import LiveDaemon, start_daemon

FREEZE = """\
entity deploy {
  aliases: [deployment]
}

state deploy.freeze {
  subject: deploy
  claim: "Deploys are frozen for the audit."
  lifecycle { status: active as_of: 2026-11-01 valid_until: 2026-12-04 }
  evidence { source: chat quote: "freeze until the fourth" }
}

fact deploy.secret_window {
  subject: deploy
  claim: "The audit window is known to security only."
  evidence { source: chat quote: "security only" }
  access_policy { readers: [security] }
}
"""


def stale(daemon: LiveDaemon, secret: str) -> tuple[list[str], int]:
    with daemon.http(secret) as http:
        linted = http.get("/v1/workspaces/ops/lint").json()
        status = http.get("/v1/workspaces/ops").json()
    found = [d["decl_id"] for d in linted["diagnostics"] if d["code"] == "stale_state"]
    return found, status["lint_warnings"]


def test_a_workspace_nobody_edits_is_linted_again_on_a_new_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ops"
    root.mkdir()
    (root / "deploy.mem").write_text(FREEZE, encoding="utf-8")
    day = {"today": dt.date(2026, 12, 4)}
    monkeypatch.setattr(memhubd.lint, "lint_today", lambda: day["today"])
    with start_daemon(tmp_path, {"ops": str(root)}) as daemon:
        reader = daemon.add_token("dev", "read:summary", workspaces=["ops"], roles=["dev"])
        # Given a freeze valid through today, linted today for both callers
        for secret in (daemon.admin_token, reader):
            assert stale(daemon, secret)[0] == []
        warnings = {s: stale(daemon, s)[1] for s in (daemon.admin_token, reader)}

        # When the date changes, no file changed
        day["today"] = dt.date(2026, 12, 5)

        # Then both callers' lint says the freeze expired, and their counts follow
        for secret in (daemon.admin_token, reader):
            found, count = stale(daemon, secret)
            assert found == ["state:deploy.freeze"], found
            assert count == warnings[secret] + 1
