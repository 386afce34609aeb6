"""The recall part of the wire contract: request models for ingest, search, delete
(of a source), purge and taxonomy, time values, and which files a directory ingest sends.

Shared by the daemon (which validates) and memctl (which builds requests and walks
directories); depends on nothing of the daemon.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from memhub_protocol.errors import ErrorCode, ProtocolError
from memhub_protocol.models import MAX_PATH
from memhub_protocol.times import (
    AMBIGUOUS_HINT,
    EARLIEST_TIME,
    LATEST_TIME,
    is_ambiguous_digits,
    parse_iso,
)

FORMATS = ("auto", "claude-code", "chatgpt", "codex", "slack", "markdown", "text")
SOURCE_KINDS = ("claude-code", "chatgpt", "codex", "slack", "markdown", "text", "manual")
MAX_LIMIT = 100
# The most characters a search may ask each hit's content cut to (`max_chars`): a drawer
# is at most a request body long, so a bound above it would cut nothing.
MAX_HIT_CHARS = 1_000_000
MAX_FILES_PER_REQUEST = 1000
DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
# A file's `name` and an ingest's `source` are citations, stored with each drawer and
# echoed with every hit: bounded as a path is, so that no writer's drawers can swell
# every reader's search answer past its limit.
MAX_CITATION = MAX_PATH
# Directories never ingested: version control, dependencies, build output, caches.
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "target", "build", "dist", "__pycache__",
        ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea",
    }
)  # fmt: skip
# Where Claude Code 2.x offloads a session's large tool outputs: `<session>/tool-results/`
# beside `<session>.jsonl`. The session holds them already, cut as tool output is; read
# whole as text they would be thousands of chunks of a build log.
CLAUDE_TOOL_RESULTS = "tool-results"


def skipped_directory(path: str) -> bool:
    """Whether the ingest walk leaves out the directory at `path` below one it was
    given: hidden, in SKIP_DIRS, or a Claude Code session's `tool-results` (its parent
    has a sibling `<parent's name>.jsonl`)."""
    parent, name = os.path.split(os.path.normpath(path))
    if name in SKIP_DIRS or name.startswith("."):
        return True
    return name == CLAUDE_TOOL_RESULTS and os.path.isfile(parent + ".jsonl")


def _invalid(message: str, field: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID, message, {"field": field})


def _object(data: Any, allowed: Sequence[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.INVALID, "request body must be a JSON object")
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise _invalid(f"unknown field(s): {', '.join(extra)}", extra[0])
    return data


def _string(
    data: dict[str, Any], field: str, *, required: bool = False, limit: int | None = None
) -> str | None:
    value = data.get(field)
    if value is None or value == "":
        if required:
            raise _invalid(f"'{field}' is required", field)
        return None
    if not isinstance(value, str):
        raise _invalid(f"'{field}' must be a string", field)
    if limit is not None and len(value) > limit:
        raise _invalid(f"'{field}' must be at most {limit} characters", field)
    return value


def _integer(data: dict[str, Any], field: str, default: int, low: int, high: int) -> int:
    value = data.get(field, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _invalid(f"'{field}' must be an integer between {low} and {high}", field)
    return value


def _optional_integer(data: dict[str, Any], field: str, low: int, high: int) -> int | None:
    if data.get(field) is None:
        return None
    return _integer(data, field, low, low, high)


def _choice(data: dict[str, Any], field: str, choices: Sequence[str], default: str) -> str:
    value = _string(data, field) or default
    if value not in choices:
        raise _invalid(f"'{field}' must be one of {', '.join(choices)}", field)
    return value


def _names(data: dict[str, Any], field: str, *, filter_: bool = False) -> tuple[str, ...] | None:
    value = data.get(field)
    if value is None:
        return None
    if isinstance(value, str):
        value = [item for item in value.split(",") if item.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _invalid(f"'{field}' must be a list of non-empty strings", field)
    if filter_:
        # A search filter's comma separates names in each item too, so that a query
        # string's `room=a,b`, a body's "a,b" and a list's ["a,b"] mean the same at
        # every door (no room, kind, identity or workspace name holds a comma).
        value = [part for item in value for part in item.split(",") if part.strip()]
        if not value:  # as `?room=` is: a filter naming nothing would match nothing
            raise _invalid(f"'{field}' names nothing; leave it out to filter nothing", field)
    if len(value) > 100:
        raise _invalid(f"'{field}' has more than 100 items", field)
    return tuple(v.strip() for v in value)


def parse_time(value: Any, field: str = "time") -> int | None:
    """Epoch seconds from an integer, a digit string, or an RFC 3339 / ISO 8601
    date/time (UTC when it names no zone), within the years 1 to 9999; None for None
    (not given). Refused: anything else, "" and blank text included (given, yet no
    time), and digits alone that could be a date as well (see `times`)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return _in_years(value, field)
    if isinstance(value, str):
        text = value.strip()
        if is_ambiguous_digits(text):
            raise _invalid(
                f"'{field}' {text!r} is ambiguous (a date or epoch seconds?): {AMBIGUOUS_HINT}",
                field,
            )
        if text.isascii() and text.lstrip("-").isdigit():  # never '２０２５' (a year)
            try:
                return _in_years(int(text), field)
            except ValueError:  # digits int() refuses: '²', or thousands of them
                pass
        try:
            instant = int(parse_iso(text).timestamp())
        except (ValueError, OverflowError):
            pass
        else:
            return _in_years(instant, field)
    raise _invalid(f"'{field}' must be epoch seconds or an ISO 8601 date/time", field)


