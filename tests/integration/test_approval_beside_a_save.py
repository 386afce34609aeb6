"""An approval beside another file's save in progress, against a real daemon: the
approval's own writes are served at once, while the other file stays held back until
its save settles, so its declarations are still served and still count against a
proposal that declares one of them again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"
# Long enough for the whole test to run inside one settle period of the save below.
SETTLE_MS = 6000


def fact(name: str, claim: str) -> str:
    return (
        f'fact {name} {{\n  subject: Service.Tidewater\n  claim: "{claim}"\n'
        f'  evidence {{ source: "chat" quote: "{claim}" }}\n}}\n'
    )


BOTH = fact("two.a", "First of two.") + "\n" + fact("two.b", "Second of two.")
FIRST_ONLY = fact("two.a", "First of two.")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    (Path(workspaces[WS]) / "twostep.mem").write_text(BOTH, encoding="utf-8")
    with start_daemon(tmp_path, workspaces, **{"watch.settle_ms": SETTLE_MS}) as live:
        live.add_token("agent", "write:candidate,read:summary")
        live.add_token("alice", "review,read:summary", roles=["*"])
        yield live


def propose(daemon: LiveDaemon, source: str) -> Any:
    with daemon.http(daemon.tokens["agent"]) as client:
        return client.post(f"{BASE}/proposals", json={"source": source})


def served(daemon: LiveDaemon, declaration_id: str) -> bool:
    with daemon.http(daemon.tokens["alice"]) as client:
        listed = client.get(f"{BASE}/declarations", params={"limit": "500"}).json()
    return declaration_id in {item["id"] for item in listed["items"]}


def test_an_approval_does_not_serve_another_files_unfinished_save(daemon: LiveDaemon) -> None:
    # given a pending proposal, and another file caught half-way through a save: rewritten
    # in place without one of its declarations, moments ago
    unrelated = propose(daemon, fact("tidewater.unrelated", "An unrelated approval."))
    assert unrelated.status_code == 201, unrelated.text
    saving = Path(daemon.workspaces[WS]) / "twostep.mem"
    with open(saving, "r+", encoding="utf-8") as handle:
        handle.write(FIRST_ONLY)
        handle.truncate()
    began = time.monotonic()
    assert served(daemon, "fact:two.b")

    # when the proposal is approved into another file
    with daemon.http(daemon.tokens["alice"]) as client:
        approved = client.post(
            f"{BASE}/proposals/{unrelated.json()['proposal_id']}/approve",
            json={"into": "tools.mem"},
        )

    # then the approval is served at once, and the save in progress is not served yet
    assert approved.status_code == 200, approved.text
    assert approved.json()["served_generation"] is not None
    assert served(daemon, "fact:tidewater.unrelated")
    assert served(daemon, "fact:two.b")
    # and a proposal declaring the held-back id again is refused as existing
    duplicate = propose(daemon, fact("two.b", "A copy of two.b."))
    assert duplicate.status_code == 422, duplicate.text
    assert duplicate.json()["error"]["detail"]["errors"][0]["code"] == "declaration_exists"
    assert time.monotonic() - began < SETTLE_MS / 1000, "too slow to test a save in progress"


def test_an_approval_waits_for_a_save_elsewhere_that_declares_its_id(daemon: LiveDaemon) -> None:
    # given a pending proposal, and another file saved whole a moment ago, one of its
    # declarations renamed to the proposal's id: held back while it settles, so the
    # text served for it lacks the id
    proposal = propose(daemon, fact("two.c", "A third."))
    assert proposal.status_code == 201, proposal.text
    saving = Path(daemon.workspaces[WS]) / "twostep.mem"
    written = saving.with_name("twostep.tmp")
    written.write_text(FIRST_ONLY + "\n" + fact("two.c", "Renamed from two.b."), "utf-8")
    written.replace(saving)

    # when the proposal is approved into another file
    with daemon.http(daemon.tokens["alice"], timeout=30) as client:
        approved = client.post(
            f"{BASE}/proposals/{proposal.json()['proposal_id']}/approve",
            json={"into": "tools.mem"},
        )

    # then the approval waited for the save, and refused the id it now declares
    assert approved.status_code == 409, approved.text
    assert "two.c" not in (Path(daemon.workspaces[WS]) / "tools.mem").read_text("utf-8")
    assert served(daemon, "fact:two.c")
