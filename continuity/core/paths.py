"""Store-relative paths that outputs and archives cite (one place builds each)."""

from __future__ import annotations

from events import names

#: The store's folder relative to the project root.
STORE_REL = ".agent/runtime-continuity"


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
