"""Tasks, agent runs and their synthesized memories (seed 003), per project.

Bounds: every non-terminal task is kept (up to OPEN_LIMIT, the oldest dropped past it)
and the newest TERMINAL_LIMIT finished ones (completed, failed, cancelled; a failed or
cancelled one holding open subtasks is kept past it), so ten
thousand tasks in a project cost a few hundred kept entries once most are done; runs
are kept least recently touched first up to RUNS_LIMIT (completed ones first: open ones stay, up to
OPEN_RUNS_LIMIT), with at most RUN_FILES files each. The memory rules are in projections/memories.py.

A sync unions the logs of clones that changed the same task or run while apart. The
fold keeps log order (the later update stays, the first completion of a run stays) and
records each such conflict in `problems` (at most PROBLEMS_LIMIT), which `verify`,
`task show` and `task list` report: never resolved silently. An update decided on the
merged state (a `task update` after the sync) settles the task's problems.
"""

from typing import Any

import msgspec

from events.base import Event
from events.session import SessionEnded
from events.task import TERMINAL, RunCompleted, RunStarted, TaskCreated, TaskUpdated
from projections import memories as mem
from projections.common import append_bounded, merge_unique, touch_keeping, written_apart
from projections.passes import no_run, no_run_files
from projections.readmodel import ReadModel

OPEN_LIMIT = 5000
TERMINAL_LIMIT = 500
RUNS_LIMIT = 1000
#: Open runs are kept past RUNS_LIMIT (completed ones give way first: an open run forgotten could never be
#: completed, nor be a subagent's parent), up to this many, past which the least recently touched go whatever
#: they are (runs whose agents died and never completed them).
OPEN_RUNS_LIMIT = 2000
RUN_FILES = 200
TASK_RUNS = 20
PROBLEMS_LIMIT = 200


class Task(msgspec.Struct, kw_only=True):
    """One task as its events left it; `version` counts its events (created is 1)."""

    task_id: str
    title: str
    status: str = "queued"
    version: int = 1
    description: str = ""
    done_criteria: str = ""
    priority: int | None = None
    labels: list[str] = msgspec.field(default_factory=list)
    assigned_to: str | None = None
    parent_task_id: str | None = None
    note: str = ""
    created_at: str = ""
    updated_at: str = ""
    created_by: str | None = None
    runs: list[str] = msgspec.field(default_factory=list)
    #: When it was last updated by its writer's clock, where the log's time had run ahead of it (written_apart).
    updated_written: str | msgspec.UnsetType = msgspec.UNSET


class Run(msgspec.Struct, kw_only=True):
    """One agent run: its task, role, context, parent run, git facts, files and outcome."""

    run_id: str
    task_id: str | None = None
    role: str | None = None
    context: str = "primary"
    parent_run_id: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None
    started_at: str = ""
    completed_at: str | None = None
    output_summary: str = ""
    artifacts: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    commands: int = 0
    #: When it started by its writer's clock, where the log's time had run ahead of it (written_apart).
    started_written: str | msgspec.UnsetType = msgspec.UNSET


class TasksState(msgspec.Struct, kw_only=True):
    """Tasks (creation order), runs (least recently touched first), finished task ids, memories, merge problems."""

    tasks: dict[str, Task] = msgspec.field(default_factory=dict)
    runs: dict[str, Run] = msgspec.field(default_factory=dict)
    finished: list[str] = msgspec.field(default_factory=list)
    #: Failed or cancelled tasks past TERMINAL_LIMIT that a subtask not finished still has as its parent: they
    #: hold it (`task ready` leaves it out), so they stay, outside the bound, until it finishes.
    holding: list[str] = msgspec.field(default_factory=list)
    book: mem.MemoryBook = msgspec.field(default_factory=mem.MemoryBook)
    forgotten: int = 0
    problems: list[str] = msgspec.field(default_factory=list)


class TaskList(msgspec.Struct, kw_only=True):
    """What a task listing reads of a project's state: its tasks and merge problems (decoding skips the rest)."""

    tasks: dict[str, Task] = msgspec.field(default_factory=dict)
    problems: list[str] = msgspec.field(default_factory=list)


class MemoryShelf(msgspec.Struct, kw_only=True):
    """What a memory listing reads of a memory book: the kept memories and the count ever made."""

    memories: list[mem.Memory] = msgspec.field(default_factory=list)
    total: int = 0


class MemoryList(msgspec.Struct, kw_only=True):
    """What a memory listing reads of a project's state: its memories (decoding skips the rest)."""

    book: MemoryShelf = msgspec.field(default_factory=MemoryShelf)


