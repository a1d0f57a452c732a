"""The harness's own files that seed 004's CLI writes besides the store (contract §10, §16).

- `.agent/runs/<run>.json`: each write appends a run event to the active run, keeping the
  last 200. A shadow: any failure is skipped silently and never changes the exit code.
  Concurrent writers take an `flock` on the runs folder, so none loses another's event.
- `.agent/sessions/S-*.json`: host-switch records the host work moved to.
"""

from __future__ import annotations

import os
from typing import Any

from continuity.adapters.compat.common import dump_json as _dump
from continuity.adapters.compat.common import truthy
from continuity.adapters.compat.listings import active_run, names_project
from continuity.core.fsio import read_json, write_atomic

RUN_EVENTS_KEPT = 200


def run_id_of(root: str) -> str | None:
    """The active run's id (its file name without `.json`)."""
    from continuity.adapters.compat.common import shown

    path = active_run(root)
    return shown(os.path.basename(path)[:-5]) if path else None


def mirror_run_event(root: str, at: str, fields: dict[str, Any]) -> bool:
    """Append `{**fields, at}` to the active run under a lock; whether it was (failures are silent)."""
    from events import osfs

    try:
        with osfs.folder_lock(os.path.join(root, ".agent", "runs")):
            path = active_run(root)
            if path is None:
                return False
            data = read_json(path, within=root)
            if not isinstance(data, dict):
                return False
            events = data.get("events")
            events = list(events) if isinstance(events, list) else []
            event = {**fields, "at": at}
            events.append(event)
            data["events"] = events[-RUN_EVENTS_KEPT:]
            data["last_event"] = event
            data["updated_at"] = at
            write_atomic(path, _dump(data) + b"\n", durable=False, keep_mode=True)
            return True
    except (OSError, ValueError):
        return False


def record_switch(root: str, project: str, to_host: str, at: str, stamp: str) -> object:
    """The session a host switch updates (first running/paused one of P) or creates; its `session_id` as the
    file holds it when truthy (any JSON value), else the id a new one would have, as the original answers."""
    from continuity.core.fsio import ensure_folder
    from events.errors import StoreUnsafe

    folder = os.path.join(root, ".agent", "sessions")
    try:  # real folders of the project only: a session file is never written through a link out of it
        ensure_folder(root, folder)
    except StoreUnsafe as error:
        raise ValueError(str(error).replace("unsafe store: ", "").replace(" (nothing written)", "")) from None
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("S-") and name.endswith(".json")):
            continue
        path = os.path.join(folder, name)
        data = read_json(path, within=root)
        if not isinstance(data, dict):
            continue
        if names_project(data, project) and data.get("status") in ("running", "paused"):
            data["last_host"] = to_host
            data["last_switch_at"] = at
            write_atomic(path, _dump(data), durable=False, keep_mode=True, within=root)
            found = data.get("session_id")
            return found if truthy(found) else f"S-{project}-{stamp}"  # the original's `body.session_id || sessionId`
    session_id = f"S-{project}-{stamp}"
    data = {"session_id": session_id, "project": project, "status": "running", "started_at": at,
            "last_host": to_host, "last_switch_at": at}
    write_atomic(os.path.join(folder, f"{session_id}.json"), _dump(data), durable=False, within=root)
    return session_id

