"""Every event type continuity knows, in one place: the union the decoder reads."""

from __future__ import annotations

from events.archive import ArchiveCreated, HostSwitched
from events.base import Event
from events.context import ContextServed
from events.handoff import HandoffAccepted, HandoffClosed, HandoffCreated, HandoffRejected
from events.moments import MomentsDelivered
from events.session import SessionEnded, SessionStarted
from events.task import RunCompleted, RunStarted, TaskCreated, TaskUpdated
from events.team import (
    MessageAcked,
    MessageSent,
    PresenceRecorded,
    RoleCheckpointed,
    RoleClaimed,
    RoleCreated,
    RoleReleased,
    RoleRenewed,
    SnapshotTaken,
)
from events.worklog import CheckpointRecorded, WorkLogged
from events.workstream import WORKSTREAM_EVENTS

#: Every concrete event type. New families add their types here.
EVENT_TYPES: tuple[type[Event], ...] = (
    WorkLogged,
    CheckpointRecorded,
    SessionStarted,
    SessionEnded,
    ArchiveCreated,
    HostSwitched,
    ContextServed,
    TaskCreated,
    TaskUpdated,
    RunStarted,
    RunCompleted,
    SnapshotTaken,
    RoleCreated,
    RoleClaimed,
    RoleRenewed,
    RoleReleased,
    RoleCheckpointed,
    *WORKSTREAM_EVENTS,
    HandoffCreated,
    HandoffAccepted,
    HandoffRejected,
    HandoffClosed,
    MessageSent,
    MessageAcked,
    PresenceRecorded,
    MomentsDelivered,
)