def _in_years(instant: int, field: str) -> int:
    if not EARLIEST_TIME <= instant <= LATEST_TIME:
        raise _invalid(f"'{field}' is outside the years 1 to 9999", field)
    return instant


# A list of names, or one comma-separated string of them.
_NAMES_SCHEMA: dict[str, Any] = {
    "type": ["array", "string", "null"],
    "items": {"type": "string", "pattern": "\\S"},
    "maxItems": 100,
}
_TIME_SCHEMA: dict[str, Any] = {
    "type": ["integer", "string", "null"],
    "description": "epoch seconds or an ISO 8601 date/time (UTC when it names no zone)",
}


@dataclass(frozen=True, slots=True)
class UploadedFile:
    name: str  # the citation: a path relative to what the caller ingested
    content: str
    # A file too large for one request body comes as parts 0..parts-1 of one `upload`
    # (an id the client chooses), in order; the daemon ingests it when the last arrives.
    upload: str | None = None
    part: int = 0
    parts: int = 1


MAX_PARTS = 10_000
_UPLOAD_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


def _uploaded(item: Any) -> UploadedFile:
    if not isinstance(item, dict):
        raise _invalid("each file must be an object {name, content}", "files")
    name = _string(item, "name", required=True, limit=MAX_CITATION)
    text = item.get("content")
    if not isinstance(text, str):
        raise _invalid("each file needs a string 'content'", "files")
    if set(item) - {"name", "content", "upload", "part", "parts"}:
        raise _invalid("a file takes only name, content, upload, part and parts", "files")
    if item.get("upload") is None and item.get("part") is None and item.get("parts") is None:
        return UploadedFile(str(name), text)
    upload = item.get("upload")
    if not isinstance(upload, str) or not _UPLOAD_ID.fullmatch(upload):
        raise _invalid("'upload' must be 8 to 64 letters, digits, '-' or '_'", "upload")
    parts = _integer(item, "parts", 1, 1, MAX_PARTS)
    part = _integer(item, "part", 0, 0, parts - 1)
    return UploadedFile(str(name), text, upload, part, parts)


