"""Ingest: one source's text → format → chunks → room → drawers, in one transaction.

Per source: decode and detect, parse, chunk, choose the room, then under the source's
lock compare with what is stored (same chunk: duplicate, given its new place if it
moved; changed chunk: replaced), embed what is new, warn about near-duplicates, and
write. A source that cannot be read or parsed is reported and nothing of it is stored.
No I/O except the store, the lock file and the embedder.
"""

from __future__ import annotations

import contextvars
import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from memhubd.recall import rooms as taxonomy_rooms
from memhubd.recall.context import leave_out, with_day
from memhubd.recall.embed import EmbedderError
from memhubd.recall.ids import DEFAULT_ROOM, LONG_HASH, SHORT_HASH, content_hash, drawer_id
from memhubd.recall.ingest.chunk import Chunk, chunk
from memhubd.recall.ingest.formats import (
    FORMATS,
    FormatError,
    Parsed,
    detect,
    json_lines,
    parse,
)
from memhubd.recall.ingest.lock import SourceLock
from memhubd.recall.store import (
    AuditEntry,
    Copy,
    Drawer,
    DrawerFilter,
    DrawerStore,
    EmbedderRecord,
    Existing,
    NewDrawer,
    VectorsUnavailable,
)

# Cosine at or above which a new drawer is reported as a near-duplicate of a stored
# one (see docs/recall.md for how it was calibrated on the LoCoMo dev data).
NEAR_DUPLICATE = 0.95
# The check compares each new drawer with every stored one: worth it for a note or a
# few appended exchanges, not for a bulk import (which would pay it on every file).
NEAR_DUPLICATE_BATCH = 8
PREVIEW = 100
MANUAL = "manual"
# The citation of content sent without a source: the drawer itself.
SELF_CITATION = "mempal://drawer/"
# Chunks embedded in one call by `ingest_texts` (bounds the vectors held at once:
# 4,096 x 256 float32 is 4 MB). Per-call overhead made one call per file 2-4x slower.
EMBED_BATCH = 4096


class Embeds(Protocol):
    """What ingest and search need of an embedder (memhubd.recall.embed.Embedder)."""

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def record_of(embedder: Embeds | None) -> EmbedderRecord | None:
    return None if embedder is None else EmbedderRecord(embedder.name, embedder.dimension)


_STRIPE = "manual-content:"
# The lock keys notes and diary entries take (`Ingestor.ingest_content`): one of 256
# whatever is stored, so a purge of lock files leaves them.
STRIPE_SOURCES = frozenset(f"{_STRIPE}{i:02x}" for i in range(256))


@dataclass(frozen=True, slots=True)
class IngestOptions:
    workspace: str
    identity: str
    door: str
    room: str | None = None
    # Given (0-5): new drawers take it, and so do the stored chunks of the source, as
    # given `readers` reach them. None: stored ones keep theirs, a changed chunk takes
    # that of the one it replaces and a new one the source's highest (0 with none stored).
    importance: int | None = None
    # A diary entry written again keeps the importance it was stored with.
    keeps_importance: bool = False
    format: str = "auto"
    dry_run: bool = False
    # Given: every chunk of the source takes them. None: stored chunks keep theirs, and
    # new and changed ones take those the source's stored chunks share (`_shared_readers`).
    readers: tuple[str, ...] | None = None
    near_duplicate: float = NEAR_DUPLICATE
    # The ingesting caller's roles (None: it may read every drawer). A drawer it may not
    # read is never replaced, counted as a duplicate or quoted as a near-duplicate.
    roles: frozenset[str] | None = None
    # When set (a diary write), a stored drawer is the same only when this says so (the
    # writer's own entry): any other, however readable, is another's, and the new one
    # takes the caller's own id form rather than answering as its duplicate.
    same_entry: Callable[[Drawer], bool] | None = None
    # Whether an ingest of a source may retire or refresh drawers of it that another
    # identity wrote (a reviewer's, an admin's, the daemon's watcher); else it changes
    # only the caller's own, as only a drawer's writer may delete it.
    replaces_others: bool = True
    # Set for an ingest that never chooses readers (the directory watcher): a chunk
    # given none whose text a stored drawer holds is that drawer's duplicate (a copy),
    # whatever its readers, rather than stored again for every caller, so that text
    # narrowed by hand stays narrowed when the watcher meets it in another file (a
    # transcript renamed aside, or copied). A caller sending text without readers
    # publishes it to every caller it is stored for.
    keeps_stored_readers: bool = False


@dataclass(slots=True)
class SourceReport:
    """What happened to one source."""

    source: str
    status: str = "ingested"  # ingested | unchanged | skipped | failed | dry_run
    reason: str = ""
    format: str = ""
    room: str = ""
    chunks: int = 0  # drawers written (or that would be, on a dry run)
    duplicates: int = 0  # chunks already stored (or repeated inside the source)
    replaced: int = 0  # stored chunks of this source superseded by changed ones
    deleted: int = 0  # chunks matching a soft-deleted drawer: left deleted
    drawer_ids: list[str] = field(default_factory=list)
    near_duplicates: list[dict[str, Any]] = field(default_factory=list)
    lock_wait_ms: int | None = None
    warnings: list[str] = field(default_factory=list)
    # The ids of the stored drawers this source's duplicates matched (not in answers:
    # a manual ingest of stored content returns the id it matched).
    matched_ids: list[str] = field(default_factory=list)
    # The readers of each drawer written, as `drawer_ids` (not in answers: the watcher's
    # event counts for each subscriber only the drawers it may read).
    readers_written: list[tuple[str, ...] | None] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = {
            "source": self.source,
            "status": self.status,
            "format": self.format,
            "room": self.room,
            "chunks": self.chunks,
            "duplicates": self.duplicates,
            "replaced": self.replaced,
            "deleted": self.deleted,
            "drawer_ids": self.drawer_ids,
            "lock_wait_ms": self.lock_wait_ms,
        }
        if self.reason:
            data["reason"] = self.reason
        if self.near_duplicates:
            data["near_duplicates"] = self.near_duplicates
        if self.warnings:
            data["warnings"] = self.warnings
        return data


# Runs one file's work and turns its failure into a report (see `ingest_texts`).
Guard = Callable[[Callable[[], SourceReport], str], SourceReport]


@dataclass(slots=True)
class Inference:
    """What a file's room is inferred from where the store keeps it in none: its text
    (by the taxonomy), project and directory. Worked out when first needed (matching
    the taxonomy reads every word of the text), by `Ingestor._inferred`."""

    parsed: Parsed
    source: str
    # The room inferred, and every room an inference could have given the file's chunks
    # (the default room, the taxonomy's, its project's and directory's).
    worked: tuple[str, frozenset[str]] | None = None


# A file's report, its drawers (None when the report already says why nothing is
# stored), and what its room is inferred from (None when the ingest names the room).
Prepared = tuple[SourceReport, list[NewDrawer] | None, Inference | None]


@dataclass(frozen=True, slots=True)
class Plan:
    """One source's write: the drawers to add, the stored rows they supersede, the
    retired rows whose ids they take again, and the `(rowid, chunk_index, locator)` of
    kept rows whose chunk moved (a section inserted above it). `refreshed` counts the
    kept chunks whose neighbours changed (an exchange added after the last one) by id:
    each is stored again with its new context in place of its row (in `new`, in source
    order, and in `stale` and `revive`), as every index follows a row retired and one
    added."""

    new: list[NewDrawer]
    stale: list[int]
    revive: list[int]
    moved: list[tuple[int, int, str]]
    refreshed: frozenset[str] = frozenset()
    # The source's chunks stored as other sources' drawers (see `DrawerStore.write`), and
    # the rows of `stale` that another file holds: handed to it, not retired.
    copies: frozenset[Copy] = frozenset()
    handed: frozenset[int] = frozenset()
    copies_changed: bool = False  # `copies` differ from those recorded for the source


