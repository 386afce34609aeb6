"""The SQLite schema of a recall store and its forward migrations.

Each migration is a list of statements run in one transaction at open; the version
lives in `PRAGMA user_version`. A database newer than `CURRENT_VERSION` is refused.
It must not hold any query used by the store at run time.
"""

from __future__ import annotations

# The FTS table is an external-content table over `drawers` (no second copy of the
# text), kept in the writer's transaction: by triggers up to v3, then (v4) the writer
# indexes inserted drawers and triggers remove them: a drawer leaves the index when it
# is soft-deleted (or deleted while live), never otherwise. Drawers are immutable
# apart from `deleted_at`/`updated_at`, so no content-update trigger.
_V1 = [
    """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE drawers (
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        room TEXT NOT NULL,
        content TEXT NOT NULL,
        source_file TEXT NOT NULL,
        source_kind TEXT NOT NULL,
        chunk_index INTEGER NOT NULL,
        importance INTEGER NOT NULL DEFAULT 0 CHECK (importance BETWEEN 0 AND 5),
        content_hash TEXT NOT NULL,
        locator TEXT NOT NULL DEFAULT '',
        speaker TEXT,
        said_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        deleted_at INTEGER,
        identity TEXT NOT NULL,
        readers TEXT
    )""",
    """CREATE INDEX drawers_source ON drawers (source_file, chunk_index)
        WHERE deleted_at IS NULL""",
    """CREATE INDEX drawers_room ON drawers (room) WHERE deleted_at IS NULL""",
    """CREATE INDEX drawers_deleted ON drawers (deleted_at) WHERE deleted_at IS NOT NULL""",
    """CREATE INDEX drawers_top ON drawers (importance DESC, created_at DESC, rowid DESC)
        WHERE deleted_at IS NULL""",
    """CREATE VIRTUAL TABLE drawers_fts USING fts5(
        content, speaker, content='drawers', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER drawers_fts_insert AFTER INSERT ON drawers
        WHEN new.deleted_at IS NULL BEGIN
        INSERT INTO drawers_fts (rowid, content, speaker)
            VALUES (new.rowid, new.content, coalesce(new.speaker, ''));
    END""",
    """CREATE TRIGGER drawers_fts_soft_delete AFTER UPDATE OF deleted_at ON drawers
        WHEN old.deleted_at IS NULL AND new.deleted_at IS NOT NULL BEGIN
        INSERT INTO drawers_fts (drawers_fts, rowid, content, speaker)
            VALUES ('delete', old.rowid, old.content, coalesce(old.speaker, ''));
    END""",
    """CREATE TRIGGER drawers_fts_delete AFTER DELETE ON drawers
        WHEN old.deleted_at IS NULL BEGIN
        INSERT INTO drawers_fts (drawers_fts, rowid, content, speaker)
            VALUES ('delete', old.rowid, old.content, coalesce(old.speaker, ''));
    END""",
    # float32 little-endian, L2-normalised, one row per drawer that has a vector.
    """CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL)""",
    """CREATE TABLE vectors_next (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL)""",
    """CREATE TABLE taxonomy (
        room TEXT PRIMARY KEY, display_name TEXT, keywords TEXT NOT NULL
    )""",
    """CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        identity TEXT NOT NULL,
        door TEXT NOT NULL,
        action TEXT NOT NULL,
        detail TEXT NOT NULL
    )""",
]

