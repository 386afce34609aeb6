"""memctl entry point: the argument parser, and turning failures into one line and an exit code.

Argument parsing only; the work is in `commands.py`. Exit codes: 0 ok, 1 a 4xx answer
(or a lint/check result, as memdsl's CLI), 2 usage, unreachable daemon or 5xx.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Callable, Sequence

from memctl import __version__, commands, render
from memctl.client import MemhubClient, ServerError
from memctl.config import ConfigError, resolve_settings
from memctl.transport import DEFAULT_TIMEOUT, MAX_TIMEOUT, DaemonUnreachable, InvalidTarget
from memhub_protocol.commandline import (
    CommandParser,
    UsageError,
    add_completion_command,
    exit_quietly_on_closed_stdout,
    run_command_line,
)
from memhub_protocol.models import MAX_BUDGET, MAX_QUERY_LIMIT, MIN_BUDGET_BYTES
from memhub_protocol.routes import MAX_LIST_LIMIT, MAX_PROPOSALS_LIMIT
from memhub_protocol.scopes import parse_scopes

Handler = Callable[[commands.Session, argparse.Namespace], int]
INTERRUPTED = "interrupted"  # the error envelope's code for Ctrl-C
REVIEW_STATUSES = ("pending", "approved", "rejected", "all")
QUERY_LIMIT_MAX = MAX_QUERY_LIMIT  # the most hits the daemon's QueryRequest takes
non_empty = commands.non_empty


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text}")
    if value > MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_TIMEOUT:g} seconds (a day), not {text}"
        )
    return value


def _scopes(text: str) -> tuple[str, ...]:
    try:
        scopes = parse_scopes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    if not scopes:
        raise argparse.ArgumentTypeError("name at least one scope")
    return scopes


def _names(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _workspace_list(text: str) -> tuple[str, ...]:
    """`--workspaces`: an empty list (`""` from an unset variable, or `,`) is refused,
    not widened to every workspace; `*` is said when all are meant."""
    names = _names(text)
    if not names:
        raise argparse.ArgumentTypeError("name at least one workspace, or * for all")
    return names


def _global_options(*, with_json: bool = True) -> argparse.ArgumentParser:
    """Options accepted before and after the command. SUPPRESS keeps a value given
    before the command from being reset by the command's own parser. `with_json`:
    False for a command that defines --json itself (`completion`)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("connection and output")
    keep = argparse.SUPPRESS
    # type=non_empty: a blank value (-w "$UNSET") is a usage error, never a fall back to
    # the environment, client.toml or the only workspace, which may not be the one meant.
    group.add_argument(
        "--url",
        type=non_empty,
        default=keep,
        help="daemon address: http://HOST:PORT, https://HOST or unix:///PATH.sock "
        "(env MEMHUB_URL; default: the local socket)",
    )
    group.add_argument(
        "--token", type=non_empty, default=keep, help="bearer token (env MEMHUB_TOKEN)"
    )
    group.add_argument(
        "-w",
        "--workspace",
        type=non_empty,
        default=keep,
        metavar="NAME",
        help="workspace (env MEMHUB_WORKSPACE)",
    )
    if with_json:
        group.add_argument("--json", action="store_true", default=keep, help="JSON output")
    group.add_argument(
        "--timeout",
        type=_positive_float,
        default=keep,
        metavar="SECONDS",
        help=f"request timeout (default {DEFAULT_TIMEOUT:g}, unless the command says otherwise; "
        f"at most {MAX_TIMEOUT:g})",
    )
    return common


def _command(
    sub: argparse._SubParsersAction,
    common: argparse.ArgumentParser,
    name: str,
    handler: Handler | None,
    summary: str,
) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, parents=[common], help=summary, description=summary)
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


Sub = argparse._SubParsersAction
Common = argparse.ArgumentParser


def _status(sub: Sub, common: Common) -> None:
    _command(sub, common, "status", commands.cmd_status, "daemon and workspace status")


