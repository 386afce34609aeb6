"""Sources: reading and parsing one workspace's `.mem` files into what a snapshot
serves (`SourceFile`, `SourceProblem`), confined to the workspace's real path whatever
symbolic links say, or restored from the persisted parse cache when it holds the same
bytes. Nothing here decides when new bytes are served (`memhubd.runtime.saves`) or
composes a snapshot (`memhubd.runtime.snapshot`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memhubd.lang import Document, ParseError, as_read, parse_text
from memhubd.model import Declaration
from memhubd.model.workspace import source_files
from memhubd.runtime.confine import StatKey, read_confined
from memhubd.schema import TypeRegistry

if TYPE_CHECKING:
    from memhubd.runtime.registry import RegistryState


@dataclass(frozen=True, slots=True)
class SourceProblem:
    """Why part of a workspace is not what is on disk right now."""

    kind: str  # "parse_error" | "schema_error" | "read_error" | "outside_workspace"
    file: str
    line: int
    column: int
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One `.mem` file as served: its bytes' digest and the document served for it."""

    path: str
    digest: str
    document: Document | None  # the last good parse; None if it never parsed
    problem: SourceProblem | None  # set while the bytes on disk do not parse
    text: str = ""  # the source of `document` (what is served, even while disk is broken)
    stat: StatKey = (0, 0, 0, 0)  # (mtime_ns, size, inode, ctime_ns) when last read
    # The document's declarations typed with `typed_with`; rebuilt when the registry changes.
    typed: tuple[Any, ...] = ()
    typed_with: Any = None
    segment: Any = None  # the lexical index segment of `typed`, reused while `typed` is

    def with_types(self, registry: TypeRegistry) -> SourceFile:
        if self.typed_with is registry or self.document is None:
            return self
        resolve = registry.resolve
        typed = tuple(
            Declaration.from_raw(raw, resolve(raw.kind)) for raw in self.document.declarations
        )
        return dataclasses.replace(self, typed=typed, typed_with=registry, segment=None)

    def with_segment(self) -> SourceFile:
        if self.segment is not None or not self.typed:
            return self
        from memhubd.index.segment import build_segment

        return dataclasses.replace(self, segment=build_segment(self.typed))


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# A saved index is updated for the files changed since it was saved, unless more than
# a quarter of them (and more than this many) did: composing from nothing is then cheaper.
_FEW_CHANGED = 8

EMPTY_DIGEST = content_digest(b"")
REFUSED_DIGEST = "refused"


# The stat saved with a last good parse kept for bytes that did not load: no file has
# it, so a start always reads such a file again (`Saved.last_good`).
NEVER_SEEN: StatKey = (-1, -1, -1, -1)


