"""Keyed proposals' answers kept on disk, so that a retry after a restart of the daemon
(a deploy, a crash) answers the proposal already made instead of making a second one.

One JSON Lines file per workspace name in the state directory
(`review-keys/<workspace>.jsonl`, mode 0600): a line per keyed proposal made, with the
workspace's root, so that another workspace given the name later never replays it.
Lines are only appended; the file is written again, with the live entries alone, when it
holds twice as many lines as a workspace keeps. A line that cannot be read (a crash in
the middle of a write, an edit by hand) is skipped with a log line, never trusted in
part. Nothing here is needed to serve: a file that cannot be read or written leaves the
keys in memory, as they were before it existed.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("memhubd.review")

FOLDER = "review-keys"


def key_file(state_dir: Path, name: str) -> Path:
    """Where workspace `name`'s kept answers are (archived with its other state when it
    is removed at run time)."""
    return state_dir / FOLDER / f"{name}.jsonl"


@dataclass(frozen=True, slots=True)
class KeptAnswer:
    """One keyed proposal's answer: who asked (name, roles) with which key, when (Unix
    time), the request's fingerprint and the answer given."""

    identity: str
    roles: frozenset[str]
    key: str
    made_at: float
    fingerprint: str
    answer: dict[str, Any]


class KeyFile:
    """The kept answers of one workspace (see the module's text)."""

    def __init__(self, state_dir: Path, name: str, root: str) -> None:
        self.path = key_file(state_dir, name)
        self.root = root
        self.lines = 0  # lines in the file, read or appended

    def read(self) -> Iterator[KeptAnswer]:
        """The answers kept for this workspace, oldest first (none when there is no
        file or it cannot be read)."""
        try:
            with open(self.path, encoding="utf-8") as file:
                lines = file.readlines()
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as error:
            log.warning("proposal keys not read", path=str(self.path), error=str(error))
            return
        self.lines = len(lines)
        skipped = 0
        for line in lines:
            try:
                entry = json.loads(line)
                kept = KeptAnswer(
                    identity=str(entry["identity"]),
                    roles=frozenset(str(r) for r in entry["roles"]),
                    key=str(entry["key"]),
                    made_at=float(entry["made_at"]),
                    fingerprint=str(entry["fingerprint"]),
                    answer=dict(entry["answer"]),
                )
                root = str(entry["root"])
            except (ValueError, KeyError, TypeError):
                skipped += 1
                continue
            if root == self.root:
                yield kept
        if skipped:
            log.warning("proposal key lines skipped", path=str(self.path), lines=skipped)

    def append(self, kept: KeptAnswer) -> None:
        line = _line(kept, self.root).encode()
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(descriptor, "r+b", buffering=0) as file:
                size = os.fstat(descriptor).st_size
                if size and os.pread(descriptor, 1, size - 1) != b"\n":
                    # A line cut short by a crash: this one starts on a line of its own,
                    # or it would be skipped with the torn one.
                    line = b"\n" + line
                file.write(line)
                os.fsync(descriptor)
        except OSError as error:
            log.warning("proposal key not kept on disk", path=str(self.path), error=str(error))
            return
        self.lines += 1

    def rewrite(self, live: list[KeptAnswer]) -> None:
        """Replace the file with `live` alone (atomically: a crash leaves the old file)."""
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(
                dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
            )
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                    file.writelines(_line(kept, self.root) for kept in live)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as error:
            log.warning("proposal keys not compacted", path=str(self.path), error=str(error))
            return
        self.lines = len(live)


def _line(kept: KeptAnswer, root: str) -> str:
    return (
        json.dumps(
            {
                "root": root,
                "identity": kept.identity,
                "roles": sorted(kept.roles),
                "key": kept.key,
                "made_at": kept.made_at,
                "fingerprint": kept.fingerprint,
                "answer": kept.answer,
            },
            separators=(",", ":"),
        )
        + "\n"
    )
