"""Store-relative paths that outputs and archives cite (one place builds each)."""

from __future__ import annotations

from events import names

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain path imports this module without `typing`
    from typing import Final

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
