"""Proposals on disk: memdsl's `.mem.proposal` format (spec §7.2-7.3) plus memhub's header lines.

Parses and renders proposal files and mints ids; it never validates declarations or
takes locks. Extra header keys (`proposer`, `generation`, ...) are ignored by memdsl.
`ProposalFiles` keeps parsed files between reads only while their stat is unchanged.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any

from memhubd.lang import ParseError, parse_text

PROPOSAL_SUFFIX = ".mem.proposal"
PROPOSAL_LABEL = "<proposal>"
HEADER_START = "# memdsl:proposal"
HEADER_END = "# ---"
STATUSES = ("pending", "approved", "rejected")

# memdsl builds paths from ids without checking them; memhub accepts only ids it could mint.
PROPOSAL_ID = re.compile(r"p-\d{8}-\d{6}-[0-9a-f]{6}")

# A file changed this recently may change again within the same timestamp tick, keeping
# its size, mtime and ctime: it is parsed again until it has been still this long.
RACY_NS = 2_000_000_000

# Header keys in the order they are written: memdsl's first, then memhub's additions.
_MEMDSL_KEYS = (
    "client",
    "reason",
    "decided_at",
    "merged_into",
    "reject_reason",
)
_MEMHUB_KEYS = ("proposer", "generation", "supersedes", "decided_by")


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposal file: memdsl's fields, then who proposed and decided it.

    A pending proposal may carry `merged_into` and `decided_by`: the record of an
    approval in progress, written before the target so a retry finds the same file.
    """

    id: str
    status: str
    created_at: str
    source: str
    path: str = ""
    client: str = ""
    reason: str = ""
    decided_at: str = ""
    merged_into: str = ""
    reject_reason: str = ""
    proposer: str = ""
    generation: int | None = None
    supersedes: str = ""
    decided_by: str = ""

    @property
    def declaration(self) -> str:
        """`type:name` of the first declaration, `(unparseable)`, or "" when there is none."""
        try:
            doc = parse_text(self.source, file=PROPOSAL_LABEL)
        except ParseError:
            return "(unparseable)"
        return doc.declarations[0].id if doc.declarations else ""

    def evolve(self, **changes: Any) -> Proposal:
        return replace(self, **changes)

    def summary(self) -> dict[str, Any]:
        """memdsl's summary keys, then memhub's attribution keys."""
        return {
            "id": self.id,
            "status": self.status,
            "declaration": self.declaration,
            "created_at": self.created_at,
            "client": self.client,
            "reason": self.reason,
            "decided_at": self.decided_at,
            "merged_into": self.merged_into,
            "reject_reason": self.reject_reason,
            "proposer": self.proposer,
            "generation": self.generation,
            "supersedes": self.supersedes,
            "decided_by": self.decided_by,
        }

    def as_dict(self) -> dict[str, Any]:
        return {**self.summary(), "source": self.source, "path": self.path}


def is_proposal_id(text: object) -> bool:
    return isinstance(text, str) and PROPOSAL_ID.fullmatch(text) is not None


