"""Decisions for `log` and `checkpoint`: a work request becomes one work-log event.

Pure: the identity is resolved by the caller; the log stamps time and order on append.
"""

from __future__ import annotations

from typing import Any

import msgspec

from continuity.core.errors import UsageError
from continuity.core.identity import Identity
from continuity.worklog.plain import blank_item, states_anything
from events.base import CommandRef, Event, Refs, Summary
from events.worklog import CheckpointRecorded, WorkLogged


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


def decide_log(identity: Identity, request: WorkRequest, *, allow_empty: bool = False) -> list[Event]:
    """`log`: one work-log entry; UsageError when it would record nothing at all (unless `allow_empty`).

    `runtime-continuity log` allows an empty entry: seed 004 records one with message `""`.
    """
    if not allow_empty and not states_anything(msgspec.structs.asdict(request)):
        raise UsageError("nothing to record: give a message (or --done, --next, --file, --command, ...)")
    if not allow_empty:
        _refuse_blank(request)
    return [work_event(request, identity, checkpoint=False)]


def decide_checkpoint(identity: Identity, request: WorkRequest, *, allow_empty: bool = False) -> list[Event]:
    """`checkpoint`: one checkpoint to resume from (`allow_empty`: items that say nothing taken, as seed 004's)."""
    if not allow_empty:
        _refuse_blank(request)
    return [work_event(request, identity, checkpoint=True)]


def _refuse_blank(request: WorkRequest) -> None:
    flag = blank_item(msgspec.structs.asdict(request))
    if flag is not None:
        raise UsageError(f"{flag} is empty: give what it says, or leave it out; nothing written")


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
        **identity.fields(),
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
