"""Crash safety of the review engine: SIGKILL at random moments loses and duplicates nothing.

A worker process proposes and decides 60 proposals; it is killed every few operations
and restarted until it finishes. Then every file, proposal and audit line must agree.
"""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memhubd.lang import parse_file
from memhubd.lint import has_errors, lint
from memhubd.model import Workspace
from memhubd.review import ReviewStore, approval_marker
from memhubd.review.audit import AuditLog

WORKER = Path(__file__).with_name("review_crash_worker.py")
# Each run is a process start and each approval re-reads the workspace: 60 proposals
# (120 operations) with a kill every 0-8 operations give some 25 kills at varied points.
PROPOSALS = 60
OPERATIONS_PER_RUN = 8
MAX_RUNS = 400
OP_TIMEOUT = 30.0

BASE = "entity db {\n  aliases: [database]\n}\n"


def run_until_done(root: Path, rng: random.Random) -> int:
    """Start the worker again and again, killing it inside an operation; returns the kills.

    The worker waits for a go-ahead before each operation, so each run completes a
    random number of operations and is then killed at a random point of the next
    one (scaled by how long the last one took), however loaded the machine is.
    """
    kills = 0
    for run in range(MAX_RUNS):
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(root), str(PROPOSALS), str(run)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        last = run_operations(proc, rng.randint(0, OPERATIONS_PER_RUN))
        if last is not None:
            go_ahead(proc)
            time.sleep(rng.uniform(0, last))
            proc.kill()  # SIGKILL: no cleanup, no finally blocks
            proc.communicate()
            kills += 1
            continue
        _, err = proc.communicate(timeout=OP_TIMEOUT)
        assert proc.returncode == 0, err.decode()
        return kills
    raise AssertionError(f"the worker did not finish in {MAX_RUNS} runs")


def go_ahead(proc: subprocess.Popen) -> bool:  # type: ignore[type-arg]
    assert proc.stdin is not None
    try:
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
    except BrokenPipeError:  # it already finished
        return False
    return True


def run_operations(proc: subprocess.Popen, count: int) -> float | None:  # type: ignore[type-arg]
    """Let the worker do `count` operations; how long the last one took, None if it exited."""
    assert proc.stdout is not None
    took = 0.02  # before the first operation: about a start-up's worth
    for _ in range(count):
        started = time.monotonic()
        if not go_ahead(proc):
            return None
        ready, _, _ = select.select([proc.stdout], [], [], OP_TIMEOUT)
        assert ready, "the worker stopped making progress"
        if proc.stdout.readline() != b"op\n":
            return None
        took = time.monotonic() - started
    return took


def target_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.mem") if ".memdsl" not in p.parts)


@pytest.mark.slow
def test_sigkilled_approvals_leave_consistent_files_proposals_and_audit(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "base.mem").write_text(BASE)
    rng = random.Random(20260101)

    kills = run_until_done(root, rng)

    assert kills >= 10, "the test should actually interrupt the worker"
    # Every target parses, and the workspace as a whole is lint-clean.
    workspace = Workspace.load([str(root)])
    assert not has_errors(lint(workspace))
    texts = {str(p): p.read_text() for p in target_files(root)}
    for path in texts:
        parse_file(path)
    # Every proposal survived and is decided: approved ones once in memory, rejected ones never.
    proposals = ReviewStore(str(root)).list("all")
    assert sorted(p.declaration for p in proposals) == [
        f"fact:db.f{i:03d}" for i in range(PROPOSALS)
    ]
    rejected = len(range(0, PROPOSALS, 5))  # the worker rejects every fifth
    assert Counter(p.status for p in proposals) == {
        "approved": PROPOSALS - rejected,
        "rejected": rejected,
    }
    declared = Counter(d.id for d in workspace.declarations)
    for proposal in proposals:
        markers = sum(text.count(approval_marker(proposal.id)) for text in texts.values())
        if proposal.status == "approved":
            assert declared[proposal.declaration] == 1 and markers == 1
            assert approval_marker(proposal.id) in texts[proposal.merged_into]
        else:
            assert declared[proposal.declaration] == 0 and markers == 0
    assert_audit_agrees(root, proposals)


def assert_audit_agrees(root: Path, proposals: list) -> None:  # type: ignore[type-arg]
    entries = AuditLog(str(root / ".memdsl" / "audit.log")).entries()
    actions = Counter((e["proposal_id"], e["action"]) for e in entries)
    for proposal in proposals:
        decision = "approve" if proposal.status == "approved" else "reject"
        assert actions[(proposal.id, "propose")] == 1
        assert actions[(proposal.id, decision)] == 1
        assert sum(n for (pid, _), n in actions.items() if pid == proposal.id) == 2
    for entry in entries:
        if entry["action"] == "approve":
            by_id = {p.id: p for p in proposals}
            assert entry["into"] == by_id[entry["proposal_id"]].merged_into
    # Every line is whole JSON, even if a kill tore one while it was being written.
    lines = (root / ".memdsl" / "audit.log").read_text().splitlines()
    assert len([json.loads(line) for line in lines if line.startswith("{")]) >= len(entries)


def test_torn_audit_line_does_not_swallow_the_next_entry(tmp_path: Path) -> None:
    log = AuditLog(str(tmp_path / "audit.log"))
    log.append("propose", "p-20260101-000000-000001")
    with open(log.path, "a", encoding="utf-8") as handle:
        handle.write('{"ts": "2026-01-01T00:00:00+00:00", "action": "appr')  # killed mid-write

    log.append("reject", "p-20260101-000000-000001", by="bob")

    assert [e["action"] for e in log.entries()] == ["propose", "reject"]


def test_temp_files_left_by_a_killed_writer_are_swept(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "base.mem").write_text(BASE)
    orphan = root / ".memdsl-abandoned.tmp"
    orphan.write_text("half a file")
    os.utime(orphan, (1, 1))
    fresh = root / ".memdsl-in-flight.tmp"
    fresh.write_text("someone else's")
    store = ReviewStore(str(root))
    source = 'fact db.x { subject: db claim: "x" evidence { quote: "x" } }'
    pid = store.propose(Workspace.load([str(root)]), source, proposer="a").proposal_id

    assert store.approve(pid, Workspace.load([str(root)]), "base.mem", reviewer="alice").ok

    assert not orphan.exists()
    assert fresh.exists()  # too young to be sure nobody is writing it
