"""`state.json`: seed 004's store state (contract I14), the same for `continuity` and `runtime-continuity`.

`{project, latest_event, latest_archive, latest_markdown_archive, updated_at}` of the
newest event in the log. It is a projection: the catch-up writes it from the read models
(writers.py), and `runtime-continuity log` writes the same bytes at once after its append
so that seed-004 callers see it current without a catch-up on the hook path.
"""

from __future__ import annotations

import os
from typing import Any

from continuity.core.fsio import pretty_json, write_if_changed
from continuity.core.paths import archive_relpath, event_relpath

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


def write_seed_state(store_path: str, document: dict[str, Any]) -> None:
    """Write state.json inside the store (only when its bytes change)."""
    write_if_changed(os.path.join(store_path, STATE_NAME), pretty_json(document), within=store_path)