@dataclass(slots=True)
class DryRun:
    """What a dry run's earlier files of one batch would have written and retired: a
    later file's plan must find them so, as the real run's would."""

    # Drawer id -> its room and readers: a later file's chunk is its duplicate only
    # where those readers cover the chunk's (`_serves`), as the real run finds it.
    written: dict[str, tuple[str, tuple[str, ...] | None]] = field(default_factory=dict)
    retired: set[int] = field(default_factory=set)
    # The copies each earlier file would have recorded (by source), in place of what the
    # store holds for it.
    copies: dict[str, frozenset[Copy]] = field(default_factory=dict)
    # The drawers earlier files would have handed to a file, by that file: (chunk index,
    # drawer) as its stored chunks.
    handed: dict[str, list[tuple[int, Existing]]] = field(default_factory=dict)
    # What decides where a drawer may be handed (see `DrawerStore.copy_sources`): the
    # readers earlier files would give stored rows (by rowid), and the (writer, readers)
    # of the drawers they would add to a source, by source.
    readers: dict[int, tuple[str, ...] | None] = field(default_factory=dict)
    added: dict[str, list[tuple[str, tuple[str, ...] | None]]] = field(default_factory=dict)

    def found(self, known: dict[str, Existing]) -> dict[str, Existing]:
        """`known` (the store's answer to `find`) as the real run would find it: the
        rows earlier files would retire are retired."""
        return {
            i: replace(e, deleted=True, retired=True) if e.rowid in self.retired else e
            for i, e in known.items()
        }


def directory_room(source: str) -> str | None:
    """The room a source's directory suggests: its nearest named parent directory."""
    parent = posixpath.dirname(source.replace("\\", "/"))
    name = posixpath.basename(parent) if parent else ""
    return name or None


# What a write's report says of drawers stored while the embedder fails or is unavailable.
_WITHOUT_VECTORS = (
    "these drawers are stored without vectors, so search finds them by words alone "
    "until `memctl recall reindex` runs with the embedder answering again"
)


