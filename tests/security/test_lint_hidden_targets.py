"""A role-limited caller's lint: a subject or relation naming a declaration hidden from it
resolves (the workspace has no such error), so it is not reported as unknown, while a
target that exists nowhere still is."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, start_daemon

WS = "w"
BASE = f"/v1/workspaces/{WS}"
HIDDEN = """module w.ops

entity Ops.Vault {
  access_policy { readers: [ops] }
}

fact ops.old_ttl {
  status: superseded
  claim: "Sessions expire after 30 minutes."
  evidence { source: "auth.md" quote: "30 minutes" }
  access_policy { readers: [ops] }
}
"""
VISIBLE = """module w.pub

fact pub.new_ttl {
  claim: "Sessions expire after 60 minutes."
  supersedes: "fact:ops.old_ttl"
  evidence { source: "auth.md" quote: "60 minutes" }
}

fact pub.vault_rotation {
  subject: Ops.Vault
  claim: "Vault keys rotate monthly."
  depends_on: "ops.old_ttl"
  evidence { source: "vault.md" quote: "monthly" }
}
"""
BROKEN = """module w.broken

fact pub.dangling {
  claim: "Depends on nothing that exists."
  depends_on: "fact:nowhere.at_all"
  evidence { source: "x.md" quote: "x" }
}
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    root = tmp_path / "ws" / WS
    root.mkdir(parents=True)
    (root / "hidden.mem").write_text(HIDDEN, encoding="utf-8")
    (root / "visible.mem").write_text(VISIBLE, encoding="utf-8")
    with start_daemon(tmp_path, {WS: str(root)}) as live:
        live.add_token("agent", "read:summary,read:search", workspaces=[WS])
        yield live


def lint(daemon: LiveDaemon, token: str) -> dict:  # type: ignore[type-arg]
    with daemon.http(daemon.tokens[token]) as http:
        answer = http.get(f"{BASE}/lint")
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def status_errors(daemon: LiveDaemon, token: str) -> int:
    with daemon.http(daemon.tokens[token]) as http:
        answer = http.get(BASE)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["lint_errors"])


def test_relations_and_subjects_naming_hidden_declarations_are_no_errors(
    daemon: LiveDaemon,
) -> None:
    whole = lint(daemon, "admin")
    assert whole["errors"] == 0, whole
    limited = lint(daemon, "agent")
    assert [d["code"] for d in limited["diagnostics"] if d["severity"] == "error"] == []
    assert limited["errors"] == 0 and status_errors(daemon, "agent") == 0
    # A target that exists nowhere is an error for both
    (Path(daemon.workspaces[WS]) / "broken.mem").write_text(BROKEN, encoding="utf-8")
    deadline = time.monotonic() + 20
    while lint(daemon, "admin")["errors"] != 1:
        assert time.monotonic() < deadline, "the new file was not served"
        time.sleep(0.05)
    errors = [d for d in lint(daemon, "agent")["diagnostics"] if d["severity"] == "error"]
    assert [(d["code"], d["decl_id"]) for d in errors] == [
        ("unresolved_symbol", "fact:pub.dangling")
    ]
    assert status_errors(daemon, "agent") == 1
