"""Automatic sync after an archive, a session end or a park (config `sync_after`), never blocking the agent.

The sync runs as a detached process: the command that triggered it returns at once.
Its outcome goes to `local/sync.log`; a failed automatic sync leaves the events safe in
the store for the next sync, by hand or automatic. The log holds only what `continuity sync`
prints, and that never repeats a remote's credentials (credentials.py).
"""

from __future__ import annotations

import os

from continuity.core.store import Store
from events import osfs

TRIGGERS = ("archive", "session_end", "park")


def wanted(store: Store, trigger: str) -> bool:
    """True when config.json's `sync_after` lists this trigger."""
    after = store.config.get("sync_after")
    return isinstance(after, list) and trigger in after


def start(store: Store, trigger: str) -> str | None:
    """Start a background `continuity sync` if configured; a one-line warning if it cannot start."""
    if not wanted(store, trigger):
        return None
    import subprocess  # here, not at the top: the SessionEnd hook's plain path asks `wanted` only

    from continuity.core.child import python_command

    log_path = os.path.join(store.local_dir, "sync.log")
    try:
        os.makedirs(store.local_dir, exist_ok=True)
        log = osfs.open_append(log_path)  # a FIFO planted there must not hang the hook that starts it
        try:
            command, env = python_command("continuity", "sync", "--root", store.root)  # never the project's code
            subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                             close_fds=True, env=env, cwd=store.root)
        finally:
            os.close(log)
    except OSError as error:
        return f"automatic sync not started ({error.strerror or error}); run `continuity sync` later"
    return None
