"""`list-contexts` (§7): the projects with Markdown archives under C, most recently archived first."""

from __future__ import annotations

import os
import re
from typing import Any

from continuity.adapters.compat import common as c
from continuity.adapters.compat.args import Args

#: Date.parse's ISO format (ECMA-262 Date Time String Format): a date alone is UTC, a time without offset local.
_ISO = re.compile(
    r"^(?P<year>[0-9]{4}|[+-][0-9]{6})(?:-(?P<month>[0-9]{2})(?:-(?P<day>[0-9]{2}))?)?"
    r"(?:T(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})(?::(?P<second>[0-9]{2})(?:\.(?P<fraction>[0-9]+))?)?"
    r"(?P<zone>Z|[+-][0-9]{2}:[0-9]{2})?)?\Z")
#: What V8 also reads as that format when a `T` follows the date (its ES5 parser): a lowercase `t` or `z`, an
#: offset without its colon. A text that starts as such a date and `T` is read by it alone: anything else after
#: the `T` (a space, `+01`, ` GMT`) makes it no date, never a legacy one.
_ES5_T = re.compile(r"^(?:[0-9]{4}|[+-][0-9]{6})(?:-[0-9]{2}(?:-[0-9]{2})?)?[Tt]")
_ES5 = re.compile(
    r"^(?P<year>[0-9]{4}|[+-][0-9]{6})(?:-(?P<month>[0-9]{2})(?:-(?P<day>[0-9]{2}))?)?"
    r"[Tt](?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})(?::(?P<second>[0-9]{2})(?:\.(?P<fraction>[0-9]+))?)?"
    r"(?P<zone>[Zz]|[+-][0-9]{2}:?[0-9]{2})?\Z")
#: The time values a JavaScript Date holds: ±8.64e15 ms.
_MAX_MS = 8_640_000_000_000_000


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year; a day past the month's end rolls over)."""
    year -= month <= 2
    era = year // 400  # floor division: negative years too
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_era_days = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_era_days - 719468


def _local_offset(seconds: float) -> int:
    """The local time zone's offset from UTC (seconds) at that moment, or 0 where the platform has none."""
    import time

    try:
        return time.localtime(seconds).tm_gmtoff
    except (OverflowError, OSError, ValueError):
        return 0


def _parse_iso(found: re.Match[str]) -> float | None:
    """Milliseconds as Node's Date.parse reads the ISO format: days 1-31 of any month (rolling over), 24:00."""
    year_text = found["year"]
    if year_text == "-000000":
        return None
    year = int(year_text)
    month, day = int(found["month"] or 1), int(found["day"] or 1)
    hour, minute, second = int(found["hour"] or 0), int(found["minute"] or 0), int(found["second"] or 0)
    millis = int((found["fraction"] or "0")[:3].ljust(3, "0"))
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
        return None
    if hour > 23 and (hour, minute, second, millis) != (24, 0, 0, 0):
        return None
    zone = found["zone"]
    offset_minutes: int | None = None  # local time
    if zone in ("Z", "z") or (zone is None and found["hour"] is None):
        offset_minutes = 0
    elif zone is not None:
        zone_hours, zone_minutes = int(zone[1:3]), int(zone[-2:])
        if zone_hours > 23 or zone_minutes > 59:
            return None
        offset_minutes = (zone_hours * 60 + zone_minutes) * (1 if zone[0] == "+" else -1)
    return _time_value(year, month, day, (hour, minute, second, millis), offset_minutes)


