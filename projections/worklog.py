"""The work state: goal, done, in progress, next, blockers, decisions and open questions.

Built from work-log, checkpoint and archive events. A log entry adds what it states; a
checkpoint that states anything replaces in progress, next and blockers with what it
states; an archive replaces the whole state with the state it recorded.
"""

import msgspec

from events import clock
from events.archive import ArchiveCreated
from events.base import Event
from events.worklog import CheckpointRecorded, WorkLogged
from projections.common import append_bounded, append_unique, written_apart
from projections.readmodel import ReadModel

#: As many done items as one archive holds (events/base.py's Texts): an archive of the state keeps them all.
DONE_LIMIT = 256
NOTES_LIMIT = 20


class Noted(msgspec.Struct, kw_only=True):
    """A decision or question, with where and when it was recorded."""

    event_id: str
    created_at: str
    text: str
    #: Its writer's clock, where the log's time had run ahead of it (projections.common.written_apart).
    written_at: str | msgspec.UnsetType = msgspec.UNSET


class WorkState(msgspec.Struct, kw_only=True):
    """What the agent is doing and what comes next."""

    current_goal: str | None = None
    done: list[str] = msgspec.field(default_factory=list)
    in_progress: str | None = None
    next: list[str] = msgspec.field(default_factory=list)
    blockers: list[str] = msgspec.field(default_factory=list)
    decisions: list[Noted] = msgspec.field(default_factory=list)
    questions: list[Noted] = msgspec.field(default_factory=list)
    last_phase: str | None = None
    last_checkpoint_id: str | None = None
    last_checkpoint_at: str | None = None
    updated_at: str | None = None


def _goal_of(event: Event) -> str | None:
    note = event.note or {}
    goal = note.get("goal")
    return goal if isinstance(goal, str) and goal else None


def on_archive(state: WorkState, name: str, event: ArchiveCreated) -> WorkState:
    """An archive replaces the work state with the state it recorded (a goal it left empty stays empty)."""
    archived = event.state
    state.current_goal = archived.current_goal
    state.done = list(archived.done)[-DONE_LIMIT:]
    state.in_progress = archived.in_progress
    state.next = list(archived.next)
    state.blockers = list(archived.blockers)
    state.updated_at = event.created_at
    return state


def on_work(state: WorkState, name: str, event: WorkLogged | CheckpointRecorded) -> WorkState:
    """A log entry adds what it states; a checkpoint replaces in progress, next and blockers."""
    summary = event.summary
    append_unique(state.done, summary.done, DONE_LIMIT)  # seed 004: done is appended without duplicates
    states_something = bool(summary.done or summary.in_progress or summary.next or summary.blockers)
    if isinstance(event, CheckpointRecorded):
        if states_something:
            state.in_progress = summary.in_progress
            state.next = list(summary.next)
            state.blockers = list(summary.blockers)
        state.last_checkpoint_id = event.event_id
        state.last_checkpoint_at = clock.written(event)  # the writer's clock where the log's time ran ahead of it
    else:
        if summary.in_progress:
            state.in_progress = summary.in_progress
        if summary.next:
            state.next = list(summary.next)
        if summary.blockers:
            state.blockers = list(summary.blockers)
        if event.type in ("decision", "question") and event.message:
            noted = Noted(event_id=event.event_id, created_at=event.created_at, text=event.message,
                          written_at=written_apart(event))
            target = state.decisions if event.type == "decision" else state.questions
            append_bounded(target, noted, NOTES_LIMIT)
    state.current_goal = _goal_of(event) or state.current_goal
    state.last_phase = event.phase or state.last_phase
    state.updated_at = event.created_at
    return state


MODEL = ReadModel(
    "worklog", format=6, state=WorkState, initial=WorkState,
    folds={WorkLogged: on_work, CheckpointRecorded: on_work, ArchiveCreated: on_archive},
    bounds={"DONE_LIMIT": DONE_LIMIT, "NOTES_LIMIT": NOTES_LIMIT},
)
