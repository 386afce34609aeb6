"""Reads kept between calls: a cached store answers exactly as one that reads everything again.

Proposal files and the audit log are memdsl's; memdsl or another tool may change them behind
the store's back, so every step below compares the cached answers with a fresh read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import random
import threading
from pathlib import Path

import pytest
from review_helpers import fact_source, load, make_workspace

from memhubd.review import LIST_STATUSES, Proposal, ReviewStore, render_proposal
from memhubd.review import proposal as proposal_module
from memhubd.review import store as store_module
from memhubd.review.audit import AuditLog
from memhubd.review.proposal import new_proposal_id, parse_proposal
from memhubd.review.store import CACHED_STAGINGS, kept_reads

STEPS = 45


class World:
    """A workspace, a cached store, a store that reads everything again, and the other
    writers: memdsl or a second tool editing the same files."""

    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.cached = ReviewStore(str(root))
        self.fresh = ReviewStore(str(root), cached=False)
        self.proposals = Path(self.cached.proposals_dir)
        self.audit = Path(self.cached.audit_path)
        self.ids: list[str] = []
        self.names = 0
        self.seen: dict[str, bytes] = {}
        self.clock = 1_000_000_000_000_000_000
        self.done: list[str] = []

    # ---- the store's own operations ------------------------------------

    def propose(self) -> None:
        self.names += 1
        result = self.cached.propose(
            load(self.root), fact_source(f"db.n{self.names}"), proposer="agent-a", reason="r"
        )
        if result.ok:
            self.ids.append(result.proposal_id)

    def approve(self) -> None:
        if self.ids:
            pid = self.rng.choice(self.ids)
            self.cached.approve(pid, load(self.root), "approved.mem", reviewer="alice")

    def reject(self) -> None:
        if self.ids:
            self.cached.reject(self.rng.choice(self.ids), reviewer="bob", reason="no")

    # ---- another writer's proposal files --------------------------------

    def _some_file(self) -> Path | None:
        files = sorted(self.proposals.glob("*.mem.proposal"))
        return self.rng.choice(files) if files else None

    def _edited(self, text: str) -> str:
        proposal = parse_proposal(text)
        choice = self.rng.randrange(5)
        if proposal is None or choice == 0:
            return "no header at all\n"  # malformed: left out of lists
        if choice == 1:
            status = self.rng.choice(["pending", "approved", "rejected"])
            return render_proposal(proposal.evolve(status=status))
        if choice == 2:  # memdsl rewrote it and dropped memhub's attribution
            return render_proposal(proposal.evolve(proposer="", generation=None, decided_by=""))
        if choice == 3:
            return render_proposal(proposal.evolve(reason=f"edited {self.rng.random()}"))
        return render_proposal(proposal.evolve(id=new_proposal_id()))  # not its file's id

    def edit_in_place(self) -> None:
        path = self._some_file()
        if path is not None:
            text = self._edited(path.read_text(encoding="utf-8", errors="replace"))
            with open(path, "r+b") as handle:
                handle.truncate(0)
                handle.write(text.encode("utf-8"))

    def replace_file(self) -> None:
        path = self._some_file()
        if path is not None:
            text = self._edited(path.read_text(encoding="utf-8", errors="replace"))
            temp = path.with_name(".memdsl-edit.tmp")
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, path)

    def remove_file(self) -> None:
        path = self._some_file()
        if path is not None:
            path.unlink()

    def add_file(self) -> None:
        self.proposals.mkdir(parents=True, exist_ok=True)
        self.names += 1
        moment = dt.datetime(2030, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=self.names)
        pid = new_proposal_id(moment)
        status = self.rng.choice(["pending", "pending", "approved", "rejected"])
        proposal = Proposal(
            pid, status, "2030-01-01T00:00:00+00:00", fact_source(f"db.x{self.names}")
        )
        (self.proposals / f"{pid}.mem.proposal").write_text(
            render_proposal(proposal), encoding="utf-8"
        )
        self.ids.append(pid)

    # ---- another writer's audit log --------------------------------------

    def _line(self) -> bytes:
        pid = self.rng.choice(self.ids) if self.ids else new_proposal_id()
        action = self.rng.choice(["propose", "approve", "reject"])
        entry = {"ts": "2030-01-02T00:00:00+00:00", "action": action, "proposal_id": pid}
        if action == "propose":
            entry.update(identity="agent-z", generation=self.rng.randrange(9), supersedes="x:y")
        elif action == "approve":
            entry.update(by="carol", into=str(self.root / "other.mem"), forced=False)
        else:
            entry.update(by="carol", reason="memdsl said no")
        return json.dumps(entry).encode("utf-8")

    def append_audit(self) -> None:
        line = self._line()
        kind = self.rng.randrange(4)
        if kind == 1:
            line = b"not json"
        elif kind == 2:
            line = line[: self.rng.randrange(1, len(line))]  # torn: no newline yet
        self.audit.parent.mkdir(parents=True, exist_ok=True)
        with open(self.audit, "ab") as handle:
            handle.write(line if kind == 2 else line + b"\n")

    def finish_torn_line(self) -> None:
        data = self.audit.read_bytes() if self.audit.exists() else b""
        if data and not data.endswith(b"\n"):
            with open(self.audit, "ab") as handle:
                handle.write(b"\n")

    def truncate_audit(self) -> None:
        if self.audit.exists():
            size = self.audit.stat().st_size
            with open(self.audit, "r+b") as handle:
                handle.truncate(self.rng.randrange(size + 1))

    def truncate_and_grow_audit(self) -> None:
        # Shorter, then longer than before, between two reads: same inode, other bytes.
        self.truncate_audit()
        self.audit.parent.mkdir(parents=True, exist_ok=True)
        with open(self.audit, "ab") as handle:
            for _ in range(self.rng.randrange(1, 30)):
                handle.write(self._line() + b"\n")

    def replace_audit(self) -> None:
        if self.audit.exists():
            lines = self.audit.read_bytes().splitlines(keepends=True)
            self.rng.shuffle(lines)
            kept = lines[: self.rng.randrange(len(lines) + 1)]
            temp = self.audit.with_name("audit.tmp")
            temp.write_bytes(b"".join(kept))
            os.replace(temp, self.audit)

    def remove_audit(self) -> None:
        if self.audit.exists():
            self.audit.unlink()

    # ---- checking -------------------------------------------------------

    def tick(self) -> None:
        """Give every proposal file changed since the last step an mtime of its own: the
        tests set RACY_NS to 0 to use the cache at once, as if timestamps were exact."""
        for path in self.proposals.glob("*.mem.proposal"):
            data = path.read_bytes()
            if self.seen.get(path.name) != data:
                self.clock += 1_000_003
                os.utime(path, ns=(self.clock, self.clock))
                self.seen[path.name] = data

    def check(self) -> None:
        everything = self.fresh.list("all")
        for status in LIST_STATUSES:
            assert self.cached.list(status) == self.fresh.list(status), (status, self.done)
            # A filtered list is the full one filtered, whatever it skips to get there.
            wanted = [p for p in everything if status in ("all", p.status)]
            assert self.cached.list(status) == wanted, (status, self.done)
        for pid in [*self.ids, new_proposal_id()]:
            cached, fresh = self.cached.get(pid), self.fresh.get(pid)
            assert cached == fresh, (pid, self.done)
            if cached is not None and fresh is not None:
                assert self.cached.interrupted(cached) == self.fresh.interrupted(fresh)
            assert self.cached._audited().entries_for(pid) == self.fresh._audited().entries_for(
                pid
            ), (pid, self.done)
        if self.ids:
            pid = self.rng.choice(self.ids)
            assert self.cached.diff(pid) == self.fresh.diff(pid), (pid, self.done)


OPERATIONS = {
    "propose": 5,
    "approve": 4,
    "reject": 3,
    "edit_in_place": 2,
    "replace_file": 2,
    "remove_file": 1,
    "add_file": 2,
    "append_audit": 4,
    "finish_torn_line": 1,
    "truncate_audit": 1,
    "truncate_and_grow_audit": 1,
    "replace_audit": 1,
    "remove_audit": 1,
}


@pytest.fixture
def exact_timestamps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proposal_module, "RACY_NS", 0)


@pytest.mark.usefixtures("exact_timestamps")
@pytest.mark.parametrize("whole", [256, 1])
@pytest.mark.parametrize("seed", range(12))
def test_cached_reads_match_fresh_reads_whatever_changes_the_files(
    tmp_path: Path, seed: int, whole: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store whose files other writers change between its own operations,
    # keeping decided proposals whole or (whole=1) almost all by status only
    monkeypatch.setattr(proposal_module, "FULL_DECIDED", whole)
    # One clock second for every stamp: a diff's approval stamp is the time it is made, so
    # the cached and the fresh diff would differ when a second ends between the two.
    monkeypatch.setattr(store_module, "now_iso", lambda: "2030-01-01T00:00:00+00:00")
    world = World(make_workspace(tmp_path / "ws"), seed)
    names, weights = list(OPERATIONS), list(OPERATIONS.values())
    for _ in range(STEPS):
        # When one more thing happens
        operation = world.rng.choices(names, weights)[0]
        getattr(world, operation)()
        world.done.append(operation)
        world.tick()
        # Then the cached store answers as a fresh read of the files does
        world.check()


def test_a_file_rewritten_in_place_within_one_timestamp_tick_is_read_again(
    store: ReviewStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given timestamps too coarse to tell two writes apart (here: not looked at at all)
    monkeypatch.setattr(
        proposal_module, "_stamp", lambda info: (info.st_dev, info.st_ino, info.st_size, 0, 0)
    )
    # And a pending proposal the store has just read
    result = store.propose(load(root), fact_source("db.version"), proposer="a", reason="one")
    pid = result.proposal_id
    path = Path(store.proposals_dir) / f"{pid}.mem.proposal"
    assert store.get(pid).reason == "one"

    # When another tool rewrites it in place, keeping its size
    path.write_text(path.read_text(encoding="utf-8").replace("one", "two"), encoding="utf-8")

    # Then the store reads the new text: a file changed so recently is not trusted yet
    assert store.get(pid).reason == "two"
    assert [p.reason for p in store.list()] == ["two"]


@pytest.mark.usefixtures("exact_timestamps")
def test_an_audit_log_replaced_by_one_of_the_same_size_is_read_whole(
    store: ReviewStore, root: Path
) -> None:
    # Given a proposal and an audit log the store has read
    pid = store.propose(load(root), fact_source("db.version"), proposer="a").proposal_id
    assert store.get(pid).status == "pending"
    audit = Path(store.audit_path)
    size = audit.stat().st_size

    # When another tool puts a log of the same size in its place saying it was rejected
    line = json.dumps({"ts": "t", "action": "reject", "proposal_id": pid, "by": "memdsl"})
    line = line.encode() + b"\n"
    replacement = (b"x" * (size - len(line) - 1) + b"\n" + line)[-size:]
    audit.write_bytes(replacement)

    # Then the store reads the new log
    assert len(replacement) == size
    assert store.get(pid).status == "rejected"
    assert store.get(pid) == ReviewStore(str(root), cached=False).get(pid)


def test_a_torn_last_line_counts_once_it_is_whole_and_not_before(
    store: ReviewStore, root: Path
) -> None:
    # Given a pending proposal
    pid = store.propose(load(root), fact_source("db.version"), proposer="a").proposal_id
    line = json.dumps({"ts": "t", "action": "reject", "proposal_id": pid, "by": "memdsl"})

    # When memdsl's reject line is written in two steps
    with open(store.audit_path, "ab") as handle:
        handle.write(line[:20].encode())
    assert store.get(pid).status == "pending"
    with open(store.audit_path, "ab") as handle:
        handle.write(line[20:].encode())

    # Then it counts as soon as it parses, as a fresh read counts it, and stays counted
    assert store.get(pid).status == "rejected"
    with open(store.audit_path, "ab") as handle:
        handle.write(b"\n")
    assert store.get(pid).status == "rejected"
    assert store.list("all") == ReviewStore(str(root), cached=False).list("all")


def test_answers_are_copies_a_caller_cannot_change_for_the_next(
    store: ReviewStore, root: Path
) -> None:
    # Given a listed proposal and its audit entries
    pid = store.propose(load(root), fact_source("db.version"), proposer="a").proposal_id
    (listed,) = store.list()
    entries = store._audited().entries_for(pid)

    # When a caller tries to change what it was given
    with pytest.raises(dataclasses.FrozenInstanceError):
        listed.status = "approved"  # type: ignore[misc]
    entries[0]["action"] = "reject"
    entries.append({"action": "reject", "proposal_id": pid})

    # Then the next reads are not affected
    assert store._audited().entries_for(pid)[0]["action"] == "propose"
    assert len(store._audited().entries_for(pid)) == 1
    assert store.get(pid).status == "pending"


def test_cache_keeps_only_the_files_present_and_a_bounded_number_of_roots(
    store: ReviewStore, root: Path, tmp_path: Path
) -> None:
    # Given three proposals read through the cache
    ids = [
        store.propose(load(root), fact_source(f"db.v{i}"), proposer="a").proposal_id
        for i in range(3)
    ]
    assert len(store.list()) == 3
    files, audit = kept_reads(store.proposals_dir, store.audit_path)
    assert len(files) == 3

    # When one file is removed behind the store's back
    os.unlink(Path(store.proposals_dir) / f"{ids[0]}.mem.proposal")

    # Then the next list forgets it, and a get of a missing file keeps nothing
    assert {p.id for p in store.list()} == set(ids[1:])
    assert len(files) == 2
    assert store.get(ids[0]) is None
    assert len(files) == 2

    # And the process keeps the reads of a bounded number of staging directories
    for i in range(CACHED_STAGINGS):
        ReviewStore(str(make_workspace(tmp_path / f"other{i}"))).get(ids[1])
    assert kept_reads(store.proposals_dir, store.audit_path) != (files, audit)


def test_threads_reading_while_others_decide_see_what_a_fresh_read_sees(
    store: ReviewStore, root: Path
) -> None:
    # Given pending proposals
    ids = [
        store.propose(load(root), fact_source(f"db.t{i}"), proposer="a").proposal_id
        for i in range(12)
    ]
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                reader = ReviewStore(str(root))
                listed = {p.id for p in reader.list("all")}
                assert listed == set(ids)
                for pid in ids:
                    assert reader.get(pid) is not None
        except BaseException as error:  # noqa: BLE001 - reported by the test thread
            errors.append(error)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for thread in readers:
        thread.start()

    # When they are decided and the log is appended to while readers list and get
    try:
        for i, pid in enumerate(ids):
            if i % 2:
                store.reject(pid, reviewer="bob", reason="no")
            else:
                AuditLog(store.audit_path).append("reject", pid, by="memdsl", reason="x")
    finally:
        stop.set()
        for thread in readers:
            thread.join()

    # Then no reader failed, and the answers are the fresh read's
    assert errors == []
    fresh = ReviewStore(str(root), cached=False)
    assert store.list("all") == fresh.list("all")
    assert [p.status for p in store.list("all")] == ["rejected"] * len(ids)


def proposed_and_rejected(store: ReviewStore, root: Path, *, made: int, rejected: int) -> list[str]:
    """The ids of `made` proposals by "a", the first `rejected` of them rejected."""
    workspace = load(root)
    ids = [
        store.propose(workspace, fact_source(f"db.h{i}"), proposer="a").proposal_id
        for i in range(made)
    ]
    for pid in ids[:rejected]:
        store.reject(pid, reviewer="b", reason="no")
    return ids


@pytest.mark.usefixtures("exact_timestamps")
def test_a_long_history_is_kept_by_status_and_read_again_when_asked_for(
    store: ReviewStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a cache that keeps at most four decided proposals whole
    monkeypatch.setattr(proposal_module, "FULL_DECIDED", 4)
    ids = proposed_and_rejected(store, root, made=10, rejected=8)

    # When every list and every proposal is read through it
    fresh = ReviewStore(str(root), cached=False)
    for status in LIST_STATUSES:
        assert store.list(status) == fresh.list(status)
    assert [store.get(pid) for pid in ids] == [fresh.get(pid) for pid in ids]

    # Then the history is kept by status only beyond four whole decided proposals,
    # while every file is still known
    files, _ = kept_reads(store.proposals_dir, store.audit_path)
    assert files.whole() == 4
    assert len(files) == 10
    assert store.list("pending") == fresh.list("pending")


@pytest.mark.usefixtures("exact_timestamps")
def test_a_proposal_looks_at_the_pending_files_not_at_the_decided_history(
    store: ReviewStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given thirty decided proposals and two pending ones, listed once
    workspace = load(root)
    ids = proposed_and_rejected(store, root, made=32, rejected=30)
    assert len(store.list("pending")) == 2

    # When "a" proposes again under a bound of three pending proposals
    looked_at: list[str] = []

    def noting(real):  # type: ignore[no-untyped-def]
        def call(path, *args, **kwargs):  # type: ignore[no-untyped-def]
            if str(path).endswith(".mem.proposal"):
                looked_at.append(str(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "stat", noting(os.stat))
    monkeypatch.setattr("builtins.open", noting(open))
    third = store.propose(workspace, fact_source("db.third"), proposer="a", max_pending=3)

    # Then it is made, having looked at the pending files only
    assert third.ok
    assert not any(pid in path for pid in ids[:30] for path in looked_at)

    # And the bound still counts every pending proposal
    monkeypatch.undo()
    fourth = store.propose(workspace, fact_source("db.fourth"), proposer="a", max_pending=3)
    assert fourth.status == "too_many"
    assert ReviewStore(str(root), cached=False).list("pending") == store.list("pending")
