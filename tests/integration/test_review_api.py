"""Review over the JSON API against a real daemon: agents propose, people approve or
reject, the daemon serves what was approved, and nothing else reaches memory."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"
NATS = """fact tidewater.uses_nats {
  subject: Service.Tidewater
  claim: "Tidewater publishes shipment events to NATS JetStream."
  evidence { source: "chat" quote: "we publish to jetstream now" }
}
"""
# A declaration of team-coding that access policy hides from the coding_agent role.
HIDDEN_ID = "teamcode.bug_pattern:payments.sandbox_key_in_logs"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    with start_daemon(tmp_path, copy_examples(tmp_path / "ws", [WS])) as live:
        live.add_token("agent-build", "write:candidate,read:summary", roles=["coding_agent"])
        live.add_token("alice", "review,read:summary,read:search", roles=["*"])
        yield live


def root_of(daemon: LiveDaemon) -> Path:
    return Path(daemon.workspaces[WS])


def tree(root: Path) -> dict[str, str]:
    """Every file and directory under `root` with a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


def fact(name: str, claim: str = "A claim.") -> str:
    return (
        f'fact {name} {{\n  subject: Service.Tidewater\n  claim: "{claim}"\n'
        f'  evidence {{ source: "chat" quote: "{claim}" }}\n}}\n'
    )


def propose(daemon: LiveDaemon, source: str, **extra: Any) -> Any:
    with daemon.http(daemon.tokens["agent-build"]) as client:
        return client.post(f"{BASE}/proposals", json={"source": source, **extra})


def approve(daemon: LiveDaemon, proposal_id: str, into: str, token: str = "alice") -> Any:
    with daemon.http(daemon.tokens[token]) as client:
        return client.post(f"{BASE}/proposals/{proposal_id}/approve", json={"into": into})


def audit(daemon: LiveDaemon) -> list[dict[str, Any]]:
    lines = (root_of(daemon) / ".memdsl" / "audit.log").read_text().splitlines()
    return [json.loads(line) for line in lines]


def error_of(response: Any) -> dict[str, Any]:
    return response.json()["error"]


# -- the path of a proposal --------------------------------------------------------------------


def test_approved_proposal_is_served_at_the_reported_generation(daemon: LiveDaemon) -> None:
    # given an agent's proposal
    proposed = propose(daemon, NATS, reason="said in chat", client="build-bot")
    assert proposed.status_code == 201, proposed.text
    assert proposed.json()["status"] == "pending_review"
    proposal_id = proposed.json()["proposal_id"]

    # when a reviewer approves it
    approved = approve(daemon, proposal_id, "decisions.mem")

    # then the answer names the generation that serves it, and that snapshot has it
    assert approved.status_code == 200, approved.text
    answer = approved.json()
    assert (answer["status"], answer["decided_by"]) == ("approved", "alice")
    assert answer["declaration_id"] == "fact:tidewater.uses_nats"
    assert answer["file_id"] == "decisions.mem"
    generation = answer["served_generation"]
    with daemon.http(daemon.tokens["alice"]) as client:
        served = client.get(f"{BASE}/declarations/fact:tidewater.uses_nats")
        assert client.get(BASE).json()["generation"] == generation
    assert served.status_code == 200
    assert "Tidewater publishes shipment events to NATS JetStream." in served.text
    assert (
        "# approved from proposal " + proposal_id in (root_of(daemon) / "decisions.mem").read_text()
    )


def test_audit_log_names_the_proposer_and_the_reviewer(daemon: LiveDaemon) -> None:
    proposal_id = propose(daemon, NATS).json()["proposal_id"]
    generation = approve(daemon, proposal_id, "decisions.mem").json()["served_generation"]

    entries = [e for e in audit(daemon) if e["proposal_id"] == proposal_id]

    assert [(e["action"], e["identity"]) for e in entries] == [
        ("propose", "agent-build"),
        ("approve", "alice"),
    ]
    assert entries[0]["generation"] == generation - 1
    assert entries[1]["generation"] == generation
    assert entries[1]["into"] == str((root_of(daemon) / "decisions.mem").resolve())


