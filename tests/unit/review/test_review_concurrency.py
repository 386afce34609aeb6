"""Concurrent decisions: exactly-once approval across threads and processes, no lost edits."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from review_helpers import fact_source, load

from memhubd.lang import parse_file
from memhubd.model import Workspace
from memhubd.review import ReviewStore
from memhubd.review.durable import exclusive_lock
from memhubd.review.validation import ValidationResult

WORKERS = 16
FORK = multiprocessing.get_context("fork")


def audit(root: Path) -> list[dict]:
    lines = (root / ".memdsl" / "audit.log").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def sha_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def approve_in_child(root: str, pid: str, barrier, results) -> None:  # type: ignore[no-untyped-def]
    store = ReviewStore(root)
    workspace = Workspace.load([root])
    barrier.wait()
    results.put(store.approve(pid, workspace, "approved.mem", reviewer="alice").status)


def run_in_threads(calls: list[Callable[[], str]]) -> list[str]:
    barrier = threading.Barrier(len(calls))
    statuses: list[str] = []

    def run(call: Callable[[], str]) -> None:
        barrier.wait()
        statuses.append(call())

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def run_in_processes(root: Path, pids: list[str]) -> list[str]:
    barrier, results = FORK.Barrier(len(pids)), FORK.Queue()
    processes = [
        FORK.Process(target=approve_in_child, args=(str(root), pid, barrier, results))
        for pid in pids
    ]
    for process in processes:
        process.start()
    statuses = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return statuses


def approve_all(mode: str, store: ReviewStore, root: Path, pids: list[str]) -> list[str]:
    if mode == "processes":
        return run_in_processes(root, pids)
    workspace = load(root)
    calls = [
        (lambda pid=pid: store.approve(pid, workspace, "approved.mem", reviewer="alice").status)
        for pid in pids
    ]
    return run_in_threads(calls)


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_concurrent_approvals_of_one_proposal_write_exactly_once(
    store: ReviewStore, root: Path, mode: str
) -> None:
    pid = store.propose(load(root), fact_source("db.version"), proposer="agent").proposal_id

    statuses = approve_all(mode, store, root, [pid] * WORKERS)

    assert sorted(statuses) == ["already_approved"] * (WORKERS - 1) + ["approved"]
    text = (root / "approved.mem").read_text()
    assert text.count(f"# approved from proposal {pid} at ") == 1
    assert text.count("fact db.version {") == 1
    assert [e["action"] for e in audit(root)] == ["propose", "approve"]


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_concurrent_approvals_of_different_proposals_into_one_file_all_land(
    store: ReviewStore, root: Path, mode: str
) -> None:
    workspace = load(root)
    names = [f"db.fact{i:02d}" for i in range(WORKERS)]
    pids = [store.propose(workspace, fact_source(n), proposer="agent").proposal_id for n in names]

    statuses = approve_all(mode, store, root, pids)

    assert statuses == ["approved"] * WORKERS
    ids = [d.id for d in parse_file(str(root / "approved.mem")).declarations]
    assert sorted(ids) == sorted(f"fact:{n}" for n in names)
    # Each approval started from the previous one's result: the hashes form one chain.
    approvals = [e for e in audit(root) if e["action"] == "approve"]
    chain = {e.get("target_sha256_before"): e["target_sha256_after"] for e in approvals}
    assert len(chain) == WORKERS  # no two approvals started from the same content
    current = None  # the file did not exist before the first approval
    for _ in approvals:
        current = chain[current]
    assert current == sha_text((root / "approved.mem").read_text())


class EditDuringApproval(ReviewStore):
    """A store whose target is edited by "a person" after it was read, `edits` times."""

    def __init__(self, root: str, edits: int) -> None:
        super().__init__(root)
        self.edits_left = edits

    def _revalidate(self, proposal, workspace, target, text) -> ValidationResult:  # type: ignore[no-untyped-def]
        if self.edits_left > 0:
            self.edits_left -= 1
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(f"\n# a person's note {self.edits_left}\n")
        return super()._revalidate(proposal, workspace, target, text)


def test_edit_between_read_and_rename_is_kept(root: Path) -> None:
    store = EditDuringApproval(str(root), edits=1)
    pid = store.propose(load(root), fact_source("db.version"), proposer="agent").proposal_id
    target = root / "base.mem"
    edited = target.read_text() + "\n# a person's note 0\n"

    decision = store.approve(pid, load(root), str(target), reviewer="alice")

    assert decision.ok
    text = target.read_text()
    assert text.startswith(edited)
    assert text.count("fact db.version {") == 1
    assert decision.target_sha256_before == sha_text(edited)


def test_target_that_never_stops_changing_is_left_alone(root: Path) -> None:
    store = EditDuringApproval(str(root), edits=1000)
    pid = store.propose(load(root), fact_source("db.version"), proposer="agent").proposal_id

    decision = store.approve(pid, load(root), "base.mem", reviewer="alice")

    assert (decision.ok, decision.status) == (False, "conflict")
    assert [e.code for e in decision.errors] == ["target_changed"]
    assert "fact db.version" not in (root / "base.mem").read_text()
    assert store.get(pid).status == "pending"
    assert [e["action"] for e in audit(root)] == ["propose"]


def test_lock_held_elsewhere_makes_an_approval_in_another_process_wait(
    store: ReviewStore, root: Path
) -> None:
    pid = store.propose(load(root), fact_source("db.version"), proposer="agent").proposal_id
    barrier, results = FORK.Barrier(2), FORK.Queue()

    with exclusive_lock(store.lock_path):
        child = FORK.Process(target=approve_in_child, args=(str(root), pid, barrier, results))
        child.start()
        barrier.wait()
        child.join(timeout=0.5)
        assert child.is_alive()  # blocked on the lock we hold
        assert not (root / "approved.mem").exists()

    assert results.get(timeout=30) == "approved"
    child.join(timeout=30)
    assert child.exitcode == 0
