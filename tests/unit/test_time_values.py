"""Times are read alike wherever memhub reads one: RFC 3339 / ISO 8601 with the "T" and
"Z" in either case and UTC when no zone is named (the daemon's own zone never counts),
epoch seconds, None for "not given", and an empty, blank or ambiguous value refused."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import pytest

from memhub_protocol import ProtocolError, TokenCreateRequest
from memhub_protocol.recall import parse_time
from memhubd.auth.tokens import TokenError, parse_expiry
from memhubd.graph.derived import epoch_of
from memhubd.recall.ingest.formats import epoch
from memhubd.service.cowork import _since_us

JUNE_3 = 1_748_908_800  # 2025-06-03T00:00:00Z
TWO_AM = JUNE_3 + 2 * 3600


@pytest.fixture
def far_from_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process runs in Kolkata (UTC+05:30), as a daemon started there would."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


# -- given but empty: refused, never "no limit" ----------------------------------------


@pytest.mark.parametrize("value", ["", " ", "\t"])
@pytest.mark.parametrize("field", ["before", "audit_before", "since", "until", "as_of", "now"])
def test_an_empty_or_blank_time_is_refused_like_any_malformed_time(value: str, field: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_time(value, field)
    assert refused.value.detail == {"field": field}
    assert refused.value.message == f"'{field}' must be epoch seconds or an ISO 8601 date/time"


def test_an_absent_time_is_not_given() -> None:
    assert parse_time(None, "before") is None


def test_an_empty_cowork_since_is_refused() -> None:
    with pytest.raises(ProtocolError) as refused:
        _since_us("")
    assert refused.value.detail == {"field": "since"}
    assert _since_us(None) is None


def test_an_empty_expiry_is_kept_for_the_daemon_to_refuse() -> None:
    base = {"name": "ci", "scopes": ["read:summary"], "workspaces": ["*"]}
    assert TokenCreateRequest.from_json({**base, "expires": ""}).expires == ""
    assert TokenCreateRequest.from_json({**base, "expires": None}).expires is None
    assert TokenCreateRequest.from_json(base).expires is None
    now = dt.datetime(2025, 6, 3, tzinfo=dt.UTC)
    for value in ("", "  "):
        with pytest.raises(TokenError, match="bad expiry"):
            parse_expiry(value, now)


# -- lower-case "t" and "z" (RFC 3339, 5.6) --------------------------------------------


@pytest.mark.parametrize(
    "written", ["2025-06-03T02:00:00z", "2025-06-03t02:00:00z", "2025-06-03t02:00:00Z"]
)
def test_lower_case_t_and_z_are_read_at_every_reader(written: str) -> None:
    assert parse_time(written, "since") == TWO_AM
    assert epoch(written) == TWO_AM
    assert epoch_of(written) == TWO_AM
    now = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
    assert parse_expiry(written, now) == dt.datetime(2025, 6, 3, 2, tzinfo=dt.UTC)


# -- no zone named: UTC, whatever the process's zone -------------------------------------


@pytest.mark.usefixtures("far_from_utc")
def test_a_transcript_time_without_a_zone_is_utc() -> None:
    assert epoch("2025-06-03T02:00:00") == TWO_AM
    assert epoch("2025-06-03T02:00:00Z") == TWO_AM
    assert epoch("2025-06-03") == JUNE_3


@pytest.mark.usefixtures("far_from_utc")
def test_every_reader_takes_a_time_without_a_zone_as_utc() -> None:
    assert parse_time("2025-06-03T02:00:00", "since") == TWO_AM
    assert epoch_of("2025-06-03T02:00:00") == TWO_AM


# -- digits: epoch seconds, but never an ISO 8601 year or basic date ---------------------


@pytest.mark.parametrize("digits", ["2025", "20250603", " 20250603 "])
def test_digits_that_iso_8601_reads_as_a_date_are_refused_as_ambiguous(digits: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_time(digits, "as_of")
    assert refused.value.detail == {"field": "as_of"}
    assert "ambiguous" in refused.value.message and "2025-06-03" in refused.value.message
    assert epoch(digits) is None  # a transcript's time: unknown, never 1970


def test_epoch_seconds_are_read_as_digits_or_as_a_number() -> None:
    assert parse_time("1748908800", "as_of") == JUNE_3
    assert parse_time(JUNE_3, "as_of") == JUNE_3
    assert parse_time(20250603, "as_of") == 20250603  # a number is never a date
    assert parse_time("0", "as_of") == 0
    assert parse_time("-86400", "as_of") == -86400
    assert parse_time("123456789", "as_of") == 123456789
    assert parse_time("020250603", "as_of") == 20250603  # the way to write it as digits


# -- a date and a time joined by "T" or a space only; a date alone names no zone --------


@pytest.mark.parametrize(
    "written",
    [
        "2025-06-03+05:30",
        "2025-06-03-08:00",
        "2025-06-03x10",
        "2025-06-03_10:00",
        "2025-06-03T",
        "2025-06-03 T10:00",
        "2025-06-03TT10:00",
        "2025-06-03tT10:00Z",
        "2025-06-03  10:00",
    ],
)
def test_a_date_with_an_offset_or_an_odd_joint_is_refused_at_every_reader(written: str) -> None:
    with pytest.raises(ProtocolError):
        parse_time(written, "since")
    assert epoch(written) is None
    assert epoch_of(written) is None
    with pytest.raises(ProtocolError):
        _since_us(written)
    with pytest.raises(TokenError, match="bad expiry"):
        parse_expiry(written, dt.datetime(2025, 6, 1, tzinfo=dt.UTC))


def test_a_date_alone_is_midnight_utc_and_a_space_joins_like_t() -> None:
    assert parse_time("2025-06-03", "since") == JUNE_3
    assert parse_time("2025-06-03Z", "since") == JUNE_3
    assert parse_time("2025-06-03 02:00", "since") == TWO_AM
    assert parse_time("2025-06-03T07:30+05:30", "since") == TWO_AM
    assert epoch("2025-06-03 02:00:00-00:00") == TWO_AM


# -- ASCII digits only -----------------------------------------------------------------


@pytest.mark.parametrize(
    "written", ["２０２５", "２０２５０６０３", "١٧٤٨٩٠٨٨٠٠", "２０２５-06-03"]
)
def test_digits_of_other_scripts_are_no_time(written: str) -> None:
    with pytest.raises(ProtocolError):
        parse_time(written, "as_of")
    assert epoch(written) is None


def test_a_transcripts_seconds_are_read_as_the_doors_read_digits() -> None:
    assert epoch("1748908800") == JUNE_3
    assert epoch("1748908800.123456") == JUNE_3  # Slack's ts
    for loose in ("1_748_908_800", "1.7e9", "+1748908800", "inf", "nan", "0x10"):
        assert epoch(loose) is None, loose
