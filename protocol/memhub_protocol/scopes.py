"""Token scopes. memdsl's three keep their meaning; the others are memhub's."""

from __future__ import annotations

READ_SUMMARY = "read:summary"  # status, map, types, list, files, lint, events
READ_SEARCH = "read:search"  # query, explain, check
WRITE_CANDIDATE = "write:candidate"  # propose
WRITE_RECALL = "write:recall"  # ingest, kg add, cowork push
REVIEW = "review"  # approve, reject
ADMIN = "admin"  # workspaces, tokens, reload

ALL_SCOPES: tuple[str, ...] = (
    READ_SUMMARY,
    READ_SEARCH,
    WRITE_CANDIDATE,
    WRITE_RECALL,
    REVIEW,
    ADMIN,
)


def parse_scopes(text: str) -> tuple[str, ...]:
    """Comma-separated scopes, validated; `all` stands for every scope."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if "all" in items:
        return ALL_SCOPES
    unknown = sorted(set(items) - set(ALL_SCOPES))
    if unknown:
        raise ValueError(
            f"unknown scope(s): {', '.join(unknown)}; known: {', '.join(ALL_SCOPES)}, all"
        )
    return tuple(scope for scope in ALL_SCOPES if scope in items)
