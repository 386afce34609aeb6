"""Approve and reject: what lands in the target, the audit log, idempotency and recovery."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from review_helpers import fact_source, load

from memhubd.review import ReviewStore, parse_proposal, render_proposal

MARKER = "# approved from proposal "


def audit(root: Path) -> list[dict]:
    path = root / ".memdsl" / "audit.log"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def proposed(store: ReviewStore, root: Path, name: str = "db.version", **kwargs: object) -> str:
    result = store.propose(load(root), fact_source(name), proposer="agent-a", **kwargs)  # type: ignore[arg-type]
    assert result.ok, result.errors
    return result.proposal_id


def test_approval_appends_the_source_as_memdsl_does(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)

    decision = store.approve(pid, load(root), "approved.mem", reviewer="alice")

    target = root / "approved.mem"
    assert decision.ok and decision.status == "approved" and not decision.recovered
    assert decision.merged_into == str(target)
    assert decision.declaration_id == "fact:db.version"
    stamp = store.get(pid).decided_at
    assert target.read_text() == f"\n# approved from proposal {pid} at {stamp}\n" + fact_source(
        "db.version"
    )
    assert "fact:db.version" in [d.id for d in load(root).declarations]


def test_approval_into_an_existing_file_keeps_its_content_and_mode(
    store: ReviewStore, root: Path
) -> None:
    target = root / "base.mem"
    os.chmod(target, 0o644)
    original = target.read_text()
    pid = proposed(store, root)

    decision = store.approve(pid, load(root), str(target), reviewer="alice")

    assert decision.ok
    assert target.read_text().startswith(original + "\n# approved from proposal ")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_new_target_is_private_and_its_directories_are_created(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)

    store.approve(pid, load(root), "team/db/facts.mem", reviewer="alice")

    assert stat.S_IMODE((root / "team/db/facts.mem").stat().st_mode) == 0o600


def test_decisions_are_attributed_in_the_proposal_and_the_audit(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root, generation=4, reason="said in chat")
    before = sha(root / "base.mem")

    decision = store.approve(pid, load(root), "base.mem", reviewer="alice", generation=5)

    proposal = store.get(pid)
    assert (proposal.status, proposal.decided_by, proposal.proposer) == (
        "approved",
        "alice",
        "agent-a",
    )
    propose_entry, approve_entry = audit(root)
    assert propose_entry["action"] == "propose" and propose_entry["identity"] == "agent-a"
    assert propose_entry["generation"] == 4 and propose_entry["reason"] == "said in chat"
    assert approve_entry == {
        "ts": proposal.decided_at,
        "action": "approve",
        "proposal_id": pid,
        "by": "alice",
        "identity": "alice",
        "into": str(root / "base.mem"),
        "declaration": "fact:db.version",
        "forced": False,
        "generation": 5,
        "target_sha256_before": before,
        "target_sha256_after": sha(root / "base.mem"),
    }
    assert decision.target_sha256_before == before
    assert json.loads(json.dumps(decision.as_dict())) == {
        "ok": True,
        "status": "approved",
        "proposal_id": pid,
        "declaration_id": "fact:db.version",
        "merged_into": str(root / "base.mem"),
        "decided_by": "alice",
        "recovered": False,
        "errors": [],
        "warnings": [],
        "hint": "",
        "target_sha256_before": before,
        "target_sha256_after": sha(root / "base.mem"),
        "marked_superseded": [],
    }


def test_second_approval_writes_nothing(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    content = (root / "approved.mem").read_bytes()

    again = store.approve(pid, load(root), "approved.mem", reviewer="bob")

    assert not again.ok and again.status == "already_approved"
    assert again.decided_by == "alice"
    assert (root / "approved.mem").read_bytes() == content
    assert [e["action"] for e in audit(root)] == ["propose", "approve"]


def test_approval_revalidates_against_the_current_workspace(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)
    (root / "base.mem").write_text(
        (root / "base.mem").read_text().replace("entity db", "entity database_server")
    )

    decision = store.approve(pid, load(root), "approved.mem", reviewer="alice")

    assert decision.status == "stale_or_invalid" and decision.hint
    assert [e.code for e in decision.errors] == ["unresolved_symbol"]
    assert not (root / "approved.mem").exists()
    assert store.get(pid).status == "pending"


def test_approval_sees_the_target_as_it_is_now(store: ReviewStore, root: Path) -> None:
    # Two proposals of one id, approved with the same (older) workspace: only one lands.
    workspace = load(root)
    first = proposed(store, root, "db.twin")
    second = proposed(store, root, "db.twin")

    assert store.approve(first, workspace, "approved.mem", reviewer="alice").ok
    decision = store.approve(second, workspace, "approved.mem", reviewer="alice")

    assert [e.code for e in decision.errors][:2] == [
        "declaration_exists",
        "duplicate_declaration_id",
    ]
    assert (root / "approved.mem").read_text().count("fact db.twin") == 1


def test_approval_refuses_a_target_that_does_not_parse(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)
    (root / "draft.mem").write_text("fact half {\n")

    decision = store.approve(pid, load(root / "base.mem"), "draft.mem", reviewer="alice")

    assert [e.code for e in decision.errors] == ["target_parse_error"]
    assert (root / "draft.mem").read_text() == "fact half {\n"


def test_superseding_approval_keeps_the_old_declaration_in_the_source(
    store: ReviewStore, root: Path
) -> None:
    source = fact_source("db.engine2", "The database is MySQL.", '  supersedes: "fact:db.engine"\n')
    result = store.propose(load(root), source, proposer="agent", supersedes="fact:db.engine")

    decision = store.approve(result.proposal_id, load(root), "base.mem", reviewer="alice")

    assert decision.ok
    workspace = load(root)
    ids = [d.id for d in workspace.declarations]
    assert ids.count("fact:db.engine") == 1 and ids.count("fact:db.engine2") == 1
    assert "fact:db.engine" in workspace.superseded_ids()


def test_reject_records_reason_and_reviewer(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)

    decision = store.reject(pid, reason="not\nconfirmed", reviewer="bob")

    assert decision.ok and decision.status == "rejected" and decision.decided_by == "bob"
    proposal = store.get(pid)
    assert (proposal.status, proposal.reject_reason, proposal.decided_by) == (
        "rejected",
        "not confirmed",
        "bob",
    )
    entry = audit(root)[-1]
    assert (entry["action"], entry["by"], entry["identity"], entry["reason"]) == (
        "reject",
        "bob",
        "bob",
        "not confirmed",
    )
    assert store.approve(pid, load(root), "approved.mem", reviewer="alice").status == (
        "already_rejected"
    )
    assert not (root / "approved.mem").exists()


def test_unknown_proposal_is_not_found(store: ReviewStore, root: Path) -> None:
    missing = "p-20260101-000000-abcdef"

    assert store.approve(missing, load(root), "a.mem", reviewer="alice").status == "not_found"
    assert store.reject(missing, reviewer="alice").status == "not_found"


def test_decisions_need_a_reviewer_and_a_valid_id(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)

    nobody = store.approve(pid, load(root), "a.mem", reviewer=" ")
    traversal = store.reject("../../base", reviewer="alice")

    assert [e.code for e in nobody.errors] == ["reviewer_required"]
    assert [e.code for e in traversal.errors] == ["invalid_proposal_id"]
    assert store.get(pid).status == "pending"


# ---- recovery (memdsl §7.5, §12.34-35) ---------------------------------------


def drop_attribution(path: Path) -> None:
    """What a memdsl rewrite of a proposal file does: memhub's attribution lines go."""
    kept = [
        line
        for line in path.read_text().splitlines()
        if not line.startswith(("# proposer:", "# generation:", "# decided_by:"))
    ]
    path.write_text("\n".join(kept) + "\n")