def _workspaces(sub: Sub, common: Common) -> None:
    p = _command(
        sub, common, "workspaces", commands.cmd_workspaces, "list, add or remove workspaces"
    )
    actions = p.add_subparsers(dest="workspaces_action", metavar="ACTION")
    a = _command(actions, common, "add", commands.cmd_workspace_add, "serve a directory")
    a.add_argument("name", type=non_empty, help="workspace name (letters, digits, '-', '_', '.')")
    a.add_argument("path", help="directory on the daemon's machine")
    r = _command(actions, common, "remove", commands.cmd_workspace_remove, "stop serving one")
    r.add_argument("name", type=non_empty, help="workspace name")


def _events(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "events", commands.cmd_events, "follow the daemon's events")
    p.add_argument("--count", type=_positive_int, metavar="N", help="stop after N events")


def _token(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "token", None, "manage tokens (admin)")
    actions = p.add_subparsers(dest="token_action", metavar="ACTION", required=True)
    c = _command(actions, common, "create", commands.cmd_token_create, "create a token")
    c.add_argument("name", type=non_empty, help="identity recorded on every write")
    c.add_argument("--scopes", type=_scopes, required=True, help="comma-separated scopes, or 'all'")
    c.add_argument(
        "--workspaces", type=_workspace_list, help="comma-separated names (default: all)"
    )
    c.add_argument("--roles", type=_names, help="comma-separated access-policy roles")
    c.add_argument(
        "--expires",
        type=commands.expiry_value,
        help="ISO date/time or a duration such as 30d",
    )
    _command(actions, common, "list", commands.cmd_token_list, "list tokens (no secrets)")
    r = _command(actions, common, "revoke", commands.cmd_token_revoke, "revoke a token")
    r.add_argument("name", type=non_empty, help="token name")


def _map(sub: Sub, common: Common) -> None:
    _command(sub, common, "map", commands.cmd_map, "compact per-module index")


def _types(sub: Sub, common: Common) -> None:
    _command(sub, common, "types", commands.cmd_types, "loaded memory types")


def _list(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "list", commands.cmd_list, "list declarations")
    p.add_argument("--type", help="only this memory type")
    p.add_argument("--subject", help="only this subject")
    p.add_argument("--all", action="store_true", help="include inactive declarations")
    p.add_argument(
        "--limit",
        type=commands.whole_number(1, MAX_LIST_LIMIT),
        metavar="N",
        help=f"at most N declarations (at most {MAX_LIST_LIMIT})",
    )


def _query(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "query", commands.cmd_query, "query memory into an EvidencePack")
    p.add_argument("query_text", nargs="?", metavar="TEXT", help="query text (or -q)")
    p.add_argument("-q", "--query", help="query text")
    p.add_argument(
        "--type",
        "--kind",
        action="append",
        dest="types",
        metavar="TYPE",
        help="restrict to a memory type (repeatable)",
    )
    p.add_argument("--subject", help="restrict to a subject symbol")
    p.add_argument(
        "--limit",
        type=commands.whole_number(1, QUERY_LIMIT_MAX),
        default=8,
        help=f"maximum hits (default 8, at most {QUERY_LIMIT_MAX})",
    )
    p.add_argument(
        "--max-bytes",
        type=commands.whole_number(MIN_BUDGET_BYTES, MAX_BUDGET),
        metavar="N",
        help=f"cut MUST to fit N bytes of JSON (at least {MIN_BUDGET_BYTES})",
    )
    p.add_argument(
        "--max-must",
        type=commands.whole_number(0, MAX_BUDGET),
        metavar="N",
        help="show at most N MUST rules",
    )


def _explain(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "explain", commands.cmd_explain, "one declaration with relations")
    p.add_argument("id", type=non_empty, help="declaration id (type:name) or bare name")


