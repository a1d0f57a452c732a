"""Team messages and presence, per project: who said what to whom, what is unread, who was seen when.

Presence is derived from every event an agent writes (its `agent_id`, or the `agent` a
team event names), so a heartbeat (`presence.recorded`) is only needed when an agent
writes nothing else. An agent belongs to a team once a team event names it.
"""

from __future__ import annotations

import msgspec

from events import clock
from events.base import Event
from events.team import MessageAcked, MessageSent
from projections.common import touch_bounded, touch_keeping
from projections.readmodel import ReadModel

TEAMS_LIMIT = 100
MEMBERS_LIMIT = 500
AGENTS_LIMIT = 2000
UNREAD_LIMIT = 2000
READ_LIMIT = 200


class Message(msgspec.Struct, kw_only=True):
    """One message: sender, addressee, text, when sent and when acknowledged (None: unread)."""

    message_id: str
    from_agent: str | None
    to_agent: str
    text: str
    sent_at: str
    event_id: str
    acked_at: str | None = None


class TeamBox(msgspec.Struct, kw_only=True):
    """A team's members (first seen) and its messages: unread ones, and the newest read ones.

    `waiting` counts the unread messages per addressee: past UNREAD_LIMIT, the oldest message of the
    addressee with the most is forgotten, so one agent flooding a mailbox never empties another's.
    """

    members: dict[str, str] = msgspec.field(default_factory=dict)
    unread: dict[str, Message] = msgspec.field(default_factory=dict)
    read: dict[str, Message] = msgspec.field(default_factory=dict)
    waiting: dict[str, int] = msgspec.field(default_factory=dict)


class InboxState(msgspec.Struct, kw_only=True):
    """Every team's box, and when each agent was last seen writing anything."""

    teams: dict[str, TeamBox] = msgspec.field(default_factory=dict)
    seen: dict[str, str] = msgspec.field(default_factory=dict)


def _box(state: InboxState, team: str) -> TeamBox:
    box = state.teams.get(team)
    if box is None:
        box = TeamBox()
    # the least recently active team (and member) goes first, a box with unread messages in it last (past ten
    # times the bound: boxes nobody reads must not grow the model for good, nor make every fold scan thousands)
    touch_keeping(state.teams, team, box, TEAMS_LIMIT, _has_unread, 10 * TEAMS_LIMIT)
    return box


def _has_unread(box: TeamBox) -> bool:
    return bool(box.unread)


def _member(box: TeamBox, agent: str, at: str) -> None:
    touch_bounded(box.members, agent, box.members.get(agent, at), MEMBERS_LIMIT)  # keeps when first seen


def on_event(state: InboxState, name: str, event: Event) -> InboxState:
    """Every event: its writer was seen; a team event makes its agent a member; messages move."""
    agent = getattr(event, "agent", None) or event.agent_id
    if isinstance(agent, str) and agent:
        # by the writer's clock where the log's time ran ahead of it (a fast teammate's clock, synced in)
        touch_bounded(state.seen, agent, clock.written(event), AGENTS_LIMIT)
    team = getattr(event, "team", None)
    if not isinstance(team, str) or not team:
        return state
    box = _box(state, team)
    if isinstance(agent, str) and agent:
        _member(box, agent, event.created_at)
    if isinstance(event, MessageSent):
        _member(box, event.to_agent, event.created_at)
        if event.message_id not in box.unread and event.message_id not in box.read:
            box.unread[event.message_id] = Message(
                message_id=event.message_id, from_agent=event.agent_id, to_agent=event.to_agent, text=event.text,
                sent_at=event.created_at, event_id=event.event_id)
            box.waiting[event.to_agent] = box.waiting.get(event.to_agent, 0) + 1
            if len(box.unread) > UNREAD_LIMIT:
                _forget_one(box)
    elif isinstance(event, MessageAcked):
        message = box.unread.get(event.message_id)
        if message is not None and message.to_agent == event.agent:
            _take(box, event.message_id)
            message.acked_at = event.created_at
            touch_bounded(box.read, event.message_id, message, READ_LIMIT)
    return state


def _forget_one(box: TeamBox) -> None:
    """Forget the oldest unread message of the addressee with the most (the first such addressee on a tie)."""
    most = max(box.waiting.values())
    victim = next(agent for agent, count in box.waiting.items() if count == most)
    _take(box, next(key for key, message in box.unread.items() if message.to_agent == victim))


def _take(box: TeamBox, message_id: str) -> None:
    """Remove one unread message, and count it out of its addressee's."""
    agent = box.unread.pop(message_id).to_agent
    left = box.waiting.get(agent, 0) - 1
    if left > 0:
        box.waiting[agent] = left
    else:
        box.waiting.pop(agent, None)


MODEL = ReadModel(
    "inbox", format=7, state=InboxState, initial=InboxState, folds={Event: on_event},
    bounds={"TEAMS_LIMIT": TEAMS_LIMIT, "MEMBERS_LIMIT": MEMBERS_LIMIT, "AGENTS_LIMIT": AGENTS_LIMIT,
            "UNREAD_LIMIT": UNREAD_LIMIT, "READ_LIMIT": READ_LIMIT},
)
