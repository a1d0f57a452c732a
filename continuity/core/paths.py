"""Store-relative paths that outputs and archives cite (one place builds each)."""

from __future__ import annotations

import os

from events import names

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain path imports this module without `typing`
    from typing import Final

    from continuity.core.store import Store

#: The store's folder relative to the project root.
STORE_REL = ".agent/runtime-continuity"
#: Seed 002's folder in the project (the user writes there too).
BRIDGE_REL = ".ai-bridge"
#: The resume contract continuity writes there (continuity/workstreams/files.py).
RUNTIME_JSON = f"{BRIDGE_REL}/context-runtime.json"
RUNTIME_MD = f"{BRIDGE_REL}/context-runtime.md"
#: `work export`'s default folder and the two files it writes (continuity/sync/transfer.py), beside a .gitignore.
TRANSFER_REL = f"{BRIDGE_REL}/context-transfer"
TRANSFER_BUNDLE: Final = "context.bundle"
TRANSFER_MANIFEST = "manifest.json"


def event_relpath(name: str) -> str:
    """The project-relative path of an event file, as outputs and archives cite it."""
    return f"{STORE_REL}/events/{names.shard_of(name)}/{name}"


def archive_relpath(archive_id: str) -> str:
    """The project-relative path of an archive's JSON file."""
    return f"{STORE_REL}/archives/{archive_id}.json"


def run_relpath(run_id: str) -> str:
    """The project-relative path of a harness run file."""
    return f".agent/runs/{run_id}.json"


LATEST_ARCHIVE_REL = f"{STORE_REL}/archives/latest.json"
#: The link to a project's newest Markdown archive, in its contexts folder (readside/writers.py's `link_latest`).
LATEST_LINK = "latest.md"

#: The recall index's file in the store's `local/` folder (continuity/recall/index.py).
RECALL_INDEX_NAME = "recall.sqlite3"

#: Seed 004's fixed read-first list (its archives and resume bundles, contract §9 and §12).
SEED_READ_FIRST = ("AGENTS.md", ".agent/rules/core-principles.md", ".agent/rules/ai-behavior.md",
                   ".agent/rules/code-standards.md", LATEST_ARCHIVE_REL)
#: N of the contract (§18): the launcher command line seed 004's outputs recommend.
SEED_COMMAND = "node .agent/skills/runtime-continuity/scripts/index.js"


def contexts_dir(store: Store) -> str:
    """Where user-level Markdown archives go: CONTINUITY_CONTEXTS_DIR, `contexts_dir` in config.json, or
    ~/.agent/contexts.

    A relative `contexts_dir` (or CONTINUITY_CONTEXTS_DIR) is taken from the project root, as every path in a
    project's config is: taken from the working directory, each command run from another folder would write
    elsewhere (and a `restore` from another folder look elsewhere).
    """
    configured = os.environ.get("CONTINUITY_CONTEXTS_DIR")
    if configured and "\x00" not in configured:
        return os.path.abspath(os.path.join(store.root, _expand(configured)))
    configured = store.config.get("contexts_dir")
    if isinstance(configured, str) and configured and "\x00" not in configured:  # no path holds a NUL: the default
        return os.path.abspath(os.path.join(store.root, _expand(configured)))
    return default_contexts()


def default_contexts() -> str:
    """Where the Markdown archives go when nothing else is configured: `~/.agent/contexts`."""
    return os.path.join(user_home(), ".agent", "contexts")


def user_home() -> str:
    """$HOME when it is an absolute path, else the account's home folder.

    Python reads an empty HOME as `/` and a relative one from the working directory: a hook
    started with such an environment would write the Markdown archives there.
    """
    given = os.environ.get("HOME", "")
    if os.path.isabs(given):
        return given
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # no account entry (a container's made-up uid): where Python would have looked
        return os.path.expanduser("~")


def _expand(path: str) -> str:
    """`~` and `~/...` from `user_home()`; `~user/...` as the system says."""
    if path == "~" or path.startswith("~/"):
        return user_home() + path[1:]
    return os.path.expanduser(path)
