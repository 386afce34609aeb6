"""The drawer store's interface and the values that cross it.

Everything above `recall/store` talks to a `DrawerStore`; only implementations of it
speak SQL, so that a PostgreSQL store can be added beside the SQLite one.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memhubd.sqlite import UnusableDatabase

SOURCE_KINDS = ("claude-code", "chatgpt", "codex", "slack", "markdown", "text", "manual")
MAX_IMPORTANCE = 5
CONTEXT_WEIGHT = 0.75  # tuned with fusion on the LoCoMo dev set (bench/recall_locomo.py)


class StoreError(RuntimeError):
    """The store cannot be opened or used as asked; the message says why and what to do."""


class UnusableStore(StoreError, UnusableDatabase):
    """The database is not a recall store this memhub can open (not SQLite, damaged)."""


class SchemaTooNew(UnusableStore):
    """The database was written by a newer memhub than this one."""


class IndexWarming(StoreError):
    """A search that would have to rank by statistics that count drawers hidden from
    its caller, while the index that counts only the caller's is being built."""

    def __init__(self, path: object, message: str) -> None:
        super().__init__(message)
        self.path = path


class VectorsUnavailable(StoreError):
    """Vectors exist but were written by another embedder (or dimension) than the caller's."""


@dataclass(frozen=True, slots=True)
class NewDrawer:
    """A drawer about to be written. `content` is stored exactly as given."""

    id: str
    room: str
    content: str
    source_file: str
    source_kind: str
    chunk_index: int
    content_hash: str
    identity: str
    importance: int = 0
    locator: str = ""  # where in the source: "line 12", "message 3f2a…", "chars 800-1600"
    speaker: str | None = None
    said_at: int | None = None  # when it was said (epoch seconds), if the source knows
    readers: tuple[str, ...] | None = None  # roles that may see it; None: everyone
    context: str = ""  # neighbouring text, searched with a lower weight, never returned
    created_at: int | None = None  # None: now; else kept from the drawer this one restores


@dataclass(frozen=True, slots=True)
class Drawer:
    """A stored drawer."""

    rowid: int
    id: str
    room: str
    content: str
    source_file: str
    source_kind: str
    chunk_index: int
    importance: int
    content_hash: str
    locator: str
    speaker: str | None
    said_at: int | None
    created_at: int
    updated_at: int
    deleted_at: int | None
    identity: str
    readers: tuple[str, ...] | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "drawer_id": self.id,
            "room": self.room,
            "content": self.content,
            "source_file": self.source_file,
            "source_kind": self.source_kind,
            "chunk_index": self.chunk_index,
            "locator": self.locator,
            "importance": self.importance,
            "speaker": self.speaker,
            "said_at": self.said_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "deleted_at": self.deleted_at,
            "identity": self.identity,
            "readers": list(self.readers) if self.readers is not None else None,
        }


@dataclass(frozen=True, slots=True)
class DrawerFilter:
    """Which live drawers an operation may touch. `roles=None` sees every drawer;
    otherwise a drawer with `readers` is seen only by a caller holding one of them."""

    rooms: tuple[str, ...] | None = None
    source_kinds: tuple[str, ...] | None = None
    since: int | None = None  # on said_at, else created_at (epoch seconds, inclusive)
    until: int | None = None  # exclusive
    identities: tuple[str, ...] | None = None
    roles: frozenset[str] | None = None

    @property
    def narrows(self) -> bool:
        """True when anything but role visibility restricts the drawers."""
        return any(
            value is not None
            for value in (self.rooms, self.source_kinds, self.since, self.until, self.identities)
        )


