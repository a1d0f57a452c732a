"""events/clock.py spells and parses times without `datetime` on the write path: the same as `datetime` does."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events import clock

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
FIRST_US = (dt.datetime(1, 1, 1, tzinfo=dt.UTC) - EPOCH) // dt.timedelta(microseconds=1)
LAST_US = (dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC) - EPOCH) // dt.timedelta(microseconds=1)


def reference(us: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=us)


@given(st.integers(FIRST_US, LAST_US))
def test_stamp_and_iso_spell_what_datetime_spells(us: int) -> None:
    moment = reference(us)
    assert clock.stamp(us) == f"{moment.year:04d}{moment:%m%d_%H%M%S}_{moment.microsecond:06d}"
    assert clock.iso(us) == f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond:06d}Z"
    assert clock.parse_stamp(clock.stamp(us)) == us
    assert clock.parse_iso(clock.iso(us)) == us


@given(st.integers(-(10**20), 10**20))
def test_out_of_range_times_fail_as_datetime_does(us: int) -> None:
    if FIRST_US <= us <= LAST_US:
        assert clock.parse_stamp(clock.stamp(us)) == us
    else:
        with pytest.raises(OverflowError):
            clock.stamp(us)


@pytest.mark.parametrize("text", [
    "20260230_010203_000000", "20261301_010203_000000", "00000101_000000_000000", "20260101_240000_000000",
    "20260101_006000_000000", "20260101_000060_000000", "2026010a_000000_000000", "20260101-000000_000000",
    "20260101_000000_00000", "２0260101_000000_000000", "20260101_000000_00000²", "",
])
def test_parse_stamp_refuses_what_is_not_a_stamp(text: str) -> None:
    with pytest.raises(ValueError):
        clock.parse_stamp(text)


@given(st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31)), st.integers(0, 86_399_999_999))
def test_parse_stamp_agrees_with_datetime_on_every_day(day: dt.date, micros_of_day: int) -> None:
    moment = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros_of_day)
    text = f"{moment.year:04d}{moment:%m%d_%H%M%S}_{moment.microsecond:06d}"
    assert clock.parse_stamp(text) == (moment - EPOCH) // dt.timedelta(microseconds=1)
