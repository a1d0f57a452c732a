"""What a resuming agent is shown of its work: the current run, open tasks, the newest memories.

A pure selection from the `tasks` state (no clock, no files): the resume bundle
(continuity/sessions/brief.py) calls it with the identity it serves, so a brief recorded
as `context.served` is selected again, the same, from the log and the recorded identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from events.task import TERMINAL

#: Entries the bundle carries (the Markdown brief shows fewer, see brief.py).
TASKS_SHOWN = 20
RUNS_SHOWN = 5
MEMORIES_SHOWN = 10
#: Open tasks, the work under way first.
STATUS_ORDER = {"in_progress": 0, "blocked": 1, "queued": 2}

Age = Callable[[str | None], str]


def current_run(state: Any, session_id: str | None, run_id: str | None) -> Any:
    """The run this session works in: the one named (if open), else the session's newest open run."""
    named = state.runs.get(run_id or "")
    if named is not None and named.completed_at is None:
        return named
    if session_id is None:
        return None
    return next((run for run in reversed(state.runs.values())
                 if run.session_id == session_id and run.completed_at is None), None)


def open_tasks(state: Any, agent_id: str | None, also: str | None = None) -> list[Any]:
    """Unfinished tasks assigned to `agent_id` (every one when no agent is known) plus task `also`.

    In progress first, then blocked, then queued; the most urgent priority first, then the
    most recently updated.
    """
    found = [task for task in state.tasks.values() if task.status not in TERMINAL
             and (agent_id is None or task.assigned_to == agent_id or task.task_id == also)]
    found.sort(key=lambda task: task.updated_at, reverse=True)
    found.sort(key=lambda task: (STATUS_ORDER.get(task.status, 3), task.priority is None, task.priority or 0))
    return found


def _at(written: Any, stamped: str) -> str:
    """The time an age counts from: the writer's clock where the log's time had run ahead of it, else the stamp."""
    return written if isinstance(written, str) else stamped


def _run(state: Any, run: Any, age: Age) -> dict[str, Any]:
    from projections.tasks import run_files

    task = state.tasks.get(run.task_id or "")
    files = run_files(run)
    return {"run_id": run.run_id, "task_id": run.task_id, "task_title": task.title if task else None,
            "task_status": task.status if task else None, "role": run.role, "context": run.context,
            "parent_run_id": run.parent_run_id, "session_id": run.session_id, "agent_id": run.agent_id,
            "started_at": run.started_at, "started": age(_at(run.started_written, run.started_at)), "files": len(files),
            "recent_files": files[-5:], "commands": run.commands, "git_branch": run.git_branch,
            "git_commit": run.git_commit}


def work_of(state: Any, age: Age, *, agent_id: str | None, session_id: str | None,
            run_id: str | None) -> dict[str, Any]:
    """The bundle's `tasks` section for one agent and session, as JSON-ready data."""
    current = current_run(state, session_id, run_id)
    runs = [run for run in reversed(state.runs.values()) if run.completed_at is None and run is not current
            and (agent_id is None or run.agent_id == agent_id)]
    tasks = open_tasks(state, agent_id, current.task_id if current is not None else None)
    memories = list(reversed(state.book.memories))
    return {
        "agent_id": agent_id,
        "current_run": _run(state, current, age) if current is not None else None,
        "open_runs": [_run(state, run, age) for run in runs[:RUNS_SHOWN]],
        "open_runs_total": len(runs),
        "open_tasks": [{"task_id": task.task_id, "title": task.title, "status": task.status,
                        "version": task.version, "priority": task.priority, "assigned_to": task.assigned_to,
                        "parent_task_id": task.parent_task_id, "updated_at": task.updated_at,
                        "updated": age(_at(task.updated_written, task.updated_at))} for task in tasks[:TASKS_SHOWN]],
        "open_tasks_total": len(tasks),
        "memories": [{"memory_id": memory.memory_id, "kind": memory.kind, "title": memory.title,
                      "summary": memory.summary, "task_id": memory.task_id, "run_id": memory.run_id,
                      "created_at": memory.created_at, "age": age(_at(memory.written_at, memory.created_at))}
                     for memory in memories[:MEMORIES_SHOWN]],
        "memories_total": state.book.total,
    }