@dataclass(frozen=True, slots=True)
class TaxonomyEntry:
    room: str
    keywords: tuple[str, ...]
    display_name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "room": self.room,
            "display_name": self.display_name,
            "keywords": list(self.keywords),
        }


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One write, from any door: who, through which door, what, and its details."""

    identity: str
    door: str
    action: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    at: int = 0  # filled in by the store when 0
    seq: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": self.at,
            "identity": self.identity,
            "door": self.door,
            "action": self.action,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True, slots=True)
class Existing:
    """What the store already holds under one id."""

    rowid: int
    id: str
    content_hash: str
    deleted: bool
    retired: bool = False  # deleted because its source changed, not on purpose
    context: str = ""  # its neighbouring text ("" when none; read by `chunks_of_source` only)
    identity: str = ""  # who stored it (read by `find` and `chunks_of_source`)
    # Its room (read by `find` and `chunks_of_source`): rooms the id spells alike
    # (`billing-service`, `billing_service`) are still two rooms, so a clash of ids is no
    # match of drawers.
    room: str | None = None
    # The roles that may read it, None for every caller (read by `find` and
    # `chunks_of_source`), and its importance (read by `chunks_of_source` only).
    readers: tuple[str, ...] | None = None
    importance: int = 0
    # Where in its source the text stands (`chars A-B`, `lines A-B`; read by
    # `chunks_of_source` only).
    locator: str = ""
    source_file: str = ""  # the source it belongs to (read by `find` only)


@dataclass(frozen=True, slots=True)
class Copy:
    """Another file's place for a stored drawer's text: the file counted that chunk as
    a duplicate of the drawer, which belongs to another source."""

    drawer: int  # the drawer's rowid
    chunk_index: int
    locator: str
    source_kind: str
    identity: str  # who ingested the file (the drawer's own writer when recorded)
    # The readers that ingest named (None: it named none, so every caller), unless
    # `readers_known` is false (a copy recorded before the store kept them): what decides,
    # at a hand-over, whether a file the writer stored no chunk of may show its name to
    # the drawer's readers (see `DrawerStore.copy_sources`).
    readers: tuple[str, ...] | None
    readers_known: bool


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    inserted: tuple[str, ...]  # drawer ids
    replaced: tuple[str, ...]  # ids soft-deleted because their chunk changed
    # ids of drawers the source dropped that another file holds: stored again, cited
    # from that file (see `write`), not retired
    handed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EmbedderRecord:
    name: str
    dimension: int


@dataclass(frozen=True, slots=True)
class StoreStatus:
    schema_version: int
    drawer_count: int
    deleted_count: int
    vector_count: int
    rooms: tuple[tuple[str, int], ...]
    taxonomy_count: int
    embedder: EmbedderRecord | None
    db_size_bytes: int
    wal_size_bytes: int


@dataclass(frozen=True, slots=True)
class Facets:
    """What search's boosts read of some drawers: room, source file and speaker, one entry
    per rowid in the order asked. A rowid no longer stored has `stored` False, room and
    source "" and speaker None. None of it changes once a drawer is written."""

    stored: list[bool]
    rooms: list[str]
    sources: list[str]
    speakers: list[str | None]


@dataclass(frozen=True, slots=True)
class RankedRow:
    """One candidate from one retriever: its rank is its position in the returned list."""

    rowid: int
    score: float


@dataclass(frozen=True, slots=True)
class NewTriple:
    """A knowledge-graph edge about to be written (times in epoch seconds)."""

    id: str
    subject: str
    predicate: str
    object: str
    identity: str
    valid_from: int | None = None  # None: now
    confidence: float = 1.0
    source_drawer: str | None = None
    # The id it is stored under when another fact holds `id` (8 hex digits of a hash
    # clash): "" for none. `add_triple` answers with the id it used.
    long_id: str = ""


class PeriodsOverlap(Exception):
    """A new period of a triple would start before an ended period of it ends."""

    def __init__(self, periods: list[Triple]) -> None:
        super().__init__(f"{len(periods)} ended period(s) overlap")
        self.periods = periods


@dataclass(frozen=True, slots=True)
class Triple:
    """One validity period of a knowledge-graph edge: valid from `valid_from`
    (inclusive) until `valid_to` (exclusive; None: still valid)."""

    rowid: int
    id: str
    subject: str
    predicate: str
    object: str
    valid_from: int | None
    valid_to: int | None
    confidence: float
    source_drawer: str | None
    identity: str
    created_at: int


@dataclass(frozen=True, slots=True)
class TripleFilter:
    """Which stored triples to read: exact, case-sensitive matches; `entity` matches the
    subject or the object; `at` keeps the periods covering that instant."""

    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    entity: str | None = None
    at: int | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class TripleStats:
    total: int  # validity periods
    active: int  # periods valid at the instant asked about
    entities: frozenset[str]  # distinct subjects and objects
    predicates: dict[str, int]  # periods per predicate
    upcoming: int = 0  # periods that start after the instant asked about


class DrawerStore(abc.ABC):
    """One workspace's drawers, their full-text index, vectors, taxonomy and audit trail.

    Writes are serialized (one writer at a time per database, across threads and
    processes) and each call is one transaction; reads never wait for a writer.
    """

    schema_version: int

    # -- reads ------------------------------------------------------------------------
    @abc.abstractmethod
    def find(self, ids: Sequence[str]) -> dict[str, Existing]: ...

    @abc.abstractmethod
    def chunks_of_source(self, source_file: str) -> list[tuple[int, Existing]]:
        """(chunk index, drawer) of every live drawer of one source, in rowid order,
        with its context, writer, room, readers and locator: two identities' drawers may share an index (the
        same text stored under the ids each may read)."""

    @abc.abstractmethod
    def rooms_of_source(self, source_file: str) -> list[tuple[str, str, tuple[str, ...] | None]]:
        """(room, writer, readers) of every live drawer of one source, by chunk index:
        the room a re-ingest that names none keeps the source in."""

    @abc.abstractmethod
    def copies_of_source(self, source_file: str) -> frozenset[Copy]:
        """The copies recorded for one file, by whoever ingested it (see `write`)."""

    @abc.abstractmethod
    def copy_sources(self, rowids: Sequence[int]) -> dict[int, set[str]]:
        """For each of these live drawers that another file holds (a copy recorded by
        the drawer's own writer, in a file other than the drawer's source) and may be
        handed to, those files: a file whose live chunks stored by the drawer's writer
        every reader of the drawer may read, as their readers stand now, or, for a file
        the writer stored no chunk of, whose copy's readers are known and include every
        reader of the drawer as it stands now (`write` hands over by the same rule)."""

    @abc.abstractmethod
    def writers_copies(self, rowids: Sequence[int]) -> dict[int, dict[str, Copy]]:
        """The copies `copy_sources` starts from, by drawer and file, before the
        readers of the files are looked at (a dry run looks at them as the earlier
        files of its batch would leave them)."""

    @abc.abstractmethod
    def set_copies(self, source_file: str, copies: Iterable[Copy]) -> None:
        """Record `copies` as what one file holds of drawers stored under other sources
        (in place of every copy recorded for it before)."""

    @abc.abstractmethod
    def deleted_of_source(self, source_file: str) -> list[tuple[int, Existing, str]]:
        """(chunk index, drawer, content) of every drawer of one source deleted on
        purpose (not retired by its source) and not yet purged, with its writer, room
        and readers: a chunk still growing in its source (a watched exchange) must stay
        deleted as it grows."""

    @abc.abstractmethod
    def sources(self) -> set[str]:
        """The source of every drawer row, live, soft-deleted or retired (one deleted may
        be ingested again): what still needs its ingest lock after a purge."""

    @abc.abstractmethod
    def get(self, rowids: Sequence[int]) -> dict[int, Drawer]: ...

    @abc.abstractmethod
    def facets(self, rowids: Sequence[int]) -> Facets:
        """Room, source file and speaker of these drawers, deleted or not (cheaper than
        `get`: no content)."""

    @abc.abstractmethod
    def get_by_id(self, drawer_id: str, *, include_deleted: bool = False) -> Drawer | None: ...

    @abc.abstractmethod
    def lexical(
        self,
        terms: Sequence[str],
        where: DrawerFilter,
        limit: int,
        *,
        context_weight: float = CONTEXT_WEIGHT,
    ) -> list[RankedRow]:
        """BM25 over the OR of `terms`, each matched as a quoted phrase; best first.
        Words of a drawer's context count `context_weight` times a word of its content."""

    @abc.abstractmethod
    def nearest(
        self, vector: np.ndarray, embedder: EmbedderRecord, where: DrawerFilter, limit: int
    ) -> list[RankedRow]:
        """Exact cosine ranking of live drawers against a unit `vector`; best first.
        Raises VectorsUnavailable when the stored vectors came from another embedder."""

    @abc.abstractmethod
    def most_similar(
        self, vectors: np.ndarray, embedder: EmbedderRecord, where: DrawerFilter | None = None
    ) -> list[tuple[int, float] | None]:
        """For each row of `vectors`, the live drawer most similar to it (rowid, cosine),
        among those `where` lets through (every live drawer without it)."""

    @abc.abstractmethod
    def top(self, where: DrawerFilter, limit: int) -> list[Drawer]:
        """Live drawers by importance, then recency."""

    def recent(self, where: DrawerFilter, limit: int) -> list[Drawer]:
        """Live drawers, newest first (when said, else when stored)."""
        raise NotImplementedError(f"{type(self).__name__} lists no recent drawers")

    def recent_from_source(
        self, where: DrawerFilter, source_file: str, prefixes: Sequence[str], limit: int
    ) -> list[Drawer]:
        """Live drawers cited as `source_file` whose content starts with one of
        `prefixes` (exactly, case-sensitive), newest first as `recent` lists them."""
        raise NotImplementedError(f"{type(self).__name__} lists no recent drawers")

    @abc.abstractmethod
    def rooms(self, where: DrawerFilter) -> dict[str, int]: ...

    def rooms_with(self, where: DrawerFilter) -> set[str]:
        """Which of `where.rooms` hold at least one drawer `where` lets through."""
        return {room for room, count in self.rooms(where).items() if count}

    @abc.abstractmethod
    def taxonomy(self) -> list[TaxonomyEntry]: ...

    @abc.abstractmethod
    def embedder(self) -> EmbedderRecord | None: ...

    @abc.abstractmethod
    def status(self, where: DrawerFilter | None = None) -> StoreStatus:
        """Counts and sizes, read at one moment. With `where`, the rooms, deleted and
        vector counts are those of the drawers it lets through (a caller's view);
        `drawer_count` is every live drawer's."""

    @abc.abstractmethod
    def audit(self, limit: int = 100) -> list[AuditEntry]: ...

    @abc.abstractmethod
    def iter_live(self, batch: int, after: int = 0) -> Iterator[list[Drawer]]:
        """Every live drawer with a rowid above `after`, in rowid order, `batch` at a time."""

    # -- writes -----------------------------------------------------------------------
    @abc.abstractmethod
    def write(
        self,
        drawers: Sequence[NewDrawer],
        vectors: np.ndarray | None,
        embedder: EmbedderRecord | None,
        audit: AuditEntry,
        *,
        replace: Sequence[int] = (),
        revive: Sequence[int] = (),
        moved: Sequence[tuple[int, int, str]] = (),
        copies: tuple[str, Iterable[Copy]] | None = None,
    ) -> WriteOutcome:
        """Insert drawers (and their vectors, row for row) and retire `replace` (a soft
        delete marked as the source's doing), all in one transaction together with the
        audit entry. `revive` are retired rows whose ids `drawers` take again: they give
        their ids up first (and stay deleted until a purge). `moved` are `(rowid,
        chunk_index, locator)` of live rows whose chunk is now at another place in
        their source: only those two columns change. A drawer's `created_at`, when given,
        is kept (a drawer stored again in place of a retired one of the same content).
        `copies`: `(source, copies)` as `set_copies` records them, first. Rows stored again
        under their id (`revive`) take their copies with them.

        A row of `replace` (not of `revive`) that another file holds (`copy_sources`: the
        first by name of those it may be handed to) is handed to that file instead: retired, and stored again under its id with that
        file's citation, place and kind (its text, vector, writer, readers, importance
        and times kept), so that it leaves no index and no cache sees a row change."""

    @abc.abstractmethod
    def soft_delete(self, drawer_id: str, audit: AuditEntry) -> Drawer | None: ...

    @abc.abstractmethod
    def soft_delete_many(self, drawer_ids: Sequence[str], audit: AuditEntry) -> list[Drawer]:
        """Soft-delete (on purpose) those of these drawers still live, in one transaction,
        each audited as `audit` with its `drawer_id` (a drawer deleted on purpose has a
        `delete` entry naming it); returns those deleted, in the order given."""

    @abc.abstractmethod
    def purge(self, before: int | None, audit: AuditEntry) -> int: ...

    @abc.abstractmethod
    def prune_audit(self, before: int, audit: AuditEntry) -> int:
        """Remove the audit entries written before `before` (epoch seconds), then audit
        that with `audit` (its detail gains `audit_removed`); returns how many went."""

    def lexical_ready(self, roles: frozenset[str] | None) -> bool:
        """Whether a search by a caller of `roles` can be ranked now without waiting
        (see `IndexWarming`); a store with no such wait says True."""
        return True

    def reclaim(self) -> int:
        """Give space that purges freed back to the file system, when it is worth it;
        returns the bytes given back. Writes to this store wait meanwhile."""
        return 0

    @abc.abstractmethod
    def set_taxonomy(self, entry: TaxonomyEntry, audit: AuditEntry) -> None: ...

    @abc.abstractmethod
    def remove_taxonomy(self, room: str, audit: AuditEntry) -> bool: ...

    @abc.abstractmethod
    def iter_unstaged(self, batch: int, dimension: int) -> Iterator[list[Drawer]]:
        """Every live drawer with no staged vector of `dimension` floats, in rowid order,
        `batch` at a time (what a reindex must still embed before it commits)."""

    @abc.abstractmethod
    def stage_vectors(self, rowids: Sequence[int], vectors: np.ndarray, *, first: bool) -> None:
        """Write re-embedded vectors aside (`first` clears what an earlier run left)."""

    @abc.abstractmethod
    def commit_vectors(self, embedder: EmbedderRecord, audit: AuditEntry) -> int:
        """Swap the staged vectors in for every stored one, in one transaction (reindex).
        Returns how many vectors are now stored."""

    # -- knowledge graph ----------------------------------------------------------------
    @abc.abstractmethod
    def triples(self, where: TripleFilter, limit: int) -> list[Triple]:
        """Stored triple periods matching `where`, by valid_from then id (None first)."""

    def strongest_triples(self, where: TripleFilter, limit: int) -> list[Triple]:
        """Stored triple periods matching `where`, by confidence (highest first), then
        id, then valid_from (None as 0): the order of a graph query's answer."""
        raise NotImplementedError(f"{type(self).__name__} orders no triples by confidence")

    def triple_batches(self, batch: int) -> Iterator[list[Triple]]:
        """Every stored triple period, `batch` at a time, in rowid order, as one read."""
        raise NotImplementedError(f"{type(self).__name__} reads no triples in batches")

    @abc.abstractmethod
    def triple_stats(self, now: int) -> TripleStats:
        """Counts over every stored period (for merging with derived triples)."""

    @abc.abstractmethod
    def add_triple(self, triple: NewTriple, audit: AuditEntry) -> tuple[Triple, bool]:
        """Open a validity period for `triple.id` unless one is open; returns the open
        period and whether it was created now (audited only then). Raises
        `PeriodsOverlap`, writing nothing, when an ended period of the same id ends after
        the new one would start: one edge is never valid twice at the same instant."""

    @abc.abstractmethod
    def invalidate_triple(self, triple_id: str, at: int, audit: AuditEntry) -> Triple | None:
        """Close the open period of `triple_id` at `at` (never deletes); None if none is open."""

    @abc.abstractmethod
    def close(self) -> None: ...