class Ingestor:
    """Writes sources into one workspace's store."""

    def __init__(
        self,
        store: DrawerStore,
        embedder: Embeds | None,
        locks: SourceLock,
        unavailable: str | None = None,
    ) -> None:
        """`unavailable`: why a configured embedder could not load (`embedder` is then
        None); each report that stores drawers says they have no vector. None when
        vectors are off, which is no news to anyone."""
        self.store = store
        self.embedder = embedder
        self.locks = locks
        self.unavailable = unavailable if embedder is None else None
        # The embedder's failure in this ingest: later sources of it are stored without
        # vectors rather than each waiting for the embedder to fail again.
        self.embed_failure: str | None = None

    # -- entry points -----------------------------------------------------------------

    def ingest_text(self, source: str, text: str, options: IngestOptions) -> SourceReport:
        """Ingest one file's text, cited as `source`."""
        report, drawers, _inference = self._prepare(source, text, options)
        if drawers is None:
            return report
        return self._store(report, drawers, options, replace_stale=True)

    def ingest_texts(
        self,
        sources: Iterable[tuple[str, str]],
        options: IngestOptions,
        guard: Guard | None = None,
    ) -> list[SourceReport]:
        """Ingest several files' texts (`(source, text)` pairs); each file is still
        its own transaction under its own lock, exactly as `ingest_text` would store it.

        What differs is the embedding: the chunks of up to EMBED_BATCH files' new
        drawers are embedded in one call, which is several times faster than one call
        per file. `guard(run, source)` runs one file's work and turns its failure into
        a report (the default lets exceptions through).

        A second thread writes each group while this one prepares and embeds the next:
        a write is mostly SQLite's own work (FTS5 indexing, pages to the WAL), which
        runs without the GIL, so on two cores the two overlap. So a file's room is
        chosen again when it is stored (`_placed`): where it is prepared, the files
        before it may be written or not yet.
        """
        run = guard or (lambda work, _source: work())
        dry_run = DryRun() if options.dry_run else None
        reports: list[SourceReport] = []
        with ThreadPoolExecutor(1, thread_name_prefix="recall-ingest-write") as writer:
            written: Future[list[SourceReport]] | None = None
            for group in self._groups(sources, options, run):
                ready = self._embed_ahead(group, options)
                if written is not None:
                    reports += written.result()
                # The writer logs with the caller's bound context (request, identity).
                context = contextvars.copy_context()
                written = writer.submit(
                    context.run, self._store_group, group, ready, options, run, dry_run
                )
            if written is not None:
                reports += written.result()
        return reports

    def _groups(
        self, sources: Iterable[tuple[str, str]], options: IngestOptions, run: Guard
    ) -> Iterator[list[Prepared]]:
        """The prepared files, in groups of about EMBED_BATCH drawers."""
        group: list[Prepared] = []
        pending = 0
        for source, text in sources:
            prepared: list[Prepared] = []

            def prepare(
                source: str = source, text: str = text, prepared: list[Any] = prepared
            ) -> SourceReport:
                prepared.append(self._prepare(source, text, options))
                return prepared[-1][0]

            failed = run(prepare, source)
            group.append(prepared[0] if prepared else (failed, None, None))
            pending += len(group[-1][1] or ())
            if pending >= EMBED_BATCH:
                yield group
                group, pending = [], 0
        if group:
            yield group

    def _embed_ahead(self, group: list[Prepared], options: IngestOptions) -> dict[str, np.ndarray]:
        """Vectors, by content, of every chunk whose drawer id is not stored yet, in one
        call (a guess at what each file's plan will find new: the plan is made under the
        file's lock, and whatever it finds new that was not guessed is embedded there)."""
        if options.dry_run or self.embedder is None:
            return {}
        texts: dict[str, None] = {}
        for _report, drawers, _inference in group:
            if drawers:
                known = self.store.find([d.id for d in drawers])
                texts.update(dict.fromkeys(d.content for d in drawers if d.id not in known))
        if not texts or not self._embed_allowed() or self.embed_failure is not None:
            return {}
        batch = list(texts)
        try:
            vectors = np.asarray(self.embedder.embed(batch), dtype=np.float32)
        except EmbedderError as error:
            self.embed_failure = str(error)  # each file's report says so (`_embed`)
            return {}
        return dict(zip(batch, vectors, strict=True))

    def _store_group(
        self,
        group: list[Prepared],
        ready: dict[str, np.ndarray],
        options: IngestOptions,
        run: Guard,
        dry_run: DryRun | None = None,
    ) -> list[SourceReport]:
        return [
            report
            if drawers is None
            else run(
                lambda r=report, d=drawers, i=inference: self._store(
                    r, d, options, replace_stale=True, ready=ready, dry_run=dry_run, inference=i
                ),
                report.source,
            )
            for report, drawers, inference in group
        ]

    def _prepare(self, source: str, text: str, options: IngestOptions) -> Prepared:
        """Detect, parse and chunk one file: its report, its drawers (None when the
        report already says why nothing is stored), each in the room chosen from the
        store as it is now, and what that room was inferred from."""
        report = SourceReport(source)
        if options.format not in ("auto", *FORMATS):
            return self._failed(report, f"unknown format {options.format!r}"), None, None
        text = text.removeprefix("\ufeff")  # a byte order mark is never content
        lines = json_lines(text)  # read once for detection and parsing
        kind = detect(text, source, lines) if options.format == "auto" else options.format
        report.format = kind
        if not text.strip():
            report.status, report.reason = "skipped", "empty"
            return report, None, None
        try:
            parsed = parse(text, kind, source, lines)
        except FormatError as error:
            return self._failed(report, f"not {kind}: {error}"), None, None
        skipped = getattr(lines, "skipped", None) if kind in ("claude-code", "codex") else None
        if skipped:
            shown = ", ".join(map(str, skipped[:5])) + (", …" if len(skipped) > 5 else "")
            report.warnings.append(
                f"{len(skipped)} line(s) not JSON, left out (line {shown}): "
                "a line cut short by a crash, or not part of the transcript"
            )
        chunks = chunk(parsed)
        if not chunks:
            report.status, report.reason = "skipped", parsed.reason or "no text"
            return report, None, None
        inference = None
        if options.room:
            report.room = options.room
        else:
            inference = Inference(parsed, source)
            contents = [_encodable(c.content) for c in chunks]
            report.room = self._room(options, source, contents, inference)
        drawers = [
            self._drawer(options, report.room, source, kind, i, c) for i, c in enumerate(chunks)
        ]
        return report, drawers, inference

    def ingest_content(
        self, content: str, options: IngestOptions, source: str | None
    ) -> SourceReport:
        """mempal's manual ingest: `content` becomes one drawer, verbatim."""
        room = (
            options.room
            or self._stored_room(content, options)
            or self._taxonomy_room(content)
            or DEFAULT_ROOM
        )
        identifier = drawer_id(options.workspace, room, content)
        # A blank source is none (mempal): the drawer cites itself.
        citation = source if source and source.strip() else f"{SELF_CITATION}{identifier}"
        report = SourceReport(citation, format=MANUAL, room=room)
        if not content.strip():
            return self._failed(report, "content is empty")
        drawer = self._drawer(options, room, citation, MANUAL, 0, Chunk(content))
        # Locked on one of 256 stripes by the content's hash, not on the drawer itself:
        # the same content always meets the same lock, and the lock files (kept by a
        # purge, see `STRIPE_SOURCES`) stay bounded however many notes and diary entries
        # come.
        stripe = f"{_STRIPE}{content_hash(content)[:2]}"
        self._store(report, [drawer], options, replace_stale=False, lock_key=stripe)
        if not report.drawer_ids and report.status == "unchanged":
            # Already stored: the caller still gets the id of the drawer it matched.
            report.drawer_ids = report.matched_ids[:1] or [identifier]
        if citation == f"{SELF_CITATION}{identifier}" and report.drawer_ids:
            # Stored under another id (one of another room spelt alike): cite that one.
            report.source = f"{SELF_CITATION}{report.drawer_ids[0]}"
        return report

    # -- steps ------------------------------------------------------------------------

    @staticmethod
    def _failed(report: SourceReport, reason: str) -> SourceReport:
        report.status, report.reason = "failed", reason
        return report

    def _stored_room(self, content: str, options: IngestOptions) -> str | None:
        """The room of the drawer `content` already is, among those a room inferred for
        it could have given (the default room and the taxonomy's): sent again without a
        room after the taxonomy changed, it stays there rather than being stored twice.
        Only a drawer the caller may read counts (another's hidden one must not tell its
        room), and only one stored on purpose (live, or deleted so that it stays so)."""
        if options.same_entry is not None:
            return None  # a diary entry names its room
        rooms = {DEFAULT_ROOM, *(entry.room for entry in self.store.taxonomy())}
        found = self._held_in([content], rooms, options)
        # A live drawer before a deleted one, then by room: the same answer every time.
        found.sort(key=lambda e: (e.deleted, e.room or ""))
        return found[0].room if found else None

    def _held_in(
        self,
        contents: Sequence[str],
        rooms: Collection[str],
        options: IngestOptions,
        dry_run: DryRun | None = None,
    ) -> list[Existing]:
        """The stored drawers holding any of `contents` in one of `rooms` (under either
        id form) that the caller may read and that were stored on purpose: live, or
        deleted so that they stay so (not retired by their source). On a dry run, as
        the batch's earlier files would leave them (those they retire are retired)."""
        # Each content hashed once, not once for each room and id form.
        wanted = {
            drawer_id(options.workspace, room, content, digits=digits, digest=hashed): hashed
            for content, hashed in zip(contents, map(content_hash, contents), strict=True)
            for room in sorted(rooms)
            for digits in (SHORT_HASH, LONG_HASH)
        }
        found = self.store.find(list(wanted))
        if dry_run is not None:
            found = dry_run.found(found)
        return [
            e
            for i, e in found.items()
            if e.content_hash == wanted[i]
            and not e.retired
            and e.room in rooms
            and (
                e.identity == options.identity
                or _readable(_readers_now(e.rowid, e.readers, dry_run), options.roles)
            )
        ]

    def _taxonomy_room(self, text: str) -> str | None:
        taxonomy = self.store.taxonomy()
        if not taxonomy:
            return None  # nothing to match: spare reading a whole file's words
        routed = taxonomy_rooms.route(text, taxonomy)
        return routed[0] if routed else None

    def _inferred(self, inference: Inference) -> tuple[str, frozenset[str]]:
        """The room inferred for a file, and the rooms an inference could have given its
        chunks (see `Inference`)."""
        if inference.worked is None:
            parsed, source = inference.parsed, inference.source
            taxonomy = self.store.taxonomy()
            routed = None
            if taxonomy:  # else nothing to match: spare reading a whole file's words
                text = parsed.text or "\n".join(
                    t.text for c in parsed.conversations for t in c.turns
                )
                routed = taxonomy_rooms.route(text, taxonomy)
            inferred = (routed[0] if routed else None) or parsed.project or directory_room(source)
            inferred = inferred or DEFAULT_ROOM
            rooms = {DEFAULT_ROOM, inferred, *(e.room for e in taxonomy)}
            rooms |= {r for r in (parsed.project, directory_room(source)) if r}
            inference.worked = inferred, frozenset(rooms)
        return inference.worked

    def _room(
        self,
        options: IngestOptions,
        source: str,
        contents: list[str],
        inference: Inference,
        dry_run: DryRun | None = None,
    ) -> str:
        """The room of a file the ingest names none for, from the store as it is now
        (on a dry run, as the batch's earlier files would leave it)."""
        kept = self._source_room(source, options, dry_run) or self._copies_room(
            source, options, dry_run
        )
        if kept is not None:
            return kept
        inferred, rooms = self._inferred(inference)
        return self._chunks_room(contents, inferred, rooms, options, dry_run) or inferred

    def _placed(
        self,
        report: SourceReport,
        drawers: list[NewDrawer],
        options: IngestOptions,
        inference: Inference,
        dry_run: DryRun | None,
    ) -> list[NewDrawer]:
        """A batch's file, whose room was chosen where it was prepared, in the room chosen
        as it is stored: from the store as the batch's earlier files leave it (or, on a
        dry run, would leave it), as when the files are sent one after the other. Where
        it was prepared, they might be written or not yet (a group is written while the
        next is prepared), and what they retire must count as much as what they add."""
        room = self._room(options, report.source, [d.content for d in drawers], inference, dry_run)
        if room == report.room:
            return drawers
        report.room = room
        return [
            replace(d, room=room, id=drawer_id(options.workspace, room, d.content)) for d in drawers
        ]

    def _source_room(
        self, source: str, options: IngestOptions, dry_run: DryRun | None = None
    ) -> str | None:
        """The room a source already stored is in, for an ingest that names none: every
        chunk of a file shares one room, so a chunk new in it joins the stored ones (put
        there by a `--room` or by the taxonomy of the time) instead of the room inferred
        now. The room most of its drawers the caller may read are in (of equal counts,
        the first chunk's); None when the caller may read none. On a dry run, without
        what the batch's earlier files would retire and with what they would hand it."""
        if dry_run is None:
            rows = self.store.rooms_of_source(source)
        else:
            held = [
                (i, e)
                for i, e in self.store.chunks_of_source(source)
                if e.rowid not in dry_run.retired
            ]
            held += dry_run.handed.get(source, [])
            held.sort(key=lambda p: (p[0], p[1].rowid))  # as `rooms_of_source` orders them
            rows = [
                (e.room or "", e.identity, _readers_now(e.rowid, e.readers, dry_run))
                for _i, e in held
            ]
        counts: dict[str, int] = {}
        for room, writer, readers in rows:
            if room and (writer == options.identity or _readable(readers, options.roles)):
                counts[room] = counts.get(room, 0) + 1
        return max(counts, key=counts.__getitem__) if counts else None

    def _copies_room(
        self, source: str, options: IngestOptions, dry_run: DryRun | None = None
    ) -> str | None:
        """For a file with no drawer of its own the caller may read (every chunk the
        duplicate of another source's drawer: a transcript renamed aside), the room of
        the drawers it holds as copies, as `_source_room` counts them: a taxonomy edited
        since must not send it to another room, where its chunks take new ids and are
        stored a second time. Only a live drawer the caller may read counts (a hidden
        one must not tell its room); None when there is none. On a dry run, as the
        batch's earlier files would leave the copies and their drawers."""
        copies = dry_run.copies.get(source) if dry_run is not None else None
        if copies is None:
            copies = self.store.copies_of_source(source)
        retired = dry_run.retired if dry_run is not None else set()
        ordered = sorted(copies, key=lambda c: c.chunk_index)
        drawers = self.store.get(sorted({c.drawer for c in ordered})) if ordered else {}
        counts: dict[str, int] = {}
        for copy in ordered:
            d = drawers.get(copy.drawer)
            if (
                d is not None
                and d.deleted_at is None
                and copy.drawer not in retired
                and (
                    d.identity == options.identity
                    or _readable(_readers_now(copy.drawer, d.readers, dry_run), options.roles)
                )
            ):
                counts[d.room] = counts.get(d.room, 0) + 1
        return max(counts, key=counts.__getitem__) if counts else None

    def _chunks_room(
        self,
        contents: list[str],
        inferred: str,
        rooms: frozenset[str],
        options: IngestOptions,
        dry_run: DryRun | None = None,
    ) -> str | None:
        """The room more than half of a file's chunks are already stored in, when it is
        not `inferred`, among the `rooms` an inference could have given them (the
        default room, the taxonomy's, the file's project and directory): a file with no
        drawer of its own nor copy on record (a copy ingested before copies were
        recorded, or a new one) stays with the drawers it duplicates, as `_stored_room`
        keeps content, rather than being stored a second time (after a taxonomy edit,
        or in its own directory's room). A file sharing a few chunks with others keeps
        its inferred room. Only drawers the caller may read count; None when no other
        room holds more of the chunks than `inferred`. On a dry run, the drawers
        the batch's earlier files would write count (the caller's own) and those they
        would retire do not, as the real run finds them."""
        holding: dict[str, set[str]] = {}  # room -> the hashes of the chunks it holds
        for e in self._held_in(contents, rooms, options, dry_run):
            holding.setdefault(e.room or DEFAULT_ROOM, set()).add(e.content_hash)
        hashed = [content_hash(c) for c in contents]
        if dry_run is not None and dry_run.written:
            for content, digest in zip(contents, hashed, strict=True):
                for room, digits in ((r, d) for r in rooms for d in (SHORT_HASH, LONG_HASH)):
                    planned = dry_run.written.get(
                        drawer_id(options.workspace, room, content, digits=digits, digest=digest)
                    )
                    if planned is not None and planned[0] in rooms:
                        holding.setdefault(planned[0], set()).add(digest)
        counts = {room: sum(1 for h in hashed if h in hashes) for room, hashes in holding.items()}
        # Most chunks first, then the inferred room, then by name: the same answer each time.
        best = min(counts, key=lambda r: (-counts[r], r != inferred, r), default=None)
        if best is None or best == inferred or 2 * counts[best] <= len(contents):
            return None
        return best

    @staticmethod
    def _drawer(
        options: IngestOptions, room: str, source: str, kind: str, index: int, piece: Chunk
    ) -> NewDrawer:
        # A JSON transcript may escape a lone UTF-16 surrogate (`\ud800`): no text encodes
        # it, so it is stored as U+FFFD like any other undecodable character.
        if not (piece.content + piece.locator + piece.context + (piece.speaker or "")).isascii():
            piece = replace(
                piece,
                content=_encodable(piece.content),
                locator=_encodable(piece.locator),
                speaker=_encodable(piece.speaker) if piece.speaker is not None else None,
                context=_encodable(piece.context),
            )
        return NewDrawer(
            id=drawer_id(options.workspace, room, piece.content),
            room=room,
            content=piece.content,
            source_file=source,
            source_kind=kind,
            chunk_index=index,
            content_hash=content_hash(piece.content),
            identity=options.identity,
            importance=options.importance or 0,
            locator=piece.locator,
            speaker=piece.speaker,
            said_at=piece.said_at,
            readers=options.readers,
            context=with_day(piece.said_at, piece.context),
        )

    def _store(
        self,
        report: SourceReport,
        drawers: list[NewDrawer],
        options: IngestOptions,
        *,
        replace_stale: bool,
        lock_key: str | None = None,
        ready: dict[str, np.ndarray] | None = None,
        dry_run: DryRun | None = None,
        inference: Inference | None = None,
    ) -> SourceReport:
        """Write one file's drawers (`inference`: a batch's file, placed again here)."""
        if options.dry_run:
            batch = dry_run if dry_run is not None else DryRun()
            if inference is not None:
                drawers = self._placed(report, drawers, options, inference, batch)
            plan = self._plan(report, drawers, replace_stale, options, batch)
            # A row handed to a file that holds it stays live, as the real run leaves it,
            # as that file's own chunk.
            batch.retired.update(set(plan.stale) - plan.handed)
            if plan.handed:
                self._hand_over_dry(report.source, plan.handed, batch)
            if replace_stale:
                batch.copies[report.source] = plan.copies
            batch.added.setdefault(report.source, []).extend(
                (d.identity, d.readers) for d in plan.new
            )
            report.status, report.chunks = "dry_run", len(plan.new)
            report.replaced = len(plan.stale) - len(plan.handed)
            report.drawer_ids = [d.id for d in plan.new]
            return report
        with self.locks.hold(lock_key or report.source) as waited:
            report.lock_wait_ms = waited
            if inference is not None:
                drawers = self._placed(report, drawers, options, inference, None)
            plan = self._plan(report, drawers, replace_stale, options)
            new, stale, revive = plan.new, plan.stale, plan.revive
            copies = (report.source, plan.copies) if plan.copies_changed else None
            if not new and not stale and not plan.moved:
                if copies is not None:
                    self.store.set_copies(*copies)
                report.status = "unchanged"
                return report
            vectors, record = self._embed(report, new, ready or {})
            refreshed = len(plan.refreshed)
            if refreshed and vectors is not None:
                # A drawer stored again was warned of when first stored, if at all.
                fresh = [i for i, d in enumerate(new) if d.id not in plan.refreshed]
                checked, checked_vectors = [new[i] for i in fresh], vectors[fresh]
            else:
                checked, checked_vectors = new, vectors
            self._near_duplicates(
                report,
                checked,
                checked_vectors,
                record,
                options.near_duplicate,
                options.roles,
                set(stale) - plan.handed,  # a row handed to another file stays
            )
            audit = AuditEntry(
                options.identity,
                options.door,
                "ingest",
                {
                    "source": report.source,
                    "format": report.format,
                    "room": report.room,
                    "chunks": len(new) - refreshed,
                    "replaced": len(stale) - refreshed - len(plan.handed),
                    # retired drawers of the same content, stored again
                    **({"revived": len(revive) - refreshed} if len(revive) > refreshed else {}),
                    # stored chunks still in the source, at another place
                    **({"moved": len(plan.moved)} if plan.moved else {}),
                    # stored chunks whose neighbouring text changed, stored again
                    **({"refreshed": len(plan.refreshed)} if plan.refreshed else {}),
                    # chunks gone from the source that another file holds, cited from it
                    **({"handed_over": len(plan.handed)} if plan.handed else {}),
                },
            )
            outcome = self.store.write(
                new,
                vectors,
                record,
                audit,
                replace=stale,
                revive=revive,
                moved=plan.moved,
                copies=copies,
            )
        # A refreshed chunk is the same drawer (a duplicate already counted), not a new
        # chunk nor one its source replaced.
        refreshed = plan.refreshed
        inserted = [i for i in outcome.inserted if i not in refreshed]
        report.chunks = len(inserted)
        report.duplicates += len(new) - len(refreshed) - len(inserted)
        report.replaced = sum(1 for i in outcome.replaced if i not in refreshed)
        report.drawer_ids = inserted
        readers_of = {drawer.id: drawer.readers for drawer in new}
        report.readers_written = [readers_of.get(i) for i in inserted]
        return report

    def _plan(
        self,
        report: SourceReport,
        drawers: list[NewDrawer],
        replace_stale: bool,
        options: IngestOptions,
        dry_run: DryRun | None = None,
    ) -> Plan:
        """What to write (see `Plan`). A stored chunk is matched by id before position:
        one still in the source is kept, and moved if its place changed, never retired
        because another chunk now stands at its old place. A kept chunk takes the
        context it has in the source now, as a first ingest of this text would give it,
        less the text of neighbours deleted on purpose (a dry run writes nothing, so it
        refreshes nothing)."""
        every = self.store.chunks_of_source(report.source) if replace_stale else []
        known = self.store.find([d.id for d in drawers])
        if dry_run is not None:
            # What the batch's earlier files would have retired, the real run finds so,
            # and the drawers they would have handed to this file as its own.
            every = [(i, e) for i, e in every if e.rowid not in dry_run.retired]
            every += dry_run.handed.get(report.source, [])
            known = dry_run.found(known)
        hidden: set[int] = set()
        if options.roles is not None:
            # Others' drawers the caller may not read stay out of its plan: replacing
            # them would delete what it cannot see, and "duplicate" would tell them apart.
            rows = self.store.get([e.rowid for e in (*(e for _i, e in every), *known.values())])
            hidden = {
                rowid
                for rowid, d in rows.items()
                if d.identity != options.identity
                and not _readable(_readers_now(rowid, d.readers, dry_run), options.roles)
            }
            every = [(i, e) for i, e in every if e.rowid not in hidden]
        if not options.replaces_others:
            # Another writer's drawers of this source stay as they are: re-uploading a
            # file name must not erase what the caller could not delete.
            every = [(i, e) for i, e in every if e.identity == options.identity]
        # One stored drawer per place: the caller's own where it has one (two writers
        # who may not read each other's drawers each store the text), else the latest.
        stored: dict[int, Existing] = {}
        for index, e in every:
            held = stored.get(index)
            if held is None or held.identity != options.identity or e.identity == options.identity:
                stored[index] = e
        # An ingest naming no readers (as every watched one) gives a new or changed chunk
        # the readers all the source's stored chunks share, not every caller: else what a
        # narrowed transcript says next would be read by all. Naming no importance, a
        # changed chunk keeps the one it replaces and a new one takes the source's highest.
        shared = _shared_readers(_readers_now(e.rowid, e.readers, dry_run) for _i, e in every)
        if not every and replace_stale and options.readers is None:
            # A source whose every drawer was deleted on purpose (a narrowed session
            # taken out while it is still written to): what it says next takes the
            # readers those drawers shared, not every caller.
            shared = _shared_readers(
                e.readers
                for _index, e, _content in self.store.deleted_of_source(report.source)
                if e.identity == options.identity
                or (options.replaces_others and _readable(e.readers, options.roles))
            )
        highest = max((e.importance for _i, e in every), default=0)
        recorded = self.store.copies_of_source(report.source) if replace_stale else frozenset()
        keeps = self._keeps(report.source, every, known, recorded, replace_stale, options)
        new: list[NewDrawer] = []
        stale: list[int] = []
        revive: list[int] = []
        # A dry run's earlier files' drawers are found stored, as the real run's would be.
        earlier = dry_run.written if dry_run is not None else {}
        seen: dict[str, tuple[str, tuple[str, ...] | None]] = {}  # this file's new drawers
        places: dict[str, NewDrawer] = {}  # each id's first chunk in the source
        hashes: dict[str, str] = {}  # each id's content in this ingest, to tell clashes
        gone: list[NewDrawer] = []  # chunks whose drawer was deleted on purpose
        deleted: dict[int, list[str]] | None = None  # read when first needed
        copies: list[Copy] = []  # chunks stored as another source's drawers
        matched: set[int] = set()  # stored drawers this source's chunks are duplicates of

        def grown_from_deleted(drawer: NewDrawer) -> bool:
            """Whether the chunk is one deleted on purpose that has grown since (a
            watched exchange the session still appends to): its place holds a deleted
            drawer of the same writer whose text it begins with, or that begins with its
            text (the exchange grew past one chunk, and this is its first window)."""
            nonlocal deleted
            if not replace_stale:
                return False
            if deleted is None:
                deleted = {}
                for index, e, content in self.store.deleted_of_source(report.source):
                    others = e.identity != options.identity
                    if content and not (
                        others
                        and (not options.replaces_others or not _readable(e.readers, options.roles))
                    ):
                        deleted.setdefault(index, []).append(content)
            content = drawer.content
            return any(
                content.startswith(c) or c.startswith(content)
                for c in deleted.get(drawer.chunk_index, ())
            )

        # The exchange (its locator less " part N") of a window found grown from a
        # deleted drawer: its later windows hold the rest of what grew, and the first of
        # them the deleted text's end (windows overlap), so they stay deleted with it.
        grown_exchange: str | None = None

        for drawer in drawers:
            previous = stored.get(drawer.chunk_index)
            if previous is not None and previous.content_hash == drawer.content_hash:
                # A room given to the ingest is the source's: a chunk stored in another
                # room moves there (stored again under that room's id, the old one
                # retired), keeping its importance and readers unless the ingest gives
                # them. An inferred room leaves stored chunks where they are.
                if options.room is None or previous.room in (None, drawer.room):
                    report.duplicates += 1
                    places.setdefault(previous.id, drawer)
                    continue
                drawer = replace(
                    drawer,
                    readers=options.readers if options.readers is not None else previous.readers,
                    importance=_importance(options, previous.importance),
                )
            elif every or shared is not None:
                theirs = previous.importance if previous is not None else highest
                drawer = replace(
                    drawer,
                    readers=options.readers if options.readers is not None else shared,
                    importance=options.importance if options.importance is not None else theirs,
                )
            drawer, existing = self._own_form(
                drawer, known.get(drawer.id), hidden, options, dry_run, keeps
            )
            if existing is None and earlier.get(drawer.id, (drawer.room,))[0] != drawer.room:
                # An earlier file of the dry run's batch holds the id in a room spelt
                # alike: the real run would find it stored and take the long form.
                drawer = _with_id(drawer, _long_id(drawer))
                existing = self._find(drawer.id, dry_run)
            if hashes.setdefault(drawer.id, drawer.content_hash) != drawer.content_hash:
                # Another chunk of this ingest holds the short id with other text (the
                # first 8 hex digits of both hashes alike): this one takes the long form.
                drawer = _with_id(drawer, _long_id(drawer))
                existing = self._find(drawer.id, dry_run)
                hashes.setdefault(drawer.id, drawer.content_hash)
            places.setdefault(drawer.id, drawer)
            if previous is not None:
                stale.append(previous.rowid)
            if (
                drawer.id in seen
                or drawer.id in earlier
                or (existing is not None and not existing.deleted)
            ):
                report.duplicates += 1
                report.matched_ids.append(drawer.id)
                if existing is not None and not existing.deleted:
                    matched.add(existing.rowid)
                    if (
                        existing.source_file != report.source
                        and existing.identity == options.identity
                        and _reads_at_least(drawer.readers, existing.readers)
                    ):
                        # Another source's drawer: this file is where it goes on should
                        # that source drop it (for the writer's own drawers, and only where
                        # whoever reads the drawer may read this file's chunks: a hand-over
                        # must not show a file's name to callers it was kept from). Checked
                        # here against the readers the chunk takes, and again at the
                        # hand-over against the drawer's readers then and the file's stored
                        # chunks, or, for a file with no chunk of the writer's own to tell,
                        # the readers recorded here (`DrawerStore.copy_sources`).
                        copies.append(
                            Copy(
                                existing.rowid,
                                drawer.chunk_index,
                                drawer.locator,
                                drawer.source_kind,
                                options.identity,
                                readers=drawer.readers,
                                readers_known=True,
                            )
                        )
            elif (existing is not None and not existing.retired) or (
                (exchange := _exchange_of(drawer.locator)) is not None
                and exchange == grown_exchange
            ):
                report.deleted += 1  # deleted on purpose: re-ingesting must not bring it back
                gone.append(drawer)
            elif grown_from_deleted(drawer):
                report.deleted += 1
                gone.append(drawer)
                grown_exchange = _exchange_of(drawer.locator)
            else:
                # New, or retired when its source changed (a rewrite cut the file short
                # before it came back whole): the content is the source's again.
                if existing is not None:
                    revive.append(existing.rowid)
                seen[drawer.id] = (drawer.room, drawer.readers)
                new.append(drawer)
        if dry_run is not None:
            dry_run.written.update(seen)
        if gone:
            # Nor its text, through its neighbours' context (as a delete left them).
            contexts = _leaving_out(drawers, gone)
            new = [_with_context(d, contexts) for d in new]
            places = {i: _with_context(d, contexts) for i, d in places.items()}
        if replace_stale:
            count = len(drawers)
            stale.extend(p.rowid for index, p in stored.items() if index >= count)
        kept = {e.rowid for e in stored.values() if e.id in places}
        # A kept chunk whose text now stands elsewhere in the source takes its new place
        # and locator: an edit before it shifts its characters (or lines) while its index
        # stays, and its citation must still point at its text.
        moved = [
            (e.rowid, places[e.id].chunk_index, places[e.id].locator)
            for index, e in stored.items()
            if e.id in places
            and (places[e.id].chunk_index != index or places[e.id].locator != e.locator)
        ]
        stale = [rowid for rowid in stale if rowid not in kept]
        refresh = [
            e
            for _i, e in every
            if e.id in places
            and (
                places[e.id].context != e.context
                or _new_readers(options, e.readers)
                or _importance(options, e.importance) != e.importance
            )
        ]
        if refresh and dry_run is None:
            # Stored again as they are, with the context the source gives them now, and
            # the readers and importance the ingest gives (it may narrow or widen who
            # reads the source; an ingest that names none leaves them as they are): the
            # room, kind, writer and time stored are the row's own (the id names the
            # room), and so is the vector (`write` carries it over).
            rows = self.store.get([e.rowid for e in refresh])
            again = [
                replace(
                    places[e.id],
                    id=row.id,
                    room=row.room,
                    source_kind=row.source_kind,
                    identity=row.identity,
                    readers=options.readers if options.readers is not None else row.readers,
                    importance=_importance(options, row.importance),
                    created_at=row.created_at,
                )
                for e in refresh
                if (row := rows.get(e.rowid)) is not None
            ]
            gone = {e.rowid for e in refresh if e.rowid in rows}
            stale.extend(gone)
            revive.extend(gone)
            moved = [m for m in moved if m[0] not in gone]
            # In source order among the new chunks: rows follow the source as a first
            # ingest of it lays them down.
            new = sorted([*new, *again], key=lambda d: d.chunk_index)
            refreshed = frozenset(d.id for d in again)
        else:
            refreshed = frozenset()
            if dry_run is not None:
                # Not stored again, but where a drawer may be handed depends on them.
                dry_run.readers.update(
                    (e.rowid, options.readers) for e in refresh if _new_readers(options, e.readers)
                )
        handed = self._handed(report.source, stale, revive, dry_run) if replace_stale else set()
        if not replace_stale:
            # Content sent under a file's name says nothing of what the file holds: the
            # copies recorded for the file stay as they are, and it records none.
            return Plan(new, stale, revive, moved, refreshed, frozenset(), frozenset(handed))
        if options.readers is None:
            # An ingest naming no readers leaves a copy's on record as they are, as it
            # leaves its stored chunks'; a copy new to the file, or with none on record
            # (recorded before copies kept them), takes its chunk's: those the file's
            # stored chunks share, or every caller.
            kept = {(c.drawer, c.identity): c.readers for c in recorded if c.readers_known}
            copies = [
                replace(c, readers=kept[c.drawer, c.identity])
                if (c.drawer, c.identity) in kept
                else c
                for c in copies
            ]
        homes = frozenset((*copies, *self._still_held(recorded, drawers, options)))
        return Plan(
            new, stale, revive, moved, refreshed, homes, frozenset(handed), homes != recorded
        )

    def _still_held(
        self, recorded: frozenset[Copy], drawers: list[NewDrawer], options: IngestOptions
    ) -> list[Copy]:
        """The copies other writers recorded for this file whose drawer's text the file
        still holds (by content, whether or not the caller may read the drawer): those
        stay, and a file that no longer holds the text is no longer cited for it."""
        others = [c for c in recorded if c.identity != options.identity]
        if not others:
            return []
        here = {d.content_hash for d in drawers}
        rows = self.store.get([c.drawer for c in others])
        return [
            c for c in others if (r := rows.get(c.drawer)) is not None and r.content_hash in here
        ]

    def _hand_over_dry(self, source: str, handed: frozenset[int], batch: DryRun) -> None:
        """Note in `batch` the file each handed row would go to, as `write` picks it, at
        its place there."""
        rows = {e.rowid: e for _i, e in self.store.chunks_of_source(source)}
        rows.update((e.rowid, e) for _i, e in batch.handed.get(source, []))
        homes = self._homes_dry(source, sorted(handed), batch)
        for rowid, (home, place) in sorted(homes.items()):
            if rowid in rows:
                taken = replace(rows[rowid], locator=place.locator)
                batch.handed.setdefault(home, []).append((place.chunk_index, taken))

    def _handed(
        self, source: str, stale: list[int], revive: list[int], dry_run: DryRun | None
    ) -> set[int]:
        """The rows of `stale` (not revived) that another file holds and may take
        (`write` hands them to it); on a dry run, as the batch's earlier files would
        have left the copies and the readers."""
        reviving = set(revive)
        candidates = [rowid for rowid in stale if rowid not in reviving]
        if not candidates:
            return set()
        if dry_run is None:
            return set(self.store.copy_sources(candidates))
        return set(self._homes_dry(source, candidates, dry_run))

    def _homes_dry(
        self, source: str, rowids: list[int], batch: DryRun
    ) -> dict[int, tuple[str, Copy]]:
        """For each of `rowids` (rows `source` drops) `write` would hand to another
        file, that file (the first by name, as `write` picks it) and the drawer's place
        there, by the rule of `DrawerStore.copy_sources` applied to the store as the
        batch's earlier files would leave it."""
        rows = self.store.get(rowids)
        wanted = set(rowids)
        copies = self.store.writers_copies(rowids)
        for file, planned in batch.copies.items():
            for held in copies.values():
                held.pop(file, None)  # the earlier file's own copies stand for it now
            for c in planned:
                if c.drawer in wanted:
                    copies.setdefault(c.drawer, {})[file] = c
        chunks: dict[str, list[tuple[str, tuple[str, ...] | None]]] = {}  # by file
        found: dict[int, tuple[str, Copy]] = {}
        for rowid in rowids:
            row = rows.get(rowid)
            if row is None or row.deleted_at is not None:
                continue
            readers = batch.readers.get(rowid, row.readers)
            homes = sorted(
                file
                for file, c in copies.get(rowid, {}).items()
                if file != source
                and c.identity == row.identity
                and _may_cite(
                    c,
                    readers,
                    [r for w, r in self._writers_chunks(file, batch, chunks) if w == row.identity],
                )
            )
            if homes:
                found[rowid] = (homes[0], copies[rowid][homes[0]])
        return found

    def _writers_chunks(
        self, file: str, batch: DryRun, chunks: dict[str, list[tuple[str, tuple[str, ...] | None]]]
    ) -> list[tuple[str, tuple[str, ...] | None]]:
        """(writer, readers) of each live chunk of `file` as the batch's earlier files
        would leave them (read once per file into `chunks`)."""
        if file not in chunks:
            # Rows handed to another file leave this one; rows handed to it join it.
            gone = batch.retired | {
                e.rowid for other, rows in batch.handed.items() if other != file for _i, e in rows
            }
            stored = [*self.store.chunks_of_source(file), *batch.handed.get(file, [])]
            chunks[file] = [
                (e.identity, batch.readers.get(e.rowid, e.readers))
                for _i, e in stored
                if e.rowid not in gone
            ] + batch.added.get(file, [])
        return chunks[file]

    def _find(self, drawer_id: str, dry_run: DryRun | None) -> Existing | None:
        """What is stored under `drawer_id` (on a dry run, as the real run finds it)."""
        known = self.store.find([drawer_id])
        return (known if dry_run is None else dry_run.found(known)).get(drawer_id)

    def _own_form(
        self,
        drawer: NewDrawer,
        existing: Existing | None,
        hidden: set[int],
        options: IngestOptions,
        dry_run: DryRun | None = None,
        keeps: frozenset[int] = frozenset(),
    ) -> tuple[NewDrawer, Existing | None]:
        """`drawer` under the id it takes, and what is stored under that id."""
        # Readers chosen by no one (the watcher's): stored text keeps its own.
        any_readers = options.keeps_stored_readers and drawer.readers is None
        for other_form in (_long_id, _own_id, _own_room_id):
            stored_serves = existing is None or (
                existing.content_hash == drawer.content_hash
                and _same_room(existing, drawer)
                and not self._concealed(existing, hidden, options, dry_run)
                # A diary entry is the writer's own or not (`_concealed`), whatever its
                # readers: written again, its sharing does not change.
                and (
                    options.same_entry is not None
                    or any_readers
                    or _serves(existing, drawer, keeps, dry_run)
                )
            )
            if stored_serves and (
                any_readers or _serves_planned(existing, drawer, keeps, dry_run)
            ):
                break
            # An 8-hex-digit clash with different content, the same content in another
            # room the id spells alike (`billing-service`, `billing_service`), the same
            # drawer hidden from the caller, or kept from some of the readers the chunk
            # is for: the long form; if that one too is hidden (or clashes), the form of
            # the caller's own, which nobody else's drawer can take, and last the
            # caller's own in that very room.
            drawer = _with_id(drawer, other_form(drawer, options.identity))
            existing = self._find(drawer.id, dry_run)
        return drawer, existing

    @staticmethod
    def _keeps(
        source: str,
        every: list[tuple[int, Existing]],
        known: dict[str, Existing],
        recorded: frozenset[Copy],
        replace_stale: bool,
        options: IngestOptions,
    ) -> frozenset[int]:
        """The stored drawers that stand for this ingest's chunks whatever their readers
        (see `_serves`): the source's own chunks this ingest may change (it gives them
        its readers), and when it names no readers, the drawers the file holds as copies
        (it leaves what the file holds as it is). For content, the drawer stored from
        the same source: sent again, it answers as it was."""
        if not replace_stale:
            return frozenset(e.rowid for e in known.values() if e.source_file == source)
        keeps = {e.rowid for _i, e in every}
        if options.readers is None:
            keeps.update(c.drawer for c in recorded)
        return frozenset(keeps)

    def _concealed(
        self,
        existing: Existing,
        hidden: set[int],
        options: IngestOptions,
        dry_run: DryRun | None = None,
    ) -> bool:
        """Whether a stored drawer is another's that the caller may not read (or, for a
        diary write, anything but the writer's own entry); on a dry run, by the readers
        earlier files of the batch give it."""
        if options.same_entry is not None:
            # The writer's own entry is readable to it; anything else is concealed.
            found = self.store.get([existing.rowid]).get(existing.rowid)
            return found is None or not options.same_entry(found)
        if options.roles is None:
            return False
        if existing.rowid in hidden:
            return True
        row = self.store.get([existing.rowid]).get(existing.rowid)
        return (
            row is not None
            and row.identity != options.identity
            and not _readable(_readers_now(row.rowid, row.readers, dry_run), options.roles)
        )

    def _embed(
        self, report: SourceReport, new: list[NewDrawer], ready: dict[str, np.ndarray]
    ) -> tuple[np.ndarray | None, EmbedderRecord | None]:
        record = record_of(self.embedder)
        if self.unavailable is not None and new:
            report.warnings.append(
                f"the embedder is unavailable ({self.unavailable}); {_WITHOUT_VECTORS}"
            )
        if self.embedder is None or record is None or not new:
            return None, None
        stored = self.store.embedder()
        if stored is not None and stored != record:
            report.warnings.append(
                f"stored vectors come from {stored.name} ({stored.dimension}-d), not "
                f"{record.name}; these drawers get no vector until `memctl recall reindex`"
            )
            return None, None
        missing = list(dict.fromkeys(d.content for d in new if d.content not in ready))
        fresh: dict[str, np.ndarray] = {}
        if missing and self.embed_failure is None:
            try:
                fresh = dict(zip(missing, self.embedder.embed(missing), strict=True))
            except EmbedderError as error:
                self.embed_failure = str(error)
        if missing and self.embed_failure is not None:
            # Stored all the same, as with no embedder at all: BM25 finds them now, and
            # a reindex gives them vectors (`recall status` counts them meanwhile).
            report.warnings.append(
                f"the embedder failed ({self.embed_failure}); {_WITHOUT_VECTORS}"
            )
            return None, None
        vectors = np.asarray(
            [ready[d.content] if d.content in ready else fresh[d.content] for d in new],
            dtype=np.float32,
        ).reshape(len(new), self.embedder.dimension)
        return vectors, record

    def _embed_allowed(self) -> bool:
        """False when the store's vectors come from another embedder (then nothing is
        embedded until a reindex; `_embed` says so in the file's report)."""
        record = record_of(self.embedder)
        stored = self.store.embedder()
        return record is not None and (stored is None or stored == record)

    def _near_duplicates(
        self,
        report: SourceReport,
        new: list[NewDrawer],
        vectors: np.ndarray | None,
        record: EmbedderRecord | None,
        threshold: float,
        roles: frozenset[str] | None = None,
        retiring: set[int] | None = None,
    ) -> None:
        """Report each new drawer's nearest stored one at `threshold` or above, leaving
        out the rows this write retires (a grown exchange is not its old version's
        near-duplicate)."""
        if vectors is None or record is None or len(new) > NEAR_DUPLICATE_BATCH:
            return
        try:
            # Among the drawers the caller may read: a hidden best match must not mask
            # a visible one (nor its absence tell of it).
            where = DrawerFilter(roles=roles) if roles is not None else None
            matches = self.store.most_similar(vectors, record, where)
            if retiring:
                matches = [
                    self._nearest_kept(vector, match, record, roles, retiring)
                    for vector, match in zip(vectors, matches, strict=True)
                ]
        except VectorsUnavailable:
            return
        candidates = [(d, m) for d, m in zip(new, matches, strict=True) if m and m[1] >= threshold]
        if not candidates:
            return
        similar = self.store.get([m[0] for _d, m in candidates if m])
        for drawer, match in candidates:
            other = similar.get(match[0]) if match else None
            if other is None or other.id == drawer.id or not _readable(other.readers, roles):
                continue  # a hidden drawer is never named or quoted
            report.near_duplicates.append(
                {
                    "drawer_id": drawer.id,
                    "similar_drawer_id": other.id,
                    "similarity": round(match[1], 4) if match else None,
                    "preview": other.content[:PREVIEW],
                }
            )

    def _nearest_kept(
        self,
        vector: np.ndarray,
        match: tuple[int, float] | None,
        record: EmbedderRecord,
        roles: frozenset[str] | None,
        retiring: set[int],
    ) -> tuple[int, float] | None:
        """`match`, or when it is a row being retired, the nearest row that stays."""
        if match is None or match[0] not in retiring:
            return match
        ranked = self.store.nearest(vector, record, DrawerFilter(roles=roles), len(retiring) + 1)
        return next(((r.rowid, r.score) for r in ranked if r.rowid not in retiring), None)


