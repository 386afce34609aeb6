"""How memhub reads a written time, the same at every door and in every transcript:
RFC 3339 / ISO 8601 dates and date-times, UTC when they name no zone, and the rule
for digits alone. Pure functions over text; nothing here knows fields or error codes.
"""

from __future__ import annotations

from datetime import UTC, datetime

# Years 1 to 9999 in epoch seconds: what ISO 8601 writes and an SQLite integer holds.
EARLIEST_TIME, LATEST_TIME = -62135596800, 253402300799

# ISO 8601 reads four digits as a year and eight as a basic date (2025, 20250603):
# where digits alone are epoch seconds, those lengths could mean either.
AMBIGUOUS_DIGITS = (4, 8)
AMBIGUOUS_HINT = "write a date as 2025-06-03, and epoch seconds this short with a leading 0"


def parse_iso(text: str) -> datetime:
    """The aware moment an RFC 3339 / ISO 8601 date or date-time names, UTC when it
    names no zone; ValueError for anything else, "" and blank text included."""
    text = text.strip()
    if text[-1:] in ("Z", "z") and text[-2:-1].isdigit():
        # RFC 3339 (5.6): "T" and "Z" may be lower case (Python reads any "T" itself);
        # "+00:00" also lets a date alone carry a "Z", as "2025-06-03Z".
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    # A moment with no zone is UTC, never the process's own zone.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def is_ambiguous_digits(text: str) -> bool:
    """True for digits alone that ISO 8601 also reads as a year or a basic date."""
    text = text.strip()
    return text.isascii() and text.isdigit() and len(text) in AMBIGUOUS_DIGITS