def _no_files() -> msgspec.Raw:
    return msgspec.Raw(b"\x90")  # an empty msgpack array


class RunGlance(Run, kw_only=True):
    """What the brief reads of a run: its files left encoded (`run_files` decodes them for the few runs it shows).

    A project may keep RUNS_LIMIT runs of up to RUN_FILES paths each: decoded for every session start, they made
    its memory grow with the run history (86 MiB for 1,000 runs of 200 files)."""

    files: msgspec.Raw = msgspec.field(default_factory=_no_files)  # type: ignore[assignment]


def run_files(run: Run) -> list[str]:
    """A run's files, whether the run was decoded whole or as a RunGlance."""
    files: Any = run.files
    if isinstance(files, msgspec.Raw):
        decoded: list[str] = msgspec.msgpack.decode(files, type=list[str])
        return decoded
    return list(files)


class TaskBrief(msgspec.Struct, kw_only=True):
    """What the resume brief reads of a project's state: tasks, runs at a glance, the memories (whole: the memory
    files are written from every view of `tasks`) and merge problems."""

    tasks: dict[str, Task] = msgspec.field(default_factory=dict)
    runs: dict[str, RunGlance] = msgspec.field(default_factory=dict)
    book: MemoryShelf = msgspec.field(default_factory=MemoryShelf)
    problems: list[str] = msgspec.field(default_factory=list)


def _forget(state: TasksState, task_id: str) -> None:
    if state.tasks.pop(task_id, None) is not None:
        state.forgotten += 1


def _holds_open_subtasks(state: TasksState, task_id: str) -> bool:
    """A failed or cancelled task with a subtask not finished: it holds them (`task ready` leaves them out), so it
    is kept past TERMINAL_LIMIT (forgotten, its subtasks were offered as ready). Looked at only for the task
    leaving `finished` and for a held one whose subtask finishes: each look reads every task."""
    held = state.tasks.get(task_id)
    return held is not None and held.status in ("failed", "cancelled") and any(
        child.parent_task_id == task_id and child.status not in TERMINAL for child in state.tasks.values())


def _settle(state: TasksState, task: Task) -> None:
    """Keep the bounds: the newest TERMINAL_LIMIT finished tasks (and, outside it, those holding a subtask not
    finished), at most OPEN_LIMIT open ones."""
    if task.task_id in state.finished:
        state.finished.remove(task.task_id)
    elif task.task_id in state.holding:  # reopened
        state.holding.remove(task.task_id)
    if task.status in TERMINAL:
        state.finished.append(task.task_id)
        while len(state.finished) > TERMINAL_LIMIT:
            victim = state.finished.pop(0)
            if _holds_open_subtasks(state, victim):
                state.holding.append(victim)
            else:
                _forget(state, victim)
        _release(state, task.parent_task_id)  # its last open subtask finished
    open_count = len(state.tasks) - len(state.finished) - len(state.holding)
    if open_count > OPEN_LIMIT:
        finished = set(state.finished) | set(state.holding)
        for task_id in [key for key in state.tasks if key not in finished][: open_count - OPEN_LIMIT]:
            parent = state.tasks[task_id].parent_task_id
            _forget(state, task_id)
            _release(state, parent)  # its open subtask forgotten: it holds nothing the model knows


def _release(state: TasksState, parent: str | None) -> None:
    """Forget a held parent (`holding`) that holds no subtask any more."""
    if parent and parent in state.holding and not _holds_open_subtasks(state, parent):
        state.holding.remove(parent)
        _forget(state, parent)


def on_created(state: TasksState, name: str, event: TaskCreated) -> TasksState:
    """A new task, queued (a second `task.created` for a known id is ignored: first wins)."""
    on_any(state, name, event)
    if event.task_id is None or event.task_id in state.tasks:
        return state
    task = Task(task_id=event.task_id, title=event.title, description=event.description,
                done_criteria=event.done_criteria, priority=event.priority, labels=list(event.labels),
                assigned_to=event.assigned_to, parent_task_id=event.parent_task_id,
                created_at=event.created_at, updated_at=event.created_at, created_by=event.agent_id,
                updated_written=written_apart(event))
    state.tasks[task.task_id] = task
    _settle(state, task)
    return state


