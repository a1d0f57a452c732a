"""The listings of the contract (§4): JSON files, events, handoffs, artifact states, the active
run, the session of P, the Markdown and the structured archive of P. Relative paths, newest first.
"""

from __future__ import annotations

import os
import re
from typing import Any

from continuity.adapters.compat.common import contexts_root, mtime_ms, shown
from continuity.core.fsio import read_json
from continuity.core.paths import LATEST_LINK, STORE_REL


def _rel(root: str, path: str) -> str:
    """A listed path as the contract prints it (and an archive cites it): relative, `/`, bytes that are no UTF-8
    as U+FFFD, as Node lists them."""
    return shown(os.path.relpath(path, root).replace(os.sep, "/"))


def _newest(root: str, paths: list[str], count: int) -> list[str]:
    stamped = []
    for path in paths:
        try:
            stamped.append((-mtime_ms(os.stat(path)), os.path.basename(path), path))
        except OSError:
            continue
    stamped.sort()
    return [_rel(root, path) for _, _, path in stamped[:count]]


def json_listing(root: str, folder: str, count: int) -> list[str]:
    """JSON(dir, n): the newest n `*.json` files but `index.json` and `*.schema.json`."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    paths = [os.path.join(folder, name) for name in names
             if name.endswith(".json") and name != "index.json" and not name.endswith(".schema.json")]
    return _newest(root, [path for path in paths if os.path.isfile(path)], count)


#: The kinds of event seed 004's store held: its `log` and `checkpoint` events (§15).
WORK_KINDS = frozenset({"work.logged", "checkpoint.recorded"})
#: The most event files Events(n) reads looking for work events (the rest of the log is tasks,
#: team snapshots, archives...): a store whose newest thousands are other events lists fewer.
EVENTS_SCANNED = 2000


def event_listing(root: str, count: int) -> list[str]:
    """Events(n) in continuity's layout (I11): the newest n work events (log, checkpoint), in replay order,
    newest first.

    Seed 004's store held only those; continuity's log also holds archives, team snapshots, tasks
    and more, which would push the work log out of `runtime_events` and an archive's `latest_events`.
    """
    from continuity.core.store import now_us
    from events import names
    from events.durable import DurableFolder, list_days

    base = os.path.join(root, STORE_REL, "events")
    if not os.path.isfile(os.path.join(root, STORE_REL, "config.json")):  # not continuity's store (yet): the
        # original's, whose events the first write carries into the log (docs/compat.md); until then, §12 as it was
        return [path for path in json_listing(root, base, count) if path.endswith("-event.json")]
    folder = DurableFolder(base, os.path.join(root, STORE_REL, "local"))  # moves the first release's hour folders
    try:  # the log's own day folders: not a symlink (its events are not the log's), nor a file named like a day
        days = list_days(base)[::-1]
    except OSError:
        return []
    if days and days[0] > names.last_day(now_us()):  # events stamped early wait, as in continuity's own reads
        limit = folder.now_limit(now_us())
        days = [day for day in days if day <= limit]
    found: list[str] = []
    scanned = 0
    for day in days:
        try:
            files = sorted((name for name in folder.day_entries(os.path.join(base, day))
                            if names.parse_name(name) is not None), reverse=True)
        except OSError:
            continue
        for name in files:
            if len(found) >= count or scanned >= EVENTS_SCANNED:
                return found
            scanned += 1
            if _kind_of(os.path.join(base, day, name)) in WORK_KINDS:
                found.append(f"{STORE_REL}/events/{day}/{name}")
    return found


def _kind_of(path: str) -> object:
    """An event file's `kind` (None: unreadable, not an event object, or not a regular file)."""
    import json

    from events import osfs
    from events.plain_table import MAX_EVENT_BYTES

    try:
        value = json.loads(osfs.read_regular(path, follow=False, limit=MAX_EVENT_BYTES))
    except (OSError, ValueError, RecursionError):
        return None
    return value.get("kind") if isinstance(value, dict) else None


_HANDOFF = re.compile(r"^(H-|[0-9]{8})")  # ASCII digits, as JavaScript's `\d`


