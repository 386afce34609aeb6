"""The watcher's `recall_ingested` event counts, for each subscriber, only the drawers it
may read, and is not delivered to one that may read none: a count of all would tell a
role-limited caller of text kept from it."""

from __future__ import annotations

from memhub_protocol.scopes import READ_SUMMARY
from memhubd.auth.identity import Identity
from memhubd.service.access import CHUNK_READERS, event_for

DEV = Identity("dev", frozenset({READ_SUMMARY}), roles=frozenset({"dev"}))
LEAD = Identity("lead", frozenset({READ_SUMMARY}), roles=frozenset({"lead"}))
ADMIN = Identity("admin", frozenset({READ_SUMMARY}), roles=frozenset({"*"}))


def event(*shares: tuple[list[str] | None, int]) -> dict[str, object]:
    total = sum(n for _readers, n in shares)
    return {
        "workspace": "team",
        "chunks": total,
        "door": "watch",
        CHUNK_READERS: [[readers, n] for readers, n in shares],
    }


def test_each_subscriber_counts_the_drawers_it_may_read() -> None:
    data = event((None, 2), (["lead"], 3))
    assert event_for(None, DEV, "recall_ingested", data) == {  # type: ignore[arg-type]
        "workspace": "team",
        "chunks": 2,
        "door": "watch",
    }
    assert event_for(None, LEAD, "recall_ingested", data)["chunks"] == 5  # type: ignore[arg-type,index]
    assert event_for(None, ADMIN, "recall_ingested", data) == {  # type: ignore[arg-type]
        "workspace": "team",
        "chunks": 5,
        "door": "watch",
    }


def test_a_subscriber_that_may_read_none_of_them_is_not_told() -> None:
    assert event_for(None, DEV, "recall_ingested", event((["lead"], 1))) is None  # type: ignore[arg-type]