def _leaving_out(drawers: list[NewDrawer], gone: list[NewDrawer]) -> dict[int, str]:
    """By chunk index, the contexts of the chunks next to a `gone` one, without its text."""
    at = {d.chunk_index: d for d in drawers}
    contexts: dict[int, str] = {}
    for deleted in gone:
        for index in (deleted.chunk_index - 1, deleted.chunk_index + 1):
            if (neighbour := at.get(index)) is not None:
                context = contexts.get(index, neighbour.context)
                contexts[index] = leave_out(context, neighbour.said_at, deleted.content)
    return contexts


def _with_context(drawer: NewDrawer, contexts: dict[int, str]) -> NewDrawer:
    context = contexts.get(drawer.chunk_index)
    return drawer if context is None else replace(drawer, context=context)


_PART = re.compile(r" part [0-9]+\Z")


def _exchange_of(locator: str) -> str | None:
    """The exchange a window of one is cut from (`lines 3-9 part 2` -> `lines 3-9`);
    None for a chunk that is no window."""
    found = _PART.search(locator)
    return locator[: found.start()] if found is not None else None


def _readable(readers: tuple[str, ...] | None, roles: frozenset[str] | None) -> bool:
    return roles is None or readers is None or not roles.isdisjoint(readers)


def _encodable(text: str) -> str:
    """`text` with any lone surrogate made U+FFFD (as UTF-8 decoding makes bad bytes)."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _long_id(drawer: NewDrawer, _identity: str = "") -> str:
    prefix, _, _short = drawer.id.rpartition("_")
    return f"{prefix}_{content_hash(drawer.content)[:LONG_HASH]}"


def _reads_at_least(
    file_readers: tuple[str, ...] | None, drawer_readers: tuple[str, ...] | None
) -> bool:
    """Whether every caller who may read a drawer of `drawer_readers` may read a chunk
    stored with `file_readers` (None: every caller)."""
    if file_readers is None:
        return True
    return drawer_readers is not None and set(drawer_readers) <= set(file_readers)


def _serves(
    existing: Existing, drawer: NewDrawer, keeps: frozenset[int], dry_run: DryRun | None
) -> bool:
    """Whether a stored drawer the caller may read is the chunk's duplicate for every
    caller the chunk is stored for: its readers include all of the chunk's (None: every
    caller), or it is one of `keeps`. One deleted stands for it too: deleted on purpose
    it stays so, retired it is revived with the chunk's readers. Otherwise the text is
    stored again for them, under another id form: counted a duplicate, it would stay
    out of their reach. On a dry run, with the readers earlier files of the batch give it."""
    if existing.deleted or existing.rowid in keeps:
        return True
    return _reads_at_least(_readers_now(existing.rowid, existing.readers, dry_run), drawer.readers)


def _serves_planned(
    existing: Existing | None, drawer: NewDrawer, keeps: frozenset[int], dry_run: DryRun | None
) -> bool:
    """On a dry run, whether the drawer an earlier file of the batch would write under
    `drawer`'s id serves the chunk, as `_serves` finds it once written: in its room, and
    for every caller the chunk is for (True when no earlier file writes the id)."""
    planned = dry_run.written.get(drawer.id) if dry_run is not None else None
    if planned is None:
        return True
    room, readers = planned
    if room != drawer.room:
        return False
    return (existing is not None and existing.rowid in keeps) or _reads_at_least(
        readers, drawer.readers
    )


def _readers_now(
    rowid: int, readers: tuple[str, ...] | None, dry_run: DryRun | None
) -> tuple[str, ...] | None:
    """A stored row's readers; on a dry run, those earlier files of the batch give it."""
    return readers if dry_run is None else dry_run.readers.get(rowid, readers)


