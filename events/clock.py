"""Hybrid-logical-clock times and their two spellings: file-name stamps and ISO strings.

Pure: the wall clock is read by the caller and passed in as microseconds since the epoch.
"""

from __future__ import annotations

import time as _time

#: Seconds from 1970 to 10000-01-01: `time.gmtime` spells every time from the epoch to here.
_GMTIME_END = 253_402_300_800


#: The last microsecond a stamp can spell (9999-12-31T23:59:59.999999Z).
LAST_US = _GMTIME_END * 1_000_000 - 1
#: The first one (0001-01-01T00:00:00.000000Z).
FIRST_US = -62_135_596_800 * 1_000_000


def next_time(now_us: int, head_us: int | None) -> int:
    """The HLC time of a new event: the wall clock, but always after the head it follows."""
    if head_us is None:
        return now_us
    return max(now_us, head_us + 1)


# The spellings use `time.gmtime` and integer arithmetic, not `datetime`: every hook and
# `continuity log` writes a stamp, and `datetime` costs their start a few percent.
def _split(us: int) -> tuple[_time.struct_time, int]:
    seconds, micros = divmod(us, 1_000_000)
    if 0 <= seconds < _GMTIME_END:
        return _time.gmtime(seconds), micros
    import datetime as _dt  # before 1970 (or past 9999: OverflowError, as always)

    moment = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(seconds=seconds)
    return moment.utctimetuple(), micros


def stamp(us: int) -> str:
    """`20260723_010203_123456`: sorts as the time does (fixed width, UTC)."""
    t, micros = _split(us)
    return (f"{t.tm_year:04d}{t.tm_mon:02d}{t.tm_mday:02d}_{t.tm_hour:02d}{t.tm_min:02d}{t.tm_sec:02d}_"
            f"{micros:06d}")


#: How far the log's time may run past a writer's clock before the event says when, by that clock, it was written.
PUSHED_US = 1_000_000


def written_us(at_us: int, now_us: int) -> int | None:
    """The writer's clock reading an event records (`written_at`), when its HLC time `at_us` runs more than
    PUSHED_US past it (following a head stamped ahead); None when the two agree."""
    return now_us if at_us - now_us > PUSHED_US else None


#: How far before its `created_at` an event's `written_at` can be: a writer follows a head that counts as now, at
#: most a day or two ahead of its clock (names.EARLY_AFTER_US), or its own node's, up to 30 days (a clock that went
#: back: events/durable.py OWN_AHEAD_US).
WRITTEN_SPAN_US = 32 * 86_400 * 1_000_000


def written(event: object) -> str:
    """When an event was written as time goes for views (presence, leases, activity): its `written_at` when the
    log's time had run ahead of the writer's clock, else its `created_at`. A `written_at` no writer makes (not a
    real time, not before `created_at`, or further before it than WRITTEN_SPAN_US: a forged or broken event, which
    the file's name does not vouch for as it does for `created_at`) is not taken."""
    created: str = getattr(event, "created_at", "")
    found = getattr(event, "written_at", None)
    if not isinstance(found, str):
        return created
    try:
        at, stamped = parse_iso(found), parse_iso(created)
    except (ValueError, OverflowError):
        return created
    return found if stamped - WRITTEN_SPAN_US <= at < stamped else created


def iso(us: int) -> str:
    """`2026-07-23T01:02:03.123456Z`, the `created_at` of an event."""
    t, micros = _split(us)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}."
            f"{micros:06d}Z")


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm); ValueError if no date."""
    if not is_date(year, month, day):
        raise ValueError(f"not a date: {year:04d}-{month:02d}-{day:02d}")
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def is_date(year: int, month: int, day: int) -> bool:
    """Whether the proleptic Gregorian date exists, from the year 1 to 9999 (day folders and stamps name one)."""
    return 1 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= _month_days(year, month)


def _month_days(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_stamp(text: str) -> int:
    """Microseconds since the epoch of a stamp; ValueError if it is not one."""
    if len(text) != 22 or text[8] != "_" or text[15] != "_" or not (
            text[:8].isdigit() and text[9:15].isdigit() and text[16:].isdigit() and text.isascii()):
        raise ValueError(f"not a stamp: {text!r}")
    hour, minute, second = int(text[9:11]), int(text[11:13]), int(text[13:15])
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"not a stamp: {text!r}")
    days = _days_from_civil(int(text[0:4]), int(text[4:6]), int(text[6:8]))
    return ((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + int(text[16:22])


def parse_iso(text: str) -> int:
    """Microseconds since the epoch of an ISO-8601 time (naive times are taken as UTC)."""
    import datetime as _dt  # the read side only

    moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    delta = moment - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
