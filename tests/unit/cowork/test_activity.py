"""The activity log behind partner peek: bounded rings, bounded pairs, and what of an
entry a peeker may see."""

from __future__ import annotations

from memhubd.cowork import Activity, ActivityLog, is_active, visible_to
from memhubd.cowork.activity import MAX_TEXT_CHARS, cut


def entry(at: float, **fields: object) -> Activity:
    return Activity(at=at, kind=str(fields.pop("kind", "query")), text="t", **fields)  # type: ignore[arg-type]


def test_a_ring_keeps_the_latest_entries_only() -> None:
    log = ActivityLog(per_identity=3)
    for i in range(10):
        log.record("team", "bob", entry(float(i)))
    assert [e.at for e in log.entries("team", "bob")] == [7.0, 8.0, 9.0]
    assert log.last_seen("team", "bob") == 9.0


def test_the_least_recently_active_pair_is_dropped_first() -> None:
    log = ActivityLog(max_pairs=2)
    log.record("team", "a", entry(1))
    log.record("team", "b", entry(2))
    log.record("team", "a", entry(3))
    log.record("team", "c", entry(4))
    assert len(log) == 2
    assert log.entries("team", "b") == [] and len(log.entries("team", "a")) == 2


def test_most_recent_other_is_the_last_actor_in_that_workspace() -> None:
    log = ActivityLog()
    log.record("team", "a", entry(1))
    log.record("team", "b", entry(5))
    log.record("other", "c", entry(9))
    assert log.most_recent_other("team", "a") == "b"
    assert log.most_recent_other("team", "b") == "a"
    assert log.most_recent_other("other", "c") is None


def test_text_is_cut_to_a_bound() -> None:
    assert len(cut("word " * 500)) == MAX_TEXT_CHARS


def test_counts_show_only_when_the_actor_read_no_more_than_the_peeker() -> None:
    narrow = entry(1, counts={"must": 2}, roles=frozenset({"dev"}))
    wide = entry(1, counts={"must": 5}, roles=frozenset({"dev", "security"}))
    everything = entry(1, counts={"must": 7}, roles=None)
    peeker = frozenset({"dev"})
    assert visible_to(narrow, "p", peeker, knows_identities=False)["counts"] == {"must": 2}
    assert visible_to(wide, "p", peeker, knows_identities=False)["counts"] is None
    assert visible_to(everything, "p", peeker, knows_identities=False)["counts"] is None
    assert visible_to(everything, "p", None, knows_identities=False)["counts"] == {"must": 7}


def test_restricted_text_needs_one_of_its_reader_roles() -> None:
    secret = entry(1, kind="propose", readers=frozenset({"security"}))
    assert visible_to(secret, "p", frozenset({"dev"}), knows_identities=False)["text"] is None
    assert visible_to(secret, "p", frozenset({"security"}), knows_identities=False)["text"] == "t"
    assert visible_to(secret, "p", None, knows_identities=False)["text"] == "t"


def test_a_push_names_its_recipient_only_to_it_or_to_an_admin() -> None:
    pushed = entry(1, kind="push", recipient="carol")
    assert visible_to(pushed, "bob", frozenset(), knows_identities=False)["to"] is None
    assert visible_to(pushed, "carol", frozenset(), knows_identities=False)["to"] == "carol"
    assert visible_to(pushed, "bob", frozenset(), knows_identities=True)["to"] == "carol"


def test_active_means_seen_within_thirty_minutes_or_in_the_future() -> None:
    now = 10_000.0
    assert is_active(now - 29 * 60, now) and is_active(now + 60, now)
    assert not is_active(now - 31 * 60, now) and not is_active(None, now)


def test_a_peek_since_the_last_time_shown_gets_what_came_after_in_the_same_millisecond() -> None:
    from memhubd.service.cowork import _rfc3339, _shown_us, _since_us

    for seen in (1_764_000_000.123456, 1_764_767_313.7396835, 1_764_767_313.0000005):
        since = _since_us(_rfc3339(seen, "microseconds"))
        assert since is not None and not _shown_us(seen) > since  # not shown again
        assert _shown_us(seen + 0.0004) > since  # 0.4 ms later, in the same millisecond
