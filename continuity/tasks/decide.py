"""Decisions for tasks and runs: pure functions from the `tasks` state and a request to events.

Time and ids are parameters; the caller checks the same decision again under the append
lock against the state as it stands there (continuity/tasks/service.py), so a stale
`expected_version` or an invalid transition never gets written, even between processes.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from continuity.core.errors import InvalidTransition, TaskNotFound, UsageError, VersionConflict
from continuity.core.identity import Identity
from events.base import Event
from events.guard import cut
from events.problems import quoted
from events.task import STATUSES, TERMINAL, RunCompleted, RunStarted, TaskCreated, TaskStatus, TaskUpdated
from projections.tasks import TasksState, problems_digest, problems_of


class TaskCreate(msgspec.Struct, frozen=True, kw_only=True):
    """What `task create` was asked to record."""

    title: str
    description: str = ""
    done_criteria: str = ""
    priority: int | None = None
    labels: tuple[str, ...] = ()
    assigned_to: str | None = None
    parent_task_id: str | None = None


class TaskUpdate(msgspec.Struct, frozen=True, kw_only=True):
    """What `task update` was asked to change; None leaves a field as it is (`labels=()` clears the labels,
    `unassign` the assignee)."""

    task_id: str
    status: TaskStatus | None = None  # the tools' schema lists the statuses (the CLI's choices)
    note: str | None = None
    title: str | None = None
    description: str | None = None
    done_criteria: str | None = None
    priority: int | None = None
    labels: tuple[str, ...] | None = None
    assigned_to: str | None = None
    expected_version: int | None = None
    reopen: bool = False
    unassign: bool = False


class RunStart(msgspec.Struct, frozen=True, kw_only=True):
    """What `run start` was asked to begin."""

    task_id: str
    role: str | None = None
    context: Literal["primary", "subagent"] = "primary"
    parent_run_id: str | None = None


class RunComplete(msgspec.Struct, frozen=True, kw_only=True):
    """What `run complete` was asked to record."""

    run_id: str
    output_summary: str = ""
    artifacts: tuple[str, ...] = ()


class GitAt(msgspec.Struct, frozen=True, kw_only=True):
    """The git branch and commit when a run starts (None outside a work tree)."""

    branch: str | None = None
    commit: str | None = None


def _envelope(identity: Identity, **ids: str | None) -> dict[str, Any]:
    return {**identity.fields(), **ids}


def _run_on(state: TasksState, run_id: str | None, task_id: str) -> str | None:
    """`run_id` when it is a run of `task_id` (or not known here), else None: an update of another task than the
    session's current run is on is not that run's work (docs/tasks.md)."""
    run = state.runs.get(run_id or "")
    return None if run is not None and run.task_id != task_id else run_id


def _check_title(title: str) -> None:
    """A title is one line of text: refused (exit 2) empty or with a control character, named as the title.

    (The event's message, made from the title, would otherwise be what the refusal names.)
    """
    import unicodedata

    from events.problems import first_control

    if not any(unicodedata.category(char)[0] not in "CZ" for char in title):  # empty, blank or only invisible
        raise UsageError("a task needs a title (it is empty, or shows nothing)")
    bad = first_control(title)  # C1 controls and separators are stored as given: every view neutralizes them
    if bad is not None:
        raise UsageError(f"the task's title holds a control character ({bad}); a title is one line")


def decide_create_task(state: TasksState, identity: Identity, request: TaskCreate, task_id: str) -> list[Event]:
    """`task create`: one `task.created` (queued) under a new id."""
    _check_title(request.title)
    if request.parent_task_id is not None and request.parent_task_id not in state.tasks:
        raise TaskNotFound(f"unknown parent task {quoted(request.parent_task_id, redact=True)}; nothing written")
    return [TaskCreated(**_envelope(identity, task_id=task_id), title=request.title.strip(),
                        description=request.description, done_criteria=request.done_criteria,
                        priority=request.priority, labels=_once(request.labels), assigned_to=request.assigned_to,
                        parent_task_id=request.parent_task_id,
                        message=cut(f"task created: {request.title.strip()}", 300))]


def _once(labels: tuple[str, ...]) -> tuple[str, ...]:
    """Labels each given once, in the order first given (`--label a --label a` is one label)."""
    return tuple(dict.fromkeys(labels))


def decide_update_task(state: TasksState, identity: Identity, request: TaskUpdate,
                       seen: dict[str, str] | None = None) -> list[Event]:
    """`task update`: one `task.updated`; checks the task, the expected version and the transition.

    `seen` gets the task's status as the decision found it (what an update of fields only leaves it in).
    """
    task = state.tasks.get(request.task_id)
    if task is None:
        raise TaskNotFound(f"unknown task {quoted(request.task_id, redact=True)}; nothing written")
    if seen is not None:
        seen["status"] = task.status
    if request.expected_version is not None and request.expected_version != task.version:
        raise VersionConflict(f"Version conflict: expected {request.expected_version}, got {task.version}")
    status = request.status
    if status is not None and status not in STATUSES:
        raise UsageError(f"unknown status {status!r} (one of: {', '.join(STATUSES)})")
    if request.reopen:
        if task.status not in TERMINAL:
            raise InvalidTransition(f"task {task.task_id} is {task.status}, not finished: nothing to reopen")
        status = status or "queued"
        if status in TERMINAL:
            raise InvalidTransition(f"reopening task {task.task_id} needs a status that is not finished")
    elif status is not None and task.status in TERMINAL and status != task.status:
        raise InvalidTransition(f"task {task.task_id} is {task.status}: {task.status} -> {status} needs --reopen; "
                                "nothing written")
    if request.title is not None:
        _check_title(request.title)
    if request.unassign and request.assigned_to is not None:
        raise UsageError("give an agent to assign or unassign the task, not both; nothing written")
    changes = (status, request.note or None, request.title, request.description, request.done_criteria,
               request.priority, request.labels, request.assigned_to,
               request.unassign or None)  # an empty note changes nothing
    if all(value is None for value in changes):
        raise UsageError("nothing to update: give --status, --note or a field to change")
    message = f"task {task.task_id}: {task.status} -> {status}" if status else f"task {task.task_id} updated"
    return [TaskUpdated(
        **_envelope(identity, task_id=task.task_id, run_id=_run_on(state, identity.run_id, task.task_id)),
        status=status, from_status=task.status if status else None,  # type: ignore[arg-type]
        reopen=request.reopen, version=task.version + 1, note_text=request.note or "",
        title=request.title.strip() if request.title is not None else None, description=request.description,
        done_criteria=request.done_criteria, priority=request.priority,
        labels=None if request.labels is None else _once(request.labels), assigned_to=request.assigned_to,
        unassign=request.unassign, message=message,
        settles=problems_digest(problems_of(state.problems, task.task_id)),
    )]


def decide_start_run(state: TasksState, identity: Identity, request: RunStart, run_id: str, git: GitAt) -> list[Event]:
    """`run start`: one `run.started` on a known, unfinished task (a parent run must be known too)."""
    task = state.tasks.get(request.task_id)
    if task is None:
        raise TaskNotFound(f"unknown task {quoted(request.task_id, redact=True)}; nothing written")
    if task.status in TERMINAL:
        raise InvalidTransition(f"task {task.task_id} is {task.status}: reopen it before starting a run")
    if request.context not in ("primary", "subagent"):
        raise UsageError(f"unknown run context {request.context!r} (primary or subagent)")
    if request.parent_run_id is not None and request.parent_run_id not in state.runs:
        raise TaskNotFound(f"unknown parent run {quoted(request.parent_run_id, redact=True)}; nothing written")
    return [RunStarted(**_envelope(identity, task_id=task.task_id, run_id=run_id), role=request.role,
                       context=request.context, parent_run_id=request.parent_run_id,
                       git_branch=git.branch, git_commit=git.commit,
                       message=f"run started on task {task.task_id}")]


def parent_to_resume(state: TasksState, run_id: str) -> tuple[str, str | None] | None:
    """(run, task) of the open run a run was started under (a subagent's parent), which becomes current again
    where the run was current when it completes; None for a run with no open parent."""
    run = state.runs.get(run_id)
    parent = state.runs.get(run.parent_run_id or "") if run is not None else None
    return (parent.run_id, parent.task_id) if parent is not None and parent.completed_at is None else None


def decide_complete_run(state: TasksState, identity: Identity, request: RunComplete) -> list[Event]:
    """`run complete`: one `run.completed` for a known run not yet completed; the task's status is untouched."""
    run = state.runs.get(request.run_id)
    if run is None:
        raise TaskNotFound(f"unknown run {quoted(request.run_id, redact=True)}; nothing written")
    if run.completed_at is not None:
        raise InvalidTransition(f"run {run.run_id} is already completed; nothing written")
    return [RunCompleted(**_envelope(identity, task_id=run.task_id, run_id=run.run_id),
                         output_summary=request.output_summary, artifacts=request.artifacts,
                         message=f"run {run.run_id} completed")]
