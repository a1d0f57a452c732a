"""`state.json`: seed 004's store state (contract I14), the same for `continuity` and `runtime-continuity`.

`{project, latest_event, latest_archive, latest_markdown_archive, updated_at}` of the
newest event in the log. It is a projection: the catch-up writes it from the read models
(writers.py), and `runtime-continuity log` writes the same bytes at once after its append
so that seed-004 callers see it current without a catch-up on the hook path.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from continuity.core.fsio import JSON_LIMIT, pretty_json, write_if_changed, write_if_differs
from continuity.core.paths import archive_relpath, event_relpath
from events import lazyre, names, osfs

STATE_NAME = "state.json"


def seed_state(*, project: str | None, last_name: str | None, created_at: str | None,
               newest_archive_id: str | None, markdown: str | None) -> dict[str, Any]:
    """The document: the newest event's project and path, the newest archive, P's latest.md (or null)."""
    return {
        "project": project,
        "latest_event": event_relpath(last_name) if last_name else None,
        "latest_archive": archive_relpath(newest_archive_id) if newest_archive_id else None,
        "latest_markdown_archive": markdown,
        "updated_at": created_at[:23] + "Z" if created_at and len(created_at) > 24 else created_at,
    }


def write_seed_state(store_path: str, document: dict[str, Any], *, newer_only: bool = False,
                     swap: bool = False) -> None:
    """Write state.json inside the store (only when its bytes change).

    `newer_only`: never back. The caller holds the lock on the store folder (fsio.folder_locked).
    The newest event and the newest archive are each kept from the file when it names a newer
    one: a `runtime-continuity log` and a catch-up running at once each write what they know,
    and the one that knows less may finish last. `swap`: see fsio.write_swapped.
    """
    path = os.path.join(store_path, STATE_NAME)
    if not newer_only:
        write_if_changed(path, pretty_json(document), within=store_path, swap=swap)
        return
    try:  # read once, for both the comparison and the newer fields; a link there is not followed (nor read)
        current = osfs.read_regular(path, follow=False, limit=JSON_LIMIT)
    except OSError:
        current = None
    try:
        found = msgspec.json.decode(current) if current is not None else None
    except (msgspec.DecodeError, RecursionError):
        found = None
    write_if_differs(path, pretty_json(newest_of(found, document)), current, within=store_path, swap=swap)


#: The fields that go with `latest_event`: they describe the newest event.
_EVENT_FIELDS = ("project", "latest_event", "latest_markdown_archive", "updated_at")


def newest_of(current: Any, document: dict[str, Any]) -> dict[str, Any]:
    """`document` with the newer event (and its fields) and the newer archive of the two documents.

    A field `current` does not hold as ours (another shape, a foreign path) is not compared.
    """
    if not isinstance(current, dict):
        return document
    merged = dict(document)
    theirs, ours = _event_name(current.get("latest_event")), _event_name(document.get("latest_event"))
    if theirs is not None and (ours is None or theirs > ours):
        merged.update({field: current.get(field) for field in _EVENT_FIELDS})
    theirs, ours = _archive_id(current.get("latest_archive")), _archive_id(document.get("latest_archive"))
    if theirs is not None and (ours is None or theirs > ours):
        merged["latest_archive"] = current["latest_archive"]
    return merged


def _event_name(path: object) -> str | None:
    """The event file name a `latest_event` path ends in, when it is one of ours."""
    if not isinstance(path, str) or not path.startswith(EVENTS_REL):
        return None
    name = path.rsplit("/", 1)[-1]
    return name if names.parse_name(name) is not None and path == event_relpath(name) else None


def _archive_id(path: object) -> str | None:
    """The archive id a `latest_archive` path names, when it is one of ours."""
    if not isinstance(path, str) or not path.startswith(ARCHIVES_REL) or not path.endswith(".json"):
        return None
    archive_id = path[len(ARCHIVES_REL):-5]
    return archive_id if _ARCHIVE_ID().match(archive_id) and path == archive_relpath(archive_id) else None


EVENTS_REL = event_relpath("x").rsplit("/", 2)[0] + "/"
ARCHIVES_REL = archive_relpath("x").rsplit("/", 1)[0] + "/"
_ARCHIVE_ID = lazyre.pattern(rf"RC-{names.STAMP}(?:-{names.NODE})?\Z")
