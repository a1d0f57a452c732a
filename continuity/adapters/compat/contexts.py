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
    ms = ((_days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    zone = found["zone"]
    if zone == "Z" or (zone is None and found["hour"] is None):
        offset_ms = 0
    elif zone is not None:
        zone_hours, zone_minutes = int(zone[1:3]), int(zone[4:6])
        if zone_hours > 23 or zone_minutes > 59:
            return None
        offset_ms = (zone_hours * 60 + zone_minutes) * 60_000 * (1 if zone[0] == "+" else -1)
    else:  # local time: the offset in force then; a time a change skips or repeats takes the offset before it
        local = ms / 1000
        widest = max(_local_offset(local + shift) for shift in (-86_400, 0, 86_400))
        offset_ms = _local_offset(local - widest) * 1000
    ms -= offset_ms
    return ms if abs(ms) <= _MAX_MS else None


def parse_since(text: str) -> float | None:
    """`Date.parse(text)` in seconds: the ISO format (a date is UTC midnight, a date-time without offset local
    time), else RFC 2822; None when neither reads it."""
    found = _ISO.match(text)
    if found:
        ms = _parse_iso(found)
        return None if ms is None else ms / 1000
    try:
        from email.utils import parsedate_to_datetime

        return parsedate_to_datetime(text).timestamp()
    except (ValueError, TypeError, IndexError, OverflowError):
        return None


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
