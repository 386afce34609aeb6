"""The persisted parse cache: each source file's parsed, typed and indexed state, kept
in the state directory so that a restart re-parses only files that changed meanwhile.

One entry per (workspace root, file path, content digest, type-registry fingerprint,
format version), written after a snapshot is served and read by the first build
after a start. An entry holds the file's parse as plain data (declarations' line,
module and positions by column, each one's fields as their own `marshal` bytes; the
index segment's ids, names, kinds, postings (each table's keys as their own bytes,
decoded when first used: `RestoredPostingTable`) and flag rows; its local directories are
made from the ids and names when first read: `RestoredSegment`) in `marshal`
form, which loads about seven times faster than a pickle of the objects. Declarations
are rebuilt from it as the parser builds them, typed through the current registry,
and their fields are decoded when first read (`RestoredDeclaration`). Nothing but
plain values can come out of it (no code runs, unlike pickle), and even so only bytes
this daemon wrote are decoded: every entry is sealed with an HMAC-SHA256 keyed by a
random secret that lives only in this cache directory (0700, key 0600). An entry that is truncated, flipped, of another
format version, or copied from another state directory fails the check, or the shape
checks after decoding, and is ignored with a log line. The entry's own path and
digest are compared after loading, so an entry is never served for another file.
Bounded: entries not used by the workspace's current snapshot are pruned.

Beside the entries, each workspace has one consolidated snapshot file: every file's
path, stat (mtime_ns, size, inode, ctime_ns), digest, text and entry data in `marshal` documents
of `SNAPSHOT_BATCH` files each (strings shared by a batch's files are decoded once), then
their segments' id, name and flag columns with the composed index in one more, each
document after its length, sealed the same way as one payload. Written a document at a time, a snapshot never holds the whole payload in
memory (about 1 GB at 1M declarations). A start
reads it once and serves a file whose stat is unchanged without reading or hashing
it (the check a running daemon makes before re-reading a file); a file whose stat
differs is read, hashed and restored from its entry or parsed. The ctime is part of
that stat because an edit in place can keep the size and put the old mtime back
(`cp -p`, `rsync -t --inplace`, `touch -r`); snapshots of format 9 and before, which
hold no ctime, are refused by their version, so every file is read once. It is rewritten off
the request path, at most every `SNAPSHOT_INTERVAL_S` while files change.

Each workspace's folder also holds a `root` file naming the workspace directory it
caches. A removed workspace's folder is deleted (`forget`); at start, folders no served
workspace uses and that were not used for `UNUSED_FOR_S` are (`sweep`).

It must not decide what is served: a miss or a refused entry only costs a parse.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import marshal
import mmap
import os
import re
import secrets
import shutil
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import structlog

from memhubd.index.segment import LazyPostingTable, PostingTable, Segment, _local_directory
from memhubd.lang.tree import Document, SourceText
from memhubd.model import Declaration
from memhubd.model.declaration import (
    RestoredDeclarations,
    RestoredFile,
    RestoredRaw,
    RestoredRaws,
)
from memhubd.model.workspace import cyclic_gc_paused
from memhubd.runtime.confine import StatKey

log = structlog.get_logger("memhubd.cache")

FORMAT_VERSION = 4
_MAGIC = b"MHPC"
_HEADER = len(_MAGIC) + 2 + 32  # magic, version (u16), HMAC-SHA256
_KEY_FILE = "key"
_SUFFIX = ".entry"
# Folders of removed workspaces a cache remembers not to write in (a save under way at a
# removal is long over by the time this many more were removed).
FORGOTTEN_KEPT = 4096
# 10: a file's stat holds its ctime_ns (`confine.stat_tuple`); a 9's could vouch for
# bytes edited in place with the size kept and the old mtime put back.
SNAPSHOT_FORMAT = 10
# Files per `marshal` document of the consolidated snapshot: what a rewrite holds at once.
SNAPSHOT_BATCH = 500
_FRAME = struct.Struct(">Q")  # a document's length, before it
_SNAPSHOT_MAGIC = b"MHSS"
_SNAPSHOT_FILE = "snapshot"
# How often the consolidated snapshot is rewritten at most while files keep changing
# (it holds every file of the workspace; files changed since cost their entry at start).
SNAPSHOT_INTERVAL_S = 300.0
# The file of a workspace's folder that names its root (the folder's name is a hash).
_ROOT_FILE = "root"
# A folder no served workspace uses is deleted at start once unused for this long (a
# workspace moved, renamed or taken out of the configuration while the daemon was down).
UNUSED_FOR_S = 30 * 24 * 3600.0
_FOLDER_NAME = re.compile(r"[0-9a-f]{24}")

# path -> (stat, digest, text, entry data) of one file as a consolidated snapshot holds it
Consolidated = dict[str, tuple[StatKey, str, str, Any]]
# The composed index a consolidated snapshot holds: the path of each of its segments'
# files, in order, and the index as `memhubd.index.persist` saves it.
SavedIndex = tuple[tuple[str, ...], Any]
# A role-limited view's composed index a consolidated snapshot holds (`SavedView`,
# made by `memhubd.runtime.snapshot.persist`): its roles (sorted), the positions it
# left out of each file's run, each of its segments as (path, digest, the columns of a
# segment cut from that file or None for the file's whole segment), and the index as
# `memhubd.index.persist` saves it. Never an access decision: a start works out what
# the role set reads as always and uses it only when it leaves out exactly these.
SavedView = tuple[
    tuple[str, ...],
    tuple[tuple[str, tuple[int, ...]], ...],
    tuple[tuple[str, str, Any], ...],
    Any,
]


class ParseCache:
    """The parse cache of one state directory; safe to use from several threads."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        _sweep_orphan_temps(self.directory)
        self._key = self._load_key()
        self._lock = threading.Lock()
        self._saved: dict[str, set[str]] = {}  # workspace dir -> entry names known on disk
        self._folders: dict[str, Path] = {}  # workspace root -> its directory here
        # workspace root -> (when written, what it holds, the role sets of the views
        # saved with it) of its consolidated snapshot
        self._snapshots: dict[str, tuple[float, frozenset[Any], frozenset[Any]]] = {}
        # Folders of removed workspaces: a save still under way writes nothing there,
        # until a build of that root reads the cache again (it is served again).
        self._forgotten: dict[Path, None] = {}  # the FORGOTTEN_KEPT removed last
        self._labelled: set[Path] = set()  # folders whose `root` file is written
        self.hits = 0
        self.misses = 0
        self.refused = 0

    def _load_key(self) -> bytes:
        path = self.directory / _KEY_FILE
        try:
            key = path.read_bytes()
            if len(key) == 32:
                return key
            log.warning("parse cache key unusable, starting a new cache", path=str(path))
        except FileNotFoundError:
            pass
        key = secrets.token_bytes(32)
        temp = path.with_name(f".{_KEY_FILE}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
        os.replace(temp, path)
        return key

    # --- naming ---------------------------------------------------------------------

    def _workspace_dir(self, root: str) -> Path:
        folder = self._folders.get(root)
        if folder is None:
            folder = self._folders[root] = _workspace_folder(self.directory, root)
            _sweep_orphan_temps(folder)
        return folder

    def _writable_dir(self, root: str) -> Path | None:
        """`root`'s folder, made and labelled with its root, to write in; None when its
        workspace was removed (`forget`). Called holding `_lock`."""
        folder = self._workspace_dir(root)
        if folder in self._forgotten:
            return None
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder not in self._labelled:
            real = os.path.realpath(root)
            label = folder / _ROOT_FILE
            try:
                current = label.read_text(encoding="utf-8")
            except (OSError, ValueError):
                current = None
            if current != real:
                self._write(label, [real.encode()])
            self._labelled.add(folder)
        return folder

    # --- forgetting -----------------------------------------------------------------

    def forget(self, root: str) -> None:
        """Delete workspace `root`'s folder and what is known of it: it was removed. A
        save under way finishes first (saves hold `_lock`); one that comes later writes
        nothing, until a build of `root` reads the cache again."""
        with self._lock:
            folder = _workspace_folder(self.directory, root)
            self._forgotten.pop(folder, None)
            self._forgotten[folder] = None
            while len(self._forgotten) > FORGOTTEN_KEPT:  # removals of long ago
                del self._forgotten[next(iter(self._forgotten))]
            self._labelled.discard(folder)
            self._saved.pop(str(folder), None)
            for known in [r for r, f in self._folders.items() if f == folder]:
                del self._folders[known]
                self._snapshots.pop(known, None)
            self._snapshots.pop(root, None)
            _delete_folder(folder, root)

    def sweep(self, served: Iterable[str], unused_for_s: float = UNUSED_FOR_S) -> list[str]:
        """Delete the folders that no root of `served` (nor one used since the start)
        has and that were not used for `unused_for_s`: their workspace was removed,
        moved or left out of the configuration. Returns the roots deleted, as their
        folders name them ("" for a folder that does not)."""
        deleted = []
        with self._lock:
            used = {_workspace_folder(self.directory, root).name for root in served}
            used |= {folder.name for folder in self._folders.values()}
            try:
                names = os.listdir(self.directory)
            except OSError:
                return []
            for name in names:
                folder = self.directory / name
                if name in used or not _FOLDER_NAME.fullmatch(name) or not folder.is_dir():
                    continue
                age = time.time() - _last_used(folder)
                if age < unused_for_s:
                    continue
                root = _root_of(folder)
                log.info(
                    "parse cache: deleting the folder of a workspace not served",
                    folder=name,
                    root=root or None,
                    unused_days=round(age / 86400, 1),
                )
                _delete_folder(folder, root)
                deleted.append(root)
        return deleted

    @staticmethod
    def _entry_name(path: str, digest: str, types: str) -> str:
        key = f"{FORMAT_VERSION}\0{path}\0{digest}\0{types}".encode()
        return hashlib.blake2b(key, digest_size=16).hexdigest() + _SUFFIX

    def _mac(self, magic: bytes, version: bytes, payload: bytes | memoryview) -> bytes:
        return _mac(self._key, magic, version, payload)

    def _seal(
        self, payload: bytes, magic: bytes = _MAGIC, form: int = FORMAT_VERSION
    ) -> tuple[bytes, bytes]:
        """(header, payload) to write one after the other: joined, a 1M-declaration
        snapshot's payload (about 1 GB) would be held twice while it is written."""
        version = form.to_bytes(2, "big")
        return magic + version + self._mac(magic, version, payload), payload

    def _open(
        self, data: bytes | mmap.mmap, magic: bytes = _MAGIC, form: int = FORMAT_VERSION
    ) -> memoryview | None:
        return _unsealed(self._key, data, magic, form)

    # --- reading and writing --------------------------------------------------------

    def get(
        self, root: str, path: str, digest: str, types: str, text: str, registry: Any
    ) -> tuple[Document, tuple[Declaration, ...], Segment] | None:
        """(document, typed declarations, segment) of exactly this file, or None.

        `text` is the file's source (for positions computed on demand), `registry` the
        registry `types` names: declarations are typed through it.
        """
        entry = self._workspace_dir(root) / self._entry_name(path, digest, types)
        try:
            data = entry.read_bytes()
        except OSError:
            self.misses += 1
            return None
        payload = self._open(data)
        if payload is None:
            self.refused += 1
            log.warning("parse cache entry refused (corrupt or foreign)", entry=str(entry))
            self._discard(entry)
            return None
        found = self.decode(payload, path, digest, text, registry, where=str(entry))
        if found is None:
            self._discard(entry)
        return found

    def _discard(self, entry: Path) -> None:
        """Remove an entry that was refused, so that the next save writes it again (it
        would otherwise count as saved, and be refused at every start)."""
        with self._lock:
            with contextlib.suppress(OSError):
                os.unlink(entry)
            known = self._saved.get(str(entry.parent))
            if known is not None:
                known.discard(entry.name)

    def decode(
        self,
        payload: bytes | memoryview,
        path: str,
        digest: str,
        text: str,
        registry: Any,
        where: str,
    ) -> tuple[Document, tuple[Declaration, ...], Segment] | None:
        """(document, typed declarations, segment) from an entry's opened payload, or
        None (logged) when it is not an entry of exactly this file."""
        try:
            saved = marshal.loads(payload)
        except Exception as error:  # sealed by us yet not what we write: never served
            self.refused += 1
            log.warning("parse cache entry unusable", entry=where, path=path, error=str(error))
            return None
        return self.restore(saved, path, digest, text, registry, where)

    def restore(
        self,
        saved: Any,
        path: str,
        digest: str,
        text: str,
        registry: Any,
        where: str,
        *,
        served: bool = True,
    ) -> tuple[Document, tuple[Declaration, ...], Segment] | None:
        """(document, typed declarations, segment) from an entry's decoded data, or None
        (logged) when it is not an entry of exactly this file. `served`: False for a
        file's former state, restored only to update a saved index (not a hit)."""
        try:
            if saved[0] != path or saved[1] != digest:
                raise ValueError("entry for another file")
            restored = _decode(saved, path, text, registry)
        except Exception as error:  # sealed by us yet not what we write: never served
            self.refused += 1
            log.warning("parse cache entry unusable", entry=where, path=path, error=str(error))
            return None
        self.hits += served
        return restored

    # --- the consolidated snapshot ----------------------------------------------------

    def load_snapshot(
        self, root: str, types: str
    ) -> tuple[Consolidated, SavedIndex | None, tuple[SavedView, ...]]:
        """What the workspace's consolidated snapshot holds for registry `types`, the
        composed index saved with it (None if it was not) and the role-limited views'
        indexes saved with it; empty when there is none, or (logged) when it is
        corrupt, foreign or of other types."""
        folder = self._workspace_dir(root)
        with self._lock:
            self._forgotten.pop(folder, None)  # served (again): its saves are wanted
        with contextlib.suppress(OSError):
            os.utime(folder / _ROOT_FILE)  # used now: not swept (`sweep`)
        file = folder / _SNAPSHOT_FILE
        early = _prefetched(file, self._key)
        if early is not None:
            data, checked = early
        else:
            try:
                data = _mapped(file)
            except OSError:
                return {}, None, ()
            checked = None
        try:
            return self._load_snapshot(root, types, file, data, checked)
        finally:
            if isinstance(data, mmap.mmap):
                with contextlib.suppress(BufferError):  # a view still held: unmapped when freed
                    data.close()

    def _load_snapshot(
        self,
        root: str,
        types: str,
        file: Path,
        data: bytes | mmap.mmap,
        checked: tuple[memoryview | None] | None = None,
    ) -> tuple[Consolidated, SavedIndex | None, tuple[SavedView, ...]]:
        # `checked`: the payload as `prefetch_snapshots` verified it with this very key.
        payload = (
            self._open(data, _SNAPSHOT_MAGIC, SNAPSHOT_FORMAT) if checked is None else checked[0]
        )
        if payload is None:
            self.refused += 1
            form = _form_of(data, _SNAPSHOT_MAGIC)
            if form is not None and form != SNAPSHOT_FORMAT:  # an older or newer daemon's
                log.warning(
                    "parse cache snapshot refused (another format version)",
                    file=str(file),
                    format=form,
                    expected=SNAPSHOT_FORMAT,
                )
            else:
                log.warning("parse cache snapshot refused (corrupt or foreign)", file=str(file))
            return {}, None, ()
        try:
            with cyclic_gc_paused():  # a million objects that all stay: no collection
                saved_root, saved_types, files, index, views = read_snapshot_payload(payload)
            if saved_root != os.path.realpath(root):
                raise ValueError("snapshot of another workspace")
            if saved_types != types:
                log.info("parse cache snapshot of other types, not used", file=str(file))
                return {}, None, ()
            held: Consolidated = {
                path: (tuple(stat), digest, text, entry)  # type: ignore[misc]
                for path, stat, digest, text, entry in files
            }
            if index is not None and (len(index) != 2 or not isinstance(index[0], tuple)):
                raise ValueError("saved index of another shape")
            if not isinstance(views, tuple) or not all(_view_shaped(v) for v in views):
                raise ValueError("saved views of another shape")
        except Exception as error:  # sealed by us yet not what we write: never served
            self.refused += 1
            log.warning("parse cache snapshot unusable", file=str(file), error=str(error))
            return {}, None, ()
        marks = frozenset((path, item[0], item[1]) for path, item in held.items())
        with self._lock:
            self._snapshots[root] = (time.monotonic(), marks, frozenset(v[0] for v in views))
        return held, index, views

    def save_snapshot(
        self,
        root: str,
        types: str,
        files: list[tuple[str, StatKey, str, str, Any, Any]],
        index: Any = None,
        views: Callable[[], tuple[SavedView, ...]] | None = None,
        view_roles: frozenset[tuple[str, ...]] = frozenset(),
        *,
        now: bool = False,
    ) -> bool:
        """Rewrite the consolidated snapshot from (path, stat, digest, text, document,
        segment) of each file, unless it already holds exactly that or was written less
        than `SNAPSHOT_INTERVAL_S` ago (`now`: whenever it differs, as the daemon stops). True when written. `index`: called only when
        the file is written, it gives the composed index to save with it (`SavedIndex`),
        or None. `views`: likewise, the role-limited views' indexes to save with it
        (`SavedView`), for the role sets `view_roles`; files unchanged since the last
        write are written again, at once, when it did not hold a view of one of them
        (a start restored from it makes them afresh, once).

        The files' data go into `marshal` documents of `SNAPSHOT_BATCH` files rather
        than one per file: a string that a batch's files share (field names, kinds,
        modules) is then decoded and interned once per batch instead of once per file.
        Not one document for all: that held the whole payload, and marshal's table of
        every object written, while it was made (1.3 GB at 1M declarations)."""
        marks = frozenset((path, stat, digest) for path, stat, digest, *_rest in files)
        with self._lock:
            folder = self._writable_dir(root)
            if folder is None:
                return False
            written = self._snapshots.get(root)
            if written is not None:
                if written[1] == marks and view_roles <= written[2]:
                    return False
                if (
                    not now
                    and written[1] != marks
                    and time.monotonic() - written[0] < SNAPSHOT_INTERVAL_S
                    and _last_good_marks(written[1]) == _last_good_marks(marks)
                ):
                    # Not yet; but a file that broke or was fixed is written at once:
                    # its last good parse is what a restart serves for it.
                    return False
            held = []
            for path, stat, digest, text, document, segment in files:
                with contextlib.suppress(ValueError):  # not plain: parsed at the next start
                    held.append(
                        (path, stat, digest, text, _entry_data(path, digest, document, segment))
                    )
            saved_views = views() if views is not None and view_roles else ()
            real = os.path.realpath(root)
            kept: list[tuple[SavedView, ...]] = []
            self._write_sealed(
                folder / _SNAPSHOT_FILE,
                snapshot_documents(real, types, held, index, saved_views, kept),
                _SNAPSHOT_MAGIC,
                SNAPSHOT_FORMAT,
            )
            roles = frozenset(view[0] for view in kept[0]) if kept else frozenset()
            self._snapshots[root] = (time.monotonic(), marks, roles)
            return True

    def has_entry(self, root: str, path: str, digest: str, types: str) -> bool:
        """Whether the entry of exactly these bytes of `path` is saved (the last save
        served them: it prunes the entries of every other version)."""
        name = self._entry_name(path, digest, types)
        return (self._workspace_dir(root) / name).is_file()

    def put_many(self, root: str, types: str, files: list[tuple[str, str, Any, Any]]) -> int:
        """Save (path, digest, document, segment) of each file not saved yet, and prune
        entries of `root` that none of `files` uses. Returns how many were written."""
        with self._lock:
            folder = self._writable_dir(root)
            if folder is None:
                return 0
            known = self._saved.get(str(folder))
            if known is None:
                known = {n for n in os.listdir(folder) if n.endswith(_SUFFIX)}
                self._saved[str(folder)] = known
            wanted = {self._entry_name(item[0], item[1], types): item for item in files}
            written = 0
            for name, (path, digest, document, segment) in wanted.items():
                if name in known:
                    continue
                payload = _encode(path, digest, document, segment)
                if payload is None:
                    continue
                self._write(folder / name, self._seal(payload))
                known.add(name)
                written += 1
            for name in list(known - wanted.keys()):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(folder / name)
                known.discard(name)
            return written

    def _write_sealed(
        self, path: Path, documents: Iterator[bytes], magic: bytes, form: int
    ) -> None:
        """Write `documents` (made one at a time) as one sealed payload, each after its
        length: the header's HMAC is written last, over the placeholder the file starts
        with, so no more than one document is held at once."""
        version = form.to_bytes(2, "big")
        mac = hmac.new(self._key, magic + version, hashlib.sha256)

        def framed() -> Iterator[bytes]:
            yield bytes(_HEADER)  # replaced by `header` once every document is written
            for document in documents:
                length = _FRAME.pack(len(document))
                mac.update(length)
                mac.update(document)
                yield length
                yield document

        self._write(path, framed(), lambda: magic + version + mac.digest())

    @staticmethod
    def _write(
        path: Path, parts: Iterable[bytes], header: Callable[[], bytes] | None = None
    ) -> None:
        """Write `parts` one after the other, then `header()` over the file's first bytes."""
        # Written whole then renamed: a reader sees an old entry or a new one, never half.
        # No fsync: a lost entry after a crash costs one parse, and the HMAC refuses a torn one.
        temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                for part in parts:
                    handle.write(part)
                if header is not None:
                    handle.seek(0)
                    handle.write(header())
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise


def snapshot_documents(
    real: str,
    types: str,
    held: list[tuple[Any, ...]],
    index: Any = None,
    views: tuple[SavedView, ...] = (),
    kept: list[tuple[SavedView, ...]] | None = None,
) -> Iterator[bytes]:
    """The consolidated snapshot's `marshal` documents, made one at a time: (real root,
    types, file count); the files' items `SNAPSHOT_BATCH` at a time, each without its
    segment's plain columns; last, those columns of every file with the saved index
    (`index`: called for it, or None) and the saved views (`views`), in one document
    so that the indexes' keys and the cut segments' ids and names are references to
    the files' own, not copies (2M strings at 1M declarations). An item marshal
    cannot write is left out (that file is parsed at the next start), and the index
    and views with it: they cover every file. `kept`, when given, receives the views
    written."""
    yield marshal.dumps((real, types, len(held)))
    whole = True
    columns: list[Any] = []
    for start in range(0, len(held), SNAPSHOT_BATCH):
        batch = held[start : start + SNAPSHOT_BATCH]
        try:
            document = marshal.dumps(tuple((*rest, entry[:6]) for *rest, entry in batch))
        except ValueError:  # a value marshal cannot write: those files are left out
            whole = False
            batch = [item for item in batch if _plain(item)]
            document = marshal.dumps(tuple((*rest, entry[:6]) for *rest, entry in batch))
        columns.extend(entry[6] for *_rest, entry in batch)
        yield document
        del document
    saved_index = index() if index is not None and whole else None
    saved_views = views if whole else ()
    for attempt in (saved_views, ()):
        try:
            document = marshal.dumps((tuple(columns), saved_index, attempt))
        except ValueError:  # a view marshal cannot write: written without views
            continue
        if kept is not None:
            kept.append(attempt)
        yield document
        return
    # A file's columns marshal cannot write: it is left out, and the index and views
    if kept is not None:
        kept.append(())
    yield marshal.dumps((tuple(c if _plain(c) else None for c in columns), None, ()))


def read_snapshot_payload(payload: bytes | memoryview) -> tuple[str, str, list[Any], Any, Any]:
    """(real root, types, the files' items, saved index, saved views) of a consolidated
    snapshot's payload (`snapshot_documents`). Raises ValueError for one of another
    shape."""
    view = memoryview(payload)
    documents = []
    at = 0
    while at < len(view):
        if at + _FRAME.size > len(view):
            raise ValueError("snapshot document length cut short")
        (size,) = _FRAME.unpack_from(view, at)
        at += _FRAME.size
        if at + size > len(view):
            raise ValueError("snapshot document cut short")
        documents.append(marshal.loads(view[at : at + size]))
        at += size
    if len(documents) < 2 or not isinstance(documents[0], tuple) or len(documents[0]) != 3:
        raise ValueError("snapshot of another shape")
    real, types, count = documents[0]
    columns, index, views = documents[-1]
    parts = [item for batch in documents[1:-1] for item in batch]
    if len(parts) != len(columns) or len(parts) > count:
        raise ValueError("snapshot of another file count")
    files = [
        (*rest, (*entry, plain))
        for (*rest, entry), plain in zip(parts, columns, strict=True)
        if plain is not None  # left out when written: parsed at start
    ]
    return real, types, files, index, views


def _view_shaped(view: Any) -> bool:
    """Whether `view` has the outer shape of a `SavedView` (its parts are checked when
    it is restored)."""
    return (
        isinstance(view, tuple)
        and len(view) == 4
        and isinstance(view[0], tuple)
        and all(isinstance(role, str) for role in view[0])
        and isinstance(view[1], tuple)
        and isinstance(view[2], tuple)
    )


def _plain(value: Any) -> bool:
    try:
        marshal.dumps(value)
    except ValueError:
        return False
    return True


_TEMP_PID = re.compile(r"\.(\d+)(?:\.\d+)?\.tmp$")


def _sweep_orphan_temps(folder: Path) -> None:
    """Remove the half-written files (`.NAME.PID[.THREAD].tmp`) of writers that are no
    longer running: a process killed while saving leaves its temp file, which nothing
    else would ever delete (73 MB a snapshot at 100k). A live writer's are kept."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        found = _TEMP_PID.search(name) if name.startswith(".") else None
        if found is None or int(found.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(found.group(1)), 0)
            continue  # its writer still runs (maybe another daemon on this state dir)
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
            log.info("parse cache: removed an interrupted write", file=name)


def _last_used(folder: Path) -> float:
    """When `folder` was last written in, or its workspace last served at a start (its
    `root` file is touched then)."""
    times = []
    for path in (folder, folder / _ROOT_FILE):
        with contextlib.suppress(OSError):
            times.append(path.stat().st_mtime)
    return max(times, default=0.0)


def _root_of(folder: Path) -> str:
    """The workspace root `folder`'s `root` file names; "" when it names none."""
    try:
        return (folder / _ROOT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return ""


def _delete_folder(folder: Path, root: str) -> None:
    """Delete a workspace's folder of the cache; a failure is logged (a cache only)."""

    def failed(_function: Any, path: str, info: Any) -> None:
        log.warning("parse cache file not deleted", root=root, path=path, error=str(info[1]))

    if folder.is_dir():
        shutil.rmtree(folder, onerror=failed)  # `onexc` comes with Python 3.12


def _workspace_folder(directory: Path, root: str) -> Path:
    """The folder of `directory` (a parse cache) holding workspace `root`'s entries."""
    return directory / hashlib.blake2b(os.path.realpath(root).encode(), digest_size=12).hexdigest()


def _mac(key: bytes, magic: bytes, version: bytes, payload: bytes | memoryview) -> bytes:
    mac = hmac.new(key, magic + version, hashlib.sha256)
    mac.update(payload)  # fed apart: a snapshot's payload is tens of MB, never copied
    return mac.digest()


def _unsealed(
    key: bytes, data: bytes | mmap.mmap, magic: bytes = _MAGIC, form: int = FORMAT_VERSION
) -> memoryview | None:
    """The payload of a sealed file's bytes when its magic, format and seal under `key`
    hold, else None."""
    if len(data) < _HEADER or data[: len(magic)] != magic:
        return None
    version = data[len(_MAGIC) : len(_MAGIC) + 2]
    if int.from_bytes(version, "big") != form:
        return None
    mac = data[len(_MAGIC) + 2 : _HEADER]
    payload = memoryview(data)[_HEADER:]
    return payload if hmac.compare_digest(mac, _mac(key, magic, version, payload)) else None


def _sealed(key: bytes, data: bytes | mmap.mmap) -> memoryview | None:
    return _unsealed(key, data, _SNAPSHOT_MAGIC, SNAPSHOT_FORMAT)


# Snapshot files mapped and checked by `prefetch_snapshots`, by path: (key, thread, found).
_EARLY: dict[Path, tuple[bytes, threading.Thread, list[Any]]] = {}
_EARLY_LOCK = threading.Lock()


def prefetch_snapshots(directory: str | os.PathLike[str], roots: Iterable[str]) -> None:
    """Map the consolidated snapshot files of `roots` in parse cache `directory` and
    check their seals on threads of their own, for the daemon's start to read them
    from there (`ParseCache.load_snapshot`). Called before the daemon imports its
    server: the check (hashlib, outside the GIL) and the file's page faults then
    overlap with those imports instead of following them (0.07-0.13 s at 100k).
    Reads only; a cache without its key, or a file missing, is left to the start."""
    folder = Path(directory)
    try:
        key = (folder / _KEY_FILE).read_bytes()
    except OSError:
        return
    if len(key) != 32:
        return
    for root in roots:
        file = _workspace_folder(folder, root) / _SNAPSHOT_FILE
        found: list[Any] = []

        def check(file: Path = file, found: list[Any] = found) -> None:
            with contextlib.suppress(OSError, ValueError):
                data = _mapped(file)
                found.append((data, (_sealed(key, data),)))

        thread = threading.Thread(target=check, name="snapshot-check", daemon=True)
        with _EARLY_LOCK:
            if file in _EARLY:
                continue
            _EARLY[file] = (key, thread, found)
        thread.start()


def _prefetched(
    file: Path, key: bytes
) -> tuple[bytes | mmap.mmap, tuple[memoryview | None]] | None:
    """(the bytes, (their checked payload or None,)) of `file` as `prefetch_snapshots`
    found them under `key`, once; None when it did not look or could not read it.
    Those bytes are what the file held when mapped: a file replaced since is read at
    the next start (a snapshot is written whole, then renamed)."""
    with _EARLY_LOCK:
        early = _EARLY.pop(file, None)
    if early is None:
        return None
    early_key, thread, found = early
    thread.join()
    if not found:
        return None
    data, checked = found[0]
    if early_key != key:  # another cache's key since: checked again
        return data, (_sealed(key, data),)
    return data, checked


def discard_prefetched() -> None:
    """Let go of what `prefetch_snapshots` mapped and no start read (a workspace whose
    first build did not look for its snapshot): a checked mapping holds the file's
    pages, and nothing would read it later."""
    with _EARLY_LOCK:
        early = list(_EARLY.values())
        _EARLY.clear()
    for _key, thread, found in early:
        thread.join()
        for data, (payload,) in found:
            if payload is not None:
                payload.release()
            if isinstance(data, mmap.mmap):
                data.close()


def _mapped(file: Path) -> bytes | mmap.mmap:
    """The file's bytes, mapped rather than copied when it is big enough to hold a
    snapshot: unmarshalling copies every value out of it, and a start's 100 MB read
    into one fresh buffer cost more CPU than hashing it. A file replaced meanwhile
    (written whole, then renamed) stays mapped as it was."""
    with open(file, "rb") as handle:
        if os.fstat(handle.fileno()).st_size < _HEADER:
            return handle.read()
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def _form_of(data: bytes | mmap.mmap, magic: bytes) -> int | None:
    """The format version a file with `magic` says it has (not verified), else None."""
    if len(data) < _HEADER or data[: len(magic)] != magic:
        return None
    return int.from_bytes(data[len(magic) : len(magic) + 2], "big")


def registry_key(fingerprint: Any) -> str:
    """A short stable name for a type registry's fingerprint (manifest and pack digests)."""
    return hashlib.blake2b(repr(fingerprint).encode(), digest_size=12).hexdigest()


# --- the entry format ---------------------------------------------------------------

# A segment's fields saved as they are; its local id and name directories are made from
# its ids and names when first read (`RestoredSegment`).
_SEGMENT_PLAIN = (
    "ids", "names", "kinds", "subjects_of", "scopes_of", "roles", "high_confidence",
    "in_pool", "is_constraint", "when_any", "supersedes", "flag_rows", "kind_rows",
    "aliases",
)  # fmt: skip
_TABLES = ("terms", "subjects", "constraint_scopes")


def _last_good_marks(marks: frozenset[tuple[str, StatKey, str]]) -> frozenset[Any]:
    """The marks of last good parses kept for files that do not load (saved under a
    stat no file has: a negative size)."""
    return frozenset(mark for mark in marks if mark[1][1] < 0)


def _encode(path: str, digest: str, document: Document, segment: Segment) -> bytes | None:
    """One file's entry, or None when some value is not plain (not cached)."""
    try:
        return marshal.dumps(_entry_data(path, digest, document, segment))
    except ValueError:
        return None


def _entry_data(path: str, digest: str, document: Document, segment: Segment) -> Any:
    """Plain data for one file (`marshal` raises ValueError for a value that is not).

    Declarations are saved by column (their kinds and names are the segment's), each
    one's fields as its own `marshal` bytes so that a start decodes them only when they
    are read (`RestoredRaw`)."""
    raws = document.declarations
    if isinstance(raws, RestoredRaws):
        saved = raws.file.columns  # None once every declaration was made
        if saved is not None:  # written back as it was read, nothing made for it
            return _entry_of(path, digest, document, segment, saved)
    lines, modules, columns, packeds, fields = [], [], [], [], []
    for raw in raws:
        lines.append(raw.line)
        modules.append(raw.module)
        # Positions come from the source text on demand (fast parser) or were kept.
        on_demand = raw._source is not None  # noqa: SLF001
        packed = None if on_demand else raw._packed  # noqa: SLF001
        columns.append(None if on_demand else raw._column)  # noqa: SLF001
        packeds.append(None if packed is None else packed.tolist())
        saved = raw.saved_fields if isinstance(raw, RestoredRaw) else None
        fields.append(saved if saved is not None else marshal.dumps(raw.fields))
    declarations = (tuple(lines), tuple(modules), tuple(columns), tuple(packeds), tuple(fields))
    return _entry_of(path, digest, document, segment, declarations)


def _entry_of(
    path: str, digest: str, document: Document, segment: Segment, declarations: Any
) -> Any:
    tables, plain = segment_columns(segment)
    return (path, digest, document.module, document.uses, declarations, tables, plain)


def segment_columns(segment: Segment) -> tuple[Any, Any]:
    """A segment's posting tables and plain columns as an entry saves them (not its
    declarations): what `segment_from_columns` makes a segment of again."""
    tables = tuple(
        (_saved_keys(t), t.rows, t.width) for t in (getattr(segment, n) for n in _TABLES)
    )
    return tables, tuple(getattr(segment, name) for name in _SEGMENT_PLAIN)


def segment_from_columns(declarations: Any, columns: Any) -> Segment:
    """The segment of `declarations` whose columns `segment_columns` saved. Raises
    ValueError when they do not fit them."""
    tables, plain = columns
    if len(plain) != len(_SEGMENT_PLAIN) or len(tables) != len(_TABLES):
        raise ValueError("segment of another shape")
    parts = dict(zip(_SEGMENT_PLAIN, plain, strict=True))
    for name in ("ids", "names", "kinds", "roles", "in_pool", "is_constraint"):
        if not isinstance(parts[name], tuple) or len(parts[name]) != len(declarations):
            raise ValueError("segment of another size")
    width = (len(declarations) + 7) // 8
    for name, (keys, rows, saved_width) in zip(_TABLES, tables, strict=True):
        if not isinstance(keys, bytes) or not isinstance(rows, bytes):
            raise ValueError("posting table of another shape")
        if rows and saved_width != width:
            raise ValueError("posting table of another width")
        parts[name] = RestoredPostingTable(keys, rows, saved_width)
    return RestoredSegment.made(declarations=declarations, **parts)


def _decode(
    saved: tuple[Any, ...], path: str, text: str, registry: Any
) -> tuple[Document, tuple[Declaration, ...], Segment]:
    _path, _digest, module, uses, declarations, tables, plain = saved
    if len(plain) != len(_SEGMENT_PLAIN) or len(tables) != len(_TABLES):
        raise ValueError("segment of another shape")
    parts = dict(zip(_SEGMENT_PLAIN, plain, strict=True))
    kinds, names = parts["kinds"], parts["names"]
    if not len(parts["ids"]) == len(kinds) == len(names):
        raise ValueError("segment of another size")
    if len(declarations) != 5:
        raise ValueError("declarations of another shape")
    resolve = registry.resolve
    descriptors = {kind: resolve(kind) for kind in set(kinds)}
    # Declarations are made when first read: a start makes none of them.
    file = RestoredFile(path, kinds, names, declarations, descriptors, SourceText(text, path))
    for name, (keys, rows, width) in zip(_TABLES, tables, strict=True):
        if not isinstance(keys, bytes) or not isinstance(rows, bytes) or width < 0:
            raise ValueError("posting table of another shape")
        parts[name] = RestoredPostingTable(keys, rows, width)
    restored: Any = RestoredDeclarations(file)
    segment = RestoredSegment.made(declarations=restored, **parts)
    raws: Any = RestoredRaws(file)
    return Document(module=module, uses=list(uses), declarations=raws, file=path), restored, segment


def _saved_keys(table: PostingTable) -> bytes:
    """A posting table's keys as their own `marshal` bytes: as read, when never decoded."""
    if isinstance(table, RestoredPostingTable):
        return table.saved_keys
    return marshal.dumps(table.keys)


class RestoredSegment(Segment):
    """A segment whose local id and name directories are made from its ids and names
    when first read: a restored index holds the workspace's directories, so a start
    reads a file's own only when a lookup lands in it, and unmarshalling them for
    every file was a third of a start's segment data (200,000 small tuples at 100k)."""

    __slots__ = ("_directories",)

    @classmethod
    def made(cls, **fields: Any) -> RestoredSegment:
        # Not the frozen dataclass's __init__: the directories are properties here.
        segment = object.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(segment, name, value)
        object.__setattr__(segment, "_directories", None)
        return segment

    def _made_directories(self) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
        made = self._directories
        if made is None:
            # One assignment of both: a reader on another thread sees both or neither.
            made = (_local_directory(self.ids), _local_directory(self.names))
            object.__setattr__(self, "_directories", made)
        return made

    @property  # type: ignore[override]
    def local_ids(self) -> dict[str, tuple[int, ...]]:
        return self._made_directories()[0]

    @property  # type: ignore[override]
    def local_names(self) -> dict[str, tuple[int, ...]]:
        return self._made_directories()[1]


class RestoredPostingTable(LazyPostingTable):
    """A posting table whose keys, and their key -> row dict, are decoded from their
    saved bytes when first used: a start that serves a file unchanged uses neither
    (the restored index knows which files hold a key), and building them for every
    file was a third of a restart's CPU. The rows are plain bytes from the start. The
    dict is made apart from the keys (`LazyPostingTable`): a role-limited view cuts its
    segments from the keys alone, and making every file's dict for it held 30 MiB at
    100k."""

    def __init__(self, saved_keys: bytes, rows: bytes, width: int) -> None:
        # Not the frozen dataclass's __init__: `keys` and `index` are computed here.
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "saved_keys", saved_keys)
        object.__setattr__(self, "_keys", None)
        object.__setattr__(self, "_index", None)

    @property  # type: ignore[override]
    def keys(self) -> tuple[str, ...]:
        keys = self._keys
        if keys is None:
            # marshal keeps the interning of the keys it saved: no sys.intern pass needed.
            keys = marshal.loads(self.saved_keys)
            if not isinstance(keys, tuple) or len(keys) * self.width != len(self.rows):
                raise ValueError("posting table keys do not fit its rows")
            object.__setattr__(self, "_keys", keys)
        return keys

    def passing_keys(self) -> tuple[str, ...]:
        """The keys, decoded for the caller alone while not decoded yet (a view's cut
        reads them once; kept, they held 56 MiB of the whole workspace's at 1M)."""
        if self._keys is not None:
            return self._keys
        keys = marshal.loads(self.saved_keys)
        if not isinstance(keys, tuple) or len(keys) * self.width != len(self.rows):
            raise ValueError("posting table keys do not fit its rows")
        return keys
