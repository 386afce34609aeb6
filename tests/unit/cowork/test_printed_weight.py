"""A message's weight in a budgeted drain is the bytes memctl prints for it: exact for
every character memctl keeps (JSON escapes included: tabs, quotes, backslashes, line
ends), and never below what it prints for those it drops; with its line's time, sender
and workspace, so that a drain of any number of messages prints within its budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memctl.cowork import drain_params, format_drain
from memhubd.cowork.inbox import InboxStore, line_weight, printed_weight

KEPT = [
    "plain words",
    "a" + "\t" * 2600 + "b",
    'say "hi" \\ then \\\\ and "',
    "one\ntwo\n\nthree",
    "line\u2028sep\u2029par\x85nel\x0bvt\x0cff\x1cfs",
    "crlf\r\nends\r\nhere",
    'é ü 漢字 🙂 mixed\ttabs\t"q"',
]
DROPPED = [
    "esc \x1b[31mred\x1b[0m bell\x07 nul\x00 bs\x08",
    "lone\rreturn and del\x7f",
    "zero\u200bwidth\ufeffmarks",
    "  blanks at both ends\t\n",
]


def body_bytes(content: str, fmt: str) -> int:
    """The bytes memctl prints for `content`: a one-message drain's output, less the
    same drain's with a one-byte message."""

    def printed(text: str) -> int:
        message: dict[str, Any] = {
            "pushed_at": "2026-12-01T18:40:00.123Z",
            "from": "alice",
            "workspace": "team-coding",
            "content": text,
        }
        return len(format_drain([message], fmt).encode())

    return printed(content) - printed("x") + 1


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
@pytest.mark.parametrize("content", KEPT)
def test_the_weight_is_what_memctl_prints(content: str, fmt: str) -> None:
    assert printed_weight(content, fmt) == body_bytes(content, fmt)


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
@pytest.mark.parametrize("content", DROPPED)
def test_what_memctl_drops_never_weighs_less_than_it_prints(content: str, fmt: str) -> None:
    assert printed_weight(content, fmt) >= body_bytes(content, fmt)


def test_every_character_weighs_at_least_what_it_prints() -> None:
    for code in [*range(0x100), 0x2028, 0x2029, 0x200B, 0xFEFF, 0x1F642]:
        content = f"a{chr(code)}b"
        for fmt in ("plain", "hook-json"):
            assert printed_weight(content, fmt) >= body_bytes(content, fmt), (hex(code), fmt)


LONG = "n" * 64  # the longest sender and workspace names


def line_bytes(content: str, fmt: str, sender: str, workspace: str) -> int:
    """The bytes one more message adds to memctl's drain output in `fmt`: its line and
    the line feed that joins it."""
    first = {"pushed_at": "2026-12-01T18:40:00.123Z", "from": "a", "workspace": "w"}
    then = {**first, "from": sender, "workspace": workspace, "content": content}
    started = [{**first, "content": "x"}] * 2  # "2 messages" then "3 messages": as wide
    return len(format_drain([*started, then], fmt).encode()) - len(
        format_drain(started, fmt).encode()
    )


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
@pytest.mark.parametrize("content", KEPT)
@pytest.mark.parametrize(("sender", "workspace"), [("alice", "team-coding"), (LONG, LONG)])
def test_a_lines_weight_is_what_memctl_prints_for_it(
    content: str, fmt: str, sender: str, workspace: str
) -> None:
    weight = line_weight(content, sender, workspace, fmt)
    assert weight == line_bytes(content, fmt, sender, workspace)


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
def test_a_budgeted_drain_prints_within_its_budget_however_many_lines_come(
    tmp_path: Path, fmt: str
) -> None:
    store = InboxStore(tmp_path / "cowork" / f"{LONG}.sqlite")
    for n in range(16):
        store.push(LONG, "bob", f"note {n}")
    for budget in (300, 600, 1200, 8000):
        taken = store.take("bob", **drain_query(budget, fmt))
        messages = [
            {"pushed_at": "2026-12-01T18:40:00.123Z", "from": m.sender, "workspace": LONG,
             "content": m.content}
            for m in taken.messages
        ]  # fmt: skip
        printed = format_drain(messages, fmt, taken.remaining) + "\n"
        assert len(printed.encode()) <= budget or len(messages) == 1, (budget, len(printed))
    store.close()


def drain_query(budget: int, fmt: str) -> dict[str, object]:
    params = drain_params([], fmt, budget)
    return {
        "max_bytes": int(params["max_bytes"]),
        "at_least_one": params["at_least_one"] == "true",
        "weigh": params["weigh"],
    }
