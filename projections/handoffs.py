"""Handoffs and their lifecycle, per project: pending -> accepted -> closed, or rejected, or withdrawn.

Transitions are applied in log order; one that is not allowed from the state the log
has reached (a second acceptance, from another replica perhaps) changes nothing and is
kept in the handoff's history, so every replica agrees on the state.
"""

from __future__ import annotations

import msgspec

from events.handoff import HandoffAccepted, HandoffClosed, HandoffCreated, HandoffRejected
from projections.common import append_bounded, touch_bounded, touch_keeping
from projections.readmodel import ReadModel

OPEN_LIMIT = 2000
DONE_LIMIT = 500
HISTORY_LIMIT = 20
#: state -> the actions allowed from it.
ALLOWED = {"pending": {"accepted", "rejected", "closed"}, "accepted": {"closed"}}
STATES = ("pending", "accepted", "rejected", "closed")


class HandoffNote(msgspec.Struct, kw_only=True, array_like=True):
    """One line of a handoff's history."""

    at: str
    agent: str
    action: str
    note: str = ""


class Handoff(msgspec.Struct, kw_only=True):
    """One handoff as its events left it."""

    handoff_id: str
    state: str = "pending"
    from_agent: str | None = None
    from_host: str | None = None
    from_session: str | None = None
    to_agent: str | None = None
    to_host: str | None = None
    for_task: str | None = None
    message: str = ""
    artifacts: list[str] = msgspec.field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    event_id: str = ""
    history: list[HandoffNote] = msgspec.field(default_factory=list)
    #: The agent whose acceptance holds (kept here: the history keeps only its newest notes).
    taken_by: str | None = None


class HandoffsState(msgspec.Struct, kw_only=True):
    """Open handoffs (pending, accepted) and the newest finished ones, by id."""

    open: dict[str, Handoff] = msgspec.field(default_factory=dict)
    done: dict[str, Handoff] = msgspec.field(default_factory=dict)

    def get(self, handoff_id: str) -> Handoff | None:
        """A handoff by id, open or finished."""
        return self.open.get(handoff_id) or self.done.get(handoff_id)


def on_created(state: HandoffsState, name: str, event: HandoffCreated) -> HandoffsState:
    """A new pending handoff; an id seen before keeps its first creation."""
    if state.get(event.handoff_id) is not None:
        return state
    handoff = Handoff(
        handoff_id=event.handoff_id, from_agent=event.agent_id, from_host=event.host, from_session=event.session_id,
        to_agent=event.to_agent, to_host=event.to_host, for_task=event.for_task, message=event.message,
        artifacts=list(event.artifacts), created_at=event.created_at, updated_at=event.created_at,
        event_id=event.event_id)
    append_bounded(handoff.history, HandoffNote(at=event.created_at, agent=event.agent_id or "-", action="created"),
                   HISTORY_LIMIT)
    # past OPEN_LIMIT the oldest taken (accepted) handoff goes first: a pending one forgotten could never be
    # accepted (its document said pending, `handoff accept` said there is none); ten times it, the oldest of any
    touch_keeping(state.open, event.handoff_id, handoff, OPEN_LIMIT, _pending, 10 * OPEN_LIMIT)
    return state


def _pending(handoff: Handoff) -> bool:
    return handoff.state == "pending"


def closers(handoff: Handoff) -> list[str]:
    """Who may close a handoff: its sender, its addressee and the agent that took it (none named: any agent)."""
    return sorted({who for who in (handoff.from_agent, handoff.to_agent, handoff.taken_by) if who and who != "-"})


def may_act(handoff: Handoff, action: str, actor: str | None) -> bool:
    """Whether `actor` may accept or reject (the addressee, or any agent of a handoff addressed to a host) or close
    (closers) the handoff; an agent that does not say who it is may do none of them."""
    if not actor:
        return False
    if action in ("accepted", "rejected"):
        return not handoff.to_agent or actor == handoff.to_agent
    allowed = closers(handoff)
    return not allowed or actor in allowed


def _move(state: HandoffsState, event: HandoffAccepted | HandoffRejected | HandoffClosed, action: str) -> HandoffsState:
    handoff = state.get(event.handoff_id)
    if handoff is None:
        return state
    agent = event.agent_id or "-"
    if action not in ALLOWED.get(handoff.state, set()):
        append_bounded(handoff.history, HandoffNote(at=event.created_at, agent=agent, action=f"{action}-ignored",
                                                    note=f"was {handoff.state}"), HISTORY_LIMIT)
        return state
    # A replica decided it before it saw who took the handoff. A move that names no agent was taken as it came (the
    # versions that wrote one allowed it; every version since refuses it before it is written).
    if event.agent_id and not may_act(handoff, action, event.agent_id):
        append_bounded(handoff.history, HandoffNote(at=event.created_at, agent=agent, action=f"{action}-ignored",
                                                    note="not this agent's to do"), HISTORY_LIMIT)
        return state
    handoff.state = action
    handoff.updated_at = event.created_at
    if action == "accepted":
        handoff.taken_by = event.agent_id
    append_bounded(handoff.history, HandoffNote(at=event.created_at, agent=agent, action=action,
                                                note=event.note_text), HISTORY_LIMIT)
    if action in ("rejected", "closed"):
        state.open.pop(event.handoff_id, None)
        touch_bounded(state.done, event.handoff_id, handoff, DONE_LIMIT)
    return state


def on_accepted(state: HandoffsState, name: str, event: HandoffAccepted) -> HandoffsState:
    """pending -> accepted."""
    return _move(state, event, "accepted")


def on_rejected(state: HandoffsState, name: str, event: HandoffRejected) -> HandoffsState:
    """pending -> rejected."""
    return _move(state, event, "rejected")


def on_closed(state: HandoffsState, name: str, event: HandoffClosed) -> HandoffsState:
    """pending or accepted -> closed."""
    return _move(state, event, "closed")


MODEL = ReadModel(
    "handoffs", format=5, state=HandoffsState, initial=HandoffsState,
    folds={HandoffCreated: on_created, HandoffAccepted: on_accepted, HandoffRejected: on_rejected,
           HandoffClosed: on_closed},
    bounds={"OPEN_LIMIT": OPEN_LIMIT, "DONE_LIMIT": DONE_LIMIT, "HISTORY_LIMIT": HISTORY_LIMIT},
)
