"""Durable per-workspace inboxes between identities: one SQLite file per workspace.

Push checks the budgets and inserts in one write transaction, so concurrent pushes
never overshoot them; a drain selects and deletes a recipient's oldest messages (all of
them, or as many as a byte budget takes) in one write transaction, so of two racing
drains exactly one gets each message (at most once).
Plain data and sqlite3 only: it knows no tokens, scopes or doors.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memhub_protocol.prompt_text import INVISIBLE_KEPT, left_out
from memhubd.sqlite import UnusableDatabase, into_wal, private_database

SCHEMA_VERSION = 1


class _TooNew(Exception):
    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


# mempal's budgets (MAX_MESSAGE_SIZE, MAX_PENDING_MESSAGES, MAX_TOTAL_INBOX_BYTES).
MAX_MESSAGE_BYTES = 8 * 1024
MAX_MESSAGES = 16
MAX_TOTAL_BYTES = 32 * 1024
PREVIEW_CHARS = 120
BUSY_TIMEOUT_MS = 5000
# Messages to a recipient that can no longer receive (its token revoked or expired, its
# grant or `read:summary` gone) are deleted once it has been unable to for this long, as
# the sweeps saw it: nothing would ever drain them. A token revoked and made again under
# its name within this time (a rotation) keeps them.
UNRECEIVED_KEPT_S = 7 * 86400
# How often one workspace's inboxes are looked over for such messages, at most.
SWEEP_EVERY_S = 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    recipient TEXT NOT NULL,
    sender TEXT NOT NULL,
    content TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    pushed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_recipient ON messages (recipient, id);
CREATE INDEX IF NOT EXISTS messages_by_sender ON messages (sender, recipient);
"""


class InboxError(ValueError):
    """A push the inbox refuses; `code` names the reason for the doors."""

    code = "invalid"


class EmptyMessage(InboxError):
    code = "empty_message"


class SelfPush(InboxError):
    code = "self_push"


class MessageTooLarge(InboxError):
    code = "message_too_large"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the message is {size} bytes; at most {limit} bytes (UTF-8) fit")
        self.size = size
        self.limit = limit


class InboxFull(InboxError):
    code = "inbox_full"

    def __init__(self, count: int, size: int, limits: InboxLimits) -> None:
        super().__init__(
            f"the inbox holds {count} message(s), {size} bytes: another would pass its budget "
            f"of {limits.max_messages} messages or {limits.max_total_bytes} bytes; "
            "wait until it is drained, do not retry in a loop"
        )
        self.count = count
        self.size = size
        self.limits = limits


@dataclass(frozen=True, slots=True)
class InboxLimits:
    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_messages: int = MAX_MESSAGES
    max_total_bytes: int = MAX_TOTAL_BYTES

    def as_dict(self) -> dict[str, int]:
        return {
            "max_message_bytes": self.max_message_bytes,
            "max_messages": self.max_messages,
            "max_total_bytes": self.max_total_bytes,
        }


@dataclass(frozen=True, slots=True)
class Message:
    id: int
    sender: str
    recipient: str
    content: str
    pushed_at: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "from": self.sender,
            "to": self.recipient,
            "pushed_at": self.pushed_at,
            "content": self.content,
        }


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a push answers: the message id and the recipient's inbox after it."""

    message_id: int
    pushed_at: float
    count_after: int
    bytes_after: int


@dataclass(frozen=True, slots=True)
class InboxState:
    """A recipient's undelivered messages, without delivering them."""

    count: int
    bytes: int
    oldest: float | None
    previews: tuple[Message, ...]  # the oldest few, content cut to PREVIEW_CHARS
    sent: tuple[tuple[str, int], ...]  # (recipient, undelivered count) of its own pushes


@dataclass(frozen=True, slots=True)
class Delivery:
    """What one drain hands out, oldest first, and how many messages it left waiting."""

    messages: tuple[Message, ...]
    remaining: int


