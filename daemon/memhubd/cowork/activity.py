"""What each identity recently did in each workspace, as the daemon saw it: the ring
buffers behind partner peek.

In memory only (a restart forgets it) and bounded three ways: entries per identity
and workspace, characters per entry, and identity-workspace pairs (least recently
active dropped first). An entry keeps the request text and counts, never answer
content; `visible_to` decides what of an entry a peeker may see. It knows no tokens,
scopes or doors.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from memhub_protocol.prompt_text import shown

ENTRIES_PER_IDENTITY = 50
MAX_TEXT_CHARS = 200
MAX_PAIRS = 4096
ACTIVE_WINDOW_S = 30 * 60  # mempal's "partner_active": seen within 30 minutes

KINDS = ("query", "check", "search", "propose", "push")


@dataclass(frozen=True, slots=True)
class Activity:
    """One operation of one identity.

    `roles` are the actor's roles when it acted (None: it sees everything); its counts
    were computed over what those roles may read. `readers` restrict `text` to holders
    of one of those roles (None: anyone who may peek). `recipient` is set for pushes.
    """

    at: float
    kind: str
    text: str
    counts: dict[str, int] = field(default_factory=dict)
    roles: frozenset[str] | None = None
    readers: frozenset[str] | None = None
    recipient: str | None = None


def cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    # Kept text is sent to peekers as JSON: a lone surrogate (which no door should let
    # through) would make every later peek at this identity fail.
    text = text.encode("utf-8", "replace").decode("utf-8")
    # Another identity's words land in the peeker's context (MCP's peek above all): what
    # an agent would read and a person could not see is left out, as memctl prints it.
    text = shown(text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def visible_to(
    entry: Activity, peeker: str, roles: frozenset[str] | None, *, knows_identities: bool
) -> dict[str, Any]:
    """An entry as a peeker with `roles` (None: sees everything) may see it.

    Counts are shown only when the actor could read no more than the peeker (its roles
    are a subset): otherwise a count could reveal how many hidden items matched. Text
    restricted by `readers` becomes None for a peeker holding none of them. A push's
    recipient is named only to that recipient or to a peeker that may know every
    identity (`knows_identities`).
    """
    out: dict[str, Any] = {"at": entry.at, "kind": entry.kind}
    readable = roles is None or entry.readers is None or not entry.readers.isdisjoint(roles)
    out["text"] = entry.text if readable else None
    comparable = roles is None or (entry.roles is not None and entry.roles <= roles)
    out["counts"] = dict(entry.counts) if comparable else None
    if entry.kind == "push":
        named = knows_identities or entry.recipient == peeker
        out["to"] = entry.recipient if named else None
    return out


class ActivityLog:
    """Ring buffers keyed by (workspace, identity). Thread-safe."""

    def __init__(
        self, per_identity: int = ENTRIES_PER_IDENTITY, max_pairs: int = MAX_PAIRS
    ) -> None:
        self.per_identity = per_identity
        self.max_pairs = max_pairs
        self._rings: OrderedDict[tuple[str, str], deque[Activity]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, workspace: str, identity: str, entry: Activity) -> None:
        key = (workspace, identity)
        with self._lock:
            ring = self._rings.get(key)
            if ring is None:
                ring = self._rings[key] = deque(maxlen=self.per_identity)
            self._rings.move_to_end(key)
            ring.append(entry)
            while len(self._rings) > self.max_pairs:
                self._rings.popitem(last=False)

    def entries(self, workspace: str, identity: str) -> list[Activity]:
        """Oldest first."""
        with self._lock:
            return list(self._rings.get((workspace, identity), ()))

    def last_seen(self, workspace: str, identity: str) -> float | None:
        with self._lock:
            ring = self._rings.get((workspace, identity))
            return ring[-1].at if ring else None

    def most_recent_other(self, workspace: str, identity: str) -> str | None:
        """The identity other than `identity` that acted last in `workspace`."""
        best: tuple[float, str] | None = None
        with self._lock:
            for (ws, who), ring in self._rings.items():
                if ws != workspace or who == identity or not ring:
                    continue
                if best is None or ring[-1].at > best[0]:
                    best = (ring[-1].at, who)
        return best[1] if best else None

    def forget_workspace(self, workspace: str) -> None:
        with self._lock:
            for key in [k for k in self._rings if k[0] == workspace]:
                del self._rings[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._rings)


def is_active(last_seen: float | None, now: float | None = None) -> bool:
    """mempal's rule: seen within the active window; a time in the future counts too."""
    if last_seen is None:
        return False
    now = time.time() if now is None else now
    return last_seen >= now - ACTIVE_WINDOW_S