def test_proposals_are_not_served_before_approval(daemon: LiveDaemon) -> None:
    # given a pending proposal with a distinctive claim
    proposal_id = propose(daemon, fact("brand.new", "Zeppelins carry the freight.")).json()[
        "proposal_id"
    ]
    # then neither query, map, list nor explain knows it
    with daemon.http(daemon.admin_token) as client:
        pack = client.post(f"{BASE}/query", json={"query": "zeppelins freight"}).text
        memory_map = client.get(f"{BASE}/map").text
        listed = client.get(f"{BASE}/declarations", params={"include_inactive": "true"}).text
        explained = client.get(f"{BASE}/declarations/fact:brand.new")
        files = client.get(f"{BASE}/files").text
    for answer in (pack, memory_map, listed, files):
        assert "brand.new" not in answer and "Zeppelins" not in answer
        assert proposal_id not in answer
    assert explained.status_code == 404


def test_rejected_proposal_is_recorded_and_never_written(daemon: LiveDaemon) -> None:
    before = {p: h for p, h in tree(root_of(daemon)).items() if not p.startswith(".memdsl")}
    proposal_id = propose(daemon, NATS).json()["proposal_id"]

    with daemon.http(daemon.tokens["alice"]) as client:
        rejected = client.post(f"{BASE}/proposals/{proposal_id}/reject", json={"reason": "hearsay"})
        listed = client.get(f"{BASE}/proposals", params={"status": "rejected"}).json()

    assert rejected.status_code == 200
    assert (rejected.json()["status"], rejected.json()["decided_by"]) == ("rejected", "alice")
    assert [p["id"] for p in listed["proposals"]] == [proposal_id]
    assert listed["proposals"][0]["reject_reason"] == "hearsay"
    after = {p: h for p, h in tree(root_of(daemon)).items() if not p.startswith(".memdsl")}
    assert after == before
    assert [e["action"] for e in audit(daemon)] == ["propose", "reject"]


def test_a_decided_proposal_cannot_be_decided_again(daemon: LiveDaemon) -> None:
    proposal_id = propose(daemon, NATS).json()["proposal_id"]
    assert approve(daemon, proposal_id, "decisions.mem").status_code == 200

    again = approve(daemon, proposal_id, "rules.mem")
    with daemon.http(daemon.tokens["alice"]) as client:
        reject = client.post(f"{BASE}/proposals/{proposal_id}/reject", json={"reason": "late"})

    for response in (again, reject):
        assert response.status_code == 409
        assert error_of(response)["detail"]["status"] == "already_approved"
    assert "tidewater.uses_nats" not in (root_of(daemon) / "rules.mem").read_text()


def test_approval_of_a_proposal_made_stale_by_an_edit_is_refused(daemon: LiveDaemon) -> None:
    # given a proposal, and a person who then declares the same id by hand
    proposal_id = propose(daemon, NATS).json()["proposal_id"]
    with open(root_of(daemon) / "tools.mem", "a", encoding="utf-8") as handle:
        handle.write("\n" + NATS)

    response = approve(daemon, proposal_id, "decisions.mem")

    assert response.status_code == 409
    assert error_of(response)["detail"]["status"] == "stale_or_invalid"
    assert error_of(response)["detail"]["errors"][0]["code"] == "declaration_exists"
    assert "tidewater.uses_nats" not in (root_of(daemon) / "decisions.mem").read_text()


# -- refusals change nothing -------------------------------------------------------------------

