"""`list-contexts`: the projects with Markdown archives under the user-level contexts folder."""

from __future__ import annotations

import os
from typing import Any

from continuity.adapters.compat.args import Args
from continuity.adapters.compat.common import default_root, existing_store
from continuity.core.errors import UsageError
from continuity.core.store import Store, now_us
from continuity.readside.writers import contexts_dir
from events import clock

#: Without --since, "recent" means the last week.
RECENT_DAYS = 7


def _since_us(text: str | None) -> int:
    if text is None:
        return now_us() - RECENT_DAYS * 86_400_000_000
    try:
        return clock.parse_iso(text)
    except ValueError:
        raise UsageError(f"--since must be an ISO date or time, not {text!r}") from None


def _project_entry(path: str, name: str, since_us: int) -> dict[str, Any] | None:
    """One project's counts, or None when its folder holds no archive."""
    mtimes: dict[str, int] = {}
    try:
        for entry in os.scandir(path):
            if entry.name.startswith("ctx_") and entry.name.endswith(".md") and entry.is_file():
                mtimes[entry.name] = entry.stat().st_mtime_ns // 1000
    except OSError:
        return None
    if not mtimes:
        return None
    latest = max(mtimes)
    return {
        "project": name,
        "total_archives": len(mtimes),
        "recent_archives": sum(1 for mtime in mtimes.values() if mtime >= since_us),
        "latest": latest,
        "latest_mtime": clock.iso(mtimes[latest]),
        "path": path,
    }


def list_contexts(args: Args, project: str | None) -> dict[str, Any]:
    """Every project folder with ctx_ archives, newest first; --since keeps those active since then."""
    store = existing_store() or Store(default_root())
    base = contexts_dir(store)
    since_text = args.given("since")
    since_us = _since_us(since_text)
    projects = []
    try:
        folders = sorted(entry.name for entry in os.scandir(base) if entry.is_dir(follow_symlinks=False))
    except OSError:
        folders = []
    for name in folders:
        entry = _project_entry(os.path.join(base, name), name, since_us)
        if entry is not None and (since_text is None or entry["recent_archives"]):
            projects.append(entry)
    projects.sort(key=lambda item: item["latest_mtime"], reverse=True)
    result: dict[str, Any] = {"ok": True, "action": "list-contexts", "contexts_dir": base,
                              "since": clock.iso(since_us), "count": len(projects), "projects": projects}
    if args.given("format") == "table":
        rows = [f"{p['project']}\t{p['total_archives']}\t{p['recent_archives']}\t{p['latest_mtime']}"
                for p in projects]
        result |= {"format": "table", "table": "\n".join(["project\tarchives\trecent\tlatest", *rows])}
    return result
