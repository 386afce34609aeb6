"""How memhub reads a written time, the same at every door and in every transcript:
RFC 3339 / ISO 8601 dates and date-times, UTC when they name no zone, and the rule
for digits alone. Pure functions over text; nothing here knows fields or error codes.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time

# Years 1 to 9999 in epoch seconds: what ISO 8601 writes and an SQLite integer holds.
EARLIEST_TIME, LATEST_TIME = -62135596800, 253402300799

# ISO 8601 reads four digits as a year and eight as a basic date (2025, 20250603):
# where digits alone are epoch seconds, those lengths could mean either.
AMBIGUOUS_DIGITS = (4, 8)
# What joins a date and a time: "T" in either case, or a space (RFC 3339, 5.6 note).
_DATE_TIME = re.compile(r"[Tt ]")
AMBIGUOUS_HINT = "write a date as 2025-06-03, and epoch seconds this short with a leading 0"


def parse_iso(text: str) -> datetime:
    """The aware moment an RFC 3339 / ISO 8601 date or date-time names, UTC when it
    names no zone; ValueError for anything else, "" and blank text included.

    A date and a time are joined by "T" (either case) or a space, never by any other
    character (Python's own reader takes any one there, so `2025-06-03+05:30` was 05:30
    UTC). A date alone names no zone in ISO 8601: it is midnight UTC, with "Z" or
    without; a date alone with another offset is refused. Digits are ASCII digits."""
    text = text.strip()
    if not text.isascii():
        raise ValueError(f"not an ISO 8601 date/time: {text!r}")
    # RFC 3339 (5.6): "T" and "Z" may be lower case.
    zulu = text[-1:] in ("Z", "z") and text[-2:-1].isdigit()
    body = text[:-1] if zulu else text
    joined = _DATE_TIME.search(body)
    if joined is None:
        day = date.fromisoformat(body)
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    day = date.fromisoformat(body[: joined.start()])
    written = body[joined.end() :]
    if written[:1] in ("T", "t", " "):  # Python's reader takes a "T" before a time: one joint
        raise ValueError(f"not an ISO 8601 date/time: {text!r}")
    clock = time.fromisoformat(written + ("+00:00" if zulu else ""))
    moment = datetime.combine(day, clock)
    # A moment with no zone is UTC, never the process's own zone.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def is_ambiguous_digits(text: str) -> bool:
    """True for digits alone that ISO 8601 also reads as a year or a basic date."""
    text = text.strip()
    return text.isascii() and text.isdigit() and len(text) in AMBIGUOUS_DIGITS


# A token's lifetime from now (`--expires 30d`): days, hours or minutes.
EXPIRY_DURATION = re.compile(r"([0-9]{1,6})([dhm])")  # ASCII digits, as in dates


def check_expiry_form(text: str) -> str:
    """`text` if it is of a form `--expires` takes: a duration (`30d`, `12h`, `90m`) or
    an ISO date or date-time (whether it lies in the future is the token store's to
    say); ValueError naming the forms otherwise."""
    form = text.strip()
    if not EXPIRY_DURATION.fullmatch(form):
        try:
            parse_iso(form)
        except ValueError:
            raise ValueError(
                "expected a duration like 30d, 12h or 90m, or an ISO date or datetime such "
                f"as 2027-01-01 or 2027-01-01T09:00:00Z, not {text!r}"
            ) from None
    return text
