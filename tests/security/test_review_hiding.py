"""Approving and diffing proposals for a reviewer without the role that reads some
declarations: no warning, parse error or diff carries a hidden declaration's name or text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, start_daemon
from tests.security.test_role_hiding import SECRET_BROKEN, WS, assert_no_leak, write_workspace

REVIEWER = "read:summary,read:search,write:candidate,review"
BASE = f"/v1/workspaces/{WS}"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    root = write_workspace(tmp_path / "ws" / WS)
    with start_daemon(tmp_path, {WS: str(root)}) as live:
        live.add_token("role-less-reviewer", REVIEWER, workspaces=[WS])
        yield live


def propose(daemon: LiveDaemon, source: str) -> str:
    with daemon.http(daemon.tokens["role-less-reviewer"]) as http:
        answer = http.post(f"{BASE}/proposals", json={"source": source})
    assert answer.status_code == 201, answer.text
    return answer.json()["proposal_id"]  # type: ignore[no-any-return]


def test_an_approvals_warnings_never_name_a_hidden_symbol(daemon: LiveDaemon) -> None:
    # An alias shared with a hidden entity: the finding lists every symbol holding it
    proposal = propose(daemon, 'entity Aa.Third { aliases: ["the launch"] }')
    with daemon.http(daemon.tokens["role-less-reviewer"]) as http:
        approved = http.post(f"{BASE}/proposals/{proposal}/approve", json={"into": "facts.mem"})
    assert approved.status_code == 200, approved.text
    assert_no_leak(approved.json())
    # nor a trace that a warning was left out
    assert "withheld" not in str(approved.json()["warnings"])


def test_an_approval_target_that_does_not_parse_is_not_quoted(daemon: LiveDaemon) -> None:
    secret = Path(daemon.workspaces[WS]) / "secret.mem"
    secret.write_text(SECRET_BROKEN, encoding="utf-8")
    proposal = propose(daemon, 'fact x.one { claim: "x" evidence { source: "s" quote: "q" } }')
    with daemon.http(daemon.tokens["role-less-reviewer"]) as http:
        refused = http.post(f"{BASE}/proposals/{proposal}/approve", json={"into": "secret.mem"})
    assert refused.status_code == 409, refused.text
    assert "target_parse_error" in refused.text and "does not parse" in refused.text
    assert_no_leak(refused.json())


def test_a_diff_of_text_the_snapshot_does_not_serve_is_withheld(daemon: LiveDaemon) -> None:
    # A file saved with a hidden declaration that does not parse: nothing of it is served
    fresh = Path(daemon.workspaces[WS]) / "fresh.mem"
    fresh.write_text(
        'module acl.fresh\n\nfact fresh.secret {\n  claim "The zebra payroll is 4417."\n'
        "  access_policy { readers: [ops] }\n}\n",
        encoding="utf-8",
    )
    proposal = propose(daemon, 'fact y.one { claim: "y" evidence { source: "s" quote: "q" } }')
    with daemon.http(daemon.tokens["role-less-reviewer"]) as http:
        shown = http.get(f"{BASE}/proposals/{proposal}", params={"into": "fresh.mem"}).json()
    assert shown["diff_withheld"] is True and shown["diff"] == ""
    assert_no_leak(shown)
    # while a file served as it is on disk, holding nothing hidden, is shown
    with daemon.http(daemon.tokens["role-less-reviewer"]) as http:
        plain = http.get(f"{BASE}/proposals/{proposal}", params={"into": "new.mem"}).json()
    assert plain["diff_withheld"] is False and "y.one" in plain["diff"]


def test_an_approval_into_a_file_with_hidden_declarations_withholds_its_hashes(
    daemon: LiveDaemon,
) -> None:
    # The hashes cover the hidden text too: a guess of it could be tested against them
    root = Path(daemon.workspaces[WS])
    hidden_in = propose(daemon, 'fact h.one { claim: "h" evidence { source: "s" quote: "q" } }')
    plain = propose(daemon, 'fact p.one { claim: "p" evidence { source: "s" quote: "q" } }')
    with daemon.http(daemon.tokens["role-less-reviewer"]) as http:
        into_facts = http.post(f"{BASE}/proposals/{hidden_in}/approve", json={"into": "facts.mem"})
        into_new = http.post(f"{BASE}/proposals/{plain}/approve", json={"into": "plain.mem"})
    assert into_facts.status_code == 200, into_facts.text
    withheld = into_facts.json()
    assert withheld["target_sha256_withheld"] is True
    assert withheld["target_sha256_before"] is None and withheld["target_sha256_after"] is None
    assert hashlib.sha256((root / "facts.mem").read_bytes()).hexdigest() not in into_facts.text
    # a file holding nothing hidden keeps its hashes
    assert into_new.status_code == 200, into_new.text
    shown = into_new.json()
    assert shown["target_sha256_withheld"] is False
    assert (
        shown["target_sha256_after"]
        == hashlib.sha256((root / "plain.mem").read_bytes()).hexdigest()
    )