@dataclass(frozen=True, slots=True)
class IngestRequest:
    """Either `content` (one drawer, mempal's manual ingest) or `files` (each parsed,
    chunked and written in its own transaction)."""

    content: str | None = None
    files: tuple[UploadedFile, ...] = ()
    room: str | None = None
    source: str | None = None
    # None: new drawers take 0 and stored ones keep theirs; given, both take it.
    importance: int | None = None
    format: str = "auto"
    dry_run: bool = False
    readers: tuple[str, ...] | None = None

    FIELDS = ("content", "files", "room", "source", "importance", "format", "dry_run", "readers")

    @staticmethod
    def json_schema() -> dict[str, Any]:
        file = {
            "type": "object",
            "required": ["name", "content"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_CITATION},
                "content": {"type": "string"},
                "upload": {"type": "string", "pattern": "^[A-Za-z0-9_-]{8,64}$"},
                "part": {"type": "integer", "minimum": 0, "maximum": MAX_PARTS - 1},
                "parts": {"type": "integer", "minimum": 1, "maximum": MAX_PARTS},
            },
            "description": "a file; one too large for a request comes as `parts` numbered "
            "parts (from 0, in order) of one `upload`",
        }
        return {
            "type": "object",
            "description": "exactly one of `content` (one drawer) or `files`",
            "additionalProperties": False,
            "properties": {
                "content": {"type": ["string", "null"]},
                "files": {"type": "array", "items": file, "maxItems": MAX_FILES_PER_REQUEST},
                "room": {"type": ["string", "null"]},
                "source": {"type": ["string", "null"], "maxLength": MAX_CITATION},
                "importance": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": 5,
                    "description": "new drawers take it (when not given, that of the "
                    "stored chunk they replace or the source's highest, else 0); given, "
                    "the source's stored chunks take it too",
                },
                "format": {"type": "string", "enum": list(FORMATS), "default": "auto"},
                "dry_run": {"type": "boolean", "default": False},
                "readers": _NAMES_SCHEMA,
            },
        }

    @classmethod
    def from_json(cls, data: Any) -> IngestRequest:
        data = _object(data, cls.FIELDS)
        content = _string(data, "content")
        raw_files = data.get("files") or []
        if not isinstance(raw_files, list) or len(raw_files) > MAX_FILES_PER_REQUEST:
            raise _invalid(f"'files' must be a list of at most {MAX_FILES_PER_REQUEST}", "files")
        files = [_uploaded(item) for item in raw_files]
        # A file is known by its name: two of one name would be one source, each
        # replacing the other's drawers (parts of one upload share theirs).
        owners: dict[str, str | None] = {}
        for item in files:
            if item.name in owners and (item.upload is None or owners[item.name] != item.upload):
                raise _invalid(
                    f"two files named {item.name!r}: each needs a name of its own", "files"
                )
            owners[item.name] = item.upload
        if (content is None) == (not files):
            raise _invalid("give exactly one of 'content' or 'files'", "content")
        dry_run = data.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise _invalid("'dry_run' must be true or false", "dry_run")
        return cls(
            content=content,
            files=tuple(files),
            room=_string(data, "room"),
            source=_string(data, "source", limit=MAX_CITATION),
            importance=_optional_integer(data, "importance", 0, 5),
            format=_choice(data, "format", FORMATS, "auto"),
            dry_run=dry_run,
            readers=_names(data, "readers"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "room": self.room,
            "source": self.source,
            "importance": self.importance,
            "format": self.format,
            "dry_run": self.dry_run,
            "readers": list(self.readers) if self.readers is not None else None,
        }
        if self.content is not None:
            out["content"] = self.content
        else:
            out["files"] = [_file_json(f) for f in self.files]
        return {key: value for key, value in out.items() if value is not None}


def _file_json(upload: UploadedFile) -> dict[str, Any]:
    out: dict[str, Any] = {"name": upload.name, "content": upload.content}
    if upload.upload is not None:
        out.update(upload=upload.upload, part=upload.part, parts=upload.parts)
    return out


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 10
    rooms: tuple[str, ...] | None = None
    source_kinds: tuple[str, ...] | None = None
    since: int | None = None
    until: int | None = None
    identities: tuple[str, ...] | None = None
    workspaces: tuple[str, ...] | None = None  # only on the cross-workspace route
    max_chars: int | None = None  # each hit's content cut to this many characters

    FIELDS = (
        "query",
        "limit",
        "room",
        "source_kind",
        "since",
        "until",
        "identity",
        "workspaces",
        "max_chars",
    )

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["query"],
            "additionalProperties": False,
            "properties": {
                "query": {"type": "string", "minLength": 1, "pattern": "\\S"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 10},
                "room": _NAMES_SCHEMA,
                "source_kind": {
                    "type": ["array", "string", "null"],
                    "items": {"type": "string", "enum": list(SOURCE_KINDS)},
                },
                "since": _TIME_SCHEMA,
                "until": _TIME_SCHEMA,
                "identity": _NAMES_SCHEMA,
                "workspaces": {**_NAMES_SCHEMA, "description": "cross-workspace route only"},
                "max_chars": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": MAX_HIT_CHARS,
                    "description": "cut each hit's content to this many characters",
                },
            },
        }

    @classmethod
    def from_json(cls, data: Any) -> SearchRequest:
        data = _object(data, cls.FIELDS)
        query = _string(data, "query", required=True) or ""
        if not query.strip():
            raise _invalid("'query' must not be empty", "query")
        kinds = _names(data, "source_kind", filter_=True)
        for kind in kinds or ():
            if kind not in SOURCE_KINDS:
                raise _invalid(
                    f"'source_kind' must be among {', '.join(SOURCE_KINDS)}", "source_kind"
                )
        since, until = (
            parse_time(data.get("since"), "since"),
            parse_time(data.get("until"), "until"),
        )
        if since is not None and until is not None and since >= until:
            # `since` counts, `until` does not: such a window holds nothing, and an
            # answer of no hits would read as "nothing matched".
            raise _invalid("'since' must be before 'until'", "since")
        return cls(
            query=query,
            limit=_integer(data, "limit", 10, 1, MAX_LIMIT),
            rooms=_names(data, "room", filter_=True),
            source_kinds=kinds,
            since=since,
            until=until,
            identities=_names(data, "identity", filter_=True),
            workspaces=_names(data, "workspaces", filter_=True),
            max_chars=_optional_integer(data, "max_chars", 1, MAX_HIT_CHARS),
        )

    def to_json(self) -> dict[str, Any]:
        out = {
            "query": self.query,
            "limit": self.limit,
            "room": list(self.rooms) if self.rooms else None,
            "source_kind": list(self.source_kinds) if self.source_kinds else None,
            "since": self.since,
            "until": self.until,
            "identity": list(self.identities) if self.identities else None,
            "workspaces": list(self.workspaces) if self.workspaces else None,
            "max_chars": self.max_chars,
        }
        return {key: value for key, value in out.items() if value is not None}


