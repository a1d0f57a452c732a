"""Sessions and runs: who worked, on which host, when last seen, how often compacted.

Active or stale is a view (it depends on now), never stored here.
"""

from typing import Any

import msgspec

from events import clock
from events.archive import HostSwitched
from events.base import Event
from events.session import SessionEnded, SessionStarted
from projections.common import touch_bounded, touch_keeping
from projections.passes import no_identity
from projections.readmodel import ReadModel

SESSIONS_LIMIT = 50
#: Sessions not ended are kept past SESSIONS_LIMIT (ended ones give way first: forgotten, a long session's next
#: compaction was "compaction 1" again), up to this many, past which the least recently active go whatever they
#: are (sessions whose harness died without a SessionEnd).
OPEN_SESSIONS_LIMIT = 200
RUNS_LIMIT = 50


class SessionInfo(msgspec.Struct, kw_only=True, array_like=True, gc=False):
    """One agent session as the log saw it (saved as an array, field by field in order: a model holding hundreds of
    sessions decodes in about half the time; `fields` gives it as JSON shows it)."""

    session_id: str
    host: str | None = None
    agent_id: str | None = None
    model: str | None = None
    source: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    last_seen: str = ""
    events: int = 0
    compactions: int = 0


class RunInfo(msgspec.Struct, kw_only=True, array_like=True, gc=False):
    """One run (an agent's attempt at a task) as the log saw it (saved as an array, as SessionInfo)."""

    run_id: str
    task_id: str | None = None
    host: str | None = None
    agent_id: str | None = None
    first_seen: str = ""
    last_seen: str = ""
    events: int = 0
    last_phase: str | None = None
    last_message: str | None = None


class SessionsState(msgspec.Struct, kw_only=True):
    """Sessions and runs, least recently seen first; the host work last moved to."""

    sessions: dict[str, SessionInfo] = msgspec.field(default_factory=dict)
    runs: dict[str, RunInfo] = msgspec.field(default_factory=dict)
    last_host: str | None = None


def fields(info: SessionInfo | RunInfo) -> dict[str, Any]:
    """A session's or a run's fields by name, in order: what a document or a brief shows of it."""
    return msgspec.structs.asdict(info)


def _not_ended(info: SessionInfo) -> bool:
    return info.ended_at is None


def apply(state: SessionsState, name: str, event: Event) -> SessionsState:
    """Fold one event into sessions and runs."""
    if isinstance(event, HostSwitched):
        state.last_host = event.to_host
    elif event.host:
        state.last_host = event.host
    at = clock.written(event)  # the writer's clock where the log's time ran ahead of it (a fast teammate's)
    if event.session_id:
        info = state.sessions.get(event.session_id) or SessionInfo(session_id=event.session_id)
        info.events += 1
        info.last_seen = at
        info.host = event.host or info.host
        info.agent_id = event.agent_id or info.agent_id
        if isinstance(event, SessionStarted):
            info.started_at = info.started_at or at
            info.ended_at = None
            info.source = event.source
            info.model = event.model or info.model
            if event.source == "compact":
                info.compactions += 1
        elif isinstance(event, SessionEnded):
            info.ended_at = at
        if isinstance(event, HostSwitched):
            info.host = event.to_host
        touch_keeping(state.sessions, event.session_id, info, SESSIONS_LIMIT, _not_ended, OPEN_SESSIONS_LIMIT)
    if event.run_id:
        run = state.runs.get(event.run_id) or RunInfo(run_id=event.run_id, first_seen=at)
        run.events += 1
        run.last_seen = at
        run.task_id = event.task_id or run.task_id
        run.host = event.host or run.host
        run.agent_id = event.agent_id or run.agent_id
        run.last_phase = event.phase or run.last_phase
        run.last_message = event.message or run.last_message
        touch_bounded(state.runs, event.run_id, run, RUNS_LIMIT)
    return state


MODEL = ReadModel(
    "sessions", format=7, state=SessionsState, initial=SessionsState, folds={Event: apply, HostSwitched: apply},
    passes={Event: no_identity},
    bounds={"SESSIONS_LIMIT": SESSIONS_LIMIT, "OPEN_SESSIONS_LIMIT": OPEN_SESSIONS_LIMIT, "RUNS_LIMIT": RUNS_LIMIT},
)