def _check(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "check", commands.cmd_check, "preflight a draft against MUST rules")
    p.add_argument("-t", "--task", required=True, help="task or action being attempted")
    candidate = p.add_mutually_exclusive_group(required=True)
    candidate.add_argument("-c", "--candidate", help="candidate action, answer or draft text")
    candidate.add_argument("--candidate-file", help="read the candidate from a UTF-8 file")
    p.add_argument("--scope", help="explicit constraint scope")
    p.add_argument("--subject", help="explicit subject symbol")
    p.add_argument(
        "--exception",
        action="append",
        default=[],
        dest="exceptions",
        metavar="NAME",
        help="assert an allowed exception (repeatable)",
    )


def _lint(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "lint", commands.cmd_lint, "lint diagnostics")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")


def _files(sub: Sub, common: Common) -> None:
    _command(sub, common, "files", commands.cmd_files, "source files of the workspace")


def _cat(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "cat", commands.cmd_cat, "print one source file")
    p.add_argument(
        "file_id",
        type=non_empty,
        metavar="FILE_ID",
        help="file id or path, as `memctl files` shows",
    )


def _propose(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "propose", commands.cmd_propose, "propose one declaration for review")
    p.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="a .mem text; '-' or none: stdin"
    )
    p.add_argument("--reason", default="", help="why this belongs in memory")
    p.add_argument("--supersedes", metavar="ID", help="the type:name id this one corrects")
    p.add_argument(
        "--idempotency-key",
        type=non_empty,
        metavar="KEY",
        help="sent again with the same proposal (a retry after a timeout), answers the "
        "proposal already made instead of making a second one (kept a day by the daemon)",
    )
    recall = p.add_argument_group("from recall (instead of FILE)")
    recall.add_argument(
        "--from-drawer", type=non_empty, metavar="ID", help="quote this drawer as evidence"
    )
    recall.add_argument("--type", dest="decl_type", metavar="T", help="memory type")
    recall.add_argument("--id", dest="decl_name", metavar="NAME", help="declaration name")
    recall.add_argument(
        "--field",
        action="append",
        default=[],
        dest="fields",
        metavar="K=V",
        help="a field value (repeatable; a.b=v writes a block)",
    )
    recall.add_argument("--quote", help="the evidence span: an exact substring of the drawer")


def _review(sub: Sub, common: Common) -> None:
    p = _command(sub, common, "review", None, "list, show, approve or reject proposals")
    actions = p.add_subparsers(dest="review_action", metavar="ACTION", required=True)
    a = _command(actions, common, "list", commands.cmd_review_list, "proposals by status")
    a.add_argument("--status", choices=REVIEW_STATUSES, default="pending", help="default pending")
    a.add_argument(
        "--limit",
        type=commands.whole_number(1, MAX_PROPOSALS_LIMIT),
        metavar="N",
        help=f"at most N proposals (at most {MAX_PROPOSALS_LIMIT}; default all)",
    )
    a.add_argument(
        "--offset",
        type=commands.whole_number(0),
        metavar="N",
        help="skip the first N (the oldest come first)",
    )
    a = _command(actions, common, "show", commands.cmd_review_show, "one proposal in full")
    a.add_argument("id", type=non_empty, help="proposal id (p-YYYYMMDD-HHMMSS-xxxxxx)")
    a.add_argument("--into", metavar="FILE", help="also show the diff approving into FILE makes")
    a = _command(actions, common, "diff", commands.cmd_review_diff, "what approving changes")
    a.add_argument("id", type=non_empty, help="proposal id")
    a.add_argument("--into", metavar="FILE", required=True, help=".mem file, relative to the root")
    a = _command(actions, common, "approve", commands.cmd_review_approve, "approve into a file")
    a.add_argument("id", type=non_empty, help="proposal id")
    a.add_argument(
        "--into",
        metavar="FILE",
        help=".mem file, relative to the root (required; without it memctl suggests one)",
    )
    a = _command(actions, common, "reject", commands.cmd_review_reject, "reject a proposal")
    a.add_argument("id", type=non_empty, help="proposal id")
    a.add_argument("--reason", required=True, help="why (recorded in the audit log)")


