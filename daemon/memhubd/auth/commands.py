"""`memhubd token create|list|revoke`: token administration on a state directory.

Works offline (a running daemon picks the change up on its next request). Argument
parsing and rendering only; the rules live in `TokenStore`. Whoever can write the
state directory is the operator, so no subset rule applies here; create and revoke
are still written to the admin audit, under the operating-system user's name.
`create` prints the secret alone on stdout (everything else goes to stderr), so
`SECRET=$(memhubd token create ...)` captures exactly the secret.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import getpass
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memhub_protocol import paths
from memhub_protocol.paths import STATE_DIR_ENV
from memhub_protocol.times import check_expiry_form
from memhubd.auth.audit import FAILED, OK, REFUSED
from memhubd.auth.tokens import (
    IMPOSTOR_NAMES,
    TokenError,
    TokenFileError,
    TokenRecord,
    TokenStore,
    utc_now,
)

Handler = Callable[[argparse.Namespace], int]


def default_state_dir() -> Path:
    """$MEMHUB_STATE_DIR, else ~/.local/share/memhub (the daemon's own default)."""
    return Path(paths.default_state_dir())


def add_token_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register `token` and its subcommands; each sets `handler=function(args) -> int`."""
    token = subparsers.add_parser("token", help="create, list and revoke bearer tokens")
    commands = token.add_subparsers(dest="token_command", metavar="COMMAND", required=True)

    p = commands.add_parser("create", help="create a token; its secret is shown once")
    p.add_argument("name", help="identity name: 1-64 of A-Z a-z 0-9 _ . @ -")
    p.add_argument("--scopes", required=True, help="comma-separated scopes, or all")
    p.add_argument("--workspaces", default="*", help="comma-separated workspaces (default *: all)")
    p.add_argument("--roles", default="", help="comma-separated access-policy roles (* sees all)")
    p.add_argument(
        "--expires", type=_expiry, metavar="WHEN", help="30d, 12h, 90m, or an ISO date/datetime"
    )
    _common(p, _create)

    p = commands.add_parser("list", help="list tokens (never their secrets)")
    _common(p, _list)

    p = commands.add_parser("revoke", help="revoke a token by name")
    p.add_argument("name", help="token name")
    _common(p, _revoke)


def _expiry(text: str) -> str:
    """`--expires`, passed on as written once its form is checked (`check_expiry_form`).
    A value of another form is a usage error naming the option, told before the state
    directory is touched (nothing is created, written or audited, as for any usage
    error); a moment that is not in the future stays the store's refusal, audited."""
    try:
        return check_expiry_form(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _common(parser: argparse.ArgumentParser, handler: Handler) -> None:
    parser.add_argument(
        "--state-dir",
        type=Path,
        help=f"state directory (default ${STATE_DIR_ENV} or ~/.local/share/memhub)",
    )
    parser.add_argument("--json", action="store_true", help="JSON output")
    parser.set_defaults(handler=_guarded(handler))


class _OutputFailed(Exception):
    """Standard output could not be written (a reader gone, a full disk): not the
    state directory's failure, so it is left to the program's shared handling of a
    lost output rather than reported as a token error."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _guarded(handler: Handler) -> Handler:
    """Refusals and I/O failures of the state directory become one line on stderr and
    exit status 2; a failure to write stdout is raised on, as every command's is."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except _OutputFailed as failure:
            lost = failure.error
        except TokenFileError as error:
            return _refuse(args, "state_dir", str(error))
        except TokenError as error:
            return _refuse(args, "invalid", str(error))
        except OSError as error:
            return _refuse(args, "state_dir", _reason(error))
        raise lost

    return run


def _refuse(args: argparse.Namespace, code: str, message: str) -> int:
    """One line on stderr, exit 2; with --json, the error envelope on stdout too (`invalid`:
    the request refused; `state_dir`: the state directory could not be used)."""
    if getattr(args, "json", False):
        with contextlib.suppress(_OutputFailed):  # the line on stderr says it still
            _emit(json.dumps({"error": {"code": code, "message": message, "detail": {}}}, indent=2))
    print(f"memhubd token: error: {message}", file=sys.stderr)
    return 2


def _emit(text: str) -> None:
    """`text` and a newline on stdout, written through at once so that a failure to
    write it is told from the state directory's failures."""
    try:
        print(text, flush=True)
    except OSError as error:
        raise _OutputFailed(error) from None


def _store(args: argparse.Namespace) -> TokenStore:
    return TokenStore(args.state_dir or default_state_dir())


def _operator() -> str:
    """Who runs the command, for the audit: the operating-system user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no $USER (some containers)
        return "unknown"


def _audit(
    store: TokenStore, action: str, outcome: str, *, quiet: bool = False, **details: Any
) -> None:
    """Append one line; `quiet`: a failure of the state directory itself, whose error
    line says it all already (the audit lives there too)."""
    try:
        store.audit.record(action, identity=_operator(), via="cli", outcome=outcome, **details)
    except OSError as error:
        if quiet:
            return
        # The action stands; say so loudly rather than fail after the fact.
        where = f"{error.filename}: " if error.filename else ""
        print(f"memhubd token: warning: audit not written: {where}{error}", file=sys.stderr)


def _create(args: argparse.Namespace) -> int:
    store = _store(args)
    asked = {  # as the API's lines give them: lists
        "name": args.name,
        "scopes": _items(args.scopes),
        "workspaces": _items(args.workspaces),
        "roles": _items(args.roles),
        "expires": args.expires,
    }
    try:
        record, secret = store.create(
            args.name,
            args.scopes,
            workspaces=args.workspaces,
            roles=args.roles,
            expires=args.expires,
        )
    except (TokenFileError, OSError) as error:  # the file's fault, not the request's
        _audit(store, "token.create", FAILED, quiet=True, token=asked, reason=_reason(error))
        raise
    except TokenError as error:
        _audit(store, "token.create", REFUSED, token=asked, reason=str(error))
        raise
    _audit(store, "token.create", OK, token=record.as_dict())
    try:
        if args.json:
            _print_json({**record.as_dict(), "token": secret})
            return 0
        print(f"created token {record.name!r}: {_describe(record)}", file=sys.stderr)
        print("This secret will not be shown again: store it now.", file=sys.stderr)
        _emit(secret)
    except _OutputFailed:
        # The token exists and works, but nobody has its secret: say so, and how to undo it.
        print(
            f"memhubd token: the token {record.name!r} was created but its secret could not "
            f"be written out; revoke it (memhubd token revoke {record.name}) and create it again",
            file=sys.stderr,
        )
        raise
    return 0


def _list(args: argparse.Namespace) -> int:
    store = _store(args)
    records = store.list()
    now = utc_now()
    if args.json:
        listed: dict[str, Any] = {"tokens": [_listed(record, now) for record in records]}
        if not store.path.exists():
            # As the text form says it: the usual cause is another state directory.
            listed["warning"] = f"no tokens in {_where(store)}"
        _print_json(listed)
        return 0
    lines = [
        f"{r.name}{' (EXPIRED)' if r.is_expired(now) else ''}"
        f"{' (REFUSED: its name is reserved; revoke it)' if r.name in IMPOSTOR_NAMES else ''}"
        f": {_describe(r)}"
        for r in records
    ]
    _emit("\n".join(lines) or f"no tokens in {_where(store)}")
    return 0


def _where(store: TokenStore) -> str:
    """The state directory searched, and a hint when it holds no token file at all: the
    usual cause is a command run without the daemon's --state-dir or MEMHUB_STATE_DIR."""
    where = str(store.state_dir.absolute())
    if store.path.exists():
        return where
    return f"{where} (which holds no tokens.json: is --state-dir / {STATE_DIR_ENV} the daemon's?)"


def _revoke(args: argparse.Namespace) -> int:
    store = _store(args)
    if not store.path.exists():
        # Nothing to revoke: neither the lock nor the audit may create a state directory
        # where the operator only mistyped one (or forgot the daemon's).
        raise TokenError(f"no token named {args.name!r} in {_where(store)}")
    try:
        revoked = store.revoke(args.name)
    except (TokenError, OSError) as error:
        reason = _reason(error)
        _audit(store, "token.revoke", FAILED, quiet=True, token={"name": args.name}, reason=reason)
        raise
    if not revoked:
        _audit(store, "token.revoke", REFUSED, token={"name": args.name}, reason="no such token")
        raise TokenError(f"no token named {args.name!r} in {_where(store)}")
    _audit(store, "token.revoke", OK, token={"name": args.name})
    if args.json:
        _print_json({"revoked": args.name})
    else:
        _emit(f"revoked token {args.name!r}")
    return 0


def _items(value: Any) -> list[str]:
    """A comma-separated option (or a list of them) as its items."""
    text = value if isinstance(value, str) else ",".join(value or ())
    return [item.strip() for item in text.split(",") if item.strip()]


def _reason(error: Exception) -> str:
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or error}"
    return str(error)


def _describe(record: TokenRecord) -> str:
    return (
        f"scopes {','.join(record.scopes)}; workspaces {','.join(record.workspaces)}; "
        f"roles {','.join(record.roles) or '-'}; expires {record.expires or 'never'}"
    )


def _listed(record: TokenRecord, now: dt.datetime) -> dict[str, Any]:
    # A token made under a name memhub reserved since is refused by the daemon.
    return {
        **record.as_dict(),
        "expired": record.is_expired(now),
        "name_reserved": record.name in IMPOSTOR_NAMES,
    }


def _print_json(data: dict[str, Any]) -> None:
    _emit(json.dumps(data, indent=2))