@dataclass(frozen=True, slots=True)
class SourceDeleteRequest:
    """Soft-delete every drawer of one source (its citation, as drawers carry it in
    `source_file`) the caller may read; with `dry_run`, only say which they would be."""

    source: str
    dry_run: bool = False

    FIELDS = ("source", "dry_run")

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["source"],
            "additionalProperties": False,
            "properties": {
                "source": {"type": "string", "minLength": 1, "maxLength": MAX_CITATION},
                "dry_run": {"type": "boolean", "default": False},
            },
        }

    @classmethod
    def from_json(cls, data: Any) -> SourceDeleteRequest:
        data = _object(data, cls.FIELDS)
        dry_run = data.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise _invalid("'dry_run' must be true or false", "dry_run")
        source = _string(data, "source", required=True, limit=MAX_CITATION) or ""
        return cls(source=source, dry_run=dry_run)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "dry_run": self.dry_run}


@dataclass(frozen=True, slots=True)
class TaxonomyEditRequest:
    room: str
    keywords: tuple[str, ...] = ()
    display_name: str | None = None
    remove: bool = False

    FIELDS = ("room", "keywords", "display_name", "remove")

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["room"],
            "additionalProperties": False,
            "properties": {
                "room": {"type": "string", "minLength": 1},
                "keywords": {**_NAMES_SCHEMA, "description": "required unless `remove`"},
                "display_name": {"type": ["string", "null"]},
                "remove": {"type": "boolean", "default": False},
            },
        }

    @classmethod
    def from_json(cls, data: Any) -> TaxonomyEditRequest:
        data = _object(data, cls.FIELDS)
        remove = data.get("remove", False)
        if not isinstance(remove, bool):
            raise _invalid("'remove' must be true or false", "remove")
        keywords = _names(data, "keywords") or ()
        if not remove and not keywords:
            raise _invalid("'keywords' must name at least one keyword", "keywords")
        return cls(
            room=_string(data, "room", required=True) or "",
            keywords=keywords,
            display_name=_string(data, "display_name"),
            remove=remove,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "room": self.room,
            "keywords": list(self.keywords),
            "display_name": self.display_name,
            "remove": self.remove,
        }