# v2: a `context` column (neighbouring text: the previous turn, the section heading)
# indexed beside the content and weighted below it, so a drawer is found by words
# said around it without its verbatim content changing.
_FTS_COLUMNS = "content, speaker, context"
_V2 = [
    "ALTER TABLE drawers ADD COLUMN context TEXT",
    "DROP TRIGGER drawers_fts_insert",
    "DROP TRIGGER drawers_fts_soft_delete",
    "DROP TRIGGER drawers_fts_delete",
    "DROP TABLE drawers_fts",
    f"""CREATE VIRTUAL TABLE drawers_fts USING fts5(
        {_FTS_COLUMNS}, content='drawers', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    """INSERT INTO drawers_fts (rowid, content, speaker, context)
        SELECT rowid, content, coalesce(speaker, ''), coalesce(context, '') FROM drawers
        WHERE deleted_at IS NULL""",
    """CREATE TRIGGER drawers_fts_insert AFTER INSERT ON drawers
        WHEN new.deleted_at IS NULL BEGIN
        INSERT INTO drawers_fts (rowid, content, speaker, context)
            VALUES (new.rowid, new.content, coalesce(new.speaker, ''), coalesce(new.context, ''));
    END""",
    """CREATE TRIGGER drawers_fts_soft_delete AFTER UPDATE OF deleted_at ON drawers
        WHEN old.deleted_at IS NULL AND new.deleted_at IS NOT NULL BEGIN
        INSERT INTO drawers_fts (drawers_fts, rowid, content, speaker, context)
            VALUES ('delete', old.rowid, old.content, coalesce(old.speaker, ''),
                    coalesce(old.context, ''));
    END""",
    """CREATE TRIGGER drawers_fts_delete AFTER DELETE ON drawers
        WHEN old.deleted_at IS NULL BEGIN
        INSERT INTO drawers_fts (drawers_fts, rowid, content, speaker, context)
            VALUES ('delete', old.rowid, old.content, coalesce(old.speaker, ''),
                    coalesce(old.context, ''));
    END""",
]

# v3: the temporal knowledge graph. One row per validity period: re-adding a triple
# after its invalidation opens a new period under the same id and keeps the old one,
# so at most one row per id is open (valid_to IS NULL). Times are epoch seconds.
_TRIPLES = [
    """CREATE TABLE triples (
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL,
        subject TEXT NOT NULL,
        predicate TEXT NOT NULL,
        object TEXT NOT NULL,
        valid_from INTEGER,
        valid_to INTEGER,
        confidence REAL NOT NULL DEFAULT 1.0,
        source_drawer TEXT,
        identity TEXT NOT NULL,
        created_at INTEGER NOT NULL
    )""",
    "CREATE UNIQUE INDEX triples_open ON triples (id) WHERE valid_to IS NULL",
    "CREATE INDEX triples_id ON triples (id)",
    "CREATE INDEX triples_subject ON triples (subject)",
    "CREATE INDEX triples_object ON triples (object)",
]

# v4: the writer indexes new drawers itself, with one INSERT ... SELECT per write in the
# same transaction. Through a per-row trigger, FTS5 flushed its pending terms at each
# row's statement savepoint (a one-row segment, then merges): writing 20,000 chat
# drawers took 6.0 CPU-seconds instead of 4.0.
_INDEX_BY_WRITER = ["DROP TRIGGER drawers_fts_insert"]

# v5: a drawer retired because its source changed (its chunk replaced, or the source cut
# short) is told apart from one deleted on purpose: the same content coming back to a
# source brings a retired drawer back, never a deleted one.
_RETIRED = ["ALTER TABLE drawers ADD COLUMN retired INTEGER NOT NULL DEFAULT 0"]

# v6: drawers soft-deleted before v5 were all taken for deleted on purpose, so a source's
# exchanges retired by an edit before the upgrade never came back with it. A drawer
# deleted on purpose has a `delete` entry in the audit naming it; every other
# soft-deleted one was retired by its source.
_RETIRED_BEFORE_V5 = [
    """UPDATE drawers SET retired = 1
    WHERE deleted_at IS NOT NULL AND retired = 0 AND id NOT IN (
        SELECT json_extract(detail, '$.drawer_id') FROM audit
        WHERE action = 'delete' AND json_valid(detail)
        AND json_extract(detail, '$.drawer_id') IS NOT NULL
    )"""
]

# v7: the drawers of a source deleted on purpose, found without a scan of the table: a
# watched source read again at each append asks for them (a grown exchange deleted while
# it grew stays deleted), and retired rows, one per changed chunk, are left out.
_DELETED_BY_SOURCE = [
    """CREATE INDEX drawers_deleted_source ON drawers (source_file, chunk_index)
        WHERE deleted_at IS NOT NULL AND retired = 0"""
]

# v8: where else a drawer's text stands. One drawer belongs to one source; a file holding
# the same chunk (a copy, a transcript renamed aside, a session resumed into a new file)
# counts it as a duplicate and is recorded here, so that when the first source drops the
# chunk the drawer goes on, cited from that file, instead of leaving search. By the
# writer that ingested the file: only a copy recorded by the drawer's own writer takes it.
_COPIES = [
    """CREATE TABLE drawer_copies (
        source_file TEXT NOT NULL,
        identity TEXT NOT NULL,
        drawer INTEGER NOT NULL,
        chunk_index INTEGER NOT NULL,
        locator TEXT,
        source_kind TEXT NOT NULL,
        PRIMARY KEY (source_file, identity, drawer)
    ) WITHOUT ROWID""",
    "CREATE INDEX drawer_copies_drawer ON drawer_copies (drawer)",
]

# v9: the readers of the ingest that recorded each copy, encoded as a drawer's (a JSON
# list of roles; NULL: it named none, so every caller). A file holding nothing of the
# writer's own but copies has no stored chunk whose readers tell who may see its name:
# these do, checked when the drawer is handed over. A copy recorded before v9 has none
# known: the default, a JSON string (no list of roles), stands for that, and such a copy
# gives such a file no drawer until the file's next ingest records its readers.
_COPY_READERS = [
    """ALTER TABLE drawer_copies ADD COLUMN readers TEXT DEFAULT '"unknown"'""",
]

MIGRATIONS: tuple[list[str], ...] = (
    _V1,
    _V2,
    _TRIPLES,
    _INDEX_BY_WRITER,
    _RETIRED,
    _RETIRED_BEFORE_V5,
    _DELETED_BY_SOURCE,
    _COPIES,
    _COPY_READERS,
)
CURRENT_VERSION = len(MIGRATIONS)
