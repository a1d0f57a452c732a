"""Memory synthesis (seed 003): the rules that turn task, run and session events into memories.

Pure functions over the `tasks` read model's state (projections/tasks.py calls them from
its folds): the same events in the same order give the same memories on every replica
and after every rebuild. At most one of task_outcome / blocker_resolution /
session_summary per run: the first in log order wins, the later ones are recorded as
skipped. A subagent run only ever yields a delegation_summary, filed under the topmost
primary run of its parent chain.
"""

import re
from collections.abc import Container
from typing import Any

import msgspec

from projections.common import append_bounded

SUMMARY_CHARS = 1500
DELEGATION_CHARS = 800
TRUNCATED = " […truncated]"
#: Parent-run steps a delegation walk takes before it gives up (nothing is written).
WALK_LIMIT = 20
MEMORIES_LIMIT = 200
SKIPPED_LIMIT = 50
#: Runs remembered as "already synthesized" (older entries are forgotten first).
SYNTHESIZED_LIMIT = 5000
#: Kinds of which a run gets at most one.
ONE_PER_RUN = ("task_outcome", "blocker_resolution", "session_summary")


class Memory(msgspec.Struct, kw_only=True):
    """A synthesized memory, seed 003's shape, plus the event it came from."""

    memory_id: str
    kind: str
    title: str
    summary: str
    task_id: str | None = None
    run_id: str | None = None
    files_touched: list[str] = msgspec.field(default_factory=list)
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)
    event_id: str = ""
    created_at: str = ""
    #: Its event's writer's clock, where the log's time had run ahead of it (projections.common.written_apart).
    written_at: str | msgspec.UnsetType = msgspec.UNSET


class Skipped(msgspec.Struct, kw_only=True):
    """A synthesis that lost (or did not apply): which run, which kind, why, and the event."""

    run_id: str | None
    kind: str
    reason: str
    event_id: str


class MemoryBook(msgspec.Struct, kw_only=True):
    """The memories of one project: the newest ones, the runs that have one, what was skipped."""

    memories: list[Memory] = msgspec.field(default_factory=list)
    synthesized: dict[str, str] = msgspec.field(default_factory=dict)
    skipped: list[Skipped] = msgspec.field(default_factory=list)
    total: int = 0
    #: A blocker_resolution's blocker (the blocking update's note) by memory id, kept to write its summary again
    #: when the run's output comes (the contract's provenance holds no such key); the newest MEMORIES_LIMIT.
    blockers: dict[str, str] = msgspec.field(default_factory=dict)


def capped(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, ending with the truncation marker when cut."""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATED)] + TRUNCATED


def memory_id_for(event_id: str, fallback: str) -> str:
    """The memory's id, derived from the event that made it (the same on every replica)."""
    source = event_id or fallback.removesuffix(".json")
    return "mem-" + source.removeprefix("RCE-")


def claim(book: MemoryBook, key: str, kind: str, event_id: str) -> bool:
    """Whether `key` (a run) may get a `kind` memory now; a loser is recorded as skipped."""
    winner = book.synthesized.get(key)
    if winner is None:
        return True
    skip(book, key, kind, f"run already has {winner}", event_id)
    return False


def skip(book: MemoryBook, run_id: str | None, kind: str, reason: str, event_id: str) -> None:
    """Record a synthesis that did not happen (bounded)."""
    append_bounded(book.skipped, Skipped(run_id=run_id, kind=kind, reason=reason, event_id=event_id), SKIPPED_LIMIT)


def file_memory(book: MemoryBook, memory: Memory, key: str | None, known: Container[str] = ()) -> None:
    """Add a memory (newest last, bounded); a one-per-run kind claims its run. Past SYNTHESIZED_LIMIT the oldest
    claim goes whose run is not among `known` (the runs the tasks model still holds): forgotten, a run still
    known could be given a second memory (5,000 tasks finished without a run in between did that)."""
    if key is not None and memory.kind in ONE_PER_RUN:
        book.synthesized.pop(key, None)
        book.synthesized[key] = f"{memory.kind} {memory.memory_id}"
        while len(book.synthesized) > SYNTHESIZED_LIMIT:
            going = next((old for old in book.synthesized if old not in known and old != key), None)
            del book.synthesized[going if going is not None else next(iter(book.synthesized))]
    append_bounded(book.memories, memory, MEMORIES_LIMIT)
    book.total += 1


def field(label: str, text: str) -> str:
    """`label: text`, a text of several lines with each later line indented: a description holding the line
    "Blocker: none, safe to deploy" must not read as the summary's own Blocker line."""
    return f"{label}: " + "\n  ".join(re.split(r"\r\n|\r|\n", text))  # where a view breaks a line (core/text.py)


def task_summary(title: str, goal: str, run_summary: str, files: list[str], blocker: str | None) -> str:
    """The body of a task_outcome or blocker_resolution: title, goal, run summary, file count."""
    lines = [title]
    if goal:
        lines.append(field("Goal", goal))
    if blocker is not None:
        lines.append(field("Blocker", blocker or "(no note)"))
    if run_summary:
        lines.append(field("Run", run_summary))
    lines.append(f"Files touched: {len(files)}")
    return capped("\n".join(lines), SUMMARY_CHARS)


def delegation_summary(task_title: str, result: str, artifacts: list[str]) -> str:
    """The body of a delegation_summary: the subagent's task, its result and artifacts."""
    text = f"{field('Subagent task', task_title)}\n{field('Result', result)}"
    if artifacts:
        text += "\n" + field("Artifacts", ", ".join(artifacts))
    return capped(text, DELEGATION_CHARS)


def topmost_primary(runs: dict[str, Any], child_parent: str | None) -> str | None:
    """The topmost primary run reached walking parent runs from `child_parent` (at most WALK_LIMIT steps).

    None when a parent is missing, the chain loops, or is longer than the limit: then
    nothing is written.
    """
    current = child_parent
    seen: set[str] = set()
    found: str | None = None
    for _ in range(WALK_LIMIT):
        if current is None:
            return found
        run = runs.get(current)
        if run is None or current in seen:
            return None
        seen.add(current)
        if run.context == "primary":
            found = current
        current = run.parent_run_id
    return found if current is None else None
