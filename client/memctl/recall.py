"""`memctl recall ...`: ingest, search, show, wake-up, status, delete (a drawer or a
source), purge, taxonomy, reindex.

Argument parsing and rendering for the recall routes. Files are read and walked here,
on the caller's machine, and uploaded in batches; the daemon parses and stores them.
Imports the wire contract and httpx only, never the daemon.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import sys
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

from memctl.answers import from_answer, json_kind
from memctl.client import ServerError
from memctl.commands import (
    CommandFailure,
    Interrupted,
    Session,
    add_command,
    non_empty,
    read_stdin,
    read_stdin_bytes,
    time_value,
    whole_number,
)
from memctl.render import TIMEOUT, UNREACHABLE, USAGE, escaped
from memctl.transport import DaemonUnreachable
from memhub_protocol import ErrorCode
from memhub_protocol.recall import (
    BINARY,
    DEFAULT_MAX_FILE_BYTES,
    FORMATS,
    HEAD_BYTES,
    MAX_FILES_PER_REQUEST,
    MAX_HIT_CHARS,
    MAX_LIMIT,
    SOURCE_KINDS,
    UNREADABLE,
    IngestRequest,
    NotRegular,
    ReindexRequest,
    SearchRequest,
    SourceDeleteRequest,
    SourceFile,
    TaxonomyEditRequest,
    UploadedFile,
    is_failure,
    looks_binary,
    parse_time,
    read_regular,
    read_text,
    walk_sources,
)
from memhub_protocol.routes import WAKE_UP_MAX_LIMIT, WAKE_UP_MIN_BUDGET

# Uploads stay under the daemon's default body limit ([limits] max_body_bytes, 1 MiB).
BATCH_BYTES = 900 * 1024
FILE_OVERHEAD = 40  # a file's JSON keys and punctuation, roughly
PART_OVERHEAD = 80  # and a part's upload id and numbers
BAR_WIDTH = 30
# Drawers re-embedded per reindex request: a few seconds of work, then progress.
REINDEX_STEP = 2000
# The daemon's status for a part it kept until the rest of its upload arrives.
PART_RECEIVED = "part_received"
# The schema of the daemon's ingest answer, which the summed totals keep.
INGEST_SCHEMA = "memhub.recall.ingest.v1"


# --------------------------------------------------------------------------- parser


def add_recall_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    command = partial(add_command, common=common)

    p = sub.add_parser("recall", parents=[common], help="recall: ingest and search what was said")
    actions = p.add_subparsers(dest="recall_action", metavar="ACTION", required=True)

    a = command(actions, "ingest", cmd_ingest, "ingest files, directories or stdin as drawers")
    a.add_argument("paths", nargs="+", metavar="PATH", help="files or directories; '-' = stdin")
    a.add_argument("--room", help="room for every drawer (default: taxonomy, then directory)")
    a.add_argument(
        "--importance",
        type=int,
        choices=range(6),
        metavar="0-5",
        help="for new drawers (default 0) and the stored ones of these sources",
    )
    a.add_argument("--format", choices=FORMATS, default="auto", help="default: by content")
    a.add_argument("--dry-run", action="store_true", help="count, store nothing")
    a.add_argument(
        "--readers", type=_roles, help="comma-separated roles that may see these drawers"
    )
    a.add_argument(
        "--source",
        type=non_empty,
        help="citation for stdin (default 'stdin:' and 12 hex digits of its SHA-256); "
        "a later stdin ingest with the same citation replaces this one",
    )
    a.add_argument(
        "--max-file-bytes",
        type=whole_number(1),
        default=DEFAULT_MAX_FILE_BYTES,
        metavar="N",
        help=f"skip files larger than N bytes (default {DEFAULT_MAX_FILE_BYTES})",
    )
    a.add_argument(
        "--request-bytes",
        type=whole_number(1),
        default=BATCH_BYTES,
        metavar="N",
        help="largest upload per request; larger files go in parts (default fits the "
        "daemon's default [limits] max_body_bytes)",
    )

    a = command(actions, "search", cmd_search, "hybrid search of the drawers")
    a.add_argument("text", nargs="+", help="what to look for")
    a.add_argument("--all", action="store_true", help="every workspace you may use")
    a.add_argument("--room", action="append", help="only this room (repeatable)")
    a.add_argument(
        "--source-kind",
        action="append",
        type=_source_kinds,
        metavar="KIND",
        help=f"only this kind (repeatable, or comma-separated): {', '.join(SOURCE_KINDS)}",
    )
    a.add_argument("--identity", action="append", help="only drawers written by this identity")
    a.add_argument(
        "--since", type=time_value, help="said at or after (ISO date/time or epoch seconds)"
    )
    a.add_argument("--until", type=time_value, help="said before (ISO date/time or epoch seconds)")
    a.add_argument(
        "--limit",
        type=whole_number(1, MAX_LIMIT),
        default=10,
        metavar="N",
        help=f"hits (default 10, at most {MAX_LIMIT})",
    )
    a.add_argument(
        "--max-chars",
        type=whole_number(1, MAX_HIT_CHARS),
        metavar="N",
        help="cut each hit's content to N characters (read one whole: recall show ID)",
    )
    a.add_argument("--format", choices=("text", "aaak"), default="text", help="aaak: AAAK only")

    a = command(actions, "show", cmd_show, "one drawer whole, by its id")
    a.add_argument("drawer_id", type=non_empty, help="the drawer id")

    a = command(actions, "wake-up", cmd_wake_up, "identity, top drawers, memory map header")
    a.add_argument(
        "--limit",
        type=whole_number(1, WAKE_UP_MAX_LIMIT),
        default=5,
        metavar="N",
        help=f"drawers (default 5, at most {WAKE_UP_MAX_LIMIT})",
    )
    a.add_argument(
        "--budget",
        type=whole_number(WAKE_UP_MIN_BUDGET),
        default=4000,
        metavar="CHARS",
        help=f"most characters (default 4000, at least {WAKE_UP_MIN_BUDGET})",
    )
    a.add_argument("--format", choices=("text", "aaak"), default="text", help="aaak: one zettel")
    a = command(actions, "compress", cmd_compress, "text as one AAAK zettel (nothing stored)")
    a.add_argument("text", nargs="+", metavar="TEXT", help="the text; '-' reads stdin")

    command(actions, "status", cmd_status, "drawer counts, rooms, embedder, sizes")
    a = command(actions, "delete", cmd_delete, "soft-delete a drawer, or a source's (audited)")
    which = a.add_mutually_exclusive_group(required=True)
    which.add_argument("drawer_id", nargs="?", type=non_empty, help="the drawer id")
    which.add_argument(
        "--source",
        type=non_empty,
        metavar="CITATION",
        help="every drawer of this source you may read (its citation, as `show` gives it)",
    )
    a.add_argument("--dry-run", action="store_true", help="with --source: only list the drawers")
    a = command(actions, "purge", cmd_purge, "remove soft-deleted drawers for good (admin)")
    a.add_argument(
        "--before", type=time_value, help="only those deleted before this time (ISO or epoch)"
    )
    a.add_argument(
        "--audit-before",
        type=time_value,
        help="also remove the audit entries written before this time; alone, only those",
    )
    a = command(actions, "taxonomy", cmd_taxonomy, "list or edit room keywords")
    a.add_argument("taxonomy_action", choices=("list", "edit", "remove"), nargs="?", default="list")
    a.add_argument("room", nargs="?", help="room (edit, remove)")
    a.add_argument("keywords", nargs="*", help="keywords (edit)")
    a.add_argument("--display-name", help="a label for the room (edit)")
    command(actions, "reindex", cmd_reindex, "re-embed every drawer (admin)")


def _ws_call(session: Session, name: str, **kwargs: Any) -> Any:
    return session.client._call(name, workspace=session.workspace(), **kwargs)


# --------------------------------------------------------------------------- ingest


def _sources(
    args: argparse.Namespace, walked: list[SourceFile]
) -> Iterator[tuple[SourceFile, str | None]]:
    """(source, text) pairs; text is None for a skipped source. Stdin and files are
    judged as the daemon's watcher judges them: binary for a NUL or more than one bad
    character in a hundred, else text with its bytes that are not UTF-8 read as U+FFFD."""
    if "-" in args.paths:
        try:
            data = read_stdin_bytes(args.max_file_bytes)
        except CommandFailure as failure:  # one source failed, not the whole batch
            yield SourceFile("-", args.source or "stdin", f"{UNREADABLE}: {failure.message}"), None
        else:
            name = args.source or stdin_citation(data)
            if looks_binary(data[:HEAD_BYTES]):
                yield SourceFile("-", name, BINARY), None
            else:
                yield SourceFile("-", name), read_text(data)
    for source in walked:
        if source.skip:
            yield source, None
            continue
        try:
            # Through one descriptor, opened without waiting: a FIFO renamed over a
            # walked file's name since the walk is skipped, never waited on.
            data = read_regular(source.path, args.max_file_bytes, follow=True)
        except NotRegular as refusal:
            yield SourceFile(source.path, source.name, refusal.reason), None
        except OSError as error:
            yield SourceFile(source.path, source.name, f"{UNREADABLE}: {error}"), None
        else:
            yield source, read_text(data)


def stdin_citation(data: bytes) -> str:
    """Stdin's citation without --source: `stdin:` and the start of the bytes' SHA-256.
    An ingest retires the stored chunks of its source that it no longer holds, so one
    name for every stdin would let each unrelated text retire the one before it."""
    return f"stdin:{hashlib.sha256(data).hexdigest()[:12]}"


def _batches(
    args: argparse.Namespace, walked: list[SourceFile], totals: dict[str, Any]
) -> Iterator[list[UploadedFile]]:
    """Requests' worth of files; a file too large for one request is sent alone, as
    numbered parts of one upload that the daemon joins before ingesting it. A source
    left out goes to `totals["skipped"]`, or to `totals["failed"]` when it could not
    be had (a path that is not there, a file that cannot be read)."""
    budget = args.request_bytes
    batch: list[UploadedFile] = []
    size = 0
    for source, text in _sources(args, walked):
        if text is None:
            reason = source.skip or UNREADABLE
            kept = totals["failed"] if is_failure(reason) else totals["skipped"]
            kept.append({"source": source.name, "reason": reason})
            continue
        weight = len(json.dumps(text)) + len(source.name) + FILE_OVERHEAD
        if weight > budget:
            if batch:
                yield batch
                batch, size = [], 0
            pieces = split_text(text, budget - len(source.name) - FILE_OVERHEAD - PART_OVERHEAD)
            upload = secrets.token_hex(8)
            for number, piece in enumerate(pieces):
                yield [UploadedFile(source.name, piece, upload, number, len(pieces))]
            continue
        if batch and (size + weight > budget or len(batch) >= MAX_FILES_PER_REQUEST):
            yield batch
            batch, size = [], 0
        batch.append(UploadedFile(source.name, text))
        size += weight
    if batch:
        yield batch


def split_text(text: str, budget: int) -> list[str]:
    """`text` cut into pieces whose JSON string form is at most `budget` characters,
    at line ends where it can be (a longer line is cut inside)."""
    budget = max(budget, 64)
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        weight = len(json.dumps(line))
        while weight > budget:  # a line longer than a piece: cut it by characters
            cut = _fitting(line, budget)
            if current:
                pieces.append("".join(current))
                current, size = [], 0
            pieces.append(line[:cut])
            line = line[cut:]
            weight = len(json.dumps(line))
        if current and size + weight > budget:
            pieces.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += weight
    if current:
        pieces.append("".join(current))
    return pieces or [""]


def _fitting(line: str, budget: int) -> int:
    """The longest prefix length of `line` whose JSON form fits `budget` (at least 1)."""
    low, high = 1, len(line)
    while low < high:
        middle = (low + high + 1) // 2
        if len(json.dumps(line[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


class _Progress:
    """A one-line bar on stderr when it is a terminal; silent otherwise."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = max(total, 1)
        self.done = 0
        self.answered = 0  # requests the daemon answered

    def advance(self, count: int, chunks: int) -> None:
        self.answered += 1
        self.done += count
        if self.enabled:
            filled = min(BAR_WIDTH, BAR_WIDTH * self.done // self.total)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            line = f"\r[{bar}] {self.done}/{self.total} files, {chunks} new chunks"
            sys.stderr.write(line)
            sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled and self.done:
            sys.stderr.write("\n")


def _one_each(walked: list[SourceFile]) -> list[SourceFile]:
    """`walked` with a file met twice under one citation sent once. Two different files
    cited alike (`a/README.md b/README.md`, or two Slack channels' day files) would be
    one source, each replacing the other's drawers: refused before anything is sent."""
    cited: dict[str, str] = {}
    kept: list[SourceFile] = []
    for source in walked:
        if not source.skip:
            real = os.path.realpath(source.path)
            other = cited.get(source.name)
            if other == real:
                continue  # the same file again
            if other is not None:
                common = os.path.commonpath([os.path.dirname(other), os.path.dirname(real)])
                raise CommandFailure(
                    f"{other} and {real} would both be cited as {source.name!r} (a file is "
                    "cited by its path below the directory given, or by its name): ingest "
                    f"{common} instead, which cites each by its path below it"
                )
            cited[source.name] = real
        kept.append(source)
    return kept


def _roles(value: str) -> tuple[str, ...]:
    """`--readers`' roles: an empty list (`""` from an unset variable, or `,`) is refused,
    not taken for "no readers", which would let every caller see the drawers."""
    roles = tuple(part.strip() for part in value.split(",") if part.strip())
    if not roles:
        raise argparse.ArgumentTypeError("name at least one role")
    return roles


def _source_kinds(value: str) -> tuple[str, ...]:
    """`--source-kind`'s value: one kind, or several separated by commas (as the API
    takes them), each one of SOURCE_KINDS."""
    kinds = tuple(part.strip() for part in value.split(",") if part.strip())
    unknown = [kind for kind in kinds if kind not in SOURCE_KINDS]
    if not kinds or unknown:
        raise argparse.ArgumentTypeError(
            f"invalid kind {(unknown or [value])[0]!r} (choose from {', '.join(SOURCE_KINDS)})"
        )
    return kinds


def cmd_ingest(session: Session, args: argparse.Namespace) -> int:
    # The daemon's answers summed into one of the same shape (a large ingest takes
    # several requests), every source's report kept.
    totals: dict[str, Any] = {
        "schema_version": None, "workspace": None, "dry_run": args.dry_run,
        "files": 0, "chunks": 0, "duplicates": 0, "replaced": 0, "deleted": 0,
        "skipped": [], "failed": [], "near_duplicates": [], "lock_wait_ms": None,
        "sources": [],
    }  # fmt: skip
    walked = _one_each(list(walk_sources([p for p in args.paths if p != "-"], args.max_file_bytes)))
    readable = sum(1 for source in walked if not source.skip) + ("-" in args.paths)
    progress = _Progress(sys.stderr.isatty() and not session.as_json, readable)
    try:
        _send(session, args, walked, totals, progress)
    except KeyboardInterrupt:
        progress.finish()
        raise _ingest_interrupted(totals) from None
    except DaemonUnreachable as error:
        progress.finish()
        if not progress.answered:
            raise  # nothing stored by this ingest: the failure alone says it all
        raise _ingest_cut_off(error, totals) from None
    except ServerError as error:  # a refusal, or an answer of another shape, mid-way
        progress.finish()
        if progress.answered:
            # The daemon's message followed by what was stored by then, told as memctl
            # tells the daemon's errors: its hints (a 401's token hint, the workspaces
            # one may use) end the line, a refusal's further lines follow it.
            done, detail = _stored_so_far(totals)
            error.message = f"{error.message}; {done}"
            error.detail = {**error.detail, **detail}
        raise
    progress.finish()
    if totals["workspace"] is None:  # every source left out here: no answer filled these
        totals["schema_version"] = INGEST_SCHEMA
        totals["workspace"] = session.workspace()
    session.show(totals, _render_ingest)
    if totals["failed"]:  # on stderr too, as every failure is
        lines = (escaped(line) for line in _failed_lines(totals, "memctl: "))
        print("\n".join(lines), file=sys.stderr)
    return 1 if totals["failed"] else 0


def _ingest_interrupted(totals: dict[str, Any]) -> Interrupted:
    """Ctrl-C during an ingest: what the daemon said it stored by then."""
    return Interrupted(*_stored_so_far(totals))


def _ingest_cut_off(error: DaemonUnreachable, totals: dict[str, Any]) -> CommandFailure:
    """The daemon gone (a restart) or silent after answering some of an ingest's
    requests: its failure, as memctl tells it, followed by what was stored by then (as
    for Ctrl-C), with exit 2 and, with --json, its error envelope carrying both."""
    done, detail = _stored_so_far(totals)
    return CommandFailure(
        f"{error.line.removeprefix('memctl: ')}; {done}",
        2,
        code=TIMEOUT if error.timed_out else UNREACHABLE,
        detail={"url": error.target.url, "reason": error.reason, **detail},
    )


def _stored_so_far(totals: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """What the daemon said an ingest cut short had stored (every request it answered
    is stored; the sources not reported were not sent, or not answered): a line's end,
    and the error envelope's detail."""
    stored = sorted({report["source"] for report in totals["sources"] if "source" in report})
    counts = (
        f"files={totals['files']} chunks={totals['chunks']} "
        f"duplicates={totals['duplicates']} replaced={totals['replaced']}"
    )
    if totals["dry_run"]:
        done = (
            f"a dry run, nothing stored; counted before it: {counts}; sources not reported "
            "were not counted: run the same dry run again for all of them"
        )
    else:
        done = (
            f"stored before it: {counts}; sources not reported were not ingested, or not "
            "answered: run the same ingest again to finish (what is stored is not stored "
            "twice)"
        )
    detail = {key: totals[key] for key in ("files", "chunks", "duplicates", "replaced")}
    return done, {**detail, "sources": stored, "failed": totals["failed"]}


def _send(
    session: Session,
    args: argparse.Namespace,
    walked: list[SourceFile],
    totals: dict[str, Any],
    progress: _Progress,
) -> None:
    """Send the sources in batches, the daemon's answers summed into `totals`."""
    refused: set[str] = set()  # uploads the daemon refused a part of
    for batch in _batches(args, walked, totals):
        upload = batch[0].upload
        if upload is not None and upload in refused:
            continue  # the daemon dropped the earlier parts: the rest would only fail
        request = IngestRequest(
            files=tuple(batch),
            room=args.room,
            importance=args.importance,
            format=args.format,
            dry_run=args.dry_run,
            readers=args.readers,
        )
        try:
            answer = _ws_call(session, "recall_ingest", body=request.to_json())
        except ServerError as error:
            if error.code is not ErrorCode.TOO_LARGE:
                raise
            reason = f"too large for one request to the daemon ({error.message})"
            totals["failed"].extend({"source": f.name, "reason": reason} for f in batch)
            answer = None
        else:
            from_answer(answer, partial(_add_answer, totals))
        whole = sum(1 for f in batch if f.part == f.parts - 1)
        if upload is not None and batch[0].part < batch[0].parts - 1 and not part_kept(answer):
            refused.add(upload)
            whole += 1
        progress.advance(whole, totals["chunks"])


# The fields of each report `_render_ingest` prints (checked before anything is summed:
# an answer failing there would otherwise fail after every request was sent, and the
# files stored would not be told).
_REPORT_FIELDS = {
    "skipped": ("source", "reason"),
    "failed": ("source", "reason"),
    "near_duplicates": ("drawer_id", "similar_drawer_id", "similarity", "preview"),
    "sources": (),
}


def _add_answer(totals: dict[str, Any], answer: dict[str, Any]) -> None:
    """One request's answer summed into `totals`. Its counts of files and chunks must be
    there (the others an older daemon may lack), whole numbers, and its reports objects
    with the fields they are rendered with: else a KeyError or TypeError (see
    `from_answer`), `totals` left as they were (an answer memctl cannot read is not
    counted as stored)."""
    counts = {}
    for key in ("files", "chunks", "duplicates", "replaced", "deleted"):
        count = answer[key] if key in ("files", "chunks") else answer.get(key, 0)
        if not isinstance(count, int) or isinstance(count, bool):
            raise TypeError(f"{key!r} is {count!r}, not a count")
        counts[key] = count
    reports = {}
    for key, fields in _REPORT_FIELDS.items():
        listed = answer.get(key, [])
        if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
            raise TypeError(f"{key!r} is not a list of objects")
        for report in listed:
            for field in fields:
                report[field]  # noqa: B018 - a KeyError names the field missing
            warnings = report.get("warnings", [])
            if not isinstance(warnings, list):
                raise TypeError(f"'warnings' of {key!r} is {json_kind(warnings)}, not a list")
            if warnings:
                report["source"]  # noqa: B018 - a warning is printed with its source
        reports[key] = listed
    waited = answer.get("lock_wait_ms")
    if waited is not None and (not isinstance(waited, int | float) or isinstance(waited, bool)):
        raise TypeError(f"'lock_wait_ms' is {waited!r}, not a number")
    totals["schema_version"] = answer.get("schema_version")
    totals["workspace"] = answer.get("workspace")
    for key, count in counts.items():
        totals[key] += count
    for key, listed in reports.items():
        totals[key].extend(listed)
    if waited is not None:
        totals["lock_wait_ms"] = max(totals["lock_wait_ms"] or 0, waited)


def part_kept(answer: dict[str, Any] | None) -> bool:
    """Whether the daemon kept the one part before the last that a request sent; any
    other answer (a file over its `max_file_bytes`, a part out of order) ends that
    upload, and its later parts would only fail."""
    sources = answer.get("sources", ()) if answer else ()
    return bool(sources) and sources[0].get("status") == PART_RECEIVED


def _failed_lines(totals: dict[str, Any], prefix: str = "") -> list[str]:
    return [f"{prefix}failed  {item['source']}: {item['reason']}" for item in totals["failed"]]


def _render_ingest(totals: dict[str, Any]) -> str:
    lines = [
        f"dry_run={str(totals['dry_run']).lower()} files={totals['files']} "
        f"chunks={totals['chunks']} duplicates={totals['duplicates']} "
        f"replaced={totals['replaced']} skipped={len(totals['skipped'])} "
        f"failed={len(totals['failed'])}"
    ]
    for item in totals["skipped"]:
        lines.append(f"skipped {item['source']}: {item['reason']}")
    lines += _failed_lines(totals)
    for report in totals["sources"]:
        lines.extend(f"warning {report['source']}: {w}" for w in report.get("warnings", ()))
    for item in totals["near_duplicates"]:
        lines.append(
            f"near-duplicate {item['drawer_id']} ~ {item['similar_drawer_id']} "
            f"({item['similarity']}): {item['preview']}"
        )
    if totals["deleted"]:
        lines.append(
            f"{totals['deleted']} chunk(s) match drawers deleted on purpose: not brought back "
            "(an admin's `recall purge` removes deleted drawers for good)"
        )
    if totals["lock_wait_ms"]:
        lines.append(f"waited {totals['lock_wait_ms']} ms for ingest locks")
    return "\n".join(lines)


# --------------------------------------------------------------------------- search


def cmd_search(session: Session, args: argparse.Namespace) -> int:
    since, until = parse_time(args.since, "since"), parse_time(args.until, "until")
    text = " ".join(args.text)
    if not text.strip():
        raise CommandFailure("the search text is empty")
    request = SearchRequest(
        query=text,
        limit=args.limit,
        rooms=tuple(args.room) if args.room else None,
        source_kinds=tuple(k for kinds in args.source_kind for k in kinds)
        if args.source_kind
        else None,
        since=since,
        until=until,
        identities=tuple(args.identity) if args.identity else None,
        max_chars=args.max_chars,
    )
    params = {"format": "aaak"} if args.format == "aaak" else None
    if args.all:
        answer = session.client._call("recall_search_all", body=request.to_json(), params=params)
    else:
        answer = _ws_call(session, "recall_search", body=request.to_json(), params=params)
    session.show(answer, (lambda a: a["aaak"]) if params else render_search)
    return 0


def render_search(answer: dict[str, Any]) -> str:
    lines: list[str] = [f"warning: {w}" for w in answer.get("warnings", [])]
    for hit in answer["hits"]:
        signals = " ".join(
            f"{name} #{s['rank']}" + (f" ({s['score']:.3g})" if s["score"] is not None else "")
            for name, s in hit["signals"].items()
        )
        lines.append(
            f"[{hit['fused_score']:.4f}] {hit['workspace']}/{hit['room']} {hit['drawer_id']}"
        )
        # A citation is a file's name as its ingest gave it: kept on its line (a line
        # break in it would print what reads as another hit), as `recall delete` takes it.
        lines.append(f"source: {escaped(hit['citation'])}")
        lines.append(f"signals: {signals}")
        if hit.get("tunnel_hints"):
            lines.append(f"tunnel: also in {', '.join(hit['tunnel_hints'])}")
        lines.append(hit["content"])
        if hit.get("content_truncated"):
            lines.append(
                f"[cut at {len(hit['content'])} of {hit['content_chars']} characters: "
                f"memctl recall show {hit['drawer_id']} -w {hit['workspace']}]"
            )
        lines.append("")
    if not answer["hits"]:
        lines.append("no results")
    return "\n".join(lines).rstrip()


# --------------------------------------------------------------------------- the rest


def cmd_show(session: Session, args: argparse.Namespace) -> int:
    session.show(_ws_call(session, "recall_drawer", drawer_id=args.drawer_id), render_drawer)
    return 0


def render_drawer(answer: dict[str, Any]) -> str:
    drawer = answer["drawer"]
    source = drawer["source_file"] or f"mempal://drawer/{drawer['drawer_id']}"
    at = f" ({drawer['locator']})" if drawer.get("locator") else ""
    return "\n".join(
        [
            f"{answer['workspace']}/{drawer['room']} {drawer['drawer_id']}",
            f"source: {escaped(source + at)}",
            drawer["content"],
        ]
    )


def cmd_wake_up(session: Session, args: argparse.Namespace) -> int:
    params = {"limit": str(args.limit), "budget": str(args.budget), "format": args.format}
    answer = _ws_call(session, "recall_wake_up", params=params)
    session.show(answer, _wake_up_text)
    return 0


def _wake_up_text(answer: dict[str, Any]) -> str:
    """The text, pointing where memctl reads a drawer whole (the daemon names its route),
    a pointer no longer than the route's, so the text stays within its budget. Only the
    pointer's own line changes: the first line after the drawers' heading that is the
    pointer whole (a drawer's lines start with `- ` or two spaces), never a drawer's or
    the identity's text that quotes the route."""
    text: str = answer["text"]
    route = answer.get("read_whole")
    if not route:
        return text
    lines = text.split("\n")
    pointer = f"(summaries; read a drawer whole: {route})"
    heading = f"## Recent recall ({answer['workspace']})"
    after = lines.index(heading) + 1 if heading in lines else len(lines)
    for at in range(after, len(lines)):
        if lines[at] == pointer:
            lines[at] = "(summaries; read a drawer whole: memctl recall show <drawer_id>)"
            break
    return "\n".join(lines)


def cmd_compress(session: Session, args: argparse.Namespace) -> int:
    text = read_stdin() if args.text == ["-"] else " ".join(args.text)
    if not text.strip():
        raise CommandFailure("the text is empty")
    answer = session.client._call("recall_compress", body={"text": text})
    session.show(answer, lambda a: a["document"])
    return 0


def cmd_status(session: Session, args: argparse.Namespace) -> int:
    session.show(_ws_call(session, "recall_status"), _render_status)
    return 0


def _render_status(data: dict[str, Any]) -> str:
    lines = [
        f"workspace: {data['workspace']}",
        f"schema_version: {data['store_schema_version']}",
        f"drawer_count: {data['drawer_count']}",
    ]
    if data["hidden_count"]:
        lines.append(f"hidden_drawers: {data['hidden_count']}")
    if data["deleted_count"]:
        lines.append(f"deleted_drawers: {data['deleted_count']} (use `memctl recall purge`)")
    lines.append(f"vector_count: {data['vector_count']}")
    stored, running = data["vectors_embedder"], data["embedder"]
    failed = data.get("embedder_error")
    if running:
        lines.append(f"embedder: {running['name']} ({running['dimension']}-d)")
        if failed:
            # Loaded, then failing: reindex would fail alike until it answers again.
            since = data.get("embedder_failed_at")
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since)) if since else None
            when = f" at {at}" if at else ""
            lines.append(f"embedder call failed{when}: {failed}")
            lines.append("search uses BM25 alone until the embedder answers again")
    elif data.get("embedder_pending") and not failed:
        lines.append("embedder: not loaded yet (it loads on the first search or write)")
    else:
        lines.append(f"embedder: none ({failed or 'vectors off'})")
    if stored and not data["vectors_usable"] and not failed and running:
        lines.append(
            f"vectors from {stored['name']} ({stored['dimension']}-d): run `memctl recall reindex`"
        )
    missing = data.get("vectors_missing")
    if missing:
        then = " once the embedder answers" if failed else ""
        lines.append(f"drawers_without_vectors: {missing} (run `memctl recall reindex`{then})")
    lines.append(f"taxonomy_entries: {data['taxonomy_count']}")
    lines.append(f"db_size_bytes: {data['db_size_bytes']} (+ wal {data['wal_size_bytes']})")
    lines.append("rooms:")
    lines.extend(f"- {r['room']}: {r['drawer_count']}" for r in data["rooms"])
    if not data["rooms"]:
        lines.append("- none")
    return "\n".join(lines)


