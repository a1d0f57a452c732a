"""Hybrid-logical-clock times and their two spellings: file-name stamps and ISO strings.

Pure: the wall clock is read by the caller and passed in as microseconds since the epoch.
"""

from __future__ import annotations

import datetime as _dt

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def next_time(now_us: int, head_us: int | None) -> int:
    """The HLC time of a new event: the wall clock, but always after the head it follows."""
    if head_us is None:
        return now_us
    return max(now_us, head_us + 1)


def _split(us: int) -> tuple[_dt.datetime, int]:
    seconds, micros = divmod(us, 1_000_000)
    return _EPOCH + _dt.timedelta(seconds=seconds), micros


def stamp(us: int) -> str:
    """`20260723_010203_123456`: sorts as the time does (fixed width, UTC)."""
    moment, micros = _split(us)
    return f"{moment:%Y%m%d_%H%M%S}_{micros:06d}"


def iso(us: int) -> str:
    """`2026-07-23T01:02:03.123456Z`, the `created_at` of an event."""
    moment, micros = _split(us)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{micros:06d}Z"


def parse_stamp(text: str) -> int:
    """Microseconds since the epoch of a stamp; ValueError if it is not one."""
    if len(text) != 22 or text[8] != "_" or text[15] != "_":
        raise ValueError(f"not a stamp: {text!r}")
    moment = _dt.datetime(
        int(text[0:4]), int(text[4:6]), int(text[6:8]),
        int(text[9:11]), int(text[11:13]), int(text[13:15]), tzinfo=_dt.UTC,
    )
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + int(text[16:22])


def parse_iso(text: str) -> int:
    """Microseconds since the epoch of an ISO-8601 time (naive times are taken as UTC)."""
    moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
