"""`memctl diary write|read`: the agent diary, an identity's notes on how it works.

Argument parsing and rendering for the diary routes; the daemon stores entries as
drawers and decides who may read them. Imports the wire contract and httpx only,
never the daemon.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from memctl.commands import CommandFailure, Session, add_command, read_stdin, whole_number
from memhub_protocol.routes import DIARY_MAX_LIMIT

TYPES = ("OBSERVATION", "LESSON", "PATTERN")


def _entry_type(text: str) -> str:
    value = text.upper()
    if value not in TYPES:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(TYPES)}, not {text!r}")
    return value


def add_diary_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    command = partial(add_command, common=common)

    p = sub.add_parser(
        "diary", parents=[common], help="the agent diary: observations, lessons, patterns"
    )
    actions = p.add_subparsers(dest="diary_action", metavar="ACTION", required=True)

    a = command(actions, "write", cmd_write, "add an entry to your diary")
    a.add_argument("type", type=_entry_type, metavar="TYPE", help="OBSERVATION, LESSON or PATTERN")
    a.add_argument("text", nargs="+", metavar="TEXT", help="the entry; '-' reads stdin")
    a.add_argument("--shared", action="store_true", help="everyone in the workspace may read it")
    a.add_argument("--importance", type=int, choices=range(6), metavar="0-5")

    a = command(actions, "read", cmd_read, "entries of a diary, newest first")
    a.add_argument("--identity", metavar="NAME", help="whose diary (default: yours)")
    a.add_argument("--type", type=_entry_type, metavar="TYPE", help="only this type")
    a.add_argument("--query", "-q", metavar="TEXT", help="only entries matching, best first")
    a.add_argument(
        "--limit",
        type=whole_number(1, DIARY_MAX_LIMIT),
        default=20,
        metavar="N",
        help=f"most entries (default 20, at most {DIARY_MAX_LIMIT})",
    )


def _ws_call(session: Session, name: str, **kwargs: Any) -> Any:
    return session.client._call(name, workspace=session.workspace(), **kwargs)


def cmd_write(session: Session, args: argparse.Namespace) -> int:
    text = read_stdin() if args.text == ["-"] else " ".join(args.text)
    if not text.strip():
        raise CommandFailure("the entry is empty")
    body: dict[str, Any] = {"type": args.type, "content": text, "shared": args.shared}
    if args.importance is not None:
        body["importance"] = args.importance
    answer = _ws_call(session, "diary_write", body=body)
    session.show(
        answer,
        lambda a: "\n".join(
            [
                f"{a['message']}: {a['drawer_id']} ({a['type']}, "
                f"{'shared' if a['shared'] else 'private to you and reviewers'})",
                *(f"warning: {w}" for w in a.get("warnings", ())),
            ]
        ),
    )
    return 0


def cmd_read(session: Session, args: argparse.Namespace) -> int:
    params = {"limit": str(args.limit)}
    for key, value in (("identity", args.identity), ("type", args.type), ("q", args.query)):
        if value:
            params[key] = value
    session.show(_ws_call(session, "diary_read", params=params), render_diary)
    return 0


def render_diary(answer: dict[str, Any]) -> str:
    lines = [f"diary of {answer['identity']} in {answer['workspace']}"]
    if not answer["full"]:
        lines[0] += " (shared entries only)"
    for entry in answer["entries"]:
        shared = " shared" if entry["shared"] else ""
        lines.append(f"- [{entry['type']}] {entry['drawer_id']}{shared}")
        lines.append(f"  {entry['text']}")
    if not answer["entries"]:
        lines.append("no entries")
    return "\n".join(lines)
