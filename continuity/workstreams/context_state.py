"""The context's freshness state (seed 002's states), from local facts only: no fetch, no network.

- `OFFLINE_IMPORTED_CONTEXT`: the store was brought in by `work import` and not reconnected yet;
- `DIVERGED_LOCAL_CONTEXT`: the continuity branch and the remote's last fetched branch both advanced;
- `DIRTY_LOCAL_CONTEXT`: events of this clone not yet pushed (`continuity sync` carries them);
- `STALE_LOCAL_CONTEXT`: the last fetch brought commits the branch has not taken in yet;
- `CURRENT_OR_FETCHED`: none of these (as of the last fetch: status never fetches).

The refs are read from git's files (loose, then packed-refs), so status costs no git process
unless the two refs differ (then `merge-base --is-ancestor` decides).
"""

from __future__ import annotations

import os

import msgspec

from continuity.core.store import Store
from events import osfs

STATES = ("OFFLINE_IMPORTED_CONTEXT", "DIVERGED_LOCAL_CONTEXT", "DIRTY_LOCAL_CONTEXT", "STALE_LOCAL_CONTEXT",
          "CURRENT_OR_FETCHED")


class ContextFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the state is decided from."""

    offline: bool = False
    local_tip: str | None = None
    remote_tip: str | None = None
    local_behind: bool = False  # the branch is an ancestor of the fetched remote branch
    remote_behind: bool = False  # the fetched remote branch is an ancestor of the branch
    waiting: bool = False  # some event of this clone is not pushed yet


def decide_state(facts: ContextFacts) -> str:
    """The one state that describes the facts, most pressing first."""
    if facts.offline:
        return "OFFLINE_IMPORTED_CONTEXT"
    tips_differ = facts.local_tip is not None and facts.remote_tip is not None and facts.local_tip != facts.remote_tip
    if tips_differ and not facts.local_behind and not facts.remote_behind:
        return "DIVERGED_LOCAL_CONTEXT"
    if facts.waiting:
        return "DIRTY_LOCAL_CONTEXT"
    if tips_differ and facts.local_behind:
        return "STALE_LOCAL_CONTEXT"
    return "CURRENT_OR_FETCHED"


def git_dirs(top: str) -> tuple[str, str] | None:
    """(the worktree's git folder, the common git folder) of the work tree at `top`, from files only."""
    dot = os.path.join(top, ".git")
    if os.path.isdir(dot):
        return dot, dot
    # git's pointer files are read as regular files within a bound: a FIFO or a huge file there is no git folder
    try:
        text = osfs.read_regular(dot, limit=osfs.SMALL_LIMIT).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = os.path.normpath(os.path.join(top, text[len("gitdir:"):].strip()))
    common = git_dir
    try:
        raw = osfs.read_regular(os.path.join(git_dir, "commondir"), limit=osfs.SMALL_LIMIT)
        common = os.path.normpath(os.path.join(git_dir, raw.decode("utf-8").strip()))
    except (OSError, UnicodeDecodeError):
        pass
    return git_dir, common


def read_ref(common: str, ref: str) -> str | None:
    """The object id a ref names (a loose ref file, else packed-refs), or None."""
    try:
        value = osfs.read_regular(os.path.join(common, *ref.split("/")), limit=osfs.SMALL_LIMIT).decode("ascii").strip()
        if value and all(char in "0123456789abcdef" for char in value):
            return value
    except (OSError, UnicodeDecodeError):
        pass
    try:  # within read_regular's default bound (64 MiB: several hundred thousand refs)
        packed = osfs.read_regular(os.path.join(common, "packed-refs"))
    except OSError:
        return None
    for line in packed.decode("utf-8", "replace").split("\n"):
        oid, _, name = line.partition(" ")
        if name == ref:
            return oid
    return None


def observe_context(store: Store) -> ContextFacts:
    """Gather the facts for `decide_state` (fail open: what cannot be read counts as absent)."""
    import subprocess

    from continuity.facts import work_tree_root
    from continuity.sync import health

    offline = os.path.exists(health.offline_marker(store))
    from continuity.core.errors import UsageError
    from continuity.sync.settings import DEFAULT_BRANCH, DEFAULT_REMOTE, branch_of, located, located_key, remote_of

    # a value sync would refuse names no ref here: the state is decided with the default
    try:
        branch = branch_of(store)
    except UsageError:
        branch = DEFAULT_BRANCH
    try:
        remote = remote_of(store)
    except UsageError:
        remote = DEFAULT_REMOTE
    local_tip = remote_tip = None
    top = work_tree_root(store.root)
    dirs = git_dirs(top) if top else None
    if top and dirs is not None:
        local_tip = read_ref(dirs[1], f"refs/heads/{branch}")
        remote_tip = read_ref(dirs[1], f"refs/remotes/{remote}/{branch}")
        if remote_tip is None and located(remote, top):  # a URL or a path: sync's private ref for it
            remote_tip = read_ref(dirs[1], f"refs/continuity/{located_key(remote)}/{branch}")
    local_behind = remote_behind = False
    if top and local_tip and remote_tip and local_tip != remote_tip:
        def ancestor(old: str, new: str) -> bool:
            try:
                from continuity.facts import git_environ

                return subprocess.run(["git", "-C", top, "merge-base", "--is-ancestor", old, new],
                                      capture_output=True, timeout=60, env=git_environ()).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                return False
        local_behind = ancestor(local_tip, remote_tip)
        remote_behind = not local_behind and ancestor(remote_tip, local_tip)
    node = health.read_node(store)
    state = health.load(store)
    pending = health.waiting(store, node, state.pushed_through if state else None) if node else iter(())
    waiting = next(pending, None) is not None  # whether any waits: counting read a never-synced clone's whole log
    return ContextFacts(offline=offline, local_tip=local_tip, remote_tip=remote_tip, local_behind=local_behind,
                        remote_behind=remote_behind, waiting=waiting)
