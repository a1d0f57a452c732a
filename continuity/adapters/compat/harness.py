"""The harness's own files that seed 004's CLI writes besides the log.

- `.agent/runs/<run>.json`: each write appends a run event to the newest running or queued
  run (a shadow: any failure here is a warning and never changes the exit code).
- `.agent/sessions/S-<project>-<stamp>.json`: host-switch records the host work moved to.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from continuity.core.fsio import read_json, write_atomic
from continuity.core.store import now_us
from events import clock

RUN_EVENTS_KEPT = 200
ACTIVE_RUN_STATUSES = ("running", "queued")


def write_json_atomic(path: str, data: dict[str, Any]) -> None:
    """Write a JSON file whole or not at all (the harness reads these files)."""
    write_atomic(path, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n", make_parents=True)


def active_run(root: str) -> tuple[str, dict[str, Any]] | None:
    """The newest run file under `<root>/.agent/runs/` whose status is running or queued."""
    folder = os.path.join(root, ".agent", "runs")
    try:
        entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".json") and entry.is_file()]
    except OSError:
        return None
    entries.sort(key=lambda entry: (-entry.stat().st_mtime_ns, entry.name))
    for entry in entries:
        data = read_json(entry.path)
        if isinstance(data, dict) and data.get("status") in ACTIVE_RUN_STATUSES:
            return entry.path, data
    return None


def mirror_run_event(root: str, kind: str, **fields: Any) -> None:
    """Append `{type: kind, created_at, **fields}` to the active run file, keeping the last 200."""
    try:
        found = active_run(root)
        if found is None:
            return
        path, data = found
        events = data.get("events", [])
        if not isinstance(events, list):
            raise ValueError("its `events` is not a list")
        events.append({"type": kind, "created_at": clock.iso(now_us()), **fields})
        data["events"] = events[-RUN_EVENTS_KEPT:]
        write_json_atomic(path, data)
    except Exception as error:  # a shadow write: report it, never fail the command
        from continuity.adapters.compat.common import warn

        warn([f"run event not mirrored ({type(error).__name__}: {error})"])


def write_session_file(root: str, project: str, stamp: str, content: dict[str, Any]) -> dict[str, Any]:
    """Write `.agent/sessions/S-<project>-<stamp>.json`; returns what was written and its path."""
    session_id = f"S-{project}-{stamp}"
    path = os.path.join(root, ".agent", "sessions", f"{session_id}.json")
    data = {"session_id": session_id, "project": project, **content}
    write_json_atomic(path, data)
    return {"path": path, **data}
