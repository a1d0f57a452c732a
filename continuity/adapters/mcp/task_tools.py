"""The seed-003 tools: `create_task`, `update_task`, `start_agent_run`, `complete_agent_run`, `list_tasks`,
`list_memories`.

Named as agents already call them in the seed's try/catch/finally pattern (docs/tasks.md);
inputs are built from the request Structs of continuity/tasks/decide.py, and each tool calls
the same decisions and service as the CLI.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from continuity.adapters.mcp.registry import pick, tool, tool_input
from continuity.adapters.mcp.tools import WriteOptions, asked_project, identity
from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.tasks.decide import RunComplete, RunStart, TaskCreate, TaskUpdate
from continuity.tasks.queries import DEFAULT_LIMIT

Status = Literal["queued", "in_progress", "completed", "blocked", "failed", "cancelled"]


#: As `task list` / `memory list` take them: the first 30 by default, 0 for all.
LIMIT_MAX = 1_000_000


class ListTasksRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Which tasks to list."""

    status: Status | None = None
    assigned_to: str | None = None
    ready: bool = False
    limit: Annotated[int, msgspec.Meta(ge=0, le=LIMIT_MAX)] = DEFAULT_LIMIT


class ListMemoriesRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Which memories to list."""

    kind: Literal["task_outcome", "blocker_resolution", "session_summary", "delegation_summary"] | None = None
    task_id: str | None = None
    limit: Annotated[int, msgspec.Meta(ge=0, le=LIMIT_MAX)] = DEFAULT_LIMIT


class SeedRunNames(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 003's own names for a run's role and context, as its pattern calls
    `start_agent_run({task_id, agent_role, context_type})`; `role` and `context` mean the same."""

    agent_role: str | None = None
    context_type: str | None = None


_WHO = tuple(name for name in Identity.__struct_fields__ if name not in ("task_id", "run_id"))


class Who(msgspec.Struct, frozen=True, kw_only=True):
    """Who writes (the task and run are the tool's own arguments)."""

    project: str | None = None
    host: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    mission_id: str | None = None


CreateInput = tool_input("CreateTaskInput", "A task to create (queued).", TaskCreate, Who, WriteOptions)
UpdateInput = tool_input("UpdateTaskInput", "A change to a task: status, note, fields; expected_version guards races.",
                         TaskUpdate, Who, WriteOptions, help_for={
                             "status": "queued, in_progress, completed (synthesizes a task_outcome), blocked "
                             "(a blocker_resolution, with note as the blocker), failed or cancelled",
                             "note": "for blocked: what blocks and what was tried",
                             "labels": "the task's labels (they replace its labels; [] leaves none)",
                             "unassign": "true: leave the task assigned to no one"})
StartInput = tool_input("StartRunInput", "An agent run to start on a task.", RunStart, SeedRunNames, Who,
                        filled=("project", "context"),  # unset (None) when not given: told apart from "primary"
                        help_for={"context": "primary, or subagent (only writes a delegation_summary)",
                                  "agent_role": "seed 003's name for role",
                                  "context_type": "seed 003's name for context"})
CompleteInput = tool_input("CompleteRunInput", "An agent run to complete (the task's status is untouched).",
                           RunComplete, Who, WriteOptions)
ListTasksInput = tool_input("ListTasksInput", "Which tasks to list.", ListTasksRequest, Who, help_for={
    "limit": f"how many tasks to return at most (default {DEFAULT_LIMIT}; 0: all); `more` counts the rest",
    "status": "only tasks with this status", "assigned_to": "only tasks assigned to this agent",
    "ready": "only the ready queue (queued, nothing holding them), most urgent first"})
ListMemoriesInput = tool_input("ListMemoriesInput", "Which memories to list.", ListMemoriesRequest, Who, help_for={
    "limit": f"how many memories to return at most (default {DEFAULT_LIMIT}; 0: all); `more` counts the rest",
    "kind": "only memories of this kind", "task_id": "only memories of this task"})


def _who(request: Any, store: Store) -> Identity:
    return identity(_Ids(request), store)


class _Ids:
    """A request seen as an identity request: its own task and run are not the writer's."""

    def __init__(self, request: Any) -> None:
        for name in Identity.__struct_fields__:
            setattr(self, name, getattr(request, name, None) if name in _WHO else None)


def _record(store: Store, who: Identity, decide: Any, redact: bool) -> list[Any]:
    from continuity.tasks import service

    stored, _ = service.record(store, who, decide, redact=redact)
    return stored


@tool("create_task", CreateInput, "Create a task (status queued) for multi-step work that outlives this turn or is "
      "delegated; returns task_id.")
def create_task(request: Any, store: Store) -> dict[str, Any]:
    """The `create_task` tool."""
    from continuity.tasks import decide, service

    who = _who(request, store)
    wanted = pick(TaskCreate, request)
    task_id = service.new_id("task")
    stored = _record(store, who, lambda state: decide.decide_create_task(state, who, wanted, task_id), request.redact)
    return {"ok": True, "task_id": task_id, "status": "queued", "version": 1, "event_id": stored[0].event_id}


