"""Team continuity events (seed 000): structured snapshots of an agent's work on a task.

A snapshot carries everything its document holds, so the documents under `team/` are
projections: rebuilt byte for byte from the log, and the newest one is decided by log
order on every replica.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from events.base import Event, Label, Name, PathRef, Text, Texts
from events.names import ISO_TIME


class SnapshotTaken(Event, frozen=True, kw_only=True, tag="snapshot.taken"):
    """An agent's snapshot of one task: objective, decisions, next actions, questions, artifacts."""

    type: Label = "snapshot"
    team: Name
    agent: Name
    task: Name
    objective: Text
    decisions: Texts = ()
    next_actions: Texts = ()
    open_questions: Texts = ()
    artifacts: Texts = ()
    context_used_percent: Annotated[int, msgspec.Meta(ge=0, le=100)] | None = None
    transcript_path: PathRef | None = None
    #: The writer's wall clock when it took the snapshot (ISO). `created_at` is the log's time, which an event
    #: stamped ahead (a teammate's clock running fast, synced in) pushes later: a snapshot's age is read from
    #: this one. None in snapshots written before it existed.
    taken_at: Annotated[str, msgspec.Meta(pattern=rf"^{ISO_TIME}$")] | None = None


#: A lease length in seconds: at least one second, at most a year.
LeaseSeconds = Annotated[int, msgspec.Meta(ge=1, le=366 * 86_400)]


class RoleCreated(Event, frozen=True, kw_only=True, tag="role.created"):
    """A role was established in a team (its document appears at `team/<team>/roles/<role>.md`)."""

    type: Label = "role"
    team: Name
    role: Name
    description: Text = ""


class RoleClaimed(Event, frozen=True, kw_only=True, tag="role.claimed"):
    """An agent claimed a role under a lease of `ttl_seconds` from the event's own time.

    `takeover_from` is the holder whose expired lease the claimant saw (None: the role was
    free). Which claim holds is decided by log order (projections/roles.py).
    """

    type: Label = "role"
    team: Name
    role: Name
    agent: Name
    ttl_seconds: LeaseSeconds
    takeover_from: Name | None = None


class RoleRenewed(Event, frozen=True, kw_only=True, tag="role.renewed"):
    """The holder extended its lease to `ttl_seconds` from the event's own time."""

    type: Label = "role"
    team: Name
    role: Name
    agent: Name
    ttl_seconds: LeaseSeconds


class RoleReleased(Event, frozen=True, kw_only=True, tag="role.released"):
    """The holder gave the role up; it is free to claim."""

    type: Label = "role"
    team: Name
    role: Name
    agent: Name


class RoleCheckpointed(Event, frozen=True, kw_only=True, tag="role.checkpointed"):
    """The role's resume point (`checkpoint_ref`) was set; `parked` when park set it."""

    type: Label = "role"
    team: Name
    role: Name
    checkpoint_ref: PathRef
    parked: bool = False


class MessageSent(Event, frozen=True, kw_only=True, tag="message.sent"):
    """A message to one agent of a team (the sender is the envelope's `agent_id`); `text` is the message."""

    type: Label = "message"
    team: Name
    message_id: Name
    to_agent: Name
    text: Text


class MessageAcked(Event, frozen=True, kw_only=True, tag="message.acked"):
    """The addressee read a message and says so; it leaves the inbox and the queue."""

    type: Label = "message"
    team: Name
    message_id: Name
    agent: Name


class PresenceRecorded(Event, frozen=True, kw_only=True, tag="presence.recorded"):
    """A heartbeat: the agent is alive in the team (every other event it writes counts too)."""

    type: Label = "presence"
    team: Name
    agent: Name
