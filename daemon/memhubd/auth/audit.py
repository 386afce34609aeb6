"""The administrative audit: `<state_dir>/audit/admin.jsonl`, one JSON line per admin action.

Who did what, when, and with which outcome, for token and workspace
administration through any door (the JSON API, `memhubd token`). Append-only,
mode 0600, fsynced line by line. It must never receive a secret: callers pass
token records' public views and request fields, never a token string.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from memhubd.review.audit import AuditLog
from memhubd.runtime.events import rfc3339

FILE_NAME = "admin.jsonl"

# Outcomes: done; refused by a rule (4xx: forbidden, conflict, not found, invalid);
# failed on our side (I/O, a workspace that would not load).
OK, REFUSED, FAILED = "ok", "refused", "failed"

AuditEntry = dict[str, Any]


class AdminAudit:
    """The admin audit file of one state directory."""

    def __init__(self, state_dir: Path | str) -> None:
        self.path = Path(state_dir) / "audit" / FILE_NAME

    def record(
        self, action: str, *, identity: str, via: str, outcome: str, **details: Any
    ) -> AuditEntry:
        """Append one entry and fsync it. Details that are None are left out."""
        entry: AuditEntry = {
            "ts": rfc3339(time.time()),  # as event times: UTC, milliseconds
            "action": action,
            "identity": identity,
            "via": via,
            "outcome": outcome,
        }
        entry.update({key: value for key, value in details.items() if value is not None})
        # A secret never goes in: one typed into the wrong field (a name, an expiry) is
        # quoted by the request and by the refusal's reason.
        entry = _redacted(entry)
        try:
            line = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # An argument that was not UTF-8 (a lone surrogate from the command line, as
            # Python decodes such bytes) is kept as its JSON escape: the refusal is audited.
            line = json.dumps(entry).encode("ascii")
        self._append(line + b"\n")
        return entry

    def entries(self) -> list[AuditEntry]:
        """Every readable entry, oldest first; torn or foreign lines are skipped."""
        return AuditLog(str(self.path)).entries()  # the same JSON-lines reading as review's

    def _append(self, line: bytes) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # O_NOFOLLOW: a symlink planted in place of the log must not redirect it.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.path, flags, 0o600)
        try:
            if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
                os.fchmod(fd, 0o600)  # a file created by hand or restored from a backup
            # The daemon and offline commands append to the same file: one writer at a time,
            # so the torn-line check below and the write are not interleaved.
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # a writer killed mid-line left a fragment: end it
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)  # also releases the lock


def _redacted(value: Any) -> Any:
    """`value` with every string in it passed through the log's secret redaction."""
    from memhubd.runtime.logging import redact_text

    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value