def rewrite(store: ReviewStore, pid: str, **changes: object) -> None:
    """Put the proposal file back into an earlier state, as a crash would have left it."""
    proposal = store.get(pid)
    Path(proposal.path).write_text(render_proposal(proposal.evolve(**changes)))


def test_retry_after_a_crash_before_the_audit_finishes_without_writing_twice(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    content = (root / "approved.mem").read_bytes()
    log = root / ".memdsl" / "audit.log"
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines()[:1]))
    rewrite(store, pid, status="pending", decided_at="")

    decision = store.approve(pid, load(root), "approved.mem", reviewer="bob")

    assert decision.ok and decision.recovered
    assert (root / "approved.mem").read_bytes() == content
    assert [e["action"] for e in audit(root)] == ["propose", "approve"]
    # The stamp comes from the marker already in the target, the reviewer from the record.
    assert store.get(pid).decided_at in content.decode()
    assert store.get(pid).decided_by == "alice"


def test_retry_uses_the_target_recorded_in_the_audit(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    rewrite(store, pid, status="pending", decided_at="", merged_into="")

    decision = store.approve(pid, load(root), "elsewhere.mem", reviewer="alice")

    assert decision.ok and decision.recovered
    assert decision.merged_into == str(root / "approved.mem")
    assert not (root / "elsewhere.mem").exists()


def test_retry_uses_the_target_recorded_before_writing(store: ReviewStore, root: Path) -> None:
    # Killed after the target was written but before the audit line: only the
    # proposal's in-progress record says where the block went.
    pid = proposed(store, root)
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    log = root / ".memdsl" / "audit.log"
    log.write_text(log.read_text().splitlines()[0] + "\n")
    rewrite(store, pid, status="pending", decided_at="")

    decision = store.approve(pid, load(root), "elsewhere.mem", reviewer="bob")

    assert decision.ok and decision.recovered and decision.decided_by == "alice"
    assert decision.merged_into == str(root / "approved.mem")
    assert not (root / "elsewhere.mem").exists()


def test_reject_after_an_interrupted_approval_completes_the_approval(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    log = root / ".memdsl" / "audit.log"
    log.write_text(log.read_text().splitlines()[0] + "\n")
    rewrite(store, pid, status="pending", decided_at="")

    decision = store.reject(pid, reason="changed my mind", reviewer="bob")

    assert not decision.ok and decision.status == "already_approved"
    assert store.get(pid).status == "approved"
    assert [e["action"] for e in audit(root)] == ["propose", "approve"]


def test_reject_after_a_recorded_approval_repairs_the_proposal(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    rewrite(store, pid, status="pending", decided_at="", merged_into="", decided_by="")

    decision = store.reject(pid, reviewer="bob")

    assert decision.status == "already_approved"
    proposal = store.get(pid)
    assert (proposal.status, proposal.merged_into, proposal.decided_by) == (
        "approved",
        str(root / "approved.mem"),
        "alice",
    )


def test_approve_after_a_recorded_reject_repairs_the_proposal(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)
    store.reject(pid, reason="wrong", reviewer="bob")
    rewrite(store, pid, status="pending", decided_at="", reject_reason="", decided_by="")

    decision = store.approve(pid, load(root), "approved.mem", reviewer="alice")

    assert decision.status == "already_rejected"
    assert not (root / "approved.mem").exists()
    proposal = store.get(pid)
    assert (proposal.status, proposal.reject_reason, proposal.decided_by) == (
        "rejected",
        "wrong",
        "bob",
    )


def test_missing_propose_line_is_restored_at_decision_time(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)
    (root / ".memdsl" / "audit.log").write_text("")

    store.reject(pid, reviewer="bob")

    entries = audit(root)
    assert [e["action"] for e in entries] == ["propose", "reject"]
    assert entries[0]["identity"] == "agent-a" and entries[0]["recovered"] is True


def test_attribution_lost_to_a_memdsl_rewrite_comes_back_from_the_audit(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root, generation=9)
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    path = Path(store.get(pid).path)
    drop_attribution(path)
    assert parse_proposal(path.read_text()).proposer == ""

    proposal = store.get(pid)

    assert (proposal.proposer, proposal.generation, proposal.decided_by) == ("agent-a", 9, "alice")


# ---- diff --------------------------------------------------------------------


def test_diff_of_a_pending_proposal_shows_the_block_to_be_appended(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)

    result = store.diff(pid, "base.mem")

    assert result.ok and result.target == str(root / "base.mem")
    lines = result.diff.splitlines()
    assert lines[:2] == ["--- a/base.mem", "+++ b/base.mem"]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    assert added[0] == "" and added[1].startswith(MARKER + pid)
    assert "\n".join(added[2:]) + "\n" == fact_source("db.version")
    assert not any(line.startswith("-") and not line.startswith("---") for line in lines)


def test_diff_of_an_approved_proposal_shows_what_approval_added(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)
    before = store.diff(pid, "approved.mem").diff
    store.approve(pid, load(root), "approved.mem", reviewer="alice")

    after = store.diff(pid)

    assert after.ok and after.target == str(root / "approved.mem")
    assert after.diff.splitlines()[3:] == [
        line for line in after.diff.splitlines()[3:] if line.startswith("+")
    ]
    assert after.diff.splitlines()[2] == before.splitlines()[2]  # same hunk header


def test_diff_refuses_bad_ids_and_targets(store: ReviewStore, root: Path) -> None:
    pid = proposed(store, root)

    assert store.diff("../x", "a.mem").status == "invalid"
    assert store.diff(pid).status == "invalid"  # pending and no target given
    assert store.diff(pid, "../outside.mem").errors[0].code == "target_outside_workspace"
    assert store.diff("p-20260101-000000-abcdef", "a.mem").status == "not_found"


def test_a_list_attributes_each_proposal_from_its_own_audit_entries(
    store: ReviewStore, root: Path, monkeypatch
) -> None:
    """Attribution from the whole log for every proposal made a list cost proposals ×
    audit lines; each proposal is now looked up among its own entries alone."""
    import memhubd.review.audit as audit_module

    ids = [proposed(store, root, name=f"db.v{n}", generation=n) for n in range(6)]
    for pid in ids[:3]:
        store.reject(pid, reviewer="bob", reason="not now")
    for pid in ids:
        drop_attribution(Path(store.get(pid).path))
    scanned: list[int] = []
    real = audit_module.find_entry

    def counting(entries, action, proposal_id):  # noqa: ANN001, ANN202
        scanned.append(len(entries))
        return real(entries, action, proposal_id)

    monkeypatch.setattr("memhubd.review.audit.find_entry", counting)

    listed = store.list("all")

    assert sorted((p.generation, p.proposer, p.decided_by) for p in listed) == [
        (n, "agent-a", "bob" if n < 3 else "") for n in range(6)
    ]
    assert scanned and max(scanned) <= 2  # its propose line, and its decision


def test_a_refused_approval_leaves_no_target_nor_reviewer_on_the_proposal(
    store: ReviewStore, root: Path, monkeypatch
) -> None:
    pid = proposed(store, root)
    # The target changes under every try: the approval gives up, writing nothing.
    monkeypatch.setattr("memhubd.review.store.replace_if_unchanged", lambda *a, **k: False)

    decision = store.approve(pid, load(root), "approved.mem", reviewer="alice")

    assert decision.status == "conflict"
    proposal = store.get(pid)
    assert (proposal.status, proposal.merged_into, proposal.decided_by) == ("pending", "", "")


def test_a_decision_in_the_audit_wins_over_a_pending_proposal_file_when_read(
    store: ReviewStore, root: Path
) -> None:
    pid = proposed(store, root)
    other = proposed(store, root, name="db.other")
    store.approve(pid, load(root), "approved.mem", reviewer="alice")
    store.reject(other, reviewer="bob", reason="not now")
    # A crash between the audit line and the proposal file leaves them pending on disk.
    rewrite(store, pid, status="pending", decided_at="", merged_into="", decided_by="")
    rewrite(store, other, status="pending", decided_at="", reject_reason="", decided_by="")

    assert store.list("pending") == []
    assert {p.id: p.status for p in store.list("all")} == {pid: "approved", other: "rejected"}
    approved = store.get(pid)
    assert (approved.status, approved.merged_into, approved.decided_by) == (
        "approved",
        str(root / "approved.mem"),
        "alice",
    )
    assert store.get(other).reject_reason == "not now"
    # Reading wrote nothing: the next decision settles the files.
    assert parse_proposal(Path(approved.path).read_text()).status == "pending"
