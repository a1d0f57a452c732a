"""Task and agent-run events (seed 003): the canonical record of agent work.

The task's id is the envelope's `task_id`, the run's id the envelope's `run_id`. A task
update states only what changes (`None` and `()` mean unchanged). Memories are never
events: the `tasks` read model synthesizes them from these (projections/tasks.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from events.base import END, Event, Label, Name, PathRefs, Text

#: Every task status; `completed`, `failed` and `cancelled` are terminal.
TaskStatus = Literal["queued", "in_progress", "completed", "blocked", "failed", "cancelled"]
STATUSES: tuple[str, ...] = ("queued", "in_progress", "completed", "blocked", "failed", "cancelled")
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
#: A task title: one line, not empty.
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=500,
                                    pattern=r"^[^\x00-\x1f\x7f]*\S[^\x00-\x1f\x7f]*" + END)]
Labels = Annotated[tuple[Label, ...], msgspec.Meta(max_length=32)]
#: A digest as hex (TaskUpdated.settles).
Digest = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{16}" + END)]
Priority = Annotated[int, msgspec.Meta(ge=0, le=1000)]


class TaskCreated(Event, frozen=True, kw_only=True, tag="task.created"):
    """A task was created (status `queued`); its id is the envelope's `task_id`."""

    type: Label = "task"
    title: Title
    description: Text = ""
    done_criteria: Text = ""
    priority: Priority | None = None
    labels: Labels = ()
    assigned_to: Name | None = None
    parent_task_id: Name | None = None


class TaskUpdated(Event, frozen=True, kw_only=True, tag="task.updated"):
    """A task changed: its status (`from_status` -> `status`) and/or fields; a field that is None is unchanged
    (`labels=()` leaves the task without labels, `unassign` without an assignee).

    `reopen` marks the explicit transition out of a terminal status. `note` is the
    blocker text of a `blocked` update. `version` is the task's version this update made.
    """

    type: Label = "task"
    status: TaskStatus | None = None
    from_status: TaskStatus | None = None
    reopen: bool = False
    version: int = 0
    note_text: Text = ""
    title: Title | None = None
    description: Text | None = None
    done_criteria: Text | None = None
    priority: Priority | None = None
    labels: Labels | None = None
    assigned_to: Name | None = None
    unassign: bool = False
    #: A digest of the problems of the task (and its runs) the update was decided on (`projections.tasks.
    #: problems_digest`): it settles them only where the log holds no other (one another replica's run brought in
    #: after the decision stays). None (an update of an earlier version): it settles whatever is there.
    settles: Digest | None = None


class RunStarted(Event, frozen=True, kw_only=True, tag="run.started"):
    """An agent run on a task began; git branch and commit are what git said at the start."""

    type: Label = "run"
    role: Label | None = None
    context: Literal["primary", "subagent"] = "primary"
    parent_run_id: Name | None = None
    git_branch: Text | None = None
    git_commit: Text | None = None


class RunCompleted(Event, frozen=True, kw_only=True, tag="run.completed"):
    """An agent run ended with a one-line output summary and its artifacts (the task's status is untouched)."""

    type: Label = "run"
    output_summary: Text = ""
    artifacts: PathRefs = ()
