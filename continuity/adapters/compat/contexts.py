"""`list-contexts` (§7): the projects with Markdown archives under C, most recently archived first."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from typing import Any

from continuity.adapters.compat import common as c
from continuity.adapters.compat.args import Args

_DATE = re.compile(r"^[+-]?[0-9]{4,6}(-[0-9]{2}(-[0-9]{2})?)?\Z")
_DATE_TIME = re.compile(
    r"^[+-]?[0-9]{4,6}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})?\Z")


def parse_since(text: str) -> float | None:
    """`Date.parse(text)` in seconds: ISO date = UTC midnight, date-time without offset = local, RFC 2822."""
    try:
        if _DATE.match(text):
            parts = [int(part) for part in text.lstrip("+").split("-")] + [1, 1]
            return datetime(parts[0], parts[1], parts[2], tzinfo=UTC).timestamp()
        if _DATE_TIME.match(text):
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            return moment.timestamp()  # naive: local time, as JavaScript reads it
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
        mtimes = []
        for entry in os.listdir(folder):
            if entry.startswith("ctx_") and entry.endswith(".md"):
                try:
                    mtimes.append(os.stat(os.path.join(folder, entry)).st_mtime_ns)
                except OSError:
                    continue
        recent = [mtime for mtime in mtimes if since is None or mtime / 1e9 >= since]
        if recent:
            projects.append({"project": name, "total_archives": len(mtimes), "recent_archives": len(recent),
                             "last_mtime": c.iso_of_us(max(mtimes) // 1000)})
    projects.sort(key=lambda item: str(item["last_mtime"]), reverse=True)
    if args.get("format") == "table":
        rows = ["project\tarchives\tlast_archive",
                *(f"{p['project']}\t{p['total_archives']}\t{p['last_mtime']}" for p in projects)]
        return {"ok": True, "action": "list-contexts", "format": "table", "table": "\n".join(rows),
                "count": len(projects)}
    return {"ok": True, "action": "list-contexts", "format": "json", "projects": projects, "count": len(projects)}