def cmd_delete(session: Session, args: argparse.Namespace) -> int:
    if args.source is not None:
        return _delete_source(session, args.source, args.dry_run)
    if args.dry_run:
        raise CommandFailure("--dry-run goes with --source", code=USAGE)
    answer = _ws_call(session, "recall_delete", drawer_id=args.drawer_id)
    session.show(
        answer,
        lambda a: (
            f"soft-deleted {a['drawer_id']}\n  room={a['room']} source={a['source_file']}\n"
            f"  content: {a['preview']}\n  (use `memctl recall purge` to remove it for good)"
        ),
    )
    return 0


def _delete_source(session: Session, source: str, dry_run: bool) -> int:
    request = SourceDeleteRequest(source, dry_run)
    answer = _ws_call(session, "recall_delete_source", body=request.to_json())

    def shown(a: dict[str, Any]) -> str:
        done = "would soft-delete" if a.get("dry_run") else "soft-deleted"
        lines = [f"{done} {a['deleted']} drawer(s) of {escaped(a['source'])}"]
        lines.extend(f"  {drawer_id}" for drawer_id in a["drawer_ids"])
        if not a.get("dry_run"):
            lines.append("  (use `memctl recall purge` to remove them for good)")
        return "\n".join(lines)

    session.show(answer, shown)
    return 0