def _may_cite(
    copy: Copy,
    drawer_readers: tuple[str, ...] | None,
    writers_chunks: list[tuple[str, ...] | None],
) -> bool:
    """Whether the file of `copy` may be cited for a drawer of `drawer_readers`, by the
    readers of the file's live chunks stored by the drawer's writer, or, when it has
    none, by those its copy was recorded with (none known: it may not)."""
    if writers_chunks:
        return all(_reads_at_least(r, drawer_readers) for r in writers_chunks)
    return copy.readers_known and _reads_at_least(copy.readers, drawer_readers)


def _new_readers(options: IngestOptions, readers: tuple[str, ...] | None) -> bool:
    """Whether an ingest gives a stored drawer of its source other readers than it has."""
    return options.readers is not None and (
        readers is None or sorted(readers) != sorted(options.readers)
    )


def _shared_readers(
    readers: Iterable[tuple[str, ...] | None],
) -> tuple[str, ...] | None:
    """The roles every one of `readers` names (None: every caller; none given, None):
    the readers a chunk may take without widening who reads any of them."""
    shared: set[str] | None = None
    for names in readers:
        if names is not None:
            shared = set(names) if shared is None else shared & set(names)
    return None if shared is None else tuple(sorted(shared))


def _importance(options: IngestOptions, stored: int) -> int:
    """The importance a stored drawer of the source has after this ingest."""
    if options.importance is None or options.keeps_importance:
        return stored
    return options.importance


