"""Git as the distributed engine: the continuity branch, `sync` and `clone-store`.

The history travels on its own branch (default `continuity`, `sync_branch` in config.json)
whose tree is `events/<YYYYMMDD>/<event file>`, the store's events folder byte for byte.
It is written only with plumbing (hash-object or fast-import, mktree, commit-tree,
update-ref with the expected old value), so the user's HEAD, index, working branch, work
tree and stash are never touched. Modules: `git` (running git), `objects` (many objects
through one process), `tree` (the branch's trees and their union), `files` (the store's
side), `engine` (the sync algorithm), `clone` (clone-store), `credentials` (remote URLs
that embed credentials: refused, warned about, masked), `auto` (the background sync),
`health` (what waits to be pushed, the last success and failure: `sync --status`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from continuity.sync.clone import clone_store
    from continuity.sync.engine import SyncReport, sync

__all__ = ["SyncReport", "clone_store", "sync"]


def __getattr__(name: str) -> Any:
    """Load `sync`, `SyncReport` and `clone_store` when first asked for: `health` alone (status) stays light."""
    if name == "clone_store":
        from continuity.sync.clone import clone_store

        return clone_store
    if name in ("sync", "SyncReport"):
        from continuity.sync import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