def handoff_listing(root: str, count: int) -> list[str]:
    """Handoffs(n): `.json`/`.md` files named `H-…` or starting with at least 8 digits."""
    folder = os.path.join(root, ".agent", "handoffs")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    paths = [os.path.join(folder, name) for name in names
             if name.endswith((".json", ".md")) and _HANDOFF.match(name)]
    return _newest(root, [path for path in paths if os.path.isfile(path)], count)


def artifact_listing(root: str, count: int) -> list[str]:
    """Artifacts(n): the existing `artifacts/*/state.json` files."""
    folder = os.path.join(root, ".agent", "artifacts")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    paths = [os.path.join(folder, name, "state.json") for name in names]
    return _newest(root, [path for path in paths if os.path.isfile(path)], count)


def active_run(root: str) -> str | None:
    """The active run's file: newest running/queued run, else the newest of any status."""
    folder = os.path.join(root, ".agent", "runs")
    try:
        names = [name for name in os.listdir(folder)
                 if name.endswith(".json") and name != "index.json" and not name.endswith(".schema.json")]
    except OSError:
        return None
    runs = []
    unread = object()
    for name in names:
        path = os.path.join(folder, name)
        data = read_json(path, within=root, unread=unread)
        try:  # §4: an unparseable file counts as mtime 0; JSON that is no object (`[]`, `null`) parses
            mtime = mtime_ms(os.stat(path)) if data is not unread else 0.0
        except OSError:
            continue
        runs.append((-mtime, name, path, data))
    runs.sort(key=lambda item: (item[0], item[1]))
    for _, _, path, data in runs:
        if isinstance(data, dict) and data.get("status") in ("running", "queued"):
            return path
    return runs[0][2] if runs else None


def names_project(session: dict[str, Any], project: str) -> bool:
    """§4: a session file is P's when its `project` is P or its `current_task_id` includes P (the original's
    `current_task_id?.includes?.(project)`: a text holding P, or a list with P as an element)."""
    if session.get("project") == project:
        return True
    task = session.get("current_task_id")
    return (isinstance(task, str) and project in task) or (isinstance(task, list) and project in task)


def session_of(root: str, project: str) -> str | None:
    """The session of P: the newest session file naming P; its `session_id`."""
    folder = os.path.join(root, ".agent", "sessions")
    for rel in json_listing(root, folder, 1_000_000):
        data = read_json(os.path.join(root, rel), within=root)
        if not isinstance(data, dict):
            continue
        if names_project(data, project):
            session = data.get("session_id")
            return session if isinstance(session, str) else None
    return None


def markdown_of(project: str) -> str | None:
    """The Markdown of P: `C/P/latest.md` (link followed), else the newest `ctx_*.md`."""
    folder = os.path.join(contexts_root(), project)
    latest = os.path.join(folder, LATEST_LINK)
    if os.path.exists(latest):
        return latest
    try:
        names = [name for name in os.listdir(folder) if name.startswith("ctx_") and name.endswith(".md")]
    except OSError:
        return None
    newest = _newest(folder, [os.path.join(folder, name) for name in names], 1)
    return os.path.join(folder, newest[0]) if newest else None


def archive_of(root: str, project: str) -> tuple[str, Any] | None:
    """The structured archive of P (I7): latest.json if it is P's, else P's newest `RC-*.json`."""
    folder = os.path.join(root, STORE_REL, "archives")
    latest = os.path.join(folder, "latest.json")
    data = _archive_json(folder, "latest.json")
    if isinstance(data, dict) and data.get("project") == project:
        return latest, data
    try:
        names = sorted((name for name in os.listdir(folder) if name.startswith("RC-") and name.endswith(".json")),
                       reverse=True)
    except OSError:
        return None
    for name in names:
        data = _archive_json(folder, name)
        if isinstance(data, dict) and data.get("project") == project:
            return os.path.join(folder, name), data
    return None


def _archive_json(folder: str, name: str) -> Any:
    """An archive JSON file's value; None when it is missing, not JSON, or unfit (a link out of the
    store, not a regular file, more than 4 MiB: `read_archive_file`)."""
    import msgspec

    from continuity.sessions.archives import read_archive_file

    try:  # decoded as read_json decodes
        return msgspec.json.decode(read_archive_file(folder, name)[1])
    except (OSError, msgspec.DecodeError, RecursionError):
        return None
