"""Snapshots: the immutable, parsed, typed and indexed state of one workspace at
one generation, and the builder that derives the next one from the previous.

The builder re-parses only files whose bytes changed and rebuilds the type
registry only when the manifest or a schema changed. A file that stops parsing
keeps its last good declarations (the workspace is then `degraded`); so does a
broken schema keep the last good registry. Nothing here touches the network or
the event loop: building runs in a worker thread.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from memhubd.lang import Document, ParseError, parse_text
from memhubd.model import Declaration, Workspace
from memhubd.model.workspace import cyclic_gc_paused, source_files
from memhubd.schema import SchemaError, TypeRegistry, registry_for_paths

MANIFEST = "memdsl.json"


@dataclass(frozen=True, slots=True)
class SourceProblem:
    """Why part of a workspace is not what is on disk right now."""

    kind: str  # "parse_error" | "schema_error" | "read_error"
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
    stat: tuple[int, int, int] = (0, 0, 0)  # (mtime_ns, size, inode) when last read
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


@dataclass(frozen=True, slots=True)
class RegistryState:
    fingerprint: tuple[tuple[str, str | None], ...]
    registry: TypeRegistry | None
    problem: SourceProblem | None


@dataclass(frozen=True, eq=False)  # identity semantics: snapshots key per-caller caches
class Snapshot:
    """Everything a read needs, frozen. Readers keep using it while the next one is built."""

    name: str
    root: str
    generation: int
    workspace: Workspace
    files: tuple[SourceFile, ...]
    registry_state: RegistryState
    built_at: float
    build_seconds: float
    reparsed: int
    root_problem: SourceProblem | None = None
    _lint_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _lint_cache: list[Any] = field(default_factory=list, repr=False, compare=False)

    @property
    def problems(self) -> list[SourceProblem]:
        found = [f.problem for f in self.files if f.problem is not None]
        if self.registry_state.problem is not None:
            found.insert(0, self.registry_state.problem)
        if self.root_problem is not None:
            found.insert(0, self.root_problem)
        return found

    @property
    def degraded(self) -> bool:
        return bool(self.problems)

    @property
    def health(self) -> str:
        return "degraded" if self.degraded else "healthy"

    def diagnostics(self) -> list[Any]:
        """Lint diagnostics of the served sources, computed once per snapshot."""
        if not self._lint_cache:
            with self._lint_lock:
                if not self._lint_cache:
                    from memhubd.lint import lint

                    self._lint_cache.append(lint(self.workspace))
        return self._lint_cache[0]


class WorkspaceUnavailable(Exception):
    """The workspace has never loaded successfully (e.g. its schema was broken from the start)."""

    def __init__(self, problem: SourceProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _registry_fingerprint(root: str) -> tuple[tuple[str, str | None], ...]:
    manifest = os.path.join(root, MANIFEST)
    data = _read(manifest)
    parts: list[tuple[str, str | None]] = [(manifest, None if data is None else _digest(data))]
    if data is not None:
        try:
            schemas = json.loads(data).get("schemas", [])
        except (ValueError, AttributeError):
            schemas = []
        if isinstance(schemas, list):
            for entry in schemas:
                if isinstance(entry, str) and entry.strip():
                    path = os.path.join(root, entry.strip())
                    schema = _read(path)
                    parts.append((path, None if schema is None else _digest(schema)))
    return tuple(parts)


def _load_registry(root: str, previous: RegistryState | None) -> RegistryState:
    fingerprint = _registry_fingerprint(root)
    if previous is not None and previous.fingerprint == fingerprint and previous.registry:
        return previous
    try:
        registry = registry_for_paths([root])
    except SchemaError as error:
        problem = SourceProblem("schema_error", os.path.join(root, MANIFEST), 0, 0, str(error))
        kept = previous.registry if previous is not None else None
        return RegistryState(fingerprint, kept, problem)
    return RegistryState(fingerprint, registry, None)


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def _load_file(path: str, previous: SourceFile | None) -> SourceFile | None:
    stat = _stat(path)
    if stat is None:
        return None  # vanished between the walk and the stat: treated as deleted
    if previous is not None and previous.stat == stat:
        return previous  # same inode, size and nanosecond mtime: not re-read
    data = _read(path)
    if data is None:
        return None
    digest = _digest(data)
    if previous is not None and previous.digest == digest:
        return dataclasses.replace(previous, stat=stat)
    last_good = previous.document if previous is not None else None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = SourceProblem("read_error", path, 0, 0, f"not UTF-8: {error}")
        return _broken(previous, path, digest, last_good, problem, stat)
    try:
        document = parse_text(text, file=path)
    except ParseError as error:
        problem = SourceProblem("parse_error", path, error.line, error.column, error.message)
        return _broken(previous, path, digest, last_good, problem, stat)
    return SourceFile(path, digest, document, None, text, stat)


def _broken(
    previous: SourceFile | None,
    path: str,
    digest: str,
    last_good: Document | None,
    problem: SourceProblem,
    stat: tuple[int, int, int],
) -> SourceFile:
    if previous is None:
        return SourceFile(path, digest, None, problem, "", stat)
    return dataclasses.replace(previous, digest=digest, problem=problem, stat=stat)


def build_snapshot(name: str, root: str, previous: Snapshot | None) -> Snapshot:
    """The next snapshot of `root`, reusing whatever did not change since `previous`.

    Raises WorkspaceUnavailable when there is no usable registry at all.
    """
    started = time.perf_counter()
    root = os.path.abspath(root)
    registry_state = _load_registry(root, previous.registry_state if previous else None)
    if registry_state.registry is None:
        assert registry_state.problem is not None
        raise WorkspaceUnavailable(registry_state.problem)
    known = {f.path: f for f in previous.files} if previous is not None else {}
    files: list[SourceFile] = []
    reparsed = 0
    root_problem = None
    if not os.path.isdir(root):
        # A vanished root is far more often a checkout or sync in progress than a
        # decision to forget everything: keep serving what was there.
        root_problem = SourceProblem("read_error", root, 0, 0, "workspace directory is missing")
        files = list(previous.files) if previous is not None else []
    for path in source_files(root) if root_problem is None else []:
        before = known.get(path)
        loaded = _load_file(path, before)
        if loaded is None:
            continue
        if before is None or loaded.digest != before.digest:
            reparsed += 1
        files.append(loaded)
    registry = registry_state.registry
    with cyclic_gc_paused():
        files = [f.with_types(registry).with_segment() for f in files]
    workspace = Workspace(
        declarations=[d for f in files for d in f.typed],
        files=[f.path for f in files if f.document is not None],
        registry=registry,
    )
    _index_from_segments(workspace, files)
    return Snapshot(
        name=name,
        root=root,
        generation=(previous.generation + 1) if previous is not None else 1,
        workspace=workspace,
        files=tuple(files),
        registry_state=registry_state,
        built_at=time.time(),
        build_seconds=time.perf_counter() - started,
        reparsed=reparsed,
        root_problem=root_problem,
    )


def _index_from_segments(workspace: Workspace, files: list[SourceFile]) -> None:
    """Compose the workspace index from per-file segments, so an edit costs one segment."""
    from memhubd.index.workspace import WorkspaceIndex, adopt_index

    segments = [f.segment for f in files if f.segment is not None]
    with cyclic_gc_paused():  # composing allocates ~100k small lists at 100k declarations
        adopt_index(workspace, WorkspaceIndex(segments, workspace.alias_map()))


def unchanged(previous: Snapshot, candidate: Snapshot) -> bool:
    """True when a rebuild found nothing new (same files, same bytes, same registry)."""
    return (
        previous.registry_state is candidate.registry_state
        and previous.root_problem == candidate.root_problem
        and len(previous.files) == len(candidate.files)
        and all(
            a.path == b.path and a.digest == b.digest and a.problem == b.problem
            for a, b in zip(previous.files, candidate.files, strict=True)
        )
    )