def cmd_purge(session: Session, args: argparse.Namespace) -> int:
    before = parse_time(args.before, "before")  # checked by the option's type
    audit_before = parse_time(args.audit_before, "audit-before")
    body: dict[str, Any] = {"before": before}
    if audit_before is not None:
        body["audit_before"] = audit_before
        if before is None:
            body["before"] = 0  # the audit alone: deleted before 1970 is no drawer at all
    answer = _ws_call(session, "recall_purge", body=body)

    def shown(a: dict[str, Any]) -> str:
        text = f"permanently removed {a['purged']} drawer(s)"
        if "audit_removed" in a:
            text += (
                f" and {a['audit_removed']} audit entr{'y' if a['audit_removed'] == 1 else 'ies'}"
            )
        if a.get("reclaimed_bytes"):
            text += f"; {a['reclaimed_bytes'] / 1048576:.1f} MiB of disk given back"
        return text

    session.show(answer, shown)
    return 0


def cmd_taxonomy(session: Session, args: argparse.Namespace) -> int:
    action = args.taxonomy_action
    if action == "list":
        answer = _ws_call(session, "recall_taxonomy")
    else:
        if not args.room or (action == "edit" and not args.keywords):
            raise CommandFailure(
                f"taxonomy {action} needs a room" + (" and keywords" if action == "edit" else "")
            )
        request = TaxonomyEditRequest(
            args.room, tuple(args.keywords), args.display_name, remove=action == "remove"
        )
        answer = _ws_call(session, "recall_taxonomy_edit", body=request.to_json())
    session.show(answer, _render_taxonomy)
    return 0


