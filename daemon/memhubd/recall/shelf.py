"""The recall shelf: every workspace's store, the one embedder, and the settings.

Opens a workspace's store on first use (`<recall dir>/<workspace>.db`), keeps it open
until `close()`, and loads the embedder once, lazily. It knows no identities or
doors; the service layer decides who may use which store. A store belongs to a
workspace name: a removed workspace's is retired (never opened again under that name
in this run) until a workspace of that name is admitted again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import structlog

from memhubd.recall.ingest.lock import DEFAULT_TIMEOUT_S, SourceLock
from memhubd.recall.ingest.pipeline import NEAR_DUPLICATE, Embeds, Ingestor
from memhubd.recall.search import DEFAULT_WEIGHTS, Weights
from memhubd.recall.store import DrawerStore, open_store
from memhubd.recall.store.base import UnusableStore
from memhubd.recall.uploads import PartAssembler

log = structlog.get_logger("memhubd.recall")

DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
# After the embedder failed to load, the next use this long after tries again: a model
# server that was down when the daemon first needed it is picked up once it answers.
EMBEDDER_RETRY_S = 60.0
# After the embedder failed, queries go without it for this long: an endpoint that
# hangs would hold each search for its timeout. The first query after it tries again.
QUERY_PAUSE_S = 30.0


@dataclass(frozen=True, slots=True)
class EmbedderFailure:
    """The embedder's last failure: its message (for the log only: it may quote the
    texts of the request that failed), its public form (`EmbedderError.public`: what
    any caller may be shown) and when (epoch seconds)."""

    message: str
    public: str
    at: int


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """How recall behaves; `embedder` is None for "no vectors" (BM25 only)."""

    embedder: object | None = field(default=None)  # memhubd.recall.embed.EmbedderSettings
    vectors: bool = True
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    near_duplicate: float = NEAR_DUPLICATE
    lock_timeout_s: float = DEFAULT_TIMEOUT_S
    weights: Weights = DEFAULT_WEIGHTS


# Removed workspace names a shelf remembers (see `RecallShelf.retire`).
RETIRED_KEPT = 4096


class RecallShelf:
    """Open stores by workspace name. Thread-safe; bounded by the number of workspaces."""

    def __init__(self, directory: str | Path, settings: RecallSettings | None = None) -> None:
        self.directory = Path(directory)
        self.settings = settings or RecallSettings()
        self._stores: dict[str, DrawerStore] = {}
        # Names of removed workspaces: their store is being archived, or was. Removed
        # names not yet added again, each with how many times it was removed: what
        # belongs to one workspace of a name (an upload's parts) never joins what is sent
        # to a later one. Both keep the RETIRED_KEPT names removed last (a request that
        # began before a removal is long over by then).
        self._retired: dict[str, None] = {}
        self._removals: dict[str, int] = {}
        self._lock = threading.Lock()
        self._embedder: Embeds | None = None
        self._embedder_loaded = False
        # Held while the embedder loads; apart from `_lock`, so that a load waiting on a
        # slow model server never holds up opening stores.
        self._loading = threading.Lock()
        self._retry_at = 0.0  # monotonic time from which a failed load is tried again
        self._failure: EmbedderFailure | None = None
        self._failure_lock = threading.Lock()
        # Files uploaded in parts, until their last part: at most four files' worth.
        self.uploads = PartAssembler(self.settings.max_file_bytes, 4 * self.settings.max_file_bytes)

    def path_of(self, workspace: str) -> Path:
        return self.directory / f"{workspace}.db"

    def files_of(self, workspace: str) -> list[Path]:
        """What recall keeps on disk for `workspace` and that exists: its database with
        its -wal and -shm files, and its folder of ingest locks."""
        database = self.path_of(workspace)
        found = [Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")]
        found.append(self.locks_of(workspace).directory)
        return [path for path in found if os.path.lexists(path)]

    def locks_of(self, workspace: str) -> SourceLock:
        """The ingest locks of `workspace`, one file per source under `locks/`."""
        return SourceLock(self.directory / "locks" / workspace, self.settings.lock_timeout_s)

    def store(self, workspace: str) -> DrawerStore:
        with self._lock:
            if workspace in self._retired:
                # A request that began before the removal: opening the file again would
                # keep it open while it is moved, or make a new one under that name.
                raise UnusableStore(self.path_of(workspace), "its workspace was removed")
            store = self._stores.get(workspace)
            if store is None:
                store = self._stores[workspace] = open_store(self.path_of(workspace))
            return store

    def ingestor(self, workspace: str) -> Ingestor:
        embedder = self.embedder()
        # An embedder that could not load: the writes say their drawers get no vector.
        unavailable = self.embedder_error if embedder is None else None
        return Ingestor(self.store(workspace), embedder, self.locks_of(workspace), unavailable)

    @property
    def loaded_embedder(self) -> Embeds | None:
        """The embedder if it has loaded, never loading or retrying it (for status,
        which must not wait on a model server)."""
        return self._embedder if self.settings.vectors else None

    @property
    def embedder_tried(self) -> bool:
        """Whether the embedder was asked to load yet (it loads on first use)."""
        return self._embedder_loaded

    def embedder(self) -> Embeds | None:
        """The configured embedder, loaded on first use; None when vectors are off or it
        cannot load (then `embedder_error` says why, and search runs on BM25 alone). A
        failed load is tried again, in a thread of its own, by the first use
        EMBEDDER_RETRY_S or more after it: that use and the others go on with BM25
        alone meanwhile, whatever time an endpoint that hangs takes to fail again."""
        if not self.settings.vectors:
            return None
        if self._embedder is not None or (
            self._embedder_loaded and time.monotonic() < self._retry_at
        ):
            return self._embedder
        if self._embedder_loaded:  # a retry is due: one at a time, never waited for
            if self._loading.acquire(blocking=False):
                threading.Thread(
                    target=self._retry, name="memhubd-embedder-retry", daemon=True
                ).start()
            return self._embedder
        # The first use waits for the load, so that its search has vectors.
        with self._loading:
            if not self._embedder_loaded:
                self._load()
            return self._embedder

    def _retry(self) -> None:
        try:
            if self._embedder is None and time.monotonic() >= self._retry_at:
                self._load()
        except Exception:  # _load reports what it can; nothing may end this thread badly
            log.exception("embedder retry failed")
        finally:
            self._loading.release()

    def query_embedder(self) -> Embeds | None:
        """The embedder for a query's vector: `embedder()`, but None while a failure of
        it recorded less than QUERY_PAUSE_S ago stands (the query then runs on BM25
        alone, as when the embedder cannot load). Writes still ask it: what they could
        not embed waits for a reindex, while a query's vector is made again each time."""
        embedder = self.embedder()
        failure = self._failure
        recent = failure is not None and 0 <= time.time() - failure.at < QUERY_PAUSE_S
        return None if recent else embedder

    def _load(self) -> None:
        retrying = self._embedder_loaded
        embedder, error = _load(self.settings.embedder)
        if embedder is None:
            self._retry_at = time.monotonic() + EMBEDDER_RETRY_S
            self._embedder_loaded = True
            self.embedding_failed(error or RuntimeError("the embedder did not load"), loading=True)
            return
        self._embedder = _Reporting(embedder, self)
        self._embedder_loaded = True
        if retrying:
            self.embedding_succeeded()

    @property
    def embedder_error(self) -> str | None:
        """Why the embedder cannot run, or why its last call failed (until one succeeds),
        in its public form: the failure is shared by every workspace and caller, and its
        full message may quote another caller's texts."""
        failure = self._failure
        return failure.public if failure is not None else None

    @property
    def embedder_failure(self) -> EmbedderFailure | None:
        return self._failure

    def embedding_failed(self, error: BaseException, loading: bool = False) -> None:
        """Record a failure of the embedder; logged when its message differs from the
        last one (an embedder down for an hour is one line, not one per request). An
        exception that is no EmbedderError is a backend's bug: logged with its traceback,
        as error, and shown by its type alone."""
        from memhubd.recall.embed import EmbedderError

        message = str(error) or type(error).__name__
        if isinstance(error, EmbedderError):
            public = error.public
        else:
            message = f"{type(error).__name__}: {message}"
            public = f"the embedder failed: {type(error).__name__}"
        failure = EmbedderFailure(message, public, int(time.time()))
        with self._failure_lock:
            last, self._failure = self._failure, failure
        if last is not None and last.message == message:
            return
        event = (
            "embedder unavailable; recall search uses BM25 only"
            if loading
            else "embedder failed; what it could not embed is stored without vectors "
            "and searched with BM25 alone"
        )
        if isinstance(error, EmbedderError):
            log.warning(event, error=message)
        else:
            log.error(event, error=message, exc_info=error)

    def embedding_succeeded(self) -> None:
        if self._failure is None:
            return
        with self._failure_lock:
            last, self._failure = self._failure, None
        if last is not None:
            log.info("embedder answers again", last_error=last.message)

    def forget(self, workspace: str) -> None:
        """Close `workspace`'s store if open (its statements running finish first)."""
        with self._lock:
            store = self._stores.pop(workspace, None)
        if store is not None:
            store.close()

    def retire(self, workspace: str) -> None:
        """Close `workspace`'s store and open it no more until `admit(workspace)`: its
        workspace was removed, and its files are moved out of the recall directory. The
        parts of its unfinished uploads are dropped."""
        with self._lock:
            self._retired.pop(workspace, None)
            self._retired[workspace] = None
            self._removals[workspace] = self._removals.pop(workspace, 0) + 1
            while len(self._retired) > RETIRED_KEPT:
                oldest = next(iter(self._retired))
                del self._retired[oldest]
                self._removals.pop(oldest, None)
        self.uploads.drop_all(workspace)
        self.forget(workspace)

    def incarnation(self, workspace: str) -> int:
        """Which workspace of this name a part belongs to: 0 while one is served, the
        removal's count while the name is removed (a request that began before it)."""
        with self._lock:
            return self._removals.get(workspace, 0)

    def admit(self, workspace: str) -> None:
        """Let `workspace`'s store be opened again (a workspace of that name is added).
        Parts sent to the removed one meanwhile are dropped, so its count can go."""
        with self._lock:
            self._retired.pop(workspace, None)
            self._removals.pop(workspace, None)
        self.uploads.drop_all(workspace)

    def close(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            try:
                store.close()
            except Exception:
                log.exception("closing a recall store failed")


def _load(settings: object | None) -> tuple[Embeds | None, Exception | None]:
    """The loaded embedder, or None and why it did not load."""
    try:
        from memhubd.recall.embed import load_embedder

        embedder = load_embedder(settings)  # type: ignore[arg-type]
        embedder.embed(["warm-up"])  # loads the model now, not inside the first search
    except Exception as error:
        return None, error
    return embedder, None


class _Reporting:
    """The loaded embedder, telling its shelf how each call went: a failure shows in
    `recall status` until a call that reaches the model succeeds. Any exception of a
    backend comes out as EmbedderError, which ingest and search fall back on."""

    def __init__(self, embedder: Embeds, shelf: RecallShelf) -> None:
        self.name = embedder.name
        self.dimension = embedder.dimension
        self._embedder = embedder
        self._shelf = shelf

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from memhubd.recall.embed import EmbedderError
        from memhubd.recall.embed.base import check_texts, is_blank

        check_texts(texts)
        try:
            vectors = self._embedder.embed(texts)
        except EmbedderError as error:
            self._shelf.embedding_failed(error)
            raise
        except Exception as error:
            # Logged (with its traceback) by the shelf, once per distinct message.
            self._shelf.embedding_failed(error)
            kind = type(error).__name__
            raise EmbedderError(
                f"{self.name} failed: {kind}: {error}", public=f"{self.name} failed: {kind}"
            ) from error
        if not all(is_blank(text) for text in texts):  # blank texts reach no model
            self._shelf.embedding_succeeded()
        return vectors
