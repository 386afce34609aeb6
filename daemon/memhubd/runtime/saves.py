"""Editor saves: which disk states of a source are held back from being served. A file
that goes missing or empty keeps its declarations for a grace period, and new bytes that
may be a save caught half-way are served once they stop changing (`SavePolicy`). Nothing
here waits: it records when to look again (`SaveRules.recheck_at`), and the caller waits.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from memhubd.runtime.confine import Refused, StatKey
from memhubd.runtime.sources import REFUSED_DIGEST, Saved, SourceFile, SourceProblem, load_file


@dataclass(frozen=True, slots=True)
class SavePolicy:
    """How long a half-done save is kept from being served.

    `vanish_grace_s`: a file that had declarations and goes missing or empty keeps
    them until it has stayed so this long (editors rename the original away, or
    truncate it, before writing the new bytes). `settle_s`: changed bytes that drop
    any of the file's declarations or do not parse are served once the file has not
    changed for this long, so that a save written in several steps is never served
    in between (a file rewritten without pause is served when the writes stop).
    Bytes that keep every declaration are served at once. Zero turns either rule off.
    """

    vanish_grace_s: float = 1.0
    settle_s: float = 0.1


@dataclass(frozen=True, slots=True)
class Pending:
    """What the disk shows for one path that is not served yet, and since when.

    Times are `time.monotonic()`. `stat` is None while the file is missing.
    """

    stat: StatKey | None
    seen: float  # when the disk first showed exactly `stat`
    vanished: float | None  # when the current run of "missing or empty" began


class SaveRules:
    """Applies a SavePolicy during one build: decides which disk states are held back
    and records them, with the time each must be looked at again.

    `trusted`: the paths whose new bytes the caller wrote itself, whole (True: every
    path), which need not settle; any other file may be a save caught half-way.
    """

    def __init__(
        self,
        policy: SavePolicy,
        pending: Mapping[str, Pending],
        *,
        enforce: bool,
        trusted: bool | Collection[str] = False,
    ) -> None:
        self.policy = policy
        self.before = pending
        self.enforce = enforce  # False on the first build: there is nothing to keep
        self.trusted: bool | frozenset[str] = (
            trusted if isinstance(trusted, bool) else frozenset(map(os.path.realpath, trusted))
        )
        self.now = time.monotonic()
        self.wall = time.time()
        self.pending: dict[str, Pending] = {}
        self.deadlines: list[float] = []

    def hold_vanished(self, path: str, stat: StatKey | None) -> bool:
        """True (and `path` pending) while a file that had declarations is missing or
        empty for less than the grace period."""
        grace = self.policy.vanish_grace_s
        if not self.enforce or grace <= 0:
            return False
        old = self.before.get(path)
        vanished = old.vanished if old is not None and old.vanished is not None else self.now
        if self.now - vanished >= grace:
            return False
        self._keep(path, old, stat, vanished, vanished + grace)
        return True

    def hold_unsettled(self, path: str, stat: StatKey) -> bool:
        """True (and `path` pending) while the file's bytes may still be changing:
        neither its modification time nor our own observations are `settle_s` old."""
        settle = self.policy.settle_s
        if not self.enforce or settle <= 0 or self._trusts(path):
            return False
        old = self.before.get(path)
        seen = old.seen if old is not None and old.stat == stat else self.now
        # The modification time alone would do on a local disk; the observation covers
        # clocks that disagree (a file system whose times run ahead of ours).
        mtime_age = self.wall - stat[0] / 1e9
        if self.now - seen >= settle or mtime_age >= settle:
            return False
        deadline = min(seen + settle, self.now + settle - max(mtime_age, 0.0))
        self._keep(path, old, stat, None, deadline)
        return True

    def _trusts(self, path: str) -> bool:
        if isinstance(self.trusted, bool):
            return self.trusted
        # Real paths: the caller names what it wrote as it resolved it, a walk as it
        # found it (through a linked directory, say).
        return bool(self.trusted) and os.path.realpath(path) in self.trusted

    def _keep(
        self,
        path: str,
        old: Pending | None,
        stat: StatKey | None,
        vanished: float | None,
        deadline: float,
    ) -> None:
        seen = old.seen if old is not None and old.stat == stat else self.now
        self.pending[path] = Pending(stat, seen, vanished)
        self.deadlines.append(max(deadline, self.now + 0.001))

    def forget(self, paths: list[str]) -> None:
        for path in paths:
            self.pending.pop(path, None)

    @property
    def recheck_at(self) -> float | None:
        return min(self.deadlines) if self.deadlines else None


def _has_declarations(source: SourceFile | None) -> bool:
    return source is not None and source.document is not None and bool(source.typed)


def serve_file(
    path: str,
    before: SourceFile | None,
    stat: StatKey | None,
    rules: SaveRules,
    real_root: str,
    saved: Saved | None = None,
) -> SourceFile | None:
    """What to serve for `path`, whose disk stat is `stat` (None: missing); None for
    nothing. Raises Refused."""
    if before is not None and stat is not None and before.stat == stat:
        return before
    if stat is None or stat[1] == 0:
        if _has_declarations(before) and rules.hold_vanished(path, stat):
            return before
        if stat is None:
            return None
    if before is None and saved is not None:
        restored = saved.by_stat(path, stat)
        if restored is not None:
            return restored
    try:
        loaded = load_file(path, before, real_root, saved)
    except Refused as refusal:
        # A file there but unreadable (a mode that lets the daemon no longer read it, an
        # I/O error) is no deleted file: its last version read is served, with the
        # problem, so that none of its rules (a MUST) stops applying meanwhile.
        kept = before if before is not None or saved is None else saved.last_good(path)
        if not refusal.unreadable or not _has_declarations(kept):
            raise
        assert kept is not None
        problem = SourceProblem(refusal.kind, path, 0, 0, refusal.message)
        # No digest of bytes never read: the same bytes readable again are read anew.
        return dataclasses.replace(kept, digest=REFUSED_DIGEST, problem=problem, stat=stat)
    if loaded is None:  # gone between the stat and the read
        if _has_declarations(before) and rules.hold_vanished(path, None):
            return before
        return None
    # Bytes that parse and keep every declaration the file served cannot be a save
    # caught half-way that loses anything: serve them at once. Fewer declarations or
    # a parse error may be just that, and so may bytes that changed while being read.
    safe = loaded.stat == stat and _keeps_declarations(before, loaded)
    if not safe and rules.hold_unsettled(path, loaded.stat):
        return before
    return loaded


def _keeps_declarations(before: SourceFile | None, loaded: SourceFile) -> bool:
    if loaded.problem is not None or loaded.document is None:
        return False
    if before is None or before.document is None:
        return True
    if loaded.document is before.document:
        return True
    kept = {raw.id for raw in loaded.document.declarations}
    return all(raw.id in kept for raw in before.document.declarations)