MAX_REINDEX_STEP = 100_000


@dataclass(frozen=True, slots=True)
class ReindexRequest:
    """A reindex in one call (no fields), or one step of it: re-embed at most `limit`
    live drawers whose row number is above `after` (0 starts over); the step that
    reaches the end swaps the new vectors in. Steps let a client show progress."""

    after: int | None = None
    limit: int | None = None

    FIELDS = ("after", "limit")

    @staticmethod
    def json_schema() -> dict[str, Any]:
        return {
            "type": "object",
            "description": "empty: the whole reindex in one call; else one step",
            "additionalProperties": False,
            "properties": {
                "after": {"type": ["integer", "null"], "minimum": 0, "maximum": 2**62},
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_REINDEX_STEP},
            },
        }

    @classmethod
    def from_json(cls, data: Any) -> ReindexRequest:
        data = _object(data, cls.FIELDS)
        if data.get("after") is None and data.get("limit") is None:
            return cls()
        after = _integer(data, "after", 0, 0, 2**62)
        limit = _integer(data, "limit", 2000, 1, MAX_REINDEX_STEP)
        return cls(after, limit)

    def to_json(self) -> dict[str, Any]:
        if self.after is None and self.limit is None:
            return {}
        return {"after": self.after or 0, "limit": self.limit}


# The head of a file judged text or binary, as the watcher and the session-end hook judge it.
HEAD_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    """True for bytes that are not text: a NUL, or more than one character in a hundred
    that is not UTF-8 (more than one, in a short head). A text with a stray Latin-1
    byte is text: its bad bytes are read as U+FFFD (`read_text`)."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        text = head.decode("utf-8", errors="replace")
        return text.count("\ufffd") > max(1, len(text) // 100)
    return False


def read_text(data: bytes) -> str:
    """The text of a source that passed `looks_binary`: bytes that are not UTF-8 become
    U+FFFD, never a refusal of the whole source."""
    return data.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str  # on this machine
    name: str  # the citation: relative to the ingested directory (or the file's name)
    skip: str | None = None  # why it is not ingested


# Skip reasons that are failures, not choices: a path named that is not there, a file
# that could not be read. The others (hidden, binary, too large, not a regular file)
# leave a file out on purpose.
MISSING = "no such file or directory"
UNREADABLE = "unreadable"
NOT_REGULAR = "not a regular file"
NAME_NOT_UTF8 = "file name is not UTF-8"
BINARY = "binary file"


def is_failure(reason: str) -> bool:
    """True when a source was skipped because it could not be had, not by choice."""
    return reason in (MISSING, NAME_NOT_UTF8) or reason.startswith(UNREADABLE)


def _printable_name(name: str) -> str | None:
    """`name` with the bytes of a file name that are not UTF-8 (which Python keeps as
    lone surrogates, and no request or JSON text can carry) shown as U+FFFD; None
    when there were none."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None


