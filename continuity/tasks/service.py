"""The task commands' API, shared by the CLI and the MCP tools: load the state, decide, record.

Recording is optimistic (continuity/readside/decided.py): decide from the caught-up
`tasks` state, then decide again under the append lock with any events that landed
since; an error (a version conflict, a transition no longer valid) writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.readside.memory_files import refresh_tasks
from events.base import Event
from events.errors import ContinuityError
from events.sealing import StoredEvent
from projections.tasks import MODEL, TasksState

Decide = Callable[[TasksState], list[Event]]


def new_id(prefix: str) -> str:
    """A new task or run id: the prefix and 10 random hex digits."""
    return f"{prefix}-{os.urandom(5).hex()}"


def tasks_state(store: Store, project: str, *, as_of: str | None = None,
                view: Any = None) -> tuple[TasksState, list[str], str | None]:
    """The project's `tasks` state (caught up, or as of a point), the warnings, the last event folded.

    `view` (`TaskList`, `MemoryList` of projections/tasks.py) names what a read uses: then
    the state may hold only those fields, and a listing costs the same however much is kept.
    """
    from events.errors import StoreUnsafe

    if as_of is None:
        try:
            outcome = refresh_tasks(store, view=view)
        except StoreUnsafe:  # reads fail open: a linked store or local/ answers as current_view answers, warned
            pass
        else:
            state = outcome.models.state("tasks")
            return MODEL.project(state, project), outcome.warnings, state.last_name
    from continuity.readside.query import current_view

    found = current_view(store, ("tasks",), as_of=as_of, write=False)
    return MODEL.project(found.models.state("tasks"), project), found.warnings, found.models.last_name


def record(store: Store, identity: Identity, decide: Decide, *,
           redact: bool = False) -> tuple[list[StoredEvent], list[str]]:
    """Decide from the current state and append, re-deciding under the lock (continuity/readside/decided.py)."""
    from continuity.readside.decided import record_decided

    return record_decided(store, MODEL, identity.project, lambda store, project: tasks_state(store, project),
                          decide, redact=redact, what="task")


def merge_problems(store: Store) -> tuple[list[str], list[str]]:
    """The task and run conflicts a merge of clones left (for `verify`), and warnings; fails open."""
    from projections.tasks import TaskList

    try:
        project, said = store.reading_project()
        state, warnings, _ = tasks_state(store, project, view=TaskList)
    except (OSError, ContinuityError) as error:
        return [], [f"tasks not checked: {error}"]
    return list(state.problems), [*said, *warnings]


def completed_run_hints(store: Store, project: str, run_id: str) -> None:
    """The current-run hints after `run_id` completed: cleared, or, for a run whose parent is still open (a
    subagent's), the parent current again where it was. The parent's completion may land between the read and the
    hint (its own clearing then finds nothing to clear): asked again once the hint is written, a completed parent
    is cleared too."""
    from continuity.tasks.current import clear_current
    from continuity.tasks.decide import parent_to_resume

    try:
        resume = parent_to_resume(tasks_state(store, project)[0], run_id)
    except (OSError, ContinuityError):  # a hint: the events stay the truth
        resume = None
    clear_current(store.local_dir, run_id, resume)
    if resume is None:
        return
    try:
        state = tasks_state(store, project)[0]
    except (OSError, ContinuityError):
        return
    parent = state.runs.get(resume[0])
    if parent is None or parent.completed_at is not None:
        clear_current(store.local_dir, resume[0])


def after_write(store: Store) -> list[str]:
    """Catch the `tasks` model up after a write (memory files too); warnings only, never raises."""
    try:
        return refresh_tasks(store).warnings
    except (OSError, ContinuityError) as error:  # a durable write stands whatever the read side does
        return [f"projections not caught up ({error})"]


def git_at(root: str) -> Any:
    """The branch and commit of the work tree holding `root` (empty outside one, or without git)."""
    from continuity.facts import GitUnavailable, _git, work_tree_root
    from continuity.tasks.decide import GitAt

    top = work_tree_root(root)
    if top is None:
        return GitAt()
    try:
        # `--abbrev-ref` applies to every name after it: the commit is asked for before it.
        lines = _git(top, "rev-parse", "HEAD", "--abbrev-ref", "HEAD").split()
    except GitUnavailable:  # no commit yet (or no git): the branch HEAD names, if any
        try:
            lines = ["", _git(top, "symbolic-ref", "--short", "-q", "HEAD").strip()]
        except GitUnavailable:
            return GitAt()
    if len(lines) != 2 or not lines[1]:
        return GitAt()
    branch = None if lines[1] == "HEAD" else lines[1]
    if branch is not None:  # a fact gathered, not given: a branch named like a secret is stored redacted
        from events.guard import redact_text

        branch = redact_text(branch)[0]
    return GitAt(branch=branch, commit=lines[0] or None)


def task_dict(task: Any) -> dict[str, Any]:
    """A task as JSON-ready data."""
    return msgspec.to_builtins(task)  # type: ignore[no-any-return]
