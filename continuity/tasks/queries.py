"""Selections over the `tasks` state: listing, the ready queue, memories (views: no writes)."""

from __future__ import annotations

from typing import Any

from events.task import TERMINAL

#: A parent in one of these statuses holds its subtasks back.
HOLDING = frozenset({"blocked", "failed", "cancelled"})


#: How many entries `task list`, `task ready` and `memory list` show unless asked for more.
DEFAULT_LIMIT = 30


def select(state: Any, status: str | None = None, assigned: str | None = None) -> list[Any]:
    """Tasks in creation order, optionally of one status and/or assignee."""
    return [task for task in state.tasks.values()
            if (status is None or task.status == status) and (assigned is None or task.assigned_to == assigned)]


def newest_first(state: Any, status: str | None = None, assigned: str | None = None) -> list[Any]:
    """Tasks, the most recently created first, optionally of one status and/or assignee."""
    return select(state, status, assigned)[::-1]


def page(items: list[Any], limit: int) -> tuple[list[Any], int]:
    """The first `limit` items (all when `limit` is 0) and how many more there are."""
    if limit <= 0 or len(items) <= limit:
        return items, 0
    return items[:limit], len(items) - limit


def ready(state: Any, assigned: str | None = None) -> list[Any]:
    """Queued tasks ready to work on: parent not holding them, no unfinished subtasks; urgent first."""
    open_children = {task.parent_task_id for task in state.tasks.values()
                     if task.parent_task_id and task.status not in TERMINAL}
    found = []
    for task in select(state, "queued", assigned):
        parent = state.tasks.get(task.parent_task_id or "")
        if parent is not None and parent.status in HOLDING:
            continue
        if task.task_id in open_children:
            continue
        found.append(task)
    order = {task.task_id: index for index, task in enumerate(found)}
    return sorted(found, key=lambda task: (task.priority is None, task.priority or 0, order[task.task_id]))


def memories(state: Any, kind: str | None = None, task: str | None = None) -> list[Any]:
    """Memories, newest first, optionally of one kind and/or task."""
    return [memory for memory in reversed(state.book.memories)
            if (kind is None or memory.kind == kind) and (task is None or memory.task_id == task)]
