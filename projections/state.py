"""The whole read model: one fold over every event, per project.

`apply(state, name, event)` dispatches an event to the folds of its project. Unknown
kinds never reach here (the reader skips them with a warning). Lists and maps are
bounded, so the state's size does not grow with the log.
"""

from __future__ import annotations

import msgspec

from events.archive import ArchiveCreated
from events.base import Event
from events.context import ContextServed
from projections import refs, sessions
from projections import worklog as work
from projections.archives import ARCHIVES_LIMIT, ArchiveRecord, event_path, record_of
from projections.common import append_bounded

RECENT_LIMIT = 20
MESSAGE_CHARS = 300
#: Bump whenever a fold's rules or bounds change: saved folds of another format are rebuilt.
FORMAT = 3


class IndexEntry(msgspec.Struct, kw_only=True):
    """A recent event, as the resume bundle lists it."""

    name: str
    event_id: str
    kind: str
    type: str
    created_at: str
    phase: str | None = None
    host: str | None = None
    message: str = ""


class ProjectState(msgspec.Struct, kw_only=True):
    """Everything the views need about one project."""

    project: str
    events: int = 0
    first_at: str | None = None
    last_at: str | None = None
    last_event_id: str | None = None
    work: work.WorkState = msgspec.field(default_factory=work.WorkState)
    sessions: sessions.SessionsState = msgspec.field(default_factory=sessions.SessionsState)
    refs: refs.RefsState = msgspec.field(default_factory=refs.RefsState)
    recent: list[IndexEntry] = msgspec.field(default_factory=list)
    archives: list[ArchiveRecord] = msgspec.field(default_factory=list)
    archives_total: int = 0
    served: int = 0


class State(msgspec.Struct, kw_only=True):
    """The read model of a whole store, and the last event folded into it."""

    format: int = FORMAT
    last_name: str | None = None
    events_folded: int = 0
    projects: dict[str, ProjectState] = msgspec.field(default_factory=dict)


def project_state(state: State, project: str) -> ProjectState:
    """The state of one project (empty when it has no events)."""
    return state.projects.get(project) or ProjectState(project=project)


def apply(state: State, name: str, event: Event) -> State:
    """Fold one stored event (its file name and decoded event) into the state."""
    project = state.projects.get(event.project)
    if project is None:
        project = state.projects[event.project] = ProjectState(project=event.project)
    if isinstance(event, ArchiveCreated):
        _archive(project, name, event)
    work.apply(project.work, event)
    sessions.apply(project.sessions, event)
    refs.apply(project.refs, event)
    if isinstance(event, ContextServed):
        project.served += 1
    project.events += 1
    project.first_at = project.first_at or event.created_at
    project.last_at = event.created_at
    project.last_event_id = event.event_id
    entry = IndexEntry(
        name=name, event_id=event.event_id, kind=event.kind, type=event.type,
        created_at=event.created_at, phase=event.phase, host=event.host,
        message=event.message[:MESSAGE_CHARS],
    )
    append_bounded(project.recent, entry, RECENT_LIMIT)
    state.last_name = name
    state.events_folded += 1
    return state


def _archive(project: ProjectState, name: str, event: ArchiveCreated) -> None:
    stamp = event.event_id[4:26]
    archive_id = f"RC-{stamp}"
    if any(record.archive_id == archive_id for record in project.archives):
        archive_id = f"{archive_id}-{event.event_id[-8:]}"
    record = record_of(
        event,
        archive_id=archive_id,
        latest_events=[event_path(entry.name) for entry in project.recent[-10:]] + [event_path(name)],
        runs=[f".agent/runs/{run_id}.json" for run_id in list(project.sessions.runs)[-20:]],
        sessions=list(project.sessions.sessions)[-20:],
        handoffs=list(project.refs.handoffs)[-50:],
        artifacts=list(project.refs.artifacts)[-50:],
    )
    append_bounded(project.archives, record, ARCHIVES_LIMIT)
    project.archives_total += 1


def latest_archive(project: ProjectState) -> ArchiveRecord | None:
    """The newest archive of a project."""
    return project.archives[-1] if project.archives else None
