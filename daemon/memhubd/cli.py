"""`memhubd` command line: argument parsing and dispatch only.

Offline commands (`offline.py`) take memdsl 0.5.1's arguments and give its
output and exit codes; every command has `--help`, and `--json` where it prints data.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from memhub_protocol.commandline import (
    CommandParser,
    UsageError,
    add_completion_command,
    run_command_line,
    whole_number,
)
from memhubd import __version__, daemon, offline


def _date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a YYYY-MM-DD date: {text!r}") from error


def _paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".mem files or directories")


def _json(parser: argparse.ArgumentParser, what: str = "JSON output") -> None:
    parser.add_argument("--json", action="store_true", help=what)


def _add_offline_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lint", help="lint .mem sources (memdsl's 22 diagnostic codes)")
    _paths(p)
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    _json(p, "diagnostics as JSON (memhub.lint.v1), with columns")
    p.add_argument("--today", type=_date, help="date for staleness checks (default: today)")
    p.set_defaults(handler=offline.cmd_lint)

    p = sub.add_parser("types", help="list the loaded standard and domain memory types")
    _paths(p)
    _json(p, "JSON output (memdsl.types.v1)")
    p.set_defaults(handler=offline.cmd_types)

    p = sub.add_parser("query", help="query memory into an EvidencePack")
    _paths(p)
    p.add_argument("-q", "--query", required=True, help="query text")
    p.add_argument(
        "--type",
        "--kind",
        action="append",
        dest="kinds",
        metavar="TYPE",
        help="restrict to a memory type (repeatable; --kind is the legacy name)",
    )
    p.add_argument("--subject", help="restrict to a subject symbol")
    p.add_argument("--limit", type=int, default=8, help="maximum hits (default 8)")
    _json(p, "EvidencePack JSON (memdsl.evidence_pack.v1)")
    p.set_defaults(handler=offline.cmd_query)

    p = sub.add_parser("map", help="compact per-module index of a workspace")
    _paths(p)
    _json(p, "JSON output (memdsl.map.v1)")
    p.set_defaults(handler=offline.cmd_map)

    p = sub.add_parser("explain", help="show one declaration with its relations")
    _paths(p)
    p.add_argument("id", help="declaration id (type:name) or bare name")
    _json(p, "the declaration as JSON")
    p.set_defaults(handler=offline.cmd_explain)

    p = sub.add_parser("check", help="preflight a draft or action against MUST rules")
    _paths(p)
    p.add_argument("-t", "--task", required=True, help="task or action being attempted")
    candidate = p.add_mutually_exclusive_group(required=True)
    candidate.add_argument("-c", "--candidate", help="candidate action, answer or draft text")
    candidate.add_argument("--candidate-file", help="read the candidate from a UTF-8 file")
    p.add_argument("--subject", help="explicit subject symbol")
    p.add_argument("--scope", help="explicit constraint scope")
    p.add_argument(
        "--exception",
        action="append",
        default=[],
        dest="exceptions",
        metavar="NAME",
        help="assert an allowed exception (repeatable)",
    )
    _json(p, "CompliancePack JSON")
    p.set_defaults(handler=offline.cmd_check)

    p = sub.add_parser("eval", help="run reproducible evaluation suites")
    eval_sub = p.add_subparsers(dest="eval_kind", required=True, metavar="SUITE")
    e = eval_sub.add_parser("compliance", help="run constraint-compliance benchmark cases")
    _paths(e)
    e.add_argument("--cases", required=True, help="JSONL compliance case file")
    _json(e, "JSON report (memdsl.compliance.benchmark.v1)")
    e.set_defaults(handler=offline.cmd_eval_compliance)


def _add_daemon_commands(sub: argparse._SubParsersAction) -> None:
    from memhubd.auth.commands import add_token_commands
    from memhubd.runtime.config import add_serve_arguments

    p = sub.add_parser("serve", help="run the daemon (JSON API on TCP and a Unix socket)")
    add_serve_arguments(p)
    p.set_defaults(handler=daemon.cmd_serve)

    p = sub.add_parser(
        "run-examples", help="run the daemon on the bundled example workspaces (make run)"
    )
    add_serve_arguments(p)
    p.add_argument(
        "--reset",
        action="store_true",
        help="replace the copies in the state dir with fresh ones (your edits are lost)",
    )
    p.set_defaults(handler=daemon.cmd_run_examples)

    add_token_commands(sub)
    _add_recall_bench_command(sub)

    p = sub.add_parser(
        "backup", help="copy the state directory consistently, the daemon running or not"
    )
    p.add_argument("destination", type=Path, help="a new (or empty) directory to copy into")
    p.add_argument(
        "--state-dir",
        type=Path,
        help="state directory (default $MEMHUB_STATE_DIR or ~/.local/share/memhub)",
    )
    _json(p, "the report as JSON")
    p.set_defaults(handler=_backup)


def _add_recall_bench_command(sub: argparse._SubParsersAction) -> None:
    # Declared here, not beside the benchmark: importing memhubd.recall to build the parser
    # cost every command, `serve` included, about a tenth of a second.
    p = sub.add_parser("bench", help="retrieval benchmarks of recall")
    kinds = p.add_subparsers(dest="bench_kind", required=True, metavar="BENCHMARK")
    b = kinds.add_parser("longmemeval", help="LongMemEval's JSON format (mempal's modes)")
    b.add_argument("file", type=Path, help="LongMemEval JSON (e.g. the s_cleaned file)")
    b.add_argument("--mode", choices=("raw", "aaak", "rooms"), default="raw")
    b.add_argument("--granularity", choices=("session", "turn"), default="session")
    b.add_argument(
        "--limit", type=_count, default=0, metavar="N", help="at most N questions (0 = all)"
    )
    b.add_argument("--skip", type=_count, default=0, metavar="N", help="skip the first N questions")
    b.add_argument(
        "--top-k",
        type=_at_least_one,
        default=50,
        metavar="N",
        help="hits searched per question (default 50)",
    )
    b.add_argument("--out", type=Path, metavar="FILE", help="one JSONL line per question")
    b.add_argument("--no-vectors", action="store_true", help="BM25 only")
    b.add_argument("--json", action="store_true", help="print the report as JSON")
    b.set_defaults(handler=_longmemeval)


def _count(text: str) -> int:
    return whole_number(0)(text)


def _at_least_one(text: str) -> int:
    return whole_number(1)(text)


def _longmemeval(args: argparse.Namespace) -> int:
    from memhubd.recall.longmemeval import cmd_longmemeval

    return cmd_longmemeval(args)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="memhubd",
        description="memhub: shared, governed memory for a team of agents. "
        "Offline commands work on a directory of .mem files.",
    )
    parser.add_argument("--version", action="version", version=f"memhubd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_offline_commands(sub)
    _add_daemon_commands(sub)
    add_completion_command(sub, build_parser)
    return parser


# Thread-count variables BLAS libraries read once, when numpy is first imported.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded_blas() -> None:
    """Default every BLAS library to one thread, unless the operator chose otherwise.

    The daemon runs many small matrix products (a query against a workspace's vectors)
    from several request threads at once; a threaded BLAS then oversubscribes the
    cores and was measured 30-100x slower under load. It must run before numpy is
    imported, so it is the first thing `main` does (`memhubd serve`, the container
    and the systemd unit all come through here). OPENBLAS_CORETYPE is never touched.
    """
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")


def main(argv: Sequence[str] | None = None) -> int:
    single_threaded_blas()
    _log_to_stderr()
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        return run_command_line(build_parser(), arguments, _run)
    except UsageError as error:
        # Told before --json could be read from the parsed arguments: looked for as a
        # word. memdsl's own commands print nothing on stdout for a failure, as memdsl.
        words = arguments[: arguments.index("--")] if "--" in arguments else arguments
        command = next((w for w in words if not w.startswith("-")), "")
        if "--json" in words and command not in offline.MEMDSL_JSON_COMMANDS:
            with contextlib.suppress(OSError, AttributeError):  # stdout closed or full
                offline.print_json(
                    {"error": {"code": "usage", "message": error.message, "detail": {}}}
                )
        raise


def _log_to_stderr() -> None:
    """Log lines of the one-shot commands (a warning about the state dir's mode, say)
    go to stderr: their stdout is for the answer, often captured (`$(memhubd token
    create …)`). `serve` configures logging fully when it starts."""
    import structlog

    if structlog.is_configured():  # a daemon in this process set its logging up already
        return
    # sys.stderr as it is at each line, as structlog's default reads sys.stdout.
    structlog.configure(logger_factory=lambda *_args: structlog.PrintLogger(sys.stderr))


@contextlib.contextmanager
def _interrupting(stopped: list[int]) -> Iterator[None]:
    """SIGTERM and SIGHUP interrupt the block as Ctrl-C does (their number goes to
    `stopped`), so that what it was making is cleaned up instead of left behind."""

    def interrupt(signum: int, _frame: object) -> None:
        stopped.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals
        return
    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _backup(args: argparse.Namespace) -> int:
    from memhub_protocol import paths
    from memhubd.runtime.backup import BackupError, Copied, back_up

    def shown(copied: Copied) -> None:
        print(f"  {copied.path} ({copied.kind}, {copied.bytes:,} bytes)", file=sys.stderr)

    state_dir = args.state_dir or Path(paths.default_state_dir())
    progress = shown if sys.stderr.isatty() and not args.json else None
    stopped: list[int] = []
    try:
        with _interrupting(stopped):
            report = back_up(state_dir, args.destination, progress)
    except (BackupError, OSError, KeyboardInterrupt) as error:
        message = str(error) if isinstance(error, BackupError) else f"cannot copy: {error}"
        if isinstance(error, KeyboardInterrupt):
            message = "interrupted"
        # What became of the partial copy, when the failure is not the backup's own.
        message = "; ".join([message, *getattr(error, "__notes__", [])])
        if args.json:
            offline.print_json({"error": {"code": "backup", "message": message, "detail": {}}})
        print(f"memhubd backup: error: {message}", file=sys.stderr)
        if isinstance(error, KeyboardInterrupt):
            return 128 + (stopped[0] if stopped else signal.SIGINT)
        return 2
    if args.json:
        offline.print_json(report.as_dict())
        return 0
    databases = sum(c.kind == "sqlite" for c in report.copied)
    print(
        f"backed up {report.source} to {report.destination}: {databases} database(s) and "
        f"{len(report.copied) - databases} other file(s), {report.total_bytes:,} bytes"
    )
    for path, why in report.skipped:
        print(f"left out {path}: {why}")
    return 0


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.handler(args))
    except offline.CommandFailure as failure:
        command = str(getattr(args, "command", ""))
        return offline.report_failure(failure, getattr(args, "json", False), command)
    except KeyboardInterrupt:
        # As `backup` says it: one line, and the envelope where --json prints one.
        command = str(getattr(args, "command", ""))
        if getattr(args, "json", False) and command not in offline.MEMDSL_JSON_COMMANDS:
            with contextlib.suppress(OSError, ValueError):  # stdout closed or full
                offline.print_json(
                    {"error": {"code": "interrupted", "message": "interrupted", "detail": {}}}
                )
        with contextlib.suppress(OSError, ValueError):
            print(f"memhubd {command}: error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
