"""The daemon's kept index of a workspace's review audit log: brought up to date from the
lines appended since, the same entries as a whole read, and a small cost per line of a
history that only grows."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from memhubd.review.audit import AuditIndex, AuditLog


def line(n: int, action: str) -> str:
    entry = {
        "ts": "2026-12-04T10:00:00Z",
        "action": action,
        "proposal_id": f"p-20261204-{n:08x}",
        "actor": "agent-7" if action == "propose" else "alice",
        "declaration": f"fact:notes.n{n}",
        "reason": "a reason given in a few words",
    }
    return json.dumps(entry) + "\n"


def test_the_index_gives_the_logs_entries_and_follows_appended_lines(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text(line(1, "propose") + "not json\n" + line(2, "propose") + line(1, "reject"))
    index = AuditIndex(str(log))
    whole = AuditLog(str(log)).entries()
    view = index.view()
    for n in (1, 2):
        pid = f"p-20261204-{n:08x}"
        assert view.entries_for(pid) == [e for e in whole if e["proposal_id"] == pid]
    with log.open("a") as handle:
        handle.write(line(2, "approve") + line(3, "propose")[:40])  # the last one torn
    later = index.view()
    assert [e["action"] for e in later.entries_for("p-20261204-00000002")] == [
        "propose",
        "approve",
    ]
    assert later.entries_for("p-20261204-00000003") == []
    # a view handed out before keeps what it saw, and its entries are copies
    assert [e["action"] for e in view.entries_for("p-20261204-00000002")] == ["propose"]
    view.entries_for("p-20261204-00000001")[0]["action"] = "changed"
    assert view.entries_for("p-20261204-00000001")[0]["action"] == "propose"


def test_a_long_history_costs_little_memory_per_line(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    lines = 20_000
    log.write_text("".join(line(n // 2, ("propose", "reject")[n % 2]) for n in range(lines)))
    tracemalloc.start()
    try:
        index = AuditIndex(str(log))
        view = index.view()
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert view.entries_for("p-20261204-00000007")[1]["action"] == "reject"
    # about the line's own bytes and its share of the grouping (a parsed entry: ~1.2 KB)
    assert held / lines < 450, held / lines
