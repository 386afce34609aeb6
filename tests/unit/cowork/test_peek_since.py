"""A peek's `since` takes RFC 3339 as written, the "T" and "Z" in either case (section
5.6), and still refuses what is no time."""

from __future__ import annotations

import pytest

from memhub_protocol import ProtocolError
from memhubd.service.cowork import _since_us

UPPER = "2026-12-01T18:40:00.123456Z"


@pytest.mark.parametrize(
    "written",
    [
        "2026-12-01t18:40:00.123456z",
        "2026-12-01T18:40:00.123456z",
        "2026-12-01t18:40:00.123456Z",
        " 2026-12-01t18:40:00.123456z ",
        "2026-12-01T18:40:00.123456+00:00",
        "2026-12-01t19:40:00.123456+01:00",
    ],
)
def test_lower_case_t_and_z_name_the_same_instant(written: str) -> None:
    assert _since_us(written) == _since_us(UPPER)


@pytest.mark.parametrize("written", ["yesterday", "2026-12-01T18:40:00zz", "z", "2026-13-01z"])
def test_what_is_no_time_is_refused(written: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        _since_us(written)
    assert refused.value.detail == {"field": "since"}