def message_bytes(content: str) -> int:
    return len(content.encode("utf-8", "surrogatepass"))


class InboxStore:
    """The inboxes of one workspace. Thread-safe; every call is one short transaction."""

    def __init__(
        self, path: str | Path, limits: InboxLimits | None = None, workspace: str | None = None
    ) -> None:
        """`workspace`: whose inboxes these are (the file's name by default, as the
        cowork shelf names each file), printed in each drained message's line."""
        self.path = Path(path)
        self.limits = limits or InboxLimits()
        self.workspace = self.path.stem if workspace is None else workspace
        # Its folder too; a file that cannot be made or opened for writing is unusable
        # (the doors say so, naming it), never a bare OSError.
        private_database(self.path)
        # Autocommit mode: transactions are begun explicitly, as IMMEDIATE ones.
        self._db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self._lock = threading.Lock()
        self._swept_at: float | None = None  # monotonic time of the last `sweep_due`
        # recipient -> when a sweep first found it unable to receive (epoch seconds); only
        # recipients with messages, so it is bounded by what the inboxes hold. A restart
        # starts the count again: messages are kept longer, never dropped sooner.
        self._gone_since: dict[str, float] = {}
        self._sweeping = threading.Lock()  # one sweep at a time; another one skips
        try:
            with self._lock:
                self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                # Read before anything writes to the file (WAL mode rewrites its header):
                # a newer memhub's inbox is left as it was, for a rollback. Served as this
                # one's, it would be stamped back to this version and the newer memhub
                # would migrate it a second time.
                if (version := self._db.execute("PRAGMA user_version").fetchone()[0]) > (
                    SCHEMA_VERSION
                ):
                    raise _TooNew(version)
                # Two daemons starting on one state dir may open a new file together.
                into_wal(self._db, BUSY_TIMEOUT_MS / 1000)
                # FULL: a message acknowledged to its sender survives a power cut too.
                self._db.execute("PRAGMA synchronous=FULL")
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:  # a newer memhub made it meanwhile
                    raise _TooNew(version)
                self._db.executescript(_SCHEMA)
                if version < SCHEMA_VERSION:  # a new file (version 1 is the first)
                    self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except _TooNew as newer:
            self._db.close()
            raise UnusableDatabase(
                self.path,
                f"cowork inbox schema {newer.version} was written by a newer memhub; this one "
                f"supports up to {SCHEMA_VERSION}. Upgrade memhub, or move the file aside",
            ) from None
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise UnusableDatabase(self.path, f"not a usable cowork inbox: {error}") from error

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: it takes the write lock up front, so a second
        writer (thread or process) waits instead of reading what the first removes."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def push(self, sender: str, recipient: str, content: str, now: float | None = None) -> Receipt:
        if sender == recipient:
            raise SelfPush("a message to yourself is refused: push to a partner")
        if not _readable(content):
            raise EmptyMessage("the message is empty")
        size = message_bytes(content)
        if size > self.limits.max_message_bytes:
            raise MessageTooLarge(size, self.limits.max_message_bytes)
        at = time.time() if now is None else now
        with self._write() as db:
            count, total = db.execute(
                "SELECT count(*), coalesce(sum(bytes), 0) FROM messages WHERE recipient = ?",
                (recipient,),
            ).fetchone()
            if count + 1 > self.limits.max_messages or total + size > self.limits.max_total_bytes:
                raise InboxFull(count, total, self.limits)
            cursor = db.execute(
                "INSERT INTO messages (recipient, sender, content, bytes, pushed_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (recipient, sender, content, size, at),
            )
            message_id = int(cursor.lastrowid or 0)
        return Receipt(message_id, at, count + 1, total + size)

    def drain(self, recipient: str) -> list[Message]:
        """Every undelivered message of `recipient`, oldest first, removed as it is read."""
        return list(self.take(recipient).messages)

    def take(
        self,
        recipient: str,
        max_bytes: int | None = None,
        *,
        at_least_one: bool = True,
        weigh: str = "content",
    ) -> Delivery:
        """`recipient`'s oldest messages while their content totals at most `max_bytes`
        (UTF-8; None: every one), removed as they are read; the rest stay, in order.

        The oldest is handed out even when it alone is larger than `max_bytes`, so a
        budget smaller than a message never leaves it stuck; `at_least_one=False` lets a
        caller that already has something keep to its budget strictly. The first message
        that does not fit ends the delivery: a later, smaller one never overtakes it.
        `weigh`: what `max_bytes` counts, the content or each message's whole line as
        memctl prints it in a prompt format (`line_weight`: its time, sender and
        workspace too), so that what a prompt hook prints keeps to its budget however
        many messages come.
        """
        workspace = self.workspace
        with self._write() as db:
            rows = db.execute(
                "SELECT id, sender, recipient, content, pushed_at, bytes FROM messages "
                "WHERE recipient = ? ORDER BY id",
                (recipient,),
            ).fetchall()
            sizes = [
                row[-1] if weigh == "content" else line_weight(row[3], row[1], workspace, weigh)
                for row in rows
            ]
            taken = _fitting(sizes, max_bytes, at_least_one)
            if taken:
                db.execute(
                    "DELETE FROM messages WHERE recipient = ? AND id <= ?",
                    (recipient, rows[taken - 1][0]),
                )
        return Delivery(tuple(Message(*row[:5]) for row in rows[:taken]), len(rows) - taken)

    def sweep(self, receives: Callable[[str], bool], now: float | None = None) -> int:
        """Delete the messages of recipients that `receives` says can no longer receive
        and that every sweep since at least `UNRECEIVED_KEPT_S` ago found so; how many
        went. A recipient found able to receive again starts afresh."""
        with self._sweeping:
            return self._sweep(receives, now)

    def _sweep(self, receives: Callable[[str], bool], now: float | None) -> int:
        at = time.time() if now is None else now
        with self._lock:
            recipients = [
                str(row[0]) for row in self._db.execute("SELECT DISTINCT recipient FROM messages")
            ]
        gone_since = self._gone_since
        held = set(recipients)
        for recipient in [r for r in gone_since if r not in held]:
            del gone_since[recipient]  # drained or deleted since
        gone = []
        for recipient in recipients:
            if receives(recipient):
                gone_since.pop(recipient, None)
                continue
            since = gone_since.setdefault(recipient, at)
            if at - since >= UNRECEIVED_KEPT_S:
                gone.append(recipient)
        removed = 0
        if gone:
            with self._write() as db:
                for recipient in gone:
                    removed += db.execute(
                        "DELETE FROM messages WHERE recipient = ?", (recipient,)
                    ).rowcount
            for recipient in gone:
                gone_since.pop(recipient, None)
        return removed

    def sweep_due(self, receives: Callable[[str], bool], now: float | None = None) -> int:
        """`sweep`, at most once per `SWEEP_EVERY_S` (a store just opened sweeps at its
        first call)."""
        if not self._sweeping.acquire(blocking=False):
            return 0  # another is under way
        try:
            started = time.monotonic()
            if self._swept_at is not None and started - self._swept_at < SWEEP_EVERY_S:
                return 0
            self._swept_at = started
            return self._sweep(receives, now)
        finally:
            self._sweeping.release()

    def state(self, identity: str, previews: int = 3) -> InboxState:
        with self._lock:
            count, total, oldest = self._db.execute(
                "SELECT count(*), coalesce(sum(bytes), 0), min(pushed_at) FROM messages "
                "WHERE recipient = ?",
                (identity,),
            ).fetchone()
            rows = self._db.execute(
                "SELECT id, sender, recipient, substr(content, 1, ?), pushed_at FROM messages "
                "WHERE recipient = ? ORDER BY id LIMIT ?",
                (PREVIEW_CHARS, identity, previews),
            ).fetchall()
            sent = self._db.execute(
                "SELECT recipient, count(*) FROM messages WHERE sender = ? "
                "GROUP BY recipient ORDER BY recipient",
                (identity,),
            ).fetchall()
        return InboxState(
            count,
            total,
            oldest,
            tuple(Message(*row) for row in rows),
            tuple((str(r), int(n)) for r, n in sent),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def inbox_files(path: str | Path) -> list[Path]:
    """The files of the inbox store at `path` that exist: the database and its -wal and
    -shm files, which hold its latest messages (moved together when its workspace is
    removed)."""
    found = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")]
    return [file for file in found if os.path.lexists(file)]


def _fitting(sizes: list[int], max_bytes: int | None, at_least_one: bool) -> int:
    """How many messages of `sizes` (oldest first) a drain of `max_bytes` takes."""
    if max_bytes is None:
        return len(sizes)
    total = 0
    for taken, size in enumerate(sizes):
        total += size
        if total > max_bytes and not (taken == 0 and at_least_one):
            return taken
    return len(sizes)


# memctl's line of a drained message, "- TIME from SENDER in WORKSPACE: CONTENT", but its
# sender, workspace and content; TIME is the drain's `pushed_at`, RFC 3339 to the
# millisecond in UTC, always 24 characters.
_LINE_FRAME = len("- 2026-12-01T18:40:00.123Z") + len(" from ") + len(" in ") + len(": ")
# What joins a line to the next: a line feed, escaped in hook-json's JSON string.
_LINE_JOIN = {"plain": len("\n"), "hook-json": len("\\n")}


def line_weight(content: str, sender: str, workspace: str, form: str) -> int:
    """The bytes a message's line takes of memctl's prompt output in `form` (plain or
    hook-json), the line feed that joins it to the next included: never below what is
    printed, so that any number of messages keep to a budget of their summed weights."""
    named = printed_weight(sender, form) + printed_weight(workspace, form)
    return _LINE_FRAME + named + printed_weight(content, form) + _LINE_JOIN[form]


# What memctl ends a line at (str.splitlines' line ends), each printed as an indented
# line feed: "\n  " in plain, "\\n  " inside hook-json's JSON string. (memctl drops a
# carriage return; "\r\n" is counted as one line end, a lone "\r" as one.)
_LINE_ENDS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_INDENTED_END = {"plain": len("\n  "), "hook-json": len("\\n  ")}
# What else JSON escapes (memctl prints with ensure_ascii=False, so only these): a tab
# as "\\t", a quote and a backslash with a backslash, another control character as
# "\\uXXXX" or "\\b". memctl keeps tabs, quotes and backslashes and drops the others,
# which are counted as if kept.
_JSON_EXTRA = {
    ch: len(json.dumps(ch)) - 2 - 1
    for ch in [*map(chr, range(0x20)), '"', "\\"]
    if ch not in _LINE_ENDS
}


def printed_weight(content: str, form: str) -> int:
    """The bytes `content` takes as memctl prints it in `form` (plain or hook-json): its
    UTF-8 bytes, each line end as an indented line feed, and in JSON the escapes of
    tabs, quotes, backslashes and other control characters. Exact for what memctl
    keeps of a message; what it drops (control characters, blanks at either end)
    counts as if kept, so the weight is never below what is printed."""
    size = len(content.encode("utf-8", "surrogatepass"))
    indented = _INDENTED_END[form]
    for end in _LINE_ENDS:
        found = content.count(end)
        if found:
            size += found * (indented - len(end.encode("utf-8")))
    size -= content.count("\r\n") * indented  # one line end, not two
    if form == "hook-json":
        size += sum(extra * content.count(ch) for ch, extra in _JSON_EXTRA.items())
    return size


def _readable(content: str) -> bool:
    """Whether `content` holds something to read once blanks and the characters a
    drain leaves out (`prompt_text.left_out`) are set aside."""
    return any(not ch.isspace() and not left_out(ch) and ch not in INVISIBLE_KEPT for ch in content)