def _same_room(existing: Existing, drawer: NewDrawer) -> bool:
    """Whether a stored drawer is in `drawer`'s room (None: the store did not say)."""
    return existing.room is None or existing.room == drawer.room


def _with_id(drawer: NewDrawer, identifier: str) -> NewDrawer:
    """`drawer` under another id; a note citing itself (no source) cites the new id."""
    source = drawer.source_file
    if source == f"{SELF_CITATION}{drawer.id}":
        source = f"{SELF_CITATION}{identifier}"
    return replace(drawer, id=identifier, source_file=source)


def _own_room_id(drawer: NewDrawer, identity: str) -> str:
    """The caller's own form in exactly this room (rooms differing only in case or
    punctuation, each holding the same text, get one id each)."""
    prefix, _, _short = drawer.id.rpartition("_")
    key = identity + chr(0) + drawer.room + chr(0) + drawer.content
    return f"{prefix}_{content_hash(key)[:LONG_HASH]}"


def _own_id(drawer: NewDrawer, identity: str) -> str:
    """The id form of `identity`'s copy: its content hashed with the writer's name, so
    no drawer another identity wrote (hidden or not) holds it, and the same writer's
    same text still lands on one id."""
    prefix, _, _short = drawer.id.rpartition("_")
    return f"{prefix}_{content_hash(identity + chr(0) + drawer.content)[:LONG_HASH]}"


__all__ = [
    "IngestOptions",
    "Ingestor",
    "NEAR_DUPLICATE",
    "SourceReport",
    "directory_room",
    "record_of",
]
