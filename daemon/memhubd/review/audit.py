"""The review audit log: memdsl's JSONL at `<staging>/audit.log` (spec §7.6) plus memhub's keys.

Append-only and fsynced line by line; callers append under the review lock. Reading
needs no lock and skips lines that are not JSON objects, as memdsl does. `AuditIndex`
reads a log once, then only the lines added since; it never trusts what it read without
checking the file on disk, since memdsl or another tool may write the log too.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhubd.review.durable import ensure_dir
from memhubd.review.proposal import Proposal, now_iso, one_line

DECISIONS = ("approve", "reject")
AuditEntry = dict[str, Any]
# Bytes of what was read that must be unchanged for the next read to start where this one
# ended; anything else (a shorter file, another inode, other bytes there) is read whole.
HEAD_CHECK = 256
TAIL_CHECK = 4096


class AuditLog:
    """One workspace's audit log file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def entries(self) -> list[AuditEntry]:
        """Every readable entry, oldest first, read from the whole file."""
        try:
            with open(self.path, "rb") as handle:
                return _parse(handle.read())
        except FileNotFoundError:
            return []

    def append(self, action: str, proposal_id: str, *, ts: str = "", **details: Any) -> AuditEntry:
        """Write one entry and fsync it. Details that are "" or None are left out; False stays."""
        entry: AuditEntry = {"ts": ts or now_iso(), "action": action, "proposal_id": proposal_id}
        entry.update({key: value for key, value in details.items() if value not in ("", None)})
        line = json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n"
        ensure_dir(os.path.dirname(self.path) or ".")
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


class AuditView:
    """A log's entries grouped by proposal id, as read at one moment. Read only: every
    answer is a copy."""

    def __init__(self, by_id: Mapping[str, tuple[AuditEntry | bytes, ...]]) -> None:
        self._by_id = by_id

    @classmethod
    def of(cls, entries: list[AuditEntry]) -> AuditView:
        return cls(_grouped({}, entries))

    def entries_for(self, proposal_id: str) -> list[AuditEntry]:
        """This proposal's entries, oldest first (an entry whose id is not a string is
        no proposal's)."""
        return [
            json.loads(entry) if isinstance(entry, bytes) else dict(entry)
            for entry in self._by_id.get(proposal_id, ())
        ]


@dataclass(frozen=True, slots=True)
class _Consumed:
    """How far a log was read: up to `offset`, the end of its last complete line."""

    device: int
    inode: int
    offset: int
    head: bytes  # the first HEAD_CHECK bytes read
    tail: bytes  # the last TAIL_CHECK bytes before `offset`

    def still_valid(self, fd: int, info: os.stat_result) -> bool:
        """Whether the file still holds what was read: same inode, as long, same bytes
        at both ends of it."""
        return (
            (info.st_dev, info.st_ino) == (self.device, self.inode)
            and info.st_size >= self.offset
            and os.pread(fd, len(self.head), 0) == self.head
            and os.pread(fd, len(self.tail), self.offset - len(self.tail)) == self.tail
        )

    def after(self, complete: bytes) -> _Consumed:
        head = (self.head + complete[: HEAD_CHECK - len(self.head)])[:HEAD_CHECK]
        tail = (self.tail + complete[-TAIL_CHECK:])[-TAIL_CHECK:]
        return _Consumed(self.device, self.inode, self.offset + len(complete), head, tail)


class AuditIndex:
    """One audit log's entries by proposal id, kept between reads and brought up to date
    by reading only the complete lines appended since. Safe to share between threads."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._consumed: _Consumed | None = None
        # Each entry as its line's bytes, read again when asked for: a parsed entry
        # takes about six times the room, for every line of a history that only grows.
        self._by_id: dict[str, tuple[bytes, ...]] = {}

    def view(self) -> AuditView:
        """The entries as the file holds them now."""
        with self._lock:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                self._consumed, self._by_id = None, {}
                return AuditView({})
            try:
                return self._read(fd)
            finally:
                os.close(fd)

    def _read(self, fd: int) -> AuditView:
        info = os.fstat(fd)
        consumed = self._consumed
        if consumed is None or not consumed.still_valid(fd, info):
            consumed, self._by_id = _Consumed(info.st_dev, info.st_ino, 0, b"", b""), {}
        data = _read_from(fd, consumed.offset)
        # A last line without its newline may still be being written: it is read, as
        # `AuditLog.entries` reads it, but read again next time rather than remembered.
        end = data.rfind(b"\n") + 1
        if end:
            # Copy on write: views handed out earlier keep what they saw.
            self._by_id = _grouped_lines(dict(self._by_id), data[:end])
            consumed = consumed.after(data[:end])
        self._consumed = consumed
        torn = data[end:]
        if torn and _parse(torn):
            return AuditView(_grouped_lines(dict(self._by_id), torn))
        return AuditView(self._by_id)


def _grouped_lines(
    by_id: dict[str, tuple[bytes, ...]], data: bytes
) -> dict[str, tuple[bytes, ...]]:
    """`by_id` with the entries of the lines in `data` added, each as its line."""
    added: dict[str, list[bytes]] = {}
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:  # a torn or foreign line; memdsl skips these too
            continue
        if isinstance(entry, dict) and isinstance(proposal_id := entry.get("proposal_id"), str):
            added.setdefault(proposal_id, []).append(bytes(line))
    for proposal_id, more in added.items():
        by_id[proposal_id] = (*by_id.get(proposal_id, ()), *more)
    return by_id


def _parse(data: bytes) -> list[AuditEntry]:
    out: list[AuditEntry] = []
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:  # a torn or foreign line; memdsl skips these too
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def _grouped(
    by_id: dict[str, tuple[AuditEntry, ...]], entries: list[AuditEntry]
) -> dict[str, tuple[AuditEntry, ...]]:
    """`by_id` with `entries` added after the ones it holds."""
    added: dict[str, list[AuditEntry]] = {}
    for entry in entries:
        proposal_id = entry.get("proposal_id")
        if isinstance(proposal_id, str):
            added.setdefault(proposal_id, []).append(entry)
    for proposal_id, more in added.items():
        by_id[proposal_id] = (*by_id.get(proposal_id, ()), *more)
    return by_id


def _read_from(fd: int, offset: int) -> bytes:
    chunks = []
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


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
