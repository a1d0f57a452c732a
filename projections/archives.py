"""Archives: seed 004's archive JSON, built from an archive event and the state it closed.

Everything here comes from the event (state, git facts, read-first list decided when it
was taken) and from the projection as it stood then (latest events, runs, sessions,
handoffs, artifacts), so a rebuild writes the same bytes.
"""

from __future__ import annotations

import msgspec

from events import names
from events.archive import ArchiveCreated

ARCHIVES_LIMIT = 10
STORE_PATH = ".agent/runtime-continuity"


class ArchiveGit(msgspec.Struct, kw_only=True):
    """Seed 004's `git` block."""

    root: str | None = None
    branch: str | None = None
    head: str | None = None
    status_short: str = ""


class ArchiveState(msgspec.Struct, kw_only=True):
    """Seed 004's `state` block."""

    current_goal: str | None = None
    done: list[str] = msgspec.field(default_factory=list)
    in_progress: str | None = None
    next: list[str] = msgspec.field(default_factory=list)
    blockers: list[str] = msgspec.field(default_factory=list)


class ArchiveRefs(msgspec.Struct, kw_only=True):
    """Seed 004's `refs` block."""

    latest_events: list[str] = msgspec.field(default_factory=list)
    runs: list[str] = msgspec.field(default_factory=list)
    sessions: list[str] = msgspec.field(default_factory=list)
    handoffs: list[str] = msgspec.field(default_factory=list)
    artifacts: list[str] = msgspec.field(default_factory=list)
    dirty_files: list[str] = msgspec.field(default_factory=list)


class ArchiveRestore(msgspec.Struct, kw_only=True):
    """Seed 004's `restore` block: what to read first, what to run, what to do next."""

    read_first: list[str] = msgspec.field(default_factory=list)
    commands: list[str] = msgspec.field(default_factory=list)
    next_action: str = ""


class ArchiveRecord(msgspec.Struct, kw_only=True):
    """One archive, in seed 004's shape plus the event it came from."""

    archive_id: str
    project: str
    created_at: str
    source_host: str | None
    target_host: str | None
    reason: str | None
    gate: str | None
    full: bool
    git: ArchiveGit
    state: ArchiveState
    refs: ArchiveRefs
    restore: ArchiveRestore
    event_id: str


def event_path(name: str) -> str:
    """The store-relative path of an event file, as archives cite it."""
    return f"{STORE_PATH}/events/{names.shard_of(name)}/{name}"


def next_action_of(state: ArchiveState) -> str:
    """The first next item, else a pointer at what was in progress."""
    if state.next:
        return state.next[0]
    if state.in_progress:
        return f"Continue: {state.in_progress}"
    return "Read the latest archive and choose the next step."


def record_of(
    event: ArchiveCreated,
    *,
    archive_id: str,
    latest_events: list[str],
    runs: list[str],
    sessions: list[str],
    handoffs: list[str],
    artifacts: list[str],
) -> ArchiveRecord:
    """The archive record of an event, given the projection's references at that point."""
    archived = event.state
    state = ArchiveState(
        current_goal=archived.current_goal,
        done=list(archived.done),
        in_progress=archived.in_progress,
        next=list(archived.next),
        blockers=list(archived.blockers),
    )
    read_first = [*event.read_first, f"{STORE_PATH}/archives/latest.json"]
    return ArchiveRecord(
        archive_id=archive_id,
        project=event.project,
        created_at=event.created_at,
        source_host=event.source_host,
        target_host=event.target_host,
        reason=event.reason,
        gate=event.gate,
        full=event.full,
        git=ArchiveGit(
            root=event.git.root, branch=event.git.branch, head=event.git.head,
            status_short=event.git.status_short,
        ),
        state=state,
        refs=ArchiveRefs(
            latest_events=latest_events, runs=runs, sessions=sessions, handoffs=handoffs,
            artifacts=artifacts, dirty_files=list(event.git.dirty_files),
        ),
        restore=ArchiveRestore(
            read_first=read_first,
            commands=[f"continuity resume-bundle --project {event.project}"],
            next_action=next_action_of(state),
        ),
        event_id=event.event_id,
    )
