"""Drives the review engine until every proposal is decided; the fault tests SIGKILL it.

Usage: python review_crash_worker.py ROOT COUNT SEED. Proposes `fact db.fNNN` for NNN < COUNT
(skipping those already proposed), then approves each pending one into a randomly
chosen target, except every fifth, which it rejects. It reads one line from stdin before
each operation and prints "op" after it, so the killer can place its SIGKILL inside a
chosen operation whatever the machine's load. Exits 0 when nothing is left to do.
"""

from __future__ import annotations

import random
import sys

from memhubd.model import Workspace
from memhubd.review import ReviewStore

TARGETS = ("targets/a.mem", "targets/b.mem", "targets/nested/c.mem", "base.mem")


def fact(index: int) -> str:
    return (
        f'fact db.f{index:03d} {{\n  subject: db\n  claim: "Fact number {index}."\n'
        f'  evidence {{ source: test quote: "number {index}" }}\n}}\n'
    )


def index_of(declaration: str) -> int:
    return int(declaration.rsplit(".f", 1)[1])


def paced() -> None:
    sys.stdin.readline()


def main(root: str, count: int, seed: int) -> int:
    rng = random.Random(seed)
    store = ReviewStore(root)
    workspace = Workspace.load([root])
    known = {index_of(p.declaration) for p in store.list("all")}
    for index in range(count):
        if index not in known:
            paced()
            result = store.propose(workspace, fact(index), proposer="agent", client="fault")
            assert result.ok, result.errors
            print("op", flush=True)
    for proposal in store.list("pending"):
        paced()
        if index_of(proposal.declaration) % 5 == 0:
            decision = store.reject(proposal.id, reason="every fifth", reviewer="bob")
        else:
            into = rng.choice(TARGETS)  # a retry may well ask for another target
            decision = store.approve(proposal.id, Workspace.load([root]), into, reviewer="alice")
        assert decision.status in ("approved", "rejected", "already_approved"), decision
        print("op", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
