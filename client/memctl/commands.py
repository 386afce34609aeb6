"""One handler per memctl command: call the client, render, pick the exit code.

Handlers take the parsed arguments and a Session; they must not parse arguments
or build URLs (that is `cli.py` and `client.py`).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Callable

from memctl import render
from memctl.answers import an_object, from_answer, rendered
from memctl.client import MemhubClient, ServerError, UnexpectedAnswer
from memctl.config import Settings
from memhub_protocol import CheckRequest, ErrorCode, QueryRequest, TokenCreateRequest
from memhub_protocol.commandline import whole_number as whole_number
from memhub_protocol.models import ProposeRequest

TYPE_CHECKING = False  # typing itself is not imported: every command would pay for it
if TYPE_CHECKING:
    from typing import Any, BinaryIO, TextIO

STDIN_CLOSED = "standard input is closed"
# The most a file or stdin given to a command is read: far above what the daemon takes
# in one request (1 MiB by default), and a bound on what /dev/zero or `yes |` can cost.
MAX_INPUT_BYTES = 16 * 1024 * 1024
# The most characters written to stdout at once (see Session.write).
OUTPUT_CHUNK = 16 * 1024

# The event the daemon ends a stream with (its `reason` says why).
CLOSED = "closed"

# memdsl's check exit codes.
VERDICT_EXIT = {"allow": 0, "block": 1, "needs_review": 2}


class CommandFailure(Exception):
    """A command cannot go on for a reason on this side (usage, local file): one line, exit 2;
    with --json, also the error envelope with `code` (render.LOCAL, render.USAGE)."""

    def __init__(
        self,
        message: str,
        exit_code: int = 2,
        *,
        code: str = render.LOCAL,
        detail: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code
        self.detail = detail or {}


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with what the command had done by then: `done` ends its one line, `detail`
    goes in the error envelope's detail with --json."""

    def __init__(self, done: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(done)
        self.done = done
        self.detail = detail or {}


class Session:
    """What every handler needs: the client, the resolved settings, the output mode."""

    __slots__ = ("client", "settings", "as_json", "out", "_workspace")

    def __init__(
        self,
        client: MemhubClient,
        settings: Settings,
        as_json: bool = False,
        out: TextIO | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.as_json = as_json
        self.out = out if out is not None else sys.stdout
        self._workspace: str | None = None

    def emit(self, text: str) -> None:
        self.write(text + "\n")

    def write(self, text: str) -> None:
        """`text` on the output, in pieces of at most OUTPUT_CHUNK characters, each
        flushed: one large write that a reader gone away cuts short returns a short
        count and no error, so the rest was dropped and the command exited 0. A piece
        after the cut fails with BrokenPipeError (exit 1, as documented)."""
        for start in range(0, len(text), OUTPUT_CHUNK):
            self.out.write(text[start : start + OUTPUT_CHUNK])
            self.out.flush()

    def emit_json(self, data: Any) -> None:
        self.emit(render.dump_json(data))

    def show(
        self,
        payload: Any,
        as_text: Callable[[Any], str],
        cleaned: Callable[[str], str] = render.clean,
    ) -> None:
        """The payload as JSON with --json, else as `as_text` renders it, cleaned of what
        would act on a terminal (the answers quote text agents wrote); memdsl's own text
        forms pass `render.terminal_safe`, which keeps every other character. Rendered
        with --json too: a payload the text cannot be made of is no answer either."""
        text = rendered(payload, as_text)
        self.emit(render.dump_json(payload) if self.as_json else cleaned(text))

    def workspace(self) -> str:
        """-w / MEMHUB_WORKSPACE / client.toml, else the caller's only workspace."""
        if self._workspace is None:
            self._workspace = self.settings.workspace or self._only_workspace()
        return self._workspace

    def _only_workspace(self) -> str:
        try:
            listed = self.client.workspaces()
        except ServerError as error:
            if error.code != ErrorCode.FORBIDDEN:
                raise
            # Finding the caller's only workspace lists them, which read:summary allows.
            raise CommandFailure(
                "no workspace given, and this token may not list its workspaces (that "
                "needs read:summary); choose one with -w NAME or MEMHUB_WORKSPACE"
            ) from None
        names = workspace_names(listed)
        if len(names) == 1:
            return names[0]
        if not names:
            raise CommandFailure("the daemon serves no workspace this caller may use")
        raise CommandFailure(
            f"several workspaces ({', '.join(names)}); choose one with -w NAME or MEMHUB_WORKSPACE"
        )


def add_command(
    parent: argparse._SubParsersAction,
    name: str,
    handler: Any,
    summary: str,
    *,
    common: argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """A subcommand with the shared options, its summary as help and description."""
    parser = parent.add_parser(name, parents=[common], help=summary, description=summary)
    parser.set_defaults(handler=handler)
    return parser


def non_empty(text: str) -> str:
    """An id or name argument: an empty or blank one is a usage error here, not a
    request for a route that does not exist."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty" if not text else "must not be blank")
    return text


def expiry_value(text: str) -> str:
    """`token create --expires`: a duration or an ISO date/date-time, checked here as
    `memhubd token create` checks it, so that a value of another form is a usage error
    naming the option rather than the daemon's refusal. Sent as written."""
    from memhub_protocol.times import check_expiry_form

    try:
        return check_expiry_form(non_empty(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def time_value(text: str) -> str:
    """A time option's value (`--since`, `--as-of`, …): epoch seconds or an ISO 8601
    date/time, checked here as the daemon checks it, so that a bad one is a usage error
    naming the option whichever command took it. Sent as written."""
    from memhub_protocol.recall import parse_time  # only the commands with times pay

    try:
        parse_time(text, "time")
    except Exception as error:  # memhub_protocol's ProtocolError: the daemon's own words
        reason = str(getattr(error, "message", error)).removeprefix("'time' ")
        told = reason if reason.startswith("'") else f"{reason}, not {text!r}"
        raise argparse.ArgumentTypeError(told) from None
    return text


def fraction(text: str) -> float:
    """A number from 0 to 1 (`--confidence`); nan and infinities are refused."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, not {text}")
    return value


def workspace_names(payload: Any) -> list[str]:
    items = payload.get("workspaces", []) if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        return []
    names = [item.get("name") if isinstance(item, dict) else item for item in items]
    return [name for name in names if isinstance(name, str)]


# -- daemon --------------------------------------------------------------------------------


def cmd_status(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.status()
    session.show(payload, render.render_status)
    return 0


def cmd_workspaces(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.workspaces()
    session.show(payload, render.render_workspaces)
    return 0


def cmd_workspace_add(session: Session, args: argparse.Namespace) -> int:
    # The daemon resolves paths on its own machine; a relative path means "from here".
    path = os.path.abspath(os.path.expanduser(args.path))
    payload = session.client.workspace_add(args.name, path)
    session.show(payload, lambda _: f"added workspace {args.name} ({path})")
    return 0


def cmd_workspace_remove(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.workspace_remove(args.name)
    session.show(payload, lambda _: f"removed workspace {args.name} (its files are untouched)")
    return 0


def cmd_events(session: Session, args: argparse.Namespace) -> int:
    """Events until --count N of them; a stream that ends first (the daemon closed it,
    or the connection ended) is a failure: one line on stderr and exit 1 when the token
    was revoked or expired, else 2 (the daemon is gone, as when it is unreachable)."""
    only = session.settings.workspace  # -w (or its setting): that workspace's events
    if only is not None:
        # Filtered here, not by the daemon: a name the token may not use (or a typo)
        # would wait for ever on events that never come. Refused as every command is.
        session.client._call("workspace", workspace=only)
    events = session.client.events()
    if only is not None:
        events = (
            (event, data)
            for event, data in events
            if not isinstance(data, dict) or data.get("workspace") in (None, only)
        )
    seen, closed = 0, None
    for event, data in events:
        if session.as_json:
            line = json.dumps({"event": event, "data": data}, ensure_ascii=False)
        else:
            line = render.clean(render.render_event(event, data))
        print(line, file=session.out, flush=True)
        if event == CLOSED:  # the daemon's last frame, not one of the N asked for
            closed = data.get("reason") if isinstance(data, dict) else None
            break
        seen += 1
        if args.count is not None and seen >= args.count:
            return 0
    reason = str(closed) if closed else "the connection ended"
    revoked = isinstance(closed, str) and ("revoked" in closed or "expired" in closed)
    code = "unauthorized" if revoked else render.UNREACHABLE
    if args.count is not None:
        reason += f" after {seen} of {args.count} events"
    raise CommandFailure(f"the event stream ended: {reason}", 1 if revoked else 2, code=code)


# -- one workspace -------------------------------------------------------------------------


def _text_or_json(session: Session, payload: Any) -> None:
    if session.as_json:  # memdsl's JSON documents are objects
        session.emit_json(from_answer(payload, an_object))
    else:
        session.write(render.text_body(render.terminal_safe(str(payload))))


def cmd_map(session: Session, args: argparse.Namespace) -> int:
    _text_or_json(session, session.client.map(session.workspace(), text=not session.as_json))
    return 0


def cmd_types(session: Session, args: argparse.Namespace) -> int:
    _text_or_json(session, session.client.types(session.workspace(), text=not session.as_json))
    return 0


def cmd_explain(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.explain(session.workspace(), args.id, text=not session.as_json)
    _text_or_json(session, payload)
    return 0


def cmd_query(session: Session, args: argparse.Namespace) -> int:
    if args.query and args.query_text:
        raise CommandFailure("give the query once: either -q TEXT or a positional TEXT")
    text = args.query or args.query_text
    if not text or not text.strip():
        raise CommandFailure("a query text is required (-q TEXT)")
    request = QueryRequest(
        query=text,
        types=tuple(args.types) if args.types else None,
        subject=args.subject,
        limit=args.limit,
        max_bytes=args.max_bytes,
        max_must=args.max_must,
    )
    payload = session.client.query(session.workspace(), request, text=not session.as_json)
    _text_or_json(session, payload)
    return 0


def _candidate_text(args: argparse.Namespace) -> str:
    if args.candidate_file is None:
        return str(args.candidate)
    return read_text_file(args.candidate_file, what="candidate")


def cmd_check(session: Session, args: argparse.Namespace) -> int:
    candidate = _candidate_text(args)
    if not args.task.strip() or not candidate.strip():
        raise CommandFailure("task and candidate must both be non-empty")
    request = CheckRequest(
        task=args.task,
        candidate=candidate,
        subject=args.subject,
        scope=args.scope,
        exceptions=tuple(args.exceptions),
    )
    payload = session.client.check(session.workspace(), request, text=not session.as_json)
    if session.as_json:
        from_answer(payload, an_object)
    # Read before anything is printed: an answer without a verdict is told alone.
    verdict = render.verdict_of(payload)
    if verdict not in VERDICT_EXIT:
        told = "no verdict" if verdict is None else f"an unknown verdict {verdict!r}"
        raise UnexpectedAnswer(f"{told} in a check's answer")
    _text_or_json(session, payload)
    return VERDICT_EXIT[verdict]


def cmd_lint(session: Session, args: argparse.Namespace) -> int:
    # JSON either way: the exit code needs the counts; render_lint gives memdsl's text.
    payload = session.client.lint(session.workspace())
    exit_code = from_answer(payload, lambda p: render.lint_exit_code(p, strict=args.strict))
    session.show(payload, render.render_lint, render.terminal_safe)
    return int(exit_code)


def cmd_list(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.list(
        session.workspace(),
        type=args.type,
        subject=args.subject,
        include_inactive=args.all,
        limit=args.limit,
    )
    session.show(payload, render.render_declarations)
    return 0


def cmd_files(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.files(session.workspace())
    session.show(payload, render.render_files)
    return 0


def cmd_cat(session: Session, args: argparse.Namespace) -> int:
    workspace = session.workspace()
    # The JSON form in both cases: it says whether the file loads (`stale`), which the
    # text alone cannot.
    try:
        payload = session.client.file(workspace, args.file_id, text=False)
    except ServerError as error:
        # Also accept the path shown by `memctl files` (or its base name).
        if error.code != ErrorCode.NOT_FOUND:
            raise
        found = _file_id_for_path(session, workspace, args.file_id)
        if found is None:
            raise
        payload = session.client.file(workspace, found, text=False)
    content = rendered(payload, lambda p: p["content"])
    if session.as_json:
        session.emit_json(payload)
        return 0
    session.write(content)  # byte for byte: no newline added
    if payload.get("stale"):
        print(
            f"memctl: warning: {payload.get('file_id', args.file_id)} does not load now; "
            "run `memctl lint` for why",
            file=sys.stderr,
        )
    return 0


def _file_id_for_path(session: Session, workspace: str, path: str) -> str | None:
    payload = session.client.files(workspace)
    rows = payload.get("files") if isinstance(payload, dict) else None
    listed = {
        str(row["path"]): str(row.get("file_id"))
        for row in (rows if isinstance(rows, list) else [])
        if isinstance(row, dict) and isinstance(row.get("path"), str)
    }
    if path in listed:
        return listed[path]
    by_name = [file_id for item, file_id in listed.items() if os.path.basename(item) == path]
    return by_name[0] if len(by_name) == 1 else None


# -- tokens --------------------------------------------------------------------------------


def cmd_token_create(session: Session, args: argparse.Namespace) -> int:
    request = TokenCreateRequest(
        name=args.name,
        scopes=args.scopes,
        # Every workspace only when --workspaces is not given: cli.py refuses an empty list.
        workspaces=("*",) if args.workspaces is None else args.workspaces,
        roles=args.roles or (),
        expires=args.expires,
    )
    payload = session.client.token_create(request)
    secret = render.token_secret(payload)
    try:
        if session.as_json or secret is None:
            session.show(payload, render.render_token_created)
            return 0
        # The secret alone on stdout, so that TOKEN=$(memctl token create ...) captures it.
        print(render.render_token_summary(payload), file=sys.stderr)
        print("memctl: store the token now; it is not shown again", file=sys.stderr)
        session.emit(secret)
    except OSError:  # BrokenPipeError among them: the exit code and its line follow
        # The token exists and works, but nobody has its secret: say so, and how to undo it.
        print(
            f"memctl: the token {args.name!r} was created but its secret could not be "
            f"written out; revoke it (memctl token revoke {args.name}) and create it again",
            file=sys.stderr,
        )
        raise
    return 0


def cmd_token_list(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.tokens()
    session.show(payload, render.render_tokens)
    return 0


def cmd_token_revoke(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.token_revoke(args.name)
    session.show(payload, lambda _: f"revoked token {args.name}")
    return 0


# -- review --------------------------------------------------------------------------------


def read_stdin() -> str:
    """Standard input as UTF-8 text, as files are read. The text stream's decoding keeps
    bytes it cannot decode as lone surrogates, which no request can carry: read as
    bytes, a non-UTF-8 input is one line and exit 2, not a traceback. A process started
    with stdin closed (`<&-`) has none: Python leaves `sys.stdin` None."""
    try:
        return read_stdin_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise CommandFailure(f"cannot read standard input: {error}") from None


def read_stdin_bytes(limit: int = MAX_INPUT_BYTES) -> bytes:
    """Standard input whole, as bytes; a closed or unreadable one, or one longer than
    `limit` bytes, is one line, exit 2."""
    if sys.stdin is None:
        raise CommandFailure(STDIN_CLOSED)
    try:
        return read_at_most(sys.stdin.buffer, limit, "standard input")
    except OSError as error:
        raise CommandFailure(f"cannot read standard input: {error}") from None


def read_at_most(handle: BinaryIO, limit: int, name: str) -> bytes:
    """What `handle` holds, if that is at most `limit` bytes; one byte more is enough to
    know it is not, so an endless input (/dev/zero, `yes |`) costs `limit` at most."""
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise CommandFailure(f"{name} is larger than {_size(limit)}: refused, not read whole")
    return data


def _size(count: int) -> str:
    return f"{count // 1024 // 1024} MiB" if count % (1024 * 1024) == 0 else f"{count} bytes"


def read_text_file(path: str, *, what: str | None = None) -> str:
    """The UTF-8 text of `path`, or of standard input for `-`, at most MAX_INPUT_BYTES
    of it; else one line (`cannot read WHAT: ...`, WHAT being `path` unless given), exit 2."""
    if path == "-":
        return read_stdin()
    try:
        with open(path, "rb") as handle:
            data = read_at_most(handle, MAX_INPUT_BYTES, path)
        # Decoded as a text-mode open() would: the same errors, newlines made \n.
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as error:
        raise CommandFailure(f"cannot read {what or path}: {error}") from error


def _with_issues(call: Callable[[], Any]) -> Any:
    """Run a review call; a refusal's further errors join its one-line message."""
    try:
        return call()
    except ServerError as error:
        issues = error.detail.get("errors")
        if isinstance(issues, list) and len(issues) > 1:
            error.issues = [render.render_issue(i) for i in issues[1:]]
        raise


# The options of a proposal from a recall drawer, and where argparse keeps them.
_FROM_DRAWER_ONLY = (
    ("--type", "decl_type"),
    ("--id", "decl_name"),
    ("--field", "fields"),
    ("--quote", "quote"),
)


def cmd_propose(session: Session, args: argparse.Namespace) -> int:
    if getattr(args, "from_drawer", None):
        return _propose_from_drawer(session, args)
    given = [name for name, key in _FROM_DRAWER_ONLY if getattr(args, key) not in (None, [])]
    if given:
        # Not ignored: the proposal would then be read from stdin, or wait on a terminal.
        raise CommandFailure(
            f"{', '.join(given)}: only with --from-drawer ID (a proposal from a recall drawer)",
            code=render.USAGE,
        )
    source = read_text_file(args.file)
    if not source.strip():
        raise CommandFailure("the proposal is empty: give one .mem declaration")
    request = ProposeRequest(
        source=source,
        reason=args.reason,
        client="memctl",
        supersedes=args.supersedes,
        idempotency_key=args.idempotency_key,
    )
    workspace = session.workspace()
    payload = _with_issues(lambda: session.client.propose(workspace, request))
    session.show(payload, render.render_proposed)
    return 0


def _propose_from_drawer(session: Session, args: argparse.Namespace) -> int:
    if not args.decl_type or not args.decl_name:
        raise CommandFailure("propose --from-drawer needs --type T and --id NAME")
    if args.file != "-" or args.supersedes:
        raise CommandFailure("propose --from-drawer takes no FILE and no --supersedes")
    fields: dict[str, str] = {}
    for pair in args.fields:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise CommandFailure(f"--field takes KEY=VALUE, not {pair!r}")
        fields[key.strip()] = value
    body = {"type": args.decl_type, "id": args.decl_name, "fields": fields, "reason": args.reason}
    if args.quote is not None:
        body["quote"] = args.quote
    workspace = session.workspace()
    payload = _with_issues(
        lambda: session.client._call(
            "recall_propose", workspace=workspace, drawer_id=args.from_drawer, body=body
        )
    )
    session.show(
        payload,
        lambda p: (
            render.render_proposed(p) + f"\nevidence from {p['drawer']['citation']}:\n"
            f'  "{p["drawer"]["quote"]}"'
        ),
    )
    return 0


def _drawer_beside(payload: Any) -> str:
    """The recall drawer a proposal quotes, shown after the proposal and its diff."""
    drawer = payload.get("recall_drawer") if isinstance(payload, dict) else None
    if not drawer:
        return ""
    head = f"\n\nrecall drawer {drawer['drawer_id']}"
    if drawer.get("withheld"):
        return head + ": withheld (you may not search recall)"
    if drawer.get("missing"):
        return head + ": not found (deleted since the proposal was made, or hidden from you)"
    found = "quote found verbatim" if drawer.get("quote_found") else "QUOTE NOT FOUND in it"
    content = "\n".join("  " + line for line in drawer["content"].splitlines())
    return f"{head} ({drawer['citation']}; {found}):\n{content}"


def cmd_review_list(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.proposals(
        session.workspace(), status=args.status, limit=args.limit, offset=args.offset
    )
    session.show(payload, render.render_proposals)
    return 0


def cmd_review_show(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.proposal(session.workspace(), args.id, into=args.into)
    session.show(payload, lambda p: render.render_proposal(p) + _drawer_beside(p))
    return 0


def cmd_review_diff(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.proposal(session.workspace(), args.id, into=args.into)
    diff = rendered(payload, lambda p: p["diff"])
    if session.as_json:
        session.emit_json(payload)
    elif payload.get("diff_withheld"):
        raise CommandFailure("the diff is withheld: the target holds declarations hidden from you")
    else:
        session.write(render.clean(diff))
    return 0


def cmd_review_approve(session: Session, args: argparse.Namespace) -> int:
    workspace = session.workspace()
    if not args.into:
        message, suggested = _into_hint(session, workspace, args.id)
        detail = {"suggested_into": suggested} if suggested else {}
        raise CommandFailure(message, code=render.USAGE, detail=detail)
    payload = _with_issues(lambda: session.client.approve(workspace, args.id, args.into))
    session.show(payload, render.render_decision)
    return 0


def cmd_review_reject(session: Session, args: argparse.Namespace) -> int:
    payload = session.client.reject(session.workspace(), args.id, args.reason)
    session.show(payload, render.render_decision)
    return 0


def _into_hint(session: Session, workspace: str, proposal_id: str) -> tuple[str, str | None]:
    """Why approve needs --into, with the daemon's suggested file when it has one (and
    that file).

    The reviewer still types the target: memory lands only where a person said.
    """
    message = "review approve needs --into FILE (a .mem file, relative to the workspace root)"
    payload = session.client.proposal(workspace, proposal_id)
    shown = payload.get("proposal") if isinstance(payload, dict) else None
    status = shown.get("status") if isinstance(shown, dict) else None
    if isinstance(status, str) and status != "pending":
        # Decided already: no target would change that, so none is asked for.
        raise CommandFailure(
            f"proposal {proposal_id} is already {status}: nothing to approve",
            1,
            code="conflict",
            detail={"status": status},
        )
    suggested = payload.get("suggested_into") if isinstance(payload, dict) else None
    if not isinstance(suggested, str) or not suggested:
        return message, None
    message += f"; suggested: memctl -w {workspace} review approve {proposal_id} --into {suggested}"
    return message, suggested