def new_proposal_id(now: dt.datetime | None = None) -> str:
    """`p-YYYYMMDD-HHMMSS-xxxxxx`: UTC creation time and 6 random hex digits."""
    moment = now or dt.datetime.now(dt.UTC)
    return f"p-{moment.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def now_iso() -> str:
    """UTC, second precision, explicit offset: `2026-11-30T02:32:27+00:00`."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def one_line(text: object) -> str:
    """Every whitespace run (newlines included) becomes one space, so header lines stay lines."""
    return " ".join(str(text or "").split())


def normalize_source(source: str) -> str:
    """The source as stored: CRLF as LF, stripped, plus one trailing newline."""
    return source.replace("\r\n", "\n").strip() + "\n"


def render_proposal(proposal: Proposal) -> str:
    """The file text: header lines for the non-empty fields, the separator, the source."""
    values = asdict(proposal)
    lines = [
        HEADER_START,
        f"# id: {proposal.id}",
        f"# status: {proposal.status}",
        f"# created_at: {proposal.created_at}",
    ]
    for key in (*_MEMDSL_KEYS, *_MEMHUB_KEYS):
        value = one_line("" if values[key] is None else str(values[key]))
        if value:
            lines.append(f"# {key}: {value}")
    lines.append(HEADER_END)
    return "\n".join(lines) + "\n" + proposal.source


def parse_proposal(text: str, path: str = "") -> Proposal | None:
    """Read a proposal the way memdsl does; None when there is no separator or no id."""
    meta: dict[str, str] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() == HEADER_END:
            body = lines[index + 1 :]
            break
        if line.startswith("# ") and ": " in line:
            key, _, value = line[2:].partition(": ")
            meta[key.strip()] = value.strip()
    else:
        return None
    if "id" not in meta:
        return None
    generation = meta.get("generation", "")
    return Proposal(
        id=meta["id"],
        status=meta.get("status", "pending"),
        created_at=meta.get("created_at", ""),
        source="\n".join(body).strip() + "\n",
        path=path,
        client=meta.get("client", ""),
        reason=meta.get("reason", ""),
        decided_at=meta.get("decided_at", ""),
        merged_into=meta.get("merged_into", ""),
        reject_reason=meta.get("reject_reason", ""),
        proposer=meta.get("proposer", ""),
        generation=int(generation) if generation.isascii() and generation.isdigit() else None,
        supersedes=meta.get("supersedes", ""),
        decided_by=meta.get("decided_by", ""),
    )


def read_proposal(path: str) -> Proposal | None:
    """The proposal at `path`, or None when it is missing, unreadable or malformed."""
    return _read_stat(path)[1]


def _read_stat(path: str) -> tuple[os.stat_result | None, Proposal | None]:
    """The proposal at `path` and the stat of the file it was read from (None when it
    could not be opened)."""
    try:
        with open(path, encoding="utf-8") as handle:
            info = os.fstat(handle.fileno())
            try:
                text = handle.read()
            except (OSError, UnicodeDecodeError):
                return info, None
    except OSError:
        return None, None
    return info, parse_proposal(text, path)


_Stamp = tuple[int, int, int, int, int]


def _stamp(info: os.stat_result) -> _Stamp:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@dataclass(slots=True)
class _Kept:
    """What ProposalFiles keeps of one file: its stamp when parsed, whether it had been
    still for RACY_NS by then, its status (None: unreadable or malformed), and the
    parsed proposal, let go for decided ones beyond FULL_DECIDED."""

    stamp: _Stamp
    settled: bool
    status: str | None
    proposal: Proposal | None


# Decided proposals whose parsed file is kept whole; the others keep their status only
# and are parsed again when read, so a long history costs the daemon little memory.
FULL_DECIDED = 256


class ProposalFiles:
    """The parsed proposal files of one directory, by file name.

    A file is parsed again when its device, inode, size, mtime or ctime differ from the
    ones it was parsed at, or when it had changed less than RACY_NS before; an entry
    whose file is gone is dropped. Pending proposals are kept whole, decided ones whole
    for the FULL_DECIDED read last and by status only beyond. Safe to share between
    threads; Proposals are frozen.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._parsed: dict[str, _Kept] = {}
        self._whole: OrderedDict[str, None] = OrderedDict()  # decided, kept whole
        self._swept: float | None = None

    def read(self, name: str) -> Proposal | None:
        """The proposal in file `name`; None when it is missing, unreadable or malformed."""
        path = os.path.join(self.directory, name)
        try:
            now_stamp = _stamp(os.stat(path))
        except OSError:
            self._forget(name)
            return read_proposal(path)
        with self._lock:
            kept = self._parsed.get(name)
            if (
                kept is not None
                and kept.settled
                and kept.stamp == now_stamp
                and (kept.proposal is not None or kept.status is None)
            ):
                if name in self._whole:
                    self._whole.move_to_end(name)
                return kept.proposal
        started = time.time_ns()
        info, proposal = _read_stat(path)
        if info is None:
            self._forget(name)
            return proposal
        settled = started - max(info.st_mtime_ns, info.st_ctime_ns) > RACY_NS
        status = proposal.status if proposal is not None else None
        with self._lock:
            self._parsed[name] = _Kept(_stamp(info), settled, status, proposal)
            if status is None or status == "pending":
                self._whole.pop(name, None)
            else:
                self._whole[name] = None
                self._whole.move_to_end(name)
                while len(self._whole) > FULL_DECIDED:
                    oldest, _ = self._whole.popitem(last=False)
                    let_go = self._parsed.get(oldest)
                    if let_go is not None:
                        let_go.proposal = None
        return proposal

    def status(self, name: str) -> str | None:
        """The status in file `name` (None: missing, unreadable or malformed), from
        memory while its stat is unchanged, even for a decided one no longer kept whole."""
        try:
            now_stamp = _stamp(os.stat(os.path.join(self.directory, name)))
        except OSError:
            self._forget(name)
            return None
        with self._lock:
            kept = self._parsed.get(name)
            if kept is not None and kept.settled and kept.stamp == now_stamp:
                return kept.status
        proposal = self.read(name)
        return proposal.status if proposal is not None else None

    def undecided(self, names: Iterable[str]) -> list[str]:
        """`names` less the files read decided (not pending) and still when last read.

        Answered from memory without looking at the files: no tool makes a decided
        proposal pending again, so counting pending proposals can skip the history."""
        with self._lock:
            parsed = self._parsed
            return [
                name
                for name in names
                if (kept := parsed.get(name)) is None
                or not kept.settled
                or kept.status is None
                or kept.status == "pending"
            ]

    def sweep_due(self, every_s: float) -> bool:
        """True at most once every `every_s` seconds: time to look for a killed
        writer's temp files again."""
        now = time.monotonic()
        with self._lock:
            if self._swept is not None and now - self._swept < every_s:
                return False
            self._swept = now
            return True

    def __len__(self) -> int:
        """How many files are kept."""
        with self._lock:
            return len(self._parsed)

    def whole(self) -> int:
        """How many decided proposals are kept whole."""
        with self._lock:
            return len(self._whole)

    def keep_only(self, names: Iterable[str]) -> None:
        """Drop the files not among `names` (the directory's listing)."""
        present = set(names)
        with self._lock:
            for name in [name for name in self._parsed if name not in present]:
                del self._parsed[name]
                self._whole.pop(name, None)

    def _forget(self, name: str) -> None:
        with self._lock:
            self._parsed.pop(name, None)
            self._whole.pop(name, None)


