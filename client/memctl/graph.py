"""`memctl kg add|query|invalidate|timeline|stats`, `memctl tunnels` and
`memctl fact-check`: argument parsing and rendering for the graph routes.

Times are checked here as the daemon checks them (ISO 8601 or epoch seconds), so a bad
one is a usage error naming its option, and passed to the daemon as written. Imports the wire contract and httpx only, never the daemon.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

from memctl.commands import (
    CommandFailure,
    Session,
    add_command,
    fraction,
    non_empty,
    read_text_file,
    time_value,
    whole_number,
)
from memhub_protocol.routes import KG_MAX_LIMIT, KG_MAX_OFFSET


def add_graph_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    command = partial(add_command, common=common)

    p = sub.add_parser("kg", parents=[common], help="the temporal knowledge graph")
    actions = p.add_subparsers(dest="kg_action", metavar="ACTION", required=True)
    a = command(actions, "add", cmd_add, "add a triple (valid from now, or --valid-from)")
    a.add_argument("subject", type=non_empty)
    a.add_argument("predicate", type=non_empty)
    a.add_argument("object", type=non_empty)
    a.add_argument("--source-drawer", metavar="ID", help="the drawer this triple rests on")
    a.add_argument(
        "--valid-from", type=time_value, metavar="TIME", help="ISO date/time or epoch seconds"
    )
    a.add_argument("--confidence", type=fraction, help="0 to 1 (default 1)")

    a = command(actions, "query", cmd_query, "triples valid now, at --as-of, or --all")
    a.add_argument("--subject")
    a.add_argument("--predicate")
    a.add_argument("--object")
    when = a.add_mutually_exclusive_group()
    when.add_argument(
        "--as-of", type=time_value, metavar="TIME", help="valid at this instant (ISO or epoch)"
    )
    when.add_argument("--all", action="store_true", help="every period, expired ones included")
    a.add_argument(
        "--limit",
        type=whole_number(1, KG_MAX_LIMIT),
        default=100,
        metavar="N",
        help=f"most triples (default 100, at most {KG_MAX_LIMIT})",
    )
    a.add_argument(
        "--offset",
        type=whole_number(0, KG_MAX_OFFSET),
        default=0,
        metavar="N",
        help=f"triples to skip: the previous page's next_offset (at most {KG_MAX_OFFSET})",
    )

    a = command(actions, "invalidate", cmd_invalidate, "end a triple's validity (never deletes)")
    a.add_argument("triple_id", type=non_empty)
    a.add_argument(
        "--at", type=time_value, metavar="TIME", help="when it stopped being true (default now)"
    )

    a = command(actions, "timeline", cmd_timeline, "every period about one entity, oldest first")
    a.add_argument("entity", type=non_empty)
    command(actions, "stats", cmd_stats, "triple counts, entities, top predicates")

    command(sub, "tunnels", cmd_tunnels, "rooms shared by several of your workspaces")

    a = command(sub, "fact-check", cmd_fact_check, "check a draft against the graph and rules")
    a.add_argument("file", nargs="?", default="-", metavar="FILE", help="'-' or none: stdin")
    a.add_argument("--room", help="only drawers of this room count as known names")
    a.add_argument(
        "--now", type=time_value, metavar="TIME", help="check as of this time (RFC 3339 or epoch)"
    )


def _ws_call(session: Session, name: str, **kwargs: Any) -> Any:
    return session.client._call(name, workspace=session.workspace(), **kwargs)


def cmd_add(session: Session, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"subject": args.subject, "predicate": args.predicate}
    body["object"] = args.object
    for key, value in (
        ("source_drawer", args.source_drawer),
        ("valid_from", args.valid_from),
        ("confidence", args.confidence),
    ):
        if value is not None:
            body[key] = value
    answer = _ws_call(session, "kg_add", body=body)
    session.show(answer, _added)
    return 0


def _added(answer: dict[str, Any]) -> str:
    """The message, and the triple's id when the answer shows the triple (a period the
    caller may not read is not shown)."""
    triples = answer.get("triples") or []
    return answer["message"] + (f"\n  id: {triples[0]['id']}" if triples else "")


def cmd_query(session: Session, args: argparse.Namespace) -> int:
    params = {"limit": str(args.limit)}
    if args.offset:
        params["offset"] = str(args.offset)
    for key in ("subject", "predicate", "object", "as_of"):
        if getattr(args, key) is not None:
            params[key] = getattr(args, key)
    if args.all:
        params["all"] = "true"
    answer = _ws_call(session, "kg_query", params=params)
    session.show(answer, _render_triples)
    return 0


def _triple_line(t: dict[str, Any]) -> str:
    if t.get("retired"):
        window = "retired"
    elif t["valid_from"] is None and t["valid_to"] is None:
        window = "always"
    else:
        start = t["valid_from"] if t["valid_from"] is not None else "always"
        window = f"{start}..{t['valid_to'] if t['valid_to'] is not None else _open_end(t)}"
    source = f"  from {t['source_declaration']}" if t.get("derived") else ""
    return f"({t['subject']}) --[{t['predicate']}]--> ({t['object']})  [{window}]  id={t['id']}{source}"


def _open_end(t: dict[str, Any]) -> str:
    """A period with no end runs until now, once it has begun; one that starts later
    is open, not valid yet."""
    return "open" if t["valid_from"] is not None and t["valid_from"] > time.time() else "now"


def _render_triples(answer: dict[str, Any]) -> str:
    lines = [_triple_line(t) for t in answer["triples"]]
    lines.append(f"{len(answer['triples'])} triple(s)")
    if answer.get("next_offset") is not None:
        lines.append(f"more: --offset {answer['next_offset']}")
    elif answer.get("truncated"):
        lines.append("more: narrow the query (--subject, --predicate, --object) to see them")
    return "\n".join(lines)


def cmd_invalidate(session: Session, args: argparse.Namespace) -> int:
    body = {"at": args.at} if args.at is not None else {}
    answer = _ws_call(session, "kg_invalidate", triple_id=args.triple_id, body=body)
    session.show(answer, lambda a: f"{a['message']} (valid_to {a['triples'][0]['valid_to']})")
    return 0


def cmd_timeline(session: Session, args: argparse.Namespace) -> int:
    answer = _ws_call(session, "kg_timeline", params={"entity": args.entity})

    def render(a: dict[str, Any]) -> str:
        entity = a["entity"]
        lines = []
        for t in a["triples"]:
            line = _triple_line(t)
            if t["subject"] != entity:  # the entity is the object: show the edge reversed
                line = line.replace(
                    f"({t['subject']}) --[{t['predicate']}]--> ({t['object']})",
                    f"({entity}) <--[{t['predicate']}]-- ({t['subject']})",
                    1,
                )
            lines.append(line)
        lines.append(f"{len(a['triples'])} event(s) for '{entity}'")
        return "\n".join(lines)

    session.show(answer, render)
    return 0


def cmd_stats(session: Session, args: argparse.Namespace) -> int:
    answer = _ws_call(session, "kg_stats")

    def render(a: dict[str, Any]) -> str:
        s = a["stats"]
        lines = [f"{key}: {s[key]}" for key in ("total", "active", "expired", "entities")]
        lines.append(f"stored: {s['stored']}  derived: {s['derived']}")
        lines.append("top predicates:")
        lines.extend(f"- {name}: {count}" for name, count in s["top_predicates"])
        return "\n".join(lines)

    session.show(answer, render)
    return 0


def cmd_tunnels(session: Session, args: argparse.Namespace) -> int:
    answer = session.client._call("tunnels")

    def render(a: dict[str, Any]) -> str:
        if not a["tunnels"]:
            return "no tunnels (need rooms shared across multiple workspaces)"
        lines = [
            f"room '{t['room']}' <-> workspaces: {', '.join(t['wings'])}" for t in a["tunnels"]
        ]
        lines.append(f"{len(a['tunnels'])} tunnel(s)")
        return "\n".join(lines)

    session.show(answer, render)
    return 0


def _issue_line(issue: dict[str, Any]) -> str:
    kind = issue["kind"]
    if kind == "similar_name_conflict":
        source = ", ".join(f"{k}={v}" for k, v in issue["source"].items() if v)
        return (
            f"similar name: '{issue['mentioned']}' is {issue['edit_distance']} edit(s) from "
            f"known '{issue['known_entity']}' ({source})"
        )
    if kind == "relation_contradiction":
        return f"contradiction: {issue['text_claim']} vs {issue['kg_fact']} ({issue['triple_id']})"
    if kind == "stale_fact":
        return (
            f"stale: ({issue['subject']}) --[{issue['predicate']}]--> ({issue['object']}) "
            f"ended at {issue['valid_to']} ({issue['triple_id']})"
        )
    if issue.get("withheld"):
        return f"MUST rule: {issue['message']}"
    return f"MUST rule [{issue['declaration_id']}]: {issue['reason']} - {issue['rule']}"


def cmd_fact_check(session: Session, args: argparse.Namespace) -> int:
    text = read_text_file(args.file)
    if not text.strip():
        raise CommandFailure("the draft is empty: nothing to check")
    body: dict[str, Any] = {"text": text}
    if args.room is not None:
        body["room"] = args.room
    if args.now is not None:
        body["now"] = args.now
    answer = _ws_call(session, "fact_check", body=body)

    def render(a: dict[str, Any]) -> str:
        lines = [_issue_line(i) for i in a["issues"]] or ["no issues"]
        lines.append(
            f"{len(a['issues'])} issue(s); {a['kg_triples_scanned']} triples scanned; "
            f"MUST gate: {a['must_gate']['verdict']}"
        )
        return "\n".join(lines)

    session.show(answer, render)
    return 0  # issues are findings, not failures (as mempal)