def on_updated(state: TasksState, name: str, event: TaskUpdated) -> TasksState:
    """Apply what the update states; completed and blocked synthesize a memory."""
    on_any(state, name, event)
    task = state.tasks.get(event.task_id or "")
    if task is None:
        return state
    _check_update(state, task, event)
    task.version += 1
    task.updated_at = event.created_at
    task.updated_written = written_apart(event)
    for field in ("title", "description", "done_criteria", "priority", "assigned_to"):
        value = getattr(event, field)
        if value is not None:
            setattr(task, field, value)
    if event.labels is not None:
        task.labels = list(event.labels)
    if event.unassign:
        task.assigned_to = None
    if event.note_text:
        task.note = event.note_text
    if event.status is not None:
        task.status = event.status
        _settle(state, task)
        if event.status in ("completed", "blocked"):
            _synthesize_task(state, task, event, name)
    return state


def problems_of(problems: list[str], task_id: str) -> list[str]:
    """The problems about one task and its runs."""
    return [p for p in problems if p.startswith(f"task {task_id}:") or f" of task {task_id}:" in p]


def problems_digest(problems: list[str]) -> str:
    """A short digest of a task's problems as one replica saw them (TaskUpdated.settles): the same problems give the
    same digest on every replica, whatever their order."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(problems)).encode()).hexdigest()[:16]


def _problem(state: TasksState, text: str) -> None:
    if text not in state.problems:
        append_bounded(state.problems, text, PROBLEMS_LIMIT)


#: How format 20 names the update in a status problem's text, which format 19 left out.
_UPDATE_NAMED = " (update RCE-"


def _as_format_19(problems: list[str]) -> list[str]:
    """The problems as format 19 worked them out (a status problem without its update, the same text kept once): an
    update decided by a release of that format settles with their digest (`TaskUpdated.settles`), which a rebuild
    by this one must still read as settling them."""
    older: list[str] = []
    for problem in problems:
        at = problem.find(_UPDATE_NAMED)
        if at > 0 and " recorded while it was " in problem[:at]:
            rest = problem.find("; ", at)
            problem = problem[:at] + " (" + problem[rest + 2:] if rest > 0 else problem
        if problem not in older:
            older.append(problem)
    return older


def _check_update(state: TasksState, task: Task, event: TaskUpdated) -> None:
    """An update decided on another state than the one it lands on (clones merged) is a problem.

    An update decided on the merged state (its version follows, and it saw the task's problems as they stand here)
    settles the task's and its runs' problems. A run's problem does not change the task's version: an update another
    replica decided before that problem came in must not settle it without a word.
    """
    if event.version == task.version + 1 and event.from_status in (None, task.status):
        settled = problems_of(state.problems, task.task_id)
        if event.settles is None or event.settles in (problems_digest(settled),
                                                      problems_digest(_as_format_19(settled))):
            state.problems = [p for p in state.problems if p not in settled]
    elif event.status is not None and event.from_status is not None and event.from_status != task.status:
        _problem(state, f"task {task.task_id}: {event.from_status} -> {event.status} recorded while it was "
                 f"{task.status} (update {event.event_id}; concurrent writers merged?; the later in log order stays)")
    elif event.version and event.version != task.version + 1:
        _problem(state, f"task {task.task_id}: update {event.event_id} was made at version {event.version - 1} "
                 f"while it was at version {task.version} (concurrent writers merged?; the later in log order stays)")


def _run_of(state: TasksState, task: Task, event: Event) -> Run | None:
    """The run an update is made in: its own run if it belongs to the task, else the task's newest primary run (an
    update made in no run is no subagent's: a subagent's run on the task must not take the task's outcome)."""
    run = state.runs.get(event.run_id or "")
    if run is not None and run.task_id == task.task_id:
        return run
    for run_id in reversed(task.runs):
        run = state.runs.get(run_id)
        if run is not None and run.context == "primary":
            return run
    return None


def task_files(state: TasksState, task: Task) -> list[str]:
    """Files recorded in the task's primary runs, the most recently touched last (bounded)."""
    files: list[str] = []
    for run_id in task.runs:
        run = state.runs.get(run_id)
        if run is not None and run.context == "primary":
            merge_unique(files, run.files, RUN_FILES)
    return files


def _synthesize_task(state: TasksState, task: Task, event: TaskUpdated, name: str) -> None:
    blocked = event.status == "blocked"
    kind = "blocker_resolution" if blocked else "task_outcome"
    run = _run_of(state, task, event)
    book = state.book
    if run is not None and run.context == "subagent":
        mem.skip(book, run.run_id, kind, "a subagent run only writes a delegation_summary", event.event_id)
        return
    key = run.run_id if run is not None else f"task:{task.task_id}"
    if not mem.claim(book, key, kind, event.event_id):
        return
    files = task_files(state, task)
    note = event.note_text or ""  # the blocker is this update's note: an older progress note is not it
    summary = mem.task_summary(task.title, task.description or task.done_criteria,
                               run.output_summary if run is not None else "", files,
                               note if blocked else None)
    run_id = run.run_id if run is not None else None
    memory = mem.Memory(
        memory_id=mem.memory_id_for(event.event_id, name), kind=kind,
        title=f"Task {'blocked' if blocked else 'complete'}: {task.title}", summary=summary,
        task_id=task.task_id, run_id=run_id, files_touched=files,
        provenance={"hook_point": f"update_task:{event.status}", "run_id": run_id, "files_touched": files},
        event_id=event.event_id, created_at=event.created_at, written_at=written_apart(event),
    )
    if blocked:
        book.blockers[memory.memory_id] = note
        while len(book.blockers) > mem.MEMORIES_LIMIT:  # as memories are: the older ones have left the book
            del book.blockers[next(iter(book.blockers))]
    mem.file_memory(book, memory, key, state.runs)


def _open_run(run: Run) -> bool:
    return run.completed_at is None


def on_run_started(state: TasksState, name: str, event: RunStarted) -> TasksState:
    """A run begins on a task (a second start of a known run is ignored: first wins)."""
    if event.run_id is None or event.run_id in state.runs:
        return on_any(state, name, event)
    run = Run(run_id=event.run_id, task_id=event.task_id, role=event.role, context=event.context,
              parent_run_id=event.parent_run_id, session_id=event.session_id, agent_id=event.agent_id,
              git_branch=event.git_branch, git_commit=event.git_commit, started_at=event.created_at,
              started_written=written_apart(event))
    touch_keeping(state.runs, run.run_id, run, RUNS_LIMIT, _open_run, OPEN_RUNS_LIMIT)
    task = state.tasks.get(event.task_id or "")
    if task is not None and task.status in TERMINAL:  # refused locally: another replica's, decided before the end
        _problem(state, f"run {run.run_id} of task {task.task_id}: started while the task was {task.status} "
                 "(concurrent writers merged?; reopen the task to go on with it)")
    if task is not None:
        task.runs.append(run.run_id)
        del task.runs[:-TASK_RUNS]
    return state


def on_run_completed(state: TasksState, name: str, event: RunCompleted) -> TasksState:
    """A run ends (the first completion counts); a subagent's yields a delegation_summary."""
    run = state.runs.get(event.run_id or "")
    if run is None:
        return state
    if run.completed_at is not None:
        if (event.output_summary, list(event.artifacts)) != (run.output_summary, run.artifacts):
            _problem(state, f"run {run.run_id} of task {run.task_id}: completed twice with other outcomes "
                     f"(event {event.event_id} ignored: the first completion stays; concurrent writers merged?)")
        return state
    run.completed_at = event.created_at
    run.output_summary = event.output_summary
    run.artifacts = list(event.artifacts)
    touch_keeping(state.runs, run.run_id, run, RUNS_LIMIT, _open_run, OPEN_RUNS_LIMIT)
    if run.context == "subagent":
        _synthesize_delegation(state, run, event, name)
    elif run.output_summary:
        _add_run_summary(state, run)
    return state


#: The memories a run's completion fills its output summary into (made before it, in seed 003's order).
FILLED_BY_RUN = ("task_outcome", "blocker_resolution")


def _add_run_summary(state: TasksState, run: Run) -> None:
    """The run's output summary, into the task_outcome or blocker_resolution made from it before it completed.

    Seed 003's own order (`update_task` completed or blocked, then `complete_agent_run` in a `finally`)
    makes the memory while the run has no summary yet; the memory's summary names it once it comes,
    keeping a blocker_resolution's blocker. Title and summary are made from the task as it is then (a title
    another clone changed in between was in the summary while the heading kept the old one).
    """
    task = state.tasks.get(run.task_id or "")
    if task is None:
        return
    for memory in state.book.memories:
        if memory.run_id != run.run_id or memory.kind not in FILLED_BY_RUN:
            continue
        blocker = None
        if memory.kind == "blocker_resolution":
            blocker = state.book.blockers.get(memory.memory_id, "")
        memory.summary = mem.task_summary(task.title, task.description or task.done_criteria, run.output_summary,
                                          memory.files_touched, blocker)
        memory.title = f"Task {'blocked' if memory.kind == 'blocker_resolution' else 'complete'}: {task.title}"


def _synthesize_delegation(state: TasksState, run: Run, event: RunCompleted, name: str) -> None:
    primary_id = mem.topmost_primary(state.runs, run.parent_run_id)
    if primary_id is None:
        mem.skip(state.book, run.run_id, "delegation_summary", "no primary run above it", event.event_id)
        return
    primary = state.runs[primary_id]
    child_task = state.tasks.get(run.task_id or "")
    title = child_task.title if child_task is not None else (run.task_id or run.run_id)
    memory = mem.Memory(
        memory_id=mem.memory_id_for(event.event_id, name), kind="delegation_summary",
        title=f"Subagent: {title}", summary=mem.delegation_summary(title, run.output_summary, run.artifacts),
        task_id=primary.task_id, run_id=primary_id,
        provenance={"hook_point": "on_delegation", "parent_run_id": primary_id, "child_run_id": run.run_id,
                    "artifacts": list(run.artifacts)},
        event_id=event.event_id, created_at=event.created_at, written_at=written_apart(event),
    )
    mem.file_memory(state.book, memory, None)


def on_session_ended(state: TasksState, name: str, event: SessionEnded) -> TasksState:
    """A session ended during a primary run: a session_summary, unless the run already has a memory. Ended during a
    subagent run (one never completed), the summary is the topmost primary run's above it."""
    on_any(state, name, event)
    run = state.runs.get(event.run_id or "")
    if run is None:
        return state
    if run.context == "subagent":  # ended inside a delegation: the summary is the primary run's (seed 003's Stop hook)
        mem.skip(state.book, run.run_id, "session_summary", "a subagent run only writes a delegation_summary",
                 event.event_id)
        primary = mem.topmost_primary(state.runs, run.parent_run_id)
        if primary is None:
            mem.skip(state.book, run.run_id, "session_summary", "no primary run above it",
                     event.event_id)
            return state
        run = state.runs[primary]
    if not mem.claim(state.book, run.run_id, "session_summary", event.event_id):
        return state
    task = state.tasks.get(run.task_id or "")
    title = task.title if task is not None else (run.task_id or run.run_id)
    lines = [f"Session {event.session_id or '?'} ended" + (f": {event.reason}" if event.reason else ""),
             f"Task: {title}", f"Files touched: {len(run.files)}", f"Commands: {run.commands}"]
    memory = mem.Memory(
        memory_id=mem.memory_id_for(event.event_id, name), kind="session_summary",
        title=f"Session summary: {title}", summary=mem.capped("\n".join(lines), mem.SUMMARY_CHARS),
        task_id=run.task_id, run_id=run.run_id, files_touched=list(run.files),
        provenance={"hook_point": "session_end", "run_id": run.run_id, "files_touched": list(run.files)},
        event_id=event.event_id, created_at=event.created_at, written_at=written_apart(event),
    )
    mem.file_memory(state.book, memory, run.run_id, state.runs)
    return state


def on_any(state: TasksState, name: str, event: Event) -> TasksState:
    """Any event of a known open run: its files and commands are the run's (seed 003's file_patch and bash_trace;
    what is logged under a run after it completed is not)."""
    run = state.runs.get(event.run_id or "") if event.run_id else None
    if run is not None and run.completed_at is None and (event.refs.files or event.refs.commands):
        merge_unique(run.files, event.refs.files, RUN_FILES)
        run.commands += len(event.refs.commands)
    return state


def memories_of(state: Any) -> list[mem.Memory]:
    """The project's newest memories, oldest first."""
    return list(state.book.memories)


MODEL = ReadModel(
    "tasks", format=22, state=TasksState, initial=TasksState,
    folds={TaskCreated: on_created, TaskUpdated: on_updated, RunStarted: on_run_started,
           RunCompleted: on_run_completed, SessionEnded: on_session_ended, Event: on_any},
    passes={Event: no_run_files, SessionEnded: no_run},
    bounds={"OPEN_LIMIT": OPEN_LIMIT, "TERMINAL_LIMIT": TERMINAL_LIMIT, "RUNS_LIMIT": RUNS_LIMIT,
            "OPEN_RUNS_LIMIT": OPEN_RUNS_LIMIT,
            "RUN_FILES": RUN_FILES, "TASK_RUNS": TASK_RUNS, "PROBLEMS_LIMIT": PROBLEMS_LIMIT,
            "MEMORIES_LIMIT": mem.MEMORIES_LIMIT,
            "SUMMARY_CHARS": mem.SUMMARY_CHARS, "DELEGATION_CHARS": mem.DELEGATION_CHARS,
            "WALK_LIMIT": mem.WALK_LIMIT, "SYNTHESIZED_LIMIT": mem.SYNTHESIZED_LIMIT},
)