MALFORMED = {
    "parse_error": ("fact broken { claim: ", 422),
    "unknown_type": (NATS.replace("fact tidewater", "factoid tidewater"), 422),
    "missing_evidence": (
        'fact no.quote {\n  subject: Service.Tidewater\n  claim: "No evidence."\n}\n',
        422,
    ),
    "two_declarations": (NATS + fact("second.one"), 422),
    "existing_id": (NATS.replace("fact tidewater.uses_nats", "decision queue.nats_jetstream"), 422),
    "oversized": (fact("big.one", "x" * 70_000), 413),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_proposals_are_refused_and_nothing_changes(daemon: LiveDaemon, case: str) -> None:
    source, status = MALFORMED[case]
    before = tree(root_of(daemon))

    response = propose(daemon, source)

    assert response.status_code == status, response.text
    assert error_of(response)["detail"]["errors"], response.text
    assert tree(root_of(daemon)) == before


@pytest.mark.parametrize(
    "into",
    ["../escape.mem", "/etc/escape.mem", ".memdsl/proposals/x.mem", "notes.txt", "sub/../../x.mem"],
)
def test_approval_outside_the_workspace_is_refused_and_nothing_changes(
    daemon: LiveDaemon, into: str
) -> None:
    proposal_id = propose(daemon, NATS).json()["proposal_id"]
    before = tree(root_of(daemon))
    outside = set(root_of(daemon).parent.iterdir())

    response = approve(daemon, proposal_id, into)

    assert response.status_code == 422, response.text
    assert error_of(response)["detail"]["errors"][0]["code"].startswith("target_")
    assert tree(root_of(daemon)) == before
    assert set(root_of(daemon).parent.iterdir()) == outside


@pytest.mark.parametrize("into", ["a" * 300 + ".mem", "rules.mem/x.mem"])
def test_a_target_no_file_can_have_is_invalid_for_diff_and_approval(
    daemon: LiveDaemon, into: str
) -> None:
    # Given a target whose name is too long for the file system, or whose parent is a file
    proposal_id = propose(daemon, NATS).json()["proposal_id"]
    before = tree(root_of(daemon))

    # When the reviewer asks for its diff, then approves into it
    with daemon.http(daemon.tokens["alice"]) as client:
        diffed = client.get(f"{BASE}/proposals/{proposal_id}", params={"into": into})
    approved = approve(daemon, proposal_id, into)

    # Then both answer the caller's mistake (422), not a fault of the daemon or the disk
    for response in (diffed, approved):
        assert response.status_code == 422, response.text
        assert error_of(response)["detail"]["errors"][0]["code"] == "target_invalid"
    assert tree(root_of(daemon)) == before


def test_an_approval_while_a_git_rebase_is_stopped_is_a_conflict(daemon: LiveDaemon) -> None:
    # Given a workspace whose repository has a rebase stopped half-way
    root = root_of(daemon)
    (root / ".git" / "rebase-merge").mkdir(parents=True)
    proposal_id = propose(daemon, NATS).json()["proposal_id"]
    before = tree(root)

    # When a reviewer approves
    response = approve(daemon, proposal_id, "decisions.mem")

    # Then it is a conflict naming the operation and what to do; nothing was written
    assert response.status_code == 409, response.text
    error = error_of(response)
    assert error["detail"]["status"] == "git_operation_in_progress"
    assert error["detail"]["errors"][0]["code"] == "rebase_in_progress"
    assert "git rebase --abort" in error["message"]
    assert tree(root) == before
    assert [e["action"] for e in audit(daemon)] == ["propose"]

    # And once the rebase ends, the same approval goes through
    (root / ".git" / "rebase-merge").rmdir()
    assert approve(daemon, proposal_id, "decisions.mem").status_code == 200


def test_unknown_and_malformed_proposal_ids(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.tokens["alice"]) as client:
        unknown = client.get(f"{BASE}/proposals/p-20260101-000000-abcdef")
        malformed = client.post(f"{BASE}/proposals/..p-x/approve", json={"into": "x.mem"})
        status = client.get(f"{BASE}/proposals", params={"status": "maybe"})
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "not_found"
    assert malformed.status_code == 422
    assert error_of(malformed)["detail"]["errors"][0]["code"] == "invalid_proposal_id"
    assert status.status_code == 422


def test_agents_cannot_decide_and_reviewers_cannot_propose(daemon: LiveDaemon) -> None:
    proposal_id = propose(daemon, NATS).json()["proposal_id"]
    denied = approve(daemon, proposal_id, "decisions.mem", token="agent-build")
    with daemon.http(daemon.tokens["alice"]) as client:
        refused = client.post(f"{BASE}/proposals", json={"source": NATS})
    assert (denied.status_code, refused.status_code) == (403, 403)
    assert "review" in error_of(denied)["message"]
    assert "write:candidate" in error_of(refused)["message"]


# -- access policies ---------------------------------------------------------------------------


def test_hidden_ids_count_as_existing_without_revealing_where(daemon: LiveDaemon) -> None:
    source = NATS.replace(
        "fact tidewater.uses_nats", "teamcode.bug_pattern payments.sandbox_key_in_logs"
    )

    response = propose(daemon, source)

    assert response.status_code == 422
    body = response.text
    assert error_of(response)["detail"]["errors"][0]["code"] == "declaration_exists"
    assert HIDDEN_ID in body  # the caller's own id, nothing more
    assert "bugs.mem" not in body and "payment SDK" not in body


def test_proposals_of_hidden_declarations_stay_hidden(daemon: LiveDaemon) -> None:
    # given a pending proposal that only security may read once served
    source = (
        'fact ledger.secret {\n  subject: Service.Ledger\n  claim: "A secret."\n'
        '  evidence { source: "s" quote: "q" }\n'
        "  access_policy { readers: [security] }\n}\n"
    )
    proposal_id = propose(daemon, source).json()["proposal_id"]

    with daemon.http(daemon.tokens["agent-build"]) as client:
        listed = client.get(f"{BASE}/proposals").json()
        shown = client.get(f"{BASE}/proposals/{proposal_id}")

    assert listed["proposals"] == [] and listed["hidden_by_access_policy"] == 1
    assert shown.status_code == 404


def test_proposals_page_by_offset_over_the_ones_the_caller_may_see(daemon: LiveDaemon) -> None:
    # given the oldest proposal hidden from the agent, then three it may see
    hidden = (
        'fact ledger.secret {\n  subject: Service.Ledger\n  claim: "A secret."\n'
        '  evidence { source: "s" quote: "q" }\n'
        "  access_policy { readers: [security] }\n}\n"
    )
    assert propose(daemon, hidden).status_code == 201
    for n in range(3):
        assert propose(daemon, fact(f"tidewater.paged_{n}")).status_code == 201

    with daemon.http(daemon.tokens["agent-build"]) as client:
        everything = client.get(f"{BASE}/proposals").json()
        middle = client.get(f"{BASE}/proposals", params={"offset": 1, "limit": 1}).json()
        rest = client.get(f"{BASE}/proposals", params={"offset": 2}).json()
        negative = client.get(f"{BASE}/proposals", params={"offset": -1})
        word = client.get(f"{BASE}/proposals", params={"offset": "two"})

    # then the offset counts what `total` counts, and the answer says where the next page starts
    ids = [p["id"] for p in everything["proposals"]]
    assert (everything["total"], everything["hidden_by_access_policy"], len(ids)) == (3, 1, 3)
    assert "offset" not in everything and "next_offset" not in everything
    assert [p["id"] for p in middle["proposals"]] == ids[1:2]
    assert (middle["total"], middle["offset"], middle["next_offset"]) == (3, 1, 2)
    assert [p["id"] for p in rest["proposals"]] == ids[2:] and rest["next_offset"] is None
    for refused in (negative, word):
        assert refused.status_code == 422
        assert error_of(refused)["detail"]["field"] == "offset"
        assert error_of(refused)["message"] == "'offset' must be an integer at least 0"


def test_diff_is_withheld_when_the_target_holds_hidden_declarations(daemon: LiveDaemon) -> None:
    proposal_id = propose(daemon, NATS).json()["proposal_id"]

    with daemon.http(daemon.tokens["agent-build"]) as client:
        into_bugs = client.get(f"{BASE}/proposals/{proposal_id}", params={"into": "bugs.mem"})
        into_decisions = client.get(
            f"{BASE}/proposals/{proposal_id}", params={"into": "decisions.mem"}
        )

    assert into_bugs.json()["diff_withheld"] is True and into_bugs.json()["diff"] == ""
    assert "sandbox" not in into_bugs.text
    shown = into_decisions.json()
    assert shown["diff_withheld"] is False
    assert "+fact tidewater.uses_nats {" in shown["diff"]
    assert shown["validation"]["ok"] is True
    assert shown["proposal"]["source"] == NATS


# -- events ------------------------------------------------------------------------------------


def listen_until(daemon: LiveDaemon, last: str) -> tuple[list[dict[str, Any]], threading.Event]:
    """Follow /v1/events in a thread until the event `last`: the events seen, and an
    event set then. Returns once the stream is subscribed."""
    seen: list[dict[str, Any]] = []
    connected, done = threading.Event(), threading.Event()

    def listen() -> None:
        with (
            daemon.http(daemon.admin_token, timeout=20) as client,
            client.stream("GET", "/v1/events") as response,
        ):
            for line in response.iter_lines():
                connected.set()
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["event"] == last:
                        done.set()
                        return

    threading.Thread(target=listen, daemon=True).start()
    assert connected.wait(15)
    time.sleep(0.3)  # the stream subscribes right after its first line
    return seen, done


def test_events_report_proposals_and_decisions(daemon: LiveDaemon) -> None:
    seen, done = listen_until(daemon, "proposal_rejected")
    first = propose(daemon, NATS).json()["proposal_id"]
    generation = approve(daemon, first, "decisions.mem").json()["served_generation"]
    second = propose(daemon, fact("other.fact")).json()["proposal_id"]
    with daemon.http(daemon.tokens["alice"]) as client:
        client.post(f"{BASE}/proposals/{second}/reject", json={"reason": "no"})

    assert done.wait(15), seen
    review = [e for e in seen if e["event"].startswith("proposal_")]
    assert [(e["event"], e["proposal_id"]) for e in review] == [
        ("proposal_created", first),
        ("proposal_approved", first),
        ("proposal_created", second),
        ("proposal_rejected", second),
    ]
    assert review[0]["proposer"] == "agent-build" and review[1]["reviewer"] == "alice"
    assert review[1]["served_generation"] == generation
    assert all(e["workspace"] == WS for e in review)


def test_a_reject_that_finishes_a_cut_short_approval_announces_and_records_it(
    daemon: LiveDaemon,
) -> None:
    from memhubd.review import parse_proposal, render_proposal

    first = propose(daemon, NATS).json()["proposal_id"]
    assert approve(daemon, first, "decisions.mem").status_code == 200
    # As a kill after the block was written and before the audit line leaves it.
    log = root_of(daemon) / ".memdsl" / "audit.log"
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines()[:-1]))
    path = root_of(daemon) / ".memdsl" / "proposals" / f"{first}.mem.proposal"
    proposal = parse_proposal(path.read_text())
    path.write_text(render_proposal(proposal.evolve(status="pending", decided_at="")))
    with daemon.http(daemon.tokens["alice"]) as client:
        shown = client.get(f"{BASE}/proposals/{first}").json()
    assert shown["proposal"]["status"] == "pending" and shown["validation"] is None
    assert shown["approval_interrupted"] == {
        "into": "decisions.mem",
        "by": "alice",
        "next": "approve it again to finish the approval",
    }
    seen, done = listen_until(daemon, "proposal_approved")
    with daemon.http(daemon.tokens["alice"]) as client:
        refused = client.post(f"{BASE}/proposals/{first}/reject", json={"reason": "no"})
    assert refused.status_code == 409 and error_of(refused)["detail"]["status"] == (
        "already_approved"
    )
    assert done.wait(15), seen
    assert seen[-1]["proposal_id"] == first and seen[-1]["served_generation"] is not None
    approved = [e for e in audit(daemon) if e["action"] == "approve"]
    assert len(approved) == 1 and approved[0]["generation"] == seen[-1]["served_generation"]


def test_a_proposal_while_the_workspace_directory_is_gone_is_refused_and_creates_nothing(
    daemon: LiveDaemon,
) -> None:
    root = root_of(daemon)
    assert propose(daemon, fact("tidewater.before")).status_code == 201
    # Given the workspace directory moved away (a restore under way), still served
    moved = root.with_name(root.name + ".moved")
    root.rename(moved)
    try:
        # When an agent proposes
        refused = propose(daemon, fact("tidewater.meanwhile"))
        # Then it is told the workspace cannot take it now, and no stub directory is
        # made where the restore will put the workspace back
        assert refused.status_code == 503, refused.text
        assert error_of(refused)["code"] == "workspace_unavailable"
        assert "cannot be written" in error_of(refused)["message"]
        assert not root.exists()
    finally:
        moved.rename(root)
    # And once it is back, proposals go through again, the earlier one kept
    assert propose(daemon, fact("tidewater.after")).status_code == 201
    with daemon.http(daemon.tokens["alice"]) as client:
        listed = client.get(f"{BASE}/proposals").json()["proposals"]
    assert len(listed) == 2
