"""Decisions of team continuity: a snapshot request becomes one `snapshot.taken` event."""

from __future__ import annotations

import re

import msgspec

from continuity.core.errors import UsageError
from continuity.core.identity import Identity
from events.base import Event
from events.team import SnapshotTaken

_NOT_SEGMENT = re.compile(r"[^A-Za-z0-9._-]+")


class SnapshotRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What `snapshot <team> <agent> <task>` was asked to record."""

    team: str
    agent: str
    task: str
    objective: str
    decisions: tuple[str, ...] = ()
    next_actions: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    context_used_percent: int | None = None
    transcript_path: str | None = None


def task_slug(task: str) -> str:
    """The task as one path segment: runs of other characters become `-`, no dots at the ends."""
    slug = _NOT_SEGMENT.sub("-", task).strip("-.").replace("..", ".")[:128]
    if not slug:
        raise UsageError(f"snapshot: task {task!r} has no characters usable in a name")
    return slug


def decide_snapshot(identity: Identity, request: SnapshotRequest) -> list[Event]:
    """One snapshot; the event's own checks refuse bad team or agent names and oversized text."""
    if not request.objective.strip():
        raise UsageError("snapshot: --objective must not be empty")
    if request.context_used_percent is not None and not 0 <= request.context_used_percent <= 100:
        raise UsageError("snapshot: --context-percent must be between 0 and 100")
    fields = {**identity.fields(), "agent_id": identity.agent_id or request.agent}
    task = task_slug(request.task)
    return [SnapshotTaken(
        **fields, team=request.team, agent=request.agent, task=task,
        objective=request.objective, decisions=request.decisions, next_actions=request.next_actions,
        open_questions=request.open_questions, artifacts=request.artifacts,
        context_used_percent=request.context_used_percent, transcript_path=request.transcript_path,
        message=f"snapshot {request.team}/{request.agent}/{task}",
    )]
