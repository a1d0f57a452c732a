"""`log` and `checkpoint`: a work request becomes one work-log event."""

from __future__ import annotations

from typing import Any

import msgspec

from continuity.core.errors import UsageError
from events.base import CommandRef, Event, Refs, Summary
from events.worklog import CheckpointRecorded, WorkLogged


class Identity(msgspec.Struct, frozen=True, kw_only=True):
    """Who writes: the project and the host, agent, session, run, task and mission ids."""

    project: str
    host: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    mission_id: str | None = None


#: Identity fields and the environment variables that fill them when not given.
IDENTITY_ENV = {
    "host": "CONTINUITY_HOST",
    "agent_id": "CONTINUITY_AGENT",
    "session_id": "CONTINUITY_SESSION_ID",
    "run_id": "CONTINUITY_RUN_ID",
    "task_id": "CONTINUITY_TASK_ID",
}


def resolve_identity(project: str, **given: str | None) -> Identity:
    """Identity from what was given, else the CONTINUITY_* environment (CLI and MCP alike)."""
    import os

    values = {name: given.get(name) or os.environ.get(variable) or None for name, variable in IDENTITY_ENV.items()}
    return Identity(project=project, mission_id=given.get("mission_id") or None, **values)


class WorkRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What `log` or `checkpoint` was asked to record."""

    message: str = ""
    type: str | None = None
    phase: str | None = None
    done: tuple[str, ...] = ()
    in_progress: str | None = None
    next: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    handoffs: tuple[str, ...] = ()
    command: str | None = None
    exit_code: int | None = None
    command_summary: str | None = None
    note: dict[str, Any] | None = None


def work_event(request: WorkRequest, identity: Identity, *, checkpoint: bool) -> Event:
    """The draft event for a log entry (or a checkpoint)."""
    if request.command is None and (request.exit_code is not None or request.command_summary):
        raise UsageError("--exit-code and --command-summary need --command")
    commands: tuple[CommandRef, ...] = ()
    if request.command is not None:
        commands = (
            CommandRef(
                command=request.command,
                exit_code=request.exit_code,
                summary=request.command_summary,
            ),
        )
    kind: type[Event] = CheckpointRecorded if checkpoint else WorkLogged
    fields: dict[str, Any] = {
        "project": identity.project,
        "host": identity.host,
        "agent_id": identity.agent_id,
        "session_id": identity.session_id,
        "run_id": identity.run_id,
        "task_id": identity.task_id,
        "mission_id": identity.mission_id,
        "phase": request.phase,
        "message": request.message,
        "summary": Summary(
            done=request.done,
            in_progress=request.in_progress,
            next=request.next,
            blockers=request.blockers,
        ),
        "refs": Refs(
            files=request.files,
            commands=commands,
            artifacts=request.artifacts,
            handoffs=request.handoffs,
        ),
        "note": request.note,
    }
    if request.type is not None:
        fields["type"] = request.type
    return kind(**fields)
