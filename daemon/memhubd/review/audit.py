"""The review audit log: memdsl's JSONL at `<staging>/audit.log` (spec §7.6) plus memhub's keys.

Append-only and fsynced line by line; callers append under the review lock. Reading
needs no lock and skips lines that are not JSON objects, as memdsl does.
"""

from __future__ import annotations

import json
import os
from typing import Any

from memhubd.review.proposal import Proposal, now_iso, one_line

DECISIONS = ("approve", "reject")
AuditEntry = dict[str, Any]


class AuditLog:
    """One workspace's audit log file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def entries(self) -> list[AuditEntry]:
        """Every readable entry, oldest first."""
        try:
            with open(self.path, "rb") as handle:
                lines = handle.read().splitlines()
        except FileNotFoundError:
            return []
        out: list[AuditEntry] = []
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:  # a torn or foreign line; memdsl skips these too
                continue
            if isinstance(entry, dict):
                out.append(entry)
        return out

    def append(self, action: str, proposal_id: str, *, ts: str = "", **details: Any) -> AuditEntry:
        """Write one entry and fsync it. Details that are "" or None are left out; False stays."""
        entry: AuditEntry = {"ts": ts or now_iso(), "action": action, "proposal_id": proposal_id}
        entry.update({key: value for key, value in details.items() if value not in ("", None)})
        line = json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n"
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                # A writer killed mid-line left a fragment; end it so this entry stays whole.
                line = b"\n" + line
            _write_all(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        return entry

    def append_once(
        self, entries: list[AuditEntry], action: str, proposal_id: str, **details: Any
    ) -> AuditEntry | None:
        """Append unless `entries` already hold this (action, proposal); keeps `entries` current."""
        if find_entry(entries, action, proposal_id) is not None:
            return None
        entry = self.append(action, proposal_id, **details)
        entries.append(entry)
        return entry


def find_entry(entries: list[AuditEntry], action: str, proposal_id: str) -> AuditEntry | None:
    """The first entry of `action` for `proposal_id`."""
    for entry in entries:
        if entry.get("action") == action and entry.get("proposal_id") == proposal_id:
            return entry
    return None


def last_decision(entries: list[AuditEntry], proposal_id: str) -> AuditEntry | None:
    """The latest approve or reject entry for `proposal_id` (memdsl's `prior`)."""
    for entry in reversed(entries):
        if entry.get("proposal_id") == proposal_id and entry.get("action") in DECISIONS:
            return entry
    return None


def actor(entry: AuditEntry | None) -> str:
    """Who made an audited decision: memhub's `identity`, else memdsl's `by`."""
    if entry is None:
        return ""
    return one_line(entry.get("identity") or entry.get("by") or "")


def propose_details(proposal: Proposal) -> dict[str, Any]:
    """The details of a `propose` entry: memdsl's, then memhub's attribution."""
    return {
        "identity": proposal.proposer,
        "client": proposal.client,
        "declaration": proposal.declaration,
        "reason": proposal.reason,
        "generation": proposal.generation,
        "supersedes": proposal.supersedes,
    }


def attributed(proposal: Proposal, entries: list[AuditEntry]) -> Proposal:
    """Fill attribution a memdsl rewrite dropped from the header back in from the audit."""
    changes: dict[str, Any] = {}
    proposed = find_entry(entries, "propose", proposal.id)
    if proposed is not None:
        if not proposal.proposer and proposed.get("identity"):
            changes["proposer"] = one_line(proposed["identity"])
        if proposal.generation is None and isinstance(proposed.get("generation"), int):
            changes["generation"] = proposed["generation"]
        if not proposal.supersedes and proposed.get("supersedes"):
            changes["supersedes"] = one_line(proposed["supersedes"])
    if proposal.status != "pending" and not proposal.decided_by:
        decider = actor(last_decision(entries, proposal.id))
        if decider:
            changes["decided_by"] = decider
    return proposal.evolve(**changes) if changes else proposal


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
