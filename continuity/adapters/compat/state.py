"""state.json after a `runtime-continuity log` or `checkpoint` (§15, I14), without a catch-up."""

from __future__ import annotations

import os
from typing import Any

from continuity.adapters.compat.common import contexts_root
from continuity.core.fsio import DOCUMENT_LOCK_SECONDS, folder_locked
from continuity.core.paths import LATEST_LINK
from continuity.readside.seedstate import seed_state, write_seed_state


def newest_archive_id(store_path: str) -> str | None:
    """The newest `RC-*.json` of the store (names sort by time)."""
    try:
        names = [name for name in os.listdir(os.path.join(store_path, "archives"))
                 if name.startswith("RC-") and name.endswith(".json")]
    except OSError:
        return None
    return max(names)[:-5] if names else None


#: How many archive documents, newest first, `_has_archive` reads for the project's own (a store of one project:
#: the first); past them, in a store of many projects' archives, a `latest.md` for the project answers.
ARCHIVES_READ = 2000


def _has_archive(store_path: str, project: str, markdown: str) -> bool:
    """Whether this store holds an archive of `project` (its `archives/RC-*.json`, newest first), as the projection's
    `latest_markdown_archive` asks: another store's `latest.md` in the contexts folder is not this store's."""
    import json

    from events.osfs import read_regular

    try:
        found = sorted((name for name in os.listdir(os.path.join(store_path, "archives"))
                        if name.startswith("RC-") and name.endswith(".json")), reverse=True)
    except OSError:
        return False
    for name in found[:ARCHIVES_READ]:
        try:
            document = json.loads(read_regular(os.path.join(store_path, "archives", name), follow=False,
                                               limit=1 << 20))
        except (OSError, ValueError, RecursionError):  # not an archive of ours (a file put there): the next one
            continue
        if isinstance(document, dict) and document.get("project") == project:
            return True
    return len(found) > ARCHIVES_READ and os.path.lexists(markdown)


def write_state(store: Any, name: str, event: Any) -> None:
    """state.json as the projection would write it after this event (a shadow: failures are ignored)."""
    markdown = os.path.join(contexts_root(), event.project, LATEST_LINK)
    document = seed_state(project=event.project, last_name=name, created_at=event.created_at,
                          newest_archive_id=newest_archive_id(store.path),
                          markdown=markdown if _has_archive(store.path, event.project, markdown) else None)
    try:
        with folder_locked(store.path, DOCUMENT_LOCK_SECONDS) as held:  # a catch-up writing it holds this lock
            write_seed_state(store.path, document, newer_only=True, swap=held)
    except OSError:
        return