def walk_sources(
    paths: Sequence[str], max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[SourceFile]:
    """The files under `paths` in a stable order, each with a reason if it is skipped.

    Hidden and tool directories are not entered (nor the `tool-results` of a Claude
    Code session: `skipped_directory`); hidden files, binaries, files over
    `max_file_bytes` and what is no regular file (a FIFO, a device) are reported as
    skipped. A file named directly is never skipped for being hidden. A file whose
    citation is not UTF-8 text is reported as failed, under its name with U+FFFD for
    the bytes it cannot show: it cannot be cited, and the others still go.
    """
    for given in paths:
        for source in _walk_one(given, max_file_bytes):
            shown = _printable_name(source.name)
            if shown is not None:  # a file skipped by choice keeps its reason
                source = SourceFile(source.path, shown, source.skip or NAME_NOT_UTF8)
            yield source


def _walk_one(given: str, max_file_bytes: int) -> Iterator[SourceFile]:
    root = os.path.abspath(os.path.expanduser(given))
    if os.path.isfile(root):
        yield _check_file(root, os.path.basename(root), max_file_bytes, follow=True)
        return
    if not os.path.isdir(root):
        # Reading a FIFO would wait for a writer, and /dev/zero never ends.
        reason = NOT_REGULAR if os.path.exists(root) else MISSING
        yield SourceFile(root, given, reason)
        return
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not skipped_directory(os.path.join(directory, d)))
        for name in sorted(files):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            if name.startswith("."):
                yield SourceFile(path, relative, "hidden file")
            elif os.path.islink(path) or not os.path.isfile(path):
                yield SourceFile(path, relative, NOT_REGULAR)
            else:
                yield _check_file(path, relative, max_file_bytes)


def _check_file(path: str, name: str, max_file_bytes: int, follow: bool = False) -> SourceFile:
    try:
        head = read_regular(path, max_file_bytes, HEAD_BYTES, follow=follow)
    except NotRegular as error:
        return SourceFile(path, name, error.reason)
    except OSError as error:
        return SourceFile(path, name, f"{UNREADABLE}: {error.strerror or error}")
    if looks_binary(head):
        return SourceFile(path, name, BINARY)
    return SourceFile(path, name)


class NotRegular(Exception):
    """A path that is no regular file to read (a FIFO, a device, a socket, a symlink not
    to be followed) or one too large; `reason` is its skip reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_regular(
    path: str, max_file_bytes: int, limit: int | None = None, follow: bool = False
) -> bytes:
    """The bytes of the regular file at `path` (its first `limit` when given), judged and
    read through one descriptor: what was checked is what is read, whatever is renamed
    over the path meanwhile. Raises `NotRegular` for what is no regular file or holds
    more than `max_file_bytes`, and OSError when it cannot be read.

    Opened without waiting: a FIFO would block `open` until a writer came, and a
    symlink is refused unless `follow` (a file named directly, not one walked)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP and not follow and os.path.islink(path):
            raise NotRegular(NOT_REGULAR) from None
        raise
    with open(descriptor, "rb", closefd=True) as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(NOT_REGULAR)
        if info.st_size > max_file_bytes:
            raise NotRegular(_too_large(max_file_bytes, info.st_size))
        os.set_blocking(descriptor, True)
        # One byte past the bound tells a file that grew past it since the fstat.
        data = handle.read(max_file_bytes + 1 if limit is None else limit)
        if len(data) > max_file_bytes:
            raise NotRegular(_too_large(max_file_bytes, os.fstat(descriptor).st_size))
    return data


def _too_large(max_file_bytes: int, size: int) -> str:
    return f"larger than {max_file_bytes} bytes ({size})"