def approval_marker(proposal_id: str) -> str:
    """The text memdsl looks for in a target to know a proposal was already merged."""
    return f"# approved from proposal {proposal_id} at "


def approval_block(proposal: Proposal, stamp: str, end: str = "\n") -> str:
    """What approval appends: a blank line, the marker with its stamp, the source; its
    lines ended by `end` (the target's own, see `memhubd.lang.writer.line_end`)."""
    block = f"\n{approval_marker(proposal.id)}{stamp}\n" + proposal.source.rstrip("\n") + "\n"
    return block if end == "\n" else block.replace("\n", end)


def has_marker(target_text: str, proposal_id: str) -> bool:
    """Whether a target holds this proposal's approval marker as approval writes it: a
    line of its own, with a stamp. The same words inside a line (a claim, say) are not
    one: text a proposal carries must never pass for another proposal's approval."""
    pattern = r"(?m)^" + re.escape(approval_marker(proposal_id)) + r"\S"
    return re.search(pattern, target_text) is not None


def marker_stamp(target_text: str, proposal_id: str) -> str:
    """The stamp recorded after this proposal's marker in a target, or ""."""
    found = re.search(r"(?m)^" + re.escape(approval_marker(proposal_id)) + r"(\S+)", target_text)
    return found.group(1) if found else ""
