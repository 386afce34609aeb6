"""A message's weight in a budgeted drain is the bytes memctl prints for it: exact for
every character memctl keeps (JSON escapes included: tabs, quotes, backslashes, line
ends), and never below what it prints for those it drops."""

from __future__ import annotations

from typing import Any

import pytest

from memctl.cowork import format_drain
from memhubd.cowork.inbox import printed_weight

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