def _render_taxonomy(answer: dict[str, Any]) -> str:
    lines = [
        f"{e['room']}"
        + (f" ({e['display_name']})" if e.get("display_name") else "")
        + f": {', '.join(e['keywords'])}"
        for e in answer["entries"]
    ]
    return "\n".join(lines) or "no taxonomy entries"


def _reindex_step(answer: dict[str, Any]) -> tuple[int, float, int, int, bool]:
    """What one reindex step's answer says: the drawers it re-embedded, its seconds, where
    the next step starts, the drawers in all, and whether it was the last."""
    step = (answer["drawers"], answer["seconds"], answer["next"], answer["total"], answer["done"])
    if not all(isinstance(number, int | float) for number in step):
        raise TypeError(f"a step's counts that are not numbers: {step!r}")
    return step


def cmd_reindex(session: Session, args: argparse.Namespace) -> int:
    """Re-embed in steps of REINDEX_STEP drawers, so progress can be shown; the daemon
    swaps the new vectors in when the last step is done."""
    show = sys.stderr.isatty() and not session.as_json
    after, drawers, seconds = 0, 0, 0.0
    try:
        while True:
            request = ReindexRequest(after=after, limit=REINDEX_STEP)
            answer = _ws_call(session, "recall_reindex", body=request.to_json())
            step, took, after, total, done = from_answer(answer, _reindex_step)
            drawers += step
            seconds += took
            if show:
                total = max(total, drawers, 1)
                filled = min(BAR_WIDTH, BAR_WIDTH * drawers // total)
                bar = "#" * filled + "." * (BAR_WIDTH - filled)
                sys.stderr.write(f"\r[{bar}] {drawers}/{total} drawers re-embedded")
                sys.stderr.flush()
            if done:
                break
    except KeyboardInterrupt:
        if show:
            sys.stderr.write("\n")
        raise Interrupted(
            f"{drawers} drawers re-embedded by then; the vectors in use stay as they were "
            "until a reindex runs to its end",
            {"drawers": drawers},
        ) from None
    if show:
        sys.stderr.write("\n")
    answer = {**answer, "drawers": drawers, "seconds": round(seconds, 3)}
    for key in ("next", "done", "total"):
        answer.pop(key, None)
    session.show(
        answer,
        lambda a: (
            f"reindex complete: {a['vectors']} vectors for {a['drawers']} drawers, "
            f"{a['embedder']['name']} ({a['embedder']['dimension']}-d), {a['seconds']} s"
        ),
    )
    return 0
