"""Which branch and remote a store syncs with: the flag, config.json, else the defaults.

Kept apart from the engine so that what only asks (status, sync health, the workstream
state) does not load the sync machinery.
"""

from __future__ import annotations

import re

from continuity.core.errors import UsageError
from continuity.core.store import Store
from continuity.sync.credentials import mask_url

DEFAULT_BRANCH = "continuity"
DEFAULT_REMOTE = "origin"
LAYOUTS = ("delta", "full")  # what a commit's tree holds (sync/tree.py); the first is the default
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def branch_of(store: Store, override: str | None = None) -> str:
    """The continuity branch's name: the flag, `sync_branch` in config.json, else `continuity`."""
    name = _setting(store, "sync_branch", override, DEFAULT_BRANCH)
    # git's ref-name rules (no part ending in `.` or `.lock`), and not `HEAD`: refs/heads/HEAD makes the name
    # ambiguous in every git command, and its tracking ref would be the remote's default-branch link
    # Nor a name git reads as another ref first or as well: git's own pseudo-refs (`FETCH_HEAD`, ...), and
    # `refs/...`, `heads/...`, `tags/...`, `remotes/...`.
    if (not isinstance(name, str) or not _BRANCH.fullmatch(name) or ".." in name or name in PSEUDO_REFS
            or ("/" in name and name.split("/")[0] in _REF_FOLDERS)
            or any(part.endswith((".", ".lock")) for part in name.split("/"))):
        raise UsageError(f"invalid sync branch name {name!r}: use letters, digits and ._-/ (no part ending in "
                         "`.` or `.lock`, not HEAD or another of git's pseudo-refs, not starting with refs/, "
                         "heads/, tags/ or remotes/)")
    return name


#: The names git reads in the repository's own folder before any branch (gitrevisions(7)).
PSEUDO_REFS = frozenset({"HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD",
                         "BISECT_HEAD", "REBASE_HEAD", "AUTO_MERGE"})
_REF_FOLDERS = frozenset({"refs", "heads", "tags", "remotes"})


def shadowing(branch: str, remote: str) -> str:
    """The refusal of a branch named after a remote's tracking ref."""
    return (f"sync branch {branch!r} would shadow refs/remotes/{branch} (git reads refs/heads/{branch} first for "
            f"{branch!r}): name it without the remote {remote!r} in front")


def shadowed_remote(branch: str, remotes: list[str]) -> str | None:
    """The remote whose tracking refs `branch` would shadow (`origin/main`: refs/heads/origin/main is what git
    reads for `origin/main` before refs/remotes/origin/main), or None."""
    first = branch.split("/")[0]
    return first if "/" in branch and first in remotes else None


def located(remote: str, root: str) -> bool:
    """Whether a remote that names no git remote is a URL or a path (as clone-store records one; a relative path is
    read from the work tree's root, where git runs)."""
    import os

    return "/" in remote or ":" in remote or os.path.isdir(os.path.join(root, remote))


def located_key(remote: str) -> str:
    """The name refs use for a remote given as a URL or a path: a digest of it (`refs/continuity/<key>/<branch>`)."""
    import hashlib

    return hashlib.sha1(remote.encode()).hexdigest()[:12]


def remote_of(store: Store, override: str | None = None) -> str:
    """The remote to sync with: the flag, `sync_remote` in config.json, else `origin`."""
    name = _setting(store, "sync_remote", override, DEFAULT_REMOTE)
    if not isinstance(name, str) or not name or name.startswith("-") or "\x00" in name:
        raise UsageError(f"invalid remote {mask_url(str(name))!r}")
    return name


def _setting(store: Store, key: str, override: str | None, default: str) -> object:
    """The flag, else config.json's value, else `default`: a value set to `""`, `false`, `0`, `[]` or `{}` is the
    caller's to refuse (it fell back to the default, syncing with a branch or remote nobody named); only a key absent
    or null takes the default."""
    if override is not None:
        return override
    value = store.config.get(key)
    return default if value is None else value


def layout_of(store: Store) -> str:
    """What the commits this clone writes hold: `sync_layout` in config.json when it is one of LAYOUTS, else
    `delta` (tree.py)."""
    value = store.config.get("sync_layout")
    return value if isinstance(value, str) and value in LAYOUTS else LAYOUTS[0]
