"""A bare name in `supersedes` names every declaration of that name (memdsl supersedes by
id or bare name). A caller who cannot read one of them must not supersede it by that name:
served, the correction would release everyone from a MUST rule the caller never saw, and
approving it would mark the rule superseded in a file the caller may not read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, start_daemon

WS = "w"
BASE = f"/v1/workspaces/{WS}"
REVIEWER = "read:summary,read:search,write:candidate,review"
RULES = """module w.rules

boundary release.freeze {
  scope: global
  claim: "Never tag a release during the audit freeze."
  exceptions: [cfo_signoff]
  guard { deny_any: ["tag release"] }
  evidence { source: "ops.md" quote: "No releases in the audit freeze." }
  access_policy { readers: [ops] }
}
"""
FACTS = """module w.facts

fact release.freeze {
  claim: "The release freeze starts on Fridays."
  evidence { source: "wiki.md" quote: "Fridays" }
}
"""


def correction(target: str, name: str = "release.freeze_v2") -> str:
    return (
        f"fact {name} {{\n"
        '  claim: "The release freeze starts on Thursdays."\n'
        f'  supersedes: "{target}"\n'
        '  evidence { source: "wiki.md" quote: "Thursdays" }\n'
        "}\n"
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    root = tmp_path / "ws" / WS
    root.mkdir(parents=True)
    (root / "a_rules.mem").write_text(RULES, encoding="utf-8")
    (root / "b_facts.mem").write_text(FACTS, encoding="utf-8")
    with start_daemon(tmp_path, {WS: str(root)}) as live:
        live.add_token("agent", REVIEWER, workspaces=[WS], roles=["developer"])
        live.add_token("ops", REVIEWER, workspaces=[WS], roles=["ops"])
        yield live


def verdict(daemon: LiveDaemon, token: str) -> str:
    with daemon.http(daemon.tokens[token]) as http:
        answer = http.post(f"{BASE}/check", json={"task": "ship", "candidate": "tag release 2.0"})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["verdict"])


def pending(daemon: LiveDaemon) -> list[str]:
    proposals = Path(daemon.workspaces[WS]) / ".memdsl" / "proposals"
    return sorted(p.name for p in proposals.glob("*")) if proposals.exists() else []


def test_a_bare_name_shared_with_a_hidden_rule_is_refused_at_propose(
    daemon: LiveDaemon,
) -> None:
    assert verdict(daemon, "agent") == "block"
    with daemon.http(daemon.tokens["agent"]) as http:
        refused = http.post(f"{BASE}/proposals", json={"source": correction("release.freeze")})
        also = http.post(
            f"{BASE}/proposals",
            json={"source": correction("release.freeze"), "supersedes": "release.freeze"},
        )
    for answer in (refused, also):
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert error["message"].startswith("supersedes_hidden: ")
        assert [e["code"] for e in error["detail"]["errors"]] == ["supersedes_hidden"]
        # nothing of the hidden rule is quoted
        assert "audit freeze" not in answer.text and "boundary" not in answer.text
    assert pending(daemon) == []
    # The full id of the fact it can read supersedes that one only: the rule still binds
    with daemon.http(daemon.tokens["agent"]) as http:
        made = http.post(f"{BASE}/proposals", json={"source": correction("fact:release.freeze")})
        assert made.status_code == 201, made.text
        approved = http.post(
            f"{BASE}/proposals/{made.json()['proposal_id']}/approve", json={"into": "b_facts.mem"}
        )
    assert approved.status_code == 200, approved.text
    assert approved.json()["marked_superseded"] == ["fact:release.freeze"]
    assert (Path(daemon.workspaces[WS]) / "a_rules.mem").read_text(encoding="utf-8") == RULES
    assert verdict(daemon, "agent") == "block"
    assert verdict(daemon, "ops") == "block"


def test_a_reviewer_who_cannot_read_what_a_bare_name_names_cannot_approve_it(
    daemon: LiveDaemon,
) -> None:
    # Proposed by a caller who reads both declarations of the name
    with daemon.http(daemon.tokens["ops"]) as http:
        made = http.post(f"{BASE}/proposals", json={"source": correction("release.freeze")})
    assert made.status_code == 201, made.text
    proposal = made.json()["proposal_id"]
    with daemon.http(daemon.tokens["agent"]) as http:
        shown = http.get(f"{BASE}/proposals/{proposal}")
        refused = http.post(f"{BASE}/proposals/{proposal}/approve", json={"into": "b_facts.mem"})
    # The role-limited reviewer is told why it may not approve it, nothing of the rule
    assert shown.status_code == 200, shown.text
    validation = shown.json()["validation"]
    assert validation["ok"] is False
    assert validation["errors"][0]["code"] == "supersedes_hidden"
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["detail"]["errors"][0]["code"] == "supersedes_hidden"
    assert "audit freeze" not in refused.text
    assert (Path(daemon.workspaces[WS]) / "a_rules.mem").read_text(encoding="utf-8") == RULES
    assert verdict(daemon, "ops") == "block"
    # A reviewer who reads both approves it, knowing what it supersedes
    with daemon.http(daemon.tokens["ops"]) as http:
        approved = http.post(f"{BASE}/proposals/{proposal}/approve", json={"into": "b_facts.mem"})
    assert approved.status_code == 200, approved.text
    assert verdict(daemon, "ops") == "allow"


def test_a_reviewer_cannot_approve_superseding_a_declaration_it_cannot_read(
    daemon: LiveDaemon,
) -> None:
    # Named by its full id, by a proposer who reads it
    source = correction("boundary:release.freeze", name="release.thaw")
    with daemon.http(daemon.tokens["ops"]) as http:
        made = http.post(f"{BASE}/proposals", json={"source": source})
    assert made.status_code == 201, made.text
    proposal = made.json()["proposal_id"]
    with daemon.http(daemon.tokens["agent"]) as http:
        shown = http.get(f"{BASE}/proposals/{proposal}")
        refused = http.post(f"{BASE}/proposals/{proposal}/approve", json={"into": "b_facts.mem"})
    assert shown.json()["validation"]["errors"][0]["code"] == "supersedes_hidden"
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["detail"]["errors"][0]["code"] == "supersedes_hidden"
    assert "audit freeze" not in refused.text
    assert (Path(daemon.workspaces[WS]) / "a_rules.mem").read_text(encoding="utf-8") == RULES
    assert verdict(daemon, "ops") == "block"