@tool("update_task", UpdateInput, "Update a task at the end of work: completed, blocked (with note), failed or "
      "cancelled; completed and blocked synthesize a memory.")
def update_task(request: Any, store: Store) -> dict[str, Any]:
    """The `update_task` tool."""
    from continuity.tasks import decide, service

    who = _who(request, store)
    wanted = pick(TaskUpdate, request)
    seen: dict[str, str] = {}
    stored = _record(store, who, lambda state: decide.decide_update_task(state, who, wanted, seen), request.redact)
    event = stored[0].event
    if event.status in ("completed", "blocked"):
        service.after_write(store)
    return {"ok": True, "task_id": request.task_id, "status": event.status or seen.get("status"),
            "version": event.version, "event_id": stored[0].event_id}


@tool("start_agent_run", StartInput, "Start an agent run on a task (primary, or subagent with parent_run_id); "
      "returns run_id.")
def start_agent_run(request: Any, store: Store) -> dict[str, Any]:
    """The `start_agent_run` tool."""
    from continuity.tasks import decide, service
    from continuity.tasks.current import write_current

    who = _who(request, store)
    wanted = _run_start(request)
    run_id = service.new_id("run")
    git = service.git_at(store.root)
    stored = _record(store, who, lambda state: decide.decide_start_run(state, who, wanted, run_id, git), False)
    hint = write_current(store.path, store.local_dir, who.session_id, run_id, request.task_id)
    return {"ok": True, "run_id": run_id, "task_id": request.task_id, "git_branch": git.branch,
            "git_commit": git.commit, "event_id": stored[0].event_id, "warnings": [hint] if hint else []}


def _run_start(request: Any) -> RunStart:
    """The run asked for, under either name of its role and context (both names given must agree)."""
    from continuity.core.errors import UsageError

    wanted: RunStart = pick(RunStart, request)
    role, context = wanted.role, request.context
    if request.agent_role is not None:
        if role is not None and role != request.agent_role:
            raise UsageError("start_agent_run: role and agent_role differ; give one of them")
        role = request.agent_role
    if request.context_type is not None:
        if context is not None and context != request.context_type:
            raise UsageError("start_agent_run: context and context_type differ; give one of them")
        context = request.context_type
    return msgspec.structs.replace(wanted, role=role, context=context or "primary")


@tool("complete_agent_run", CompleteInput, "Complete an agent run with a one-line output_summary (call it in "
      "`finally`); the task's status is untouched.")
def complete_agent_run(request: Any, store: Store) -> dict[str, Any]:
    """The `complete_agent_run` tool."""
    from continuity.tasks import decide, service

    who = _who(request, store)
    wanted = pick(RunComplete, request)
    stored = _record(store, who, lambda state: decide.decide_complete_run(state, who, wanted), request.redact)
    service.completed_run_hints(store, who.project, request.run_id)
    service.after_write(store)
    return {"ok": True, "run_id": request.run_id, "event_id": stored[0].event_id}


@tool("list_tasks", ListTasksInput, "Tasks of the project, the newest first (optionally by status or assignee, "
      "or only the ready queue, most urgent first), at most `limit`; `more` says how many were left out. Read-only.")
def list_tasks(request: Any, store: Store) -> dict[str, Any]:
    """The `list_tasks` tool."""
    from continuity.tasks import queries, service
    from projections.tasks import TaskList

    if request.assigned_to is not None:  # as `task list --assigned`: an id no task can have is a mistake to say
        from continuity.team.decide import checked_name

        checked_name(request.assigned_to, "agent", "list_tasks assigned_to")
    if request.ready and request.status is not None:  # as `task ready`, which takes no --status: never dropped
        from continuity.core.errors import UsageError

        raise UsageError("list_tasks: ready lists queued tasks only; give ready or status, not both")
    project = asked_project(request.project, store)
    state, warnings, _ = service.tasks_state(store, project, view=TaskList)
    found = queries.ready(state, request.assigned_to) if request.ready else \
        queries.newest_first(state, request.status, request.assigned_to)
    shown, more = queries.page(found, request.limit)
    return {"ok": True, "tasks": [service.task_dict(task) for task in shown], "total": len(found), "more": more,
            "problems": list(state.problems), "warnings": warnings}  # as `task list --json`: a merge's conflicts


@tool("list_memories", ListMemoriesInput, "Memories synthesized from tasks, runs and sessions, newest first. "
      "Read-only.")
def list_memories(request: Any, store: Store) -> dict[str, Any]:
    """The `list_memories` tool."""
    from continuity.tasks import queries, service
    from projections.tasks import MemoryList

    project = asked_project(request.project, store)
    state, warnings, _ = service.tasks_state(store, project, view=MemoryList)
    found = queries.memories(state, request.kind, request.task_id)
    shown, more = queries.page(found, request.limit)
    return {"ok": True, "memories": msgspec.to_builtins(shown), "total": len(found), "more": more,
            "warnings": warnings}