class Saved:
    """What an earlier run saved of this workspace, for one first build: files whose
    stat is what the consolidated snapshot recorded are served from it unread; others
    are read, and restored from their entry when it holds exactly their bytes. The
    composed index saved with the snapshot is restored over the files served from it,
    and updated for the others (`index_for`)."""

    def __init__(self, cache: Any, root: str, registry_state: RegistryState) -> None:
        from memhubd.runtime.cache import registry_key

        self.cache = cache
        self.root = root
        self.types = registry_key(registry_state.fingerprint)
        self.registry = registry_state.registry
        self.consolidated, self.index, self.views = cache.load_snapshot(root, self.types)
        self.unread: dict[str, Any] = {}  # path -> segment of a file served unread
        self.changed: dict[str, Any] = {}  # path -> what the snapshot held of a changed file

    def by_stat(self, path: str, stat: StatKey) -> SourceFile | None:
        held = self.consolidated.pop(path, None)
        if held is None:
            return None
        if held[0] != stat:
            self.changed[path] = held
            return None
        restored = self._restored(path, held)
        if restored is not None:
            self.unread[path] = restored.segment
        return restored

    def _restored(self, path: str, held: Any) -> SourceFile | None:
        """The file as the snapshot held it (its stat, digest, text and entry)."""
        stat, digest, text, saved = held
        entry = self.cache.restore(saved, path, digest, text, self.registry, where="snapshot")
        if entry is None:
            return None
        document, typed, segment = entry
        return SourceFile(path, digest, document, None, text, stat, typed, self.registry, segment)

    def unlisted(self, path: str) -> SourceFile | None:
        """What the last run served of `path`, a file under a directory this start
        cannot list: taken out of the snapshot, restored from its entry."""
        held = self.consolidated.pop(path, None)
        return None if held is None else self._restored(path, held)

    def index_for(self, segments: list[Any]) -> Any:
        """The saved index updated to `segments` (the build's, in order), or None when
        there is none or composing from nothing costs less (most files changed). A
        saved index that does not fit its files is ignored with a log line."""
        if self.index is None:
            return None
        from memhubd.index.persist import restore_index
        from memhubd.index.workspace import WorkspaceIndex
        from memhubd.runtime.cache import log

        paths, data = self.index
        self.index = None  # one use: its segments are the build's from now on
        before = [self._segment_before(path) for path in paths]
        if any(segment is None for segment in before):
            return None
        changed = sum(1 for path in paths if path not in self.unread) + abs(
            len(segments) - len(paths)
        )
        if changed > max(_FEW_CHANGED, max(len(paths), len(segments)) // 4):
            return None
        try:
            index = restore_index(data, before)
        except Exception as error:  # sealed by us yet not what we write: never served
            log.warning("parse cache snapshot index unusable", root=self.root, error=str(error))
            return None
        log.info("parse cache snapshot index restored", root=self.root, files_changed=changed)
        if len(before) == len(segments) and all(map(operator.is_, before, segments)):
            return index
        return WorkspaceIndex(segments, previous=index)

    def _segment_before(self, path: str) -> Any:
        """The segment the snapshot held for `path`: served unread, or decoded from what
        it held for a file that changed or went away since."""
        found = self.unread.get(path)
        if found is not None:
            return found
        held = self.changed.get(path) or self.consolidated.get(path)
        if held is None:
            return None
        _stat, digest, text, saved = held
        entry = self.cache.restore(
            saved, path, digest, text, self.registry, where="snapshot", served=False
        )
        return None if entry is None else entry[2]

    def by_digest(self, path: str, digest: str, text: str) -> tuple[Any, ...] | None:
        """(document, typed declarations, segment, registry) for exactly these bytes."""
        entry = self.cache.get(self.root, path, digest, self.types, text, self.registry)
        return None if entry is None else (*entry, self.registry)

    def last_good(self, path: str) -> SourceFile | None:
        """What an earlier run served for `path` when its bytes changed since (read
        again, they may not load): the last good parse is served in their place across
        a restart as it is while running. None when nothing was saved of it, or when
        what was saved is not what the last run served last (the snapshot file lags
        behind the entries; serving an older version could bring back a deleted rule)."""
        held = self.changed.get(path)
        if held is None:
            return None
        # The snapshot file is rewritten at most every few minutes, so what it holds of
        # a file may be older than what was served last: only a version whose entry the
        # last save kept (it prunes every other) is that.
        if not self.cache.has_entry(self.root, path, held[1], self.types):
            return None
        return self._restored(path, held)


def load_file(
    path: str, previous: SourceFile | None, real_root: str, saved: Saved | None = None
) -> SourceFile | None:
    """Read and parse `path` (None if it is gone). Raises Refused."""
    found = read_confined(path, real_root)
    if found is None:
        return None
    data, stat = found
    digest = content_digest(data)
    if previous is not None and previous.digest == digest:
        return dataclasses.replace(previous, stat=stat)
    if previous is None and saved is not None:
        restored = _restore(path, digest, data, stat, saved)
        if restored is not None:
            return restored
    try:
        text = as_read(data.decode("utf-8"))  # as memdsl reads sources (text mode)
    except UnicodeDecodeError as error:
        problem = SourceProblem("read_error", path, 0, 0, f"not UTF-8: {error}")
        return _broken(_before(previous, path, saved), path, digest, problem, stat)
    try:
        document = parse_text(text, file=path)
    except ParseError as error:
        problem = SourceProblem("parse_error", path, error.line, error.column, error.message)
        return _broken(_before(previous, path, saved), path, digest, problem, stat)
    return SourceFile(path, digest, document, None, text, stat)


def _before(previous: SourceFile | None, path: str, saved: Saved | None) -> SourceFile | None:
    """What was served of `path` before bytes that do not load: the running snapshot's,
    or on a first build what the last run served (its last good parse, across a
    restart as while running: memory never vanishes because a file broke meanwhile)."""
    if previous is None and saved is not None:
        return saved.last_good(path)
    return previous


def _restore(path: str, digest: str, data: bytes, stat: StatKey, saved: Saved) -> SourceFile | None:
    """The file as a previous run parsed, typed and indexed the same bytes, if saved."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # parsed (and reported) as usual
    text = as_read(text)
    entry = saved.by_digest(path, digest, text)
    if entry is None:
        return None
    document, typed, segment, registry = entry
    return SourceFile(path, digest, document, None, text, stat, typed, registry, segment)


def _broken(
    previous: SourceFile | None,
    path: str,
    digest: str,
    problem: SourceProblem,
    stat: StatKey,
) -> SourceFile:
    if previous is None:
        return SourceFile(path, digest, None, problem, "", stat)
    return dataclasses.replace(previous, digest=digest, problem=problem, stat=stat)


def walk_sources(root: str, unlisted: list[str] | None = None) -> list[str]:
    """The workspace's sources, as memdsl walks them. `unlisted`, when given, gets
    the directories under `root` the walk could not list (their sources are left out,
    as memdsl leaves them out; the daemon keeps serving what they held)."""

    def failed(error: OSError) -> None:
        if unlisted is not None and error.filename is not None:
            unlisted.append(os.fspath(error.filename))

    # Emacs lock files (`.#name.mem`) are symbolic links to nowhere, never sources.
    return [
        p for p in source_files(root, onerror=failed) if not os.path.basename(p).startswith(".#")
    ]


def is_source_under(path: str, root: str) -> bool:
    # What `walk_sources` would list, for a path named the way `os.walk(root)` names it.
    return (
        path.startswith(root + os.sep)
        and path.endswith(".mem")
        and not os.path.basename(path).startswith(".#")
        and os.path.normpath(path) == path
    )