# The commands defined here, in the order help lists them: the daemon's and one
# workspace's (before `mcp`), then review's (after it).
_FIRST = {
    "status": _status,
    "workspaces": _workspaces,
    "events": _events,
    "token": _token,
    "map": _map,
    "types": _types,
    "list": _list,
    "query": _query,
    "explain": _explain,
    "check": _check,
    "lint": _lint,
    "files": _files,
    "cat": _cat,
}
_AFTER_MCP = {"propose": _propose, "review": _review}
HERE = {**_FIRST, **_AFTER_MCP}


def build_parser(*, only: str | None = None) -> argparse.ArgumentParser:
    """memctl's parser; `only`: just that command of this module (a name in HERE), and
    nothing of the other command modules: building every command's parser took a
    quarter of a short command's time."""
    common = _global_options()
    parser = CommandParser(
        prog="memctl",
        parents=[common],
        description="Client for the memhub daemon (memhubd). "
        "Offline commands on a directory are available as `memhubd lint|types|...`.",
    )
    parser.add_argument("--version", action="version", version=f"memctl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if only is not None:
        HERE[only](sub, common)
        return parser
    from memctl.cowork import add_cowork_commands
    from memctl.diary import add_diary_commands
    from memctl.graph import add_graph_commands
    from memctl.hooks import add_hooks_commands
    from memctl.mcp_bridge import add_mcp_command
    from memctl.recall import add_recall_commands

    for add in _FIRST.values():
        add(sub, common)
    add_mcp_command(sub, [common])
    for add in _AFTER_MCP.values():
        add(sub, common)
    add_recall_commands(sub, common)
    add_cowork_commands(sub, common)
    add_graph_commands(sub, common)
    add_diary_commands(sub, common)
    add_hooks_commands(sub, common)
    # The connection options too, accepted after the command as by every other (and
    # unused); it defines --json itself.
    add_completion_command(sub, build_parser, parents=[_global_options(with_json=False)])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    words = _command_words(arguments)
    word = words[0] if words else None
    # help, --version, or a command of another module: the whole parser
    parser = build_parser(only=word) if word in HERE else build_parser()
    if tuple(words) in HOOK_COMMANDS:
        return _run_hook_command(parser, arguments, " ".join(words))
    try:
        return run_command_line(parser, argv, run)
    except UsageError as error:
        # Told before --json could be read from the parsed arguments: looked for as a word.
        if _wants_json(arguments):
            _print_envelope(render.USAGE, error.message)
        raise


def _wants_json(arguments: Sequence[str]) -> bool:
    words = list(arguments)
    return "--json" in (words[: words.index("--")] if "--" in words else words)


def _print_envelope(code: str, message: str, detail: dict[str, object] | None = None) -> None:
    """The error envelope on stdout, outside the guard of a lost stdout: a stdout that
    cannot take it changes nothing of the failure already told on stderr."""
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: stdout closed
        print(render.error_envelope(code, message, detail), flush=True)


# Commands that agents run as hooks: Claude Code blocks the user's prompt when a
# UserPromptSubmit hook exits 2, argparse's exit code for a usage error.
HOOK_COMMANDS = frozenset({("cowork", "drain"), ("hooks", "session-end")})

# Global options that take a value: the word after one is not the command.
_VALUE_OPTIONS = frozenset({"--url", "--token", "-w", "--workspace", "--timeout"})


def _command_words(arguments: Sequence[str]) -> list[str]:
    """The command and its action (`cowork drain`): the first two words that are
    neither an option nor a global option's value."""
    words: list[str] = []
    skip = False
    for word in arguments:
        if skip:
            skip = False
        elif word in _VALUE_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            words.append(word)
            if len(words) == 2:
                break
    return words


def _run_hook_command(parser: argparse.ArgumentParser, arguments: list[str], name: str) -> int:
    """Run a hook command whose usage error exits 0 with one line on stderr, as every
    other failure of these commands does; --help and --version still exit as usual."""
    told = io.StringIO()
    try:
        with contextlib.redirect_stderr(told):
            args = parser.parse_args(arguments)
    except SystemExit as stop:
        if not stop.code:
            raise
        reason = stop.message if isinstance(stop, UsageError) else "usage error"
        print(f"memctl {name}: {reason} (the hook does nothing)", file=sys.stderr)
        if _wants_json(arguments):
            _print_envelope(render.USAGE, reason)
        return 0
    return exit_quietly_on_closed_stdout(lambda: int(args.local_handler(args)), "memctl")


def run(args: argparse.Namespace) -> int:
    as_json = bool(getattr(args, "json", False))
    try:
        return _run(args, as_json)
    except KeyboardInterrupt as interrupt:
        # What the command had done by then, when it knows (commands.Interrupted).
        done = getattr(interrupt, "done", "")
        message = "interrupted" + (f"; {done}" if done else "")
        return _fail(message, 130, as_json, INTERRUPTED, getattr(interrupt, "detail", None))


def _run(args: argparse.Namespace, as_json: bool) -> int:
    try:
        settings = resolve_settings(
            url=getattr(args, "url", None),
            token=getattr(args, "token", None),
            workspace=getattr(args, "workspace", None),
        )
        client = MemhubClient.connect(
            settings.url, token=settings.token, timeout=getattr(args, "timeout", DEFAULT_TIMEOUT)
        )
    except ConfigError as error:
        return _fail(str(error), 2, as_json, render.CONFIG)
    except InvalidTarget as error:
        return _fail(str(error), 2, as_json, render.USAGE)
    with client:
        session = commands.Session(client, settings, as_json=as_json)
        try:
            return int(args.handler(session, args))
        except DaemonUnreachable as error:
            if as_json:
                code = render.TIMEOUT if error.timed_out else render.UNREACHABLE
                detail = {"url": error.target.url, "reason": error.reason}
                print(render.error_envelope(code, error.line.removeprefix("memctl: "), detail))
            print(error.line, file=sys.stderr)
            return 2
        except ServerError as error:
            # `workspaces add|remove` name the workspace as an argument, not with -w.
            choose = getattr(args, "command", None) != "workspaces"
            return _server_error(
                error, as_json, token_given=settings.token is not None, choose=choose
            )
        except commands.CommandFailure as failure:
            return _fail(failure.message, failure.exit_code, as_json, failure.code, failure.detail)
        except UnicodeEncodeError as error:
            # An argument holding bytes that are not UTF-8 (Python keeps them as lone
            # surrogates) cannot be sent: said in one line, not a traceback.
            if "surrogates not allowed" not in str(error):
                raise
            return _fail("an argument is not valid UTF-8 text", 2, as_json, render.USAGE)


def _server_error(
    error: ServerError, as_json: bool, *, token_given: bool, choose: bool = True
) -> int:
    """One line on stderr (the daemon's message kept on it: an argument it quotes may
    hold a line break), then a refused proposal's further issues, one per line."""
    if as_json:
        told = error.message + "".join(f"\n  {issue}" for issue in error.issues)
        print(render.error_envelope(error.code.value, told, error.detail))
    issues = [render.escaped(issue) for issue in error.issues]
    line = f"memctl: {error.code.value}: {render.escaped(error.message)}"
    if error.status == 401 and not token_given:
        line += " (pass --token or set MEMHUB_TOKEN)"
    elif error.status == 401:
        line += (
            " (the daemon does not know this token: revoked, expired, created in another"
            " state directory, or made under a name memhub now reserves; see `memhubd token"
            " list` with the daemon's --state-dir)"
        )
    line += render.available_workspaces(error.detail, choose=choose)
    print(line + "".join(f"\n  {issue}" for issue in issues), file=sys.stderr)
    return 1 if 400 <= error.status < 500 else 2


def _fail(
    message: str,
    exit_code: int,
    as_json: bool = False,
    code: str = render.LOCAL,
    detail: dict[str, object] | None = None,
) -> int:
    """One line on stderr and `exit_code`; with --json, the error envelope on stdout too."""
    if as_json:
        print(render.error_envelope(code, message, detail))
    print(f"memctl: {render.escaped(message)}", file=sys.stderr)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
