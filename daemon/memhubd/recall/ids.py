"""Identifiers kept from mempal: drawer ids and per-source lock keys.

Pure functions; nothing here touches a store or a file.
"""

from __future__ import annotations

import functools
import hashlib

DEFAULT_ROOM = "default"
# mempal's ids carry 8 hex digits of the content hash; on a clash with different
# content (likely past ~80k drawers in one room) the longer form is used instead.
SHORT_HASH = 8
LONG_HASH = 16


@functools.lru_cache(maxsize=1024)  # a few workspaces and rooms, once per drawer each
def sanitize(text: str) -> str:
    """mempal's rule: ASCII letters lower-cased, every other non-alphanumeric char -> `_`."""
    return "".join(c.lower() if c.isascii() and c.isalnum() else "_" for c in text)


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def drawer_id(
    workspace: str,
    room: str | None,
    content: str,
    *,
    digits: int = SHORT_HASH,
    digest: str | None = None,
) -> str:
    """`drawer_{workspace}_{room}_{sha256(content)[:8]}`, as mempal builds it (`digest`:
    the content's hash, when the caller has it already)."""
    room_part = sanitize(room or DEFAULT_ROOM)
    digest = digest or content_hash(content)
    return f"drawer_{sanitize(workspace)}_{room_part}_{digest[:digits]}"


def source_key(source: str) -> str:
    """16 hex chars naming a source's lock file; every process derives the same key."""
    normalized = source.replace("\\", "/").strip()
    if not normalized:
        raise ValueError("an ingest source needs a name")
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]