def _time_value(year: int, month: int, day: int, clock: tuple[int, int, int, int] | list[int],
                offset_minutes: int | None) -> float | None:
    """Milliseconds since the epoch of a civil date and time at an offset from UTC (None: local time, the
    offset in force then; a time a change skips or repeats takes the offset before it); None out of range."""
    hour, minute, second, millis = clock
    ms = ((_days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    if offset_minutes is None:
        local = ms / 1000
        widest = max(_local_offset(local + shift) for shift in (-86_400, 0, 86_400))
        ms -= _local_offset(local - widest) * 1000
    else:
        ms -= offset_minutes * 60_000
    return ms if abs(ms) <= _MAX_MS else None


def parse_since(text: str) -> float | None:
    """`Date.parse(text)` in seconds: the ISO format (a date is UTC midnight, a date-time without offset local
    time), else the forms V8 reads besides (`_parse_legacy`: RFC 2822, `Date.prototype.toString`, `2026-12-02
    23:00`, `Dec 2, 2026 11:00 PM`, `12/02/2026`); None when none reads it."""
    found = _ISO.match(text) or _ES5.match(text)
    if found:
        ms = _parse_iso(found)
        return None if ms is None else ms / 1000
    if _ES5_T.match(text):
        return None
    if re.search(r"(?<![.0-9])[0-9]{13}", text):  # no part of a date but a fraction holds that many digits
        return None
    try:
        ms = _parse_legacy(text)
    except ValueError:  # int() of more than 4,300 digits (after a `.` that starts no fraction)
        return None
    return None if ms is None else ms / 1000


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: The zone names V8 reads (hours from UTC).
_ZONES = {"ut": 0, "utc": 0, "gmt": 0, "z": 0, "est": -5, "edt": -4, "cst": -6, "cdt": -5, "mst": -7, "mdt": -6,
          "pst": -8, "pdt": -7}
_TOKEN = re.compile(r"\((?:[^()]|\([^()]*\))*\)|[A-Za-z]+|[0-9]+|[ \t\n\r\f\v,]+|.", re.DOTALL)


def _parse_legacy(text: str) -> float | None:
    """Milliseconds as V8's fallback parser reads the common forms that are not ISO: words for months, days
    (ignored), AM/PM and zones; `h:mm[:ss[.fff]]`; `+hhmm`/`+hh:mm` after a time or a zone; dates as
    `Y-M-D`, `Y/M/D` (a year first: more than two digits), else `M/D/Y`, or with a month's name in any
    place; parenthesized comments skipped; without a zone, local time. None for anything else (V8 reads
    a few more forms; those are refused, never misread)."""
    tokens = [token for token in _TOKEN.findall(text) if not token.startswith("(")]
    numbers: list[str] = []
    month: int | None = None
    clock: list[int] | None = None
    meridiem: str | None = None
    offset_minutes: int | None = None
    after_clock = False  # the last token read was the time (a `.` then starts its milliseconds)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        lower = token.lower()
        index += 1
        if token.strip(" \t\n\r\f\v,") == "":
            after_clock = False
            continue
        if token.isascii() and token.isdigit():
            if index < len(tokens) and tokens[index] == ":" and clock is None:
                parts, index = _clock(tokens, index - 1)
                if parts is None:
                    return None
                clock, after_clock = parts, True
                continue
            numbers.append(token)
            after_clock = False
            continue
        if token == "." and after_clock:
            return None  # `10:00:00.Z`: a time's `.` needs its milliseconds
        after_clock = False
        if token.isascii() and token.isalpha():
            if lower in ("am", "pm") and clock is not None and meridiem is None:
                if index >= 3 and tokens[index - 2].isdigit() and tokens[index - 3] == ":":
                    return None  # glued to the minutes or seconds (`10:00PM`): V8 takes it after milliseconds only
                meridiem = lower
            elif lower in _ZONES and offset_minutes is None and (numbers or clock):  # V8: a zone after a number
                offset_minutes = _ZONES[lower] * 60
            elif len(lower) >= 3 and lower[:3] in _MONTHS and month is None:
                month = _MONTHS.index(lower[:3]) + 1
            elif not ((len(lower) >= 3 and lower[:3] in _DAYS) or not (numbers or clock or month)):
                return None  # a weekday, or any word before the date, is skipped
            elif index < len(tokens) and tokens[index].isascii() and tokens[index].isdigit():
                return None  # but not one glued to the first number (`M12`, `T12/31/2026`, `UTC12/02/2026`)
            continue
        if token in "+-" and (clock is not None or offset_minutes == 0) and index < len(tokens) \
                and tokens[index].isdigit() and tokens[index].isascii():
            zone, index = _zone(tokens, index)
            if zone is None:
                return None
            offset_minutes = (offset_minutes or 0) + (zone if token == "+" else -zone)
            continue
        if token in "/-." or (token == "+" and not numbers and clock is None):
            continue  # date separators, and a sign before the first number
        return None
    return _compose(numbers, month, clock, meridiem, offset_minutes)


def _clock(tokens: list[str], index: int) -> tuple[list[int] | None, int]:
    """`h:mm[:ss[.fff]]` from tokens[index]; ([h, m, s, ms], the index after it)."""
    parts = [int(tokens[index])]
    index += 1
    while index + 1 < len(tokens) and tokens[index] == ":" and tokens[index + 1].isdigit() and len(parts) < 3:
        parts.append(int(tokens[index + 1]))
        index += 2
    millis = 0
    if len(parts) == 3 and index + 1 < len(tokens) and tokens[index] == "." and tokens[index + 1].isdigit():
        millis = int(tokens[index + 1][:3].ljust(3, "0"))
        index += 2
    if len(parts) < 2:
        return None, index
    hour, minute, second = parts[0], parts[1], parts[2] if len(parts) > 2 else 0
    if hour > 24 or minute > 59 or second > 59:
        return None, index
    return [hour, minute, second, millis], index


def _zone(tokens: list[str], index: int) -> tuple[int | None, int]:
    """Minutes of `hh`, `hhmm` or `hh:mm` at tokens[index]; (minutes, the index after it)."""
    digits = tokens[index]
    index += 1
    if index + 1 < len(tokens) and tokens[index] == ":" and tokens[index + 1].isdigit():
        hours, minutes = int(digits), int(tokens[index + 1])
        index += 2
    elif len(digits) <= 2:
        hours, minutes = int(digits), 0
    elif len(digits) == 4:
        hours, minutes = int(digits[:2]), int(digits[2:])
    else:
        return None, index
    if hours > 23 or minutes > 59:
        return None, index
    return hours * 60 + minutes, index


def _compose(numbers: list[str], month: int | None, clock: list[int] | None, meridiem: str | None,
             offset_minutes: int | None) -> float | None:
    """The time value of the parts read, or None when they make no date."""
    def year_like(number: str) -> bool:  # by value, as V8's IsDay: `0026/12/31` is M/D/Y (and no date); 0 is no
        return int(number) > 31 or int(number) == 0  # month or day: V8 reads it as the year 2000

    # V8's defaults where a part is missing: day 1, and the year 2001 (not the current one)
    if month is not None:
        if len(numbers) == 1:
            year_text, day = (numbers[0], 1) if year_like(numbers[0]) else ("2001", int(numbers[0]))
        elif len(numbers) == 2:
            one, other = numbers
            year_text, day = (one, int(other)) if year_like(one) else (other, int(one))
        else:
            return None
    elif len(numbers) == 3:
        if year_like(numbers[0]):
            year_text, month, day = numbers[0], int(numbers[1]), int(numbers[2])
        else:
            month, day, year_text = int(numbers[0]), int(numbers[1]), numbers[2]
    elif len(numbers) == 2:
        if year_like(numbers[0]):
            year_text, month, day = numbers[0], int(numbers[1]), 1
        else:
            month, day, year_text = int(numbers[0]), int(numbers[1]), "2001"
    elif len(numbers) == 1:
        if year_like(numbers[0]):
            year_text, month, day = numbers[0], 1, 1
        else:
            month, day, year_text = int(numbers[0]), 1, "2001"
    else:
        return None
    year = int(year_text)
    if year < 100:  # by value, however many digits: `Dec 31, 0026` is 2026 to V8
        year += 2000 if year < 50 else 1900
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    hour, minute, second, millis = clock or [0, 0, 0, 0]
    if meridiem is not None:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    elif hour == 24 and (minute, second, millis) != (0, 0, 0):
        return None
    return _time_value(year, month, day, (hour, minute, second, millis), offset_minutes)


def list_contexts(args: Args, project: str | None) -> dict[str, Any]:
    """Every folder of C with `ctx_*.md` archives (recent ones since --since), as JSON or a table."""
    base = c.contexts_root()
    if not os.path.isdir(base):
        return {"ok": True, "action": "list-contexts", "exists": False, "projects": []}
    since_text = args.get("since")
    since = None
    if since_text is not None:
        since = parse_since(since_text)
        if since is None:
            return {"ok": False, "action": "list-contexts", "error": "invalid_since_iso", "since": since_text}
    projects: list[dict[str, Any]] = []
    for name in sorted(os.listdir(base)):
        folder = os.path.join(base, name)
        if not os.path.isdir(folder):
            continue
        stats = []
        for entry in os.listdir(folder):
            if entry.startswith("ctx_") and entry.endswith(".md"):
                try:
                    stats.append(os.stat(os.path.join(folder, entry)))
                except OSError:
                    continue
        # in milliseconds as Node compares them: mtimeMs >= Date.parse(T)
        recent = [stat for stat in stats if since is None or c.mtime_ms(stat) >= round(since * 1000)]
        if recent:
            projects.append({"project": name, "total_archives": len(stats), "recent_archives": len(recent),
                             "last_mtime": c.iso_of_ms(max(c.mtime_ms(stat) for stat in stats))})
    projects.sort(key=lambda item: str(item["last_mtime"]), reverse=True)
    if args.get("format") == "table":
        rows = ["project\tarchives\tlast_archive",
                *(f"{p['project']}\t{p['total_archives']}\t{p['last_mtime']}" for p in projects)]
        return {"ok": True, "action": "list-contexts", "format": "table", "table": "\n".join(rows),
                "count": len(projects)}
    return {"ok": True, "action": "list-contexts", "format": "json", "projects": projects, "count": len(projects)}
