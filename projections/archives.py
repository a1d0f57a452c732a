"""Archives: each archive event with the references its archive file cites.

An archive cites the events, runs, sessions, handoffs and artifacts that were newest when
it was taken, so this model keeps those few names itself (bounded) and copies them into
each archive entry. Paths and commands are not decided here: the archive view
(`continuity/sessions/archives.py`) turns an entry into seed 004's archive JSON.
"""

import msgspec

from events import clock
from events.archive import ArchiveCreated, ArchivedState, CitedFiles, GitFacts
from events.base import Event
from projections.common import append_bounded, touch_list
from projections.readmodel import ReadModel

ARCHIVES_LIMIT = 10
CITED_EVENTS = 10
CITED_RUNS = 20
CITED_SESSIONS = 20
CITED_REFS = 50


class ArchiveEntry(msgspec.Struct, kw_only=True):
    """One archive: its id, the archive event's facts, and the names it cites."""

    archive_id: str
    event_id: str
    created_at: str
    source_host: str | None
    target_host: str | None
    reason: str | None
    gate: str | None
    full: bool
    git: GitFacts
    state: ArchivedState
    read_first: list[str]
    #: File names of the events before it (and its own, last).
    events: list[str]
    run_ids: list[str]
    session_ids: list[str]
    handoffs: list[str]
    artifacts: list[str]
    #: Set for archives taken through `runtime-continuity`: rendered in seed 004's shape.
    cited: CitedFiles | None = None
    #: The archive event's `written_at` (its writer's clock, where the log's time had run ahead of it): the
    #: archive's age counts from it.
    written_at: str | None = None


class ArchivesState(msgspec.Struct, kw_only=True):
    """The newest archives of a project, how many there were, and what a new one would cite."""

    archives: list[ArchiveEntry] = msgspec.field(default_factory=list)
    total: int = 0
    recent_events: list[str] = msgspec.field(default_factory=list)
    run_ids: list[str] = msgspec.field(default_factory=list)
    session_ids: list[str] = msgspec.field(default_factory=list)
    handoffs: list[str] = msgspec.field(default_factory=list)
    artifacts: list[str] = msgspec.field(default_factory=list)


def on_event(state: ArchivesState, name: str, event: Event) -> ArchivesState:
    """Remember the names an archive taken after this event would cite."""
    if event.session_id:
        touch_list(state.session_ids, event.session_id, CITED_SESSIONS)
    if event.run_id:
        touch_list(state.run_ids, event.run_id, CITED_RUNS)
    for path in event.refs.handoffs:
        touch_list(state.handoffs, path, CITED_REFS)
    for path in event.refs.artifacts:
        touch_list(state.artifacts, path, CITED_REFS)
    append_bounded(state.recent_events, name, CITED_EVENTS)
    return state


def on_archive(state: ArchivesState, name: str, event: ArchiveCreated) -> ArchivesState:
    """Add the archive (citing what was newest before it), then remember it like any event."""
    # A runtime-continuity archive (cited) carries the node too: seed-004 callers get unique names (I9).
    archive_id = f"RC-{event.event_id[4:]}" if event.cited is not None else f"RC-{event.event_id[4:26]}"
    if any(entry.archive_id == archive_id for entry in state.archives):
        archive_id = f"{archive_id}-{event.event_id[-8:]}"
    cited = [*state.recent_events[-CITED_EVENTS:], name]
    entry = ArchiveEntry(
        archive_id=archive_id, event_id=event.event_id, created_at=event.created_at,
        source_host=event.source_host, target_host=event.target_host, reason=event.reason, gate=event.gate,
        full=event.full, git=event.git, state=event.state, read_first=list(event.read_first), events=cited,
        run_ids=list(state.run_ids), session_ids=list(state.session_ids), handoffs=list(state.handoffs),
        artifacts=list(state.artifacts), cited=event.cited,
        written_at=None if (written := clock.written(event)) == event.created_at else written,
    )
    append_bounded(state.archives, entry, ARCHIVES_LIMIT)
    state.total += 1
    return on_event(state, name, event)


def latest(state: ArchivesState) -> ArchiveEntry | None:
    """The newest archive."""
    return state.archives[-1] if state.archives else None


MODEL = ReadModel(
    "archives", format=4, state=ArchivesState, initial=ArchivesState,
    folds={Event: on_event, ArchiveCreated: on_archive},
    bounds={"ARCHIVES_LIMIT": ARCHIVES_LIMIT, "CITED_EVENTS": CITED_EVENTS, "CITED_RUNS": CITED_RUNS,
            "CITED_SESSIONS": CITED_SESSIONS, "CITED_REFS": CITED_REFS},
)
