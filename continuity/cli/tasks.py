"""`continuity task create|update|show|list|ready` and `continuity run start|complete|show` (seed 003)."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, Parser, bounded_int, looked_up, open_store, project_to_read
from continuity.core.text import one_line
from events.problems import quoted

READY_RULE = (" Ready: queued, the parent task (if any) not blocked, failed or cancelled, no unfinished "
              "subtasks; most urgent priority first.")
STATUSES = ("queued", "in_progress", "completed", "blocked", "failed", "cancelled")
PAGING = (" Shows the first 30 unless --limit N or --all says otherwise; how many were left out is "
          "a line on stderr (`total` and `more` with --json).")


def paging_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """--limit N and --all, shared by the task and memory listings."""
    parser.add_argument("--limit", type=bounded_int(0, 1_000_000), default=None, metavar="N",
                        help=f"show at most N {what} (default 30; 0: all)")
    parser.add_argument("--all", action="store_true", help=f"show every one of the {what} (as --limit 0)")


def limit_of(args: argparse.Namespace) -> int:
    """The listing's limit: 0 (all) for --all, else --limit, else the default."""
    from continuity.tasks.queries import DEFAULT_LIMIT

    if args.all:
        if args.limit not in (None, 0):
            from continuity.core.errors import UsageError

            raise UsageError("--all and --limit N contradict each other: give one")
        return 0
    return DEFAULT_LIMIT if args.limit is None else int(args.limit)


def emit_listing(out: Output, data: dict[str, Any], lines: list[str], more: int, what: str) -> None:
    """A listing: one line per entry on stdout, and on stderr how many were left out (JSON: `more`), or that there
    are none (stdout holds entries only: a script reading ids read `no` as one)."""
    if lines or out.as_json:
        out.emit(data, "\n".join(one_line(line) for line in lines))
    else:
        out.note(f"no {what}")
    if more:
        out.note(f"… {more} more {what}: --limit N or --all")


#: Each family's actions: when the command line names one, only its parser is built.
ACTIONS = {"task": ("create", "update", "show", "list", "ready"), "run": ("start", "complete", "show")}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser,
             identity: argparse.ArgumentParser, action: str | None = None) -> None:
    """Add `task` or `run` (with only `action`'s parser when it names one of theirs)."""
    only = action if action in ACTIONS[name] else None
    if name == "task":
        _register_task(commands, common, identity, only)
    else:
        _register_run(commands, common, identity, only)


def _fields(parser: argparse.ArgumentParser, *, create: bool) -> None:
    parser.add_argument("--description", help="what the task is about (its goal)")
    parser.add_argument("--done-criteria", metavar="TEXT", help="when the task counts as done")
    parser.add_argument("--priority", type=bounded_int(0, 1000), metavar="N", help="0 is the most urgent")
    parser.add_argument("--label", action="append", default=None, metavar="LABEL",
                        help="a label (repeatable)" + ("" if create else "; replaces the labels"))
    parser.add_argument("--assign", metavar="AGENT", help="the agent the task is assigned to")
    if not create:
        parser.add_argument("--no-labels", action="store_true", help="leave the task without labels")
        parser.add_argument("--unassign", action="store_true", help="leave the task assigned to no one")
    parser.add_argument("--redact", action="store_true",
                        help="store secret-like text as [REDACTED:<rule>] instead of refusing")


def _register_task(commands: Any, common: argparse.ArgumentParser, identity: argparse.ArgumentParser,
                   only: str | None) -> None:
    parser = commands.add_parser("task", help="create, update and list tasks", parents=[common],
                                 description="Tasks: the canonical record of agent work (docs/tasks.md).")
    sub = parser.add_subparsers(title="task commands", metavar="ACTION", parser_class=Parser)
    parents = [common, identity]
    if only in (None, "create"):
        create = sub.add_parser("create", help="create a task (queued); prints its id", parents=parents,
                                description="Create a task in status queued and print its id.")
        create.add_argument("--title", required=True, help="one line saying what the task is")
        create.add_argument("--parent", metavar="TASK", type=looked_up("task", name=True), help="the parent task")
        _fields(create, create=True)
        create.set_defaults(handler=_create)
    if only in (None, "update"):
        update = sub.add_parser("update", help="change a task's status or fields", parents=parents,
                                description="Change a task's status or fields. completed synthesizes a "
                                "task_outcome memory, blocked a blocker_resolution (with --note as the blocker).")
        update.add_argument("task_id", metavar="TASK", type=looked_up("task"))
        update.add_argument("--status", choices=STATUSES, help="the new status")
        update.add_argument("--note", help="why (for blocked: what blocks and what was tried)")
        update.add_argument("--title", help="a new title")
        update.add_argument("--reopen", action="store_true", help="reopen a finished task (default status: queued)")
        update.add_argument("--expected-version", type=bounded_int(1, 10**9), metavar="N",
                            help="fail with a version conflict (exit 11) unless the task is at version N")
        _fields(update, create=False)
        update.set_defaults(handler=_update)
    if only in (None, "show"):
        show = sub.add_parser("show", help="one task, whole", parents=parents,
                              description="Show one task: status, version, fields, runs.")
        show.add_argument("task_id", metavar="TASK", type=looked_up("task"))
        show.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood at this point")
        show.set_defaults(handler=_show)
    for action, text in (("list", "tasks, the newest first"), ("ready", "queued tasks ready to work on")):
        if only not in (None, action):
            continue
        about = text[0].upper() + text[1:] + "." + (READY_RULE if action == "ready" else "") + PAGING
        listing = sub.add_parser(action, help=text, parents=parents, description=about)
        if action == "list":
            listing.add_argument("--status", choices=STATUSES, help="only tasks in this status")
        listing.add_argument("--assigned", metavar="AGENT", help="only tasks assigned to this agent")
        paging_flags(listing, "tasks")
        listing.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood at this point")
        listing.set_defaults(handler=_list, ready=action == "ready")
    parser.set_defaults(handler=lambda args, out: _missing(
        "task", "create, update, show, list or ready"))


def _register_run(commands: Any, common: argparse.ArgumentParser, identity: argparse.ArgumentParser,
                  only: str | None) -> None:
    parser = commands.add_parser("run", help="start and complete agent runs on tasks", parents=[common],
                                 description="Agent runs: one agent's attempt at a task (docs/tasks.md).")
    sub = parser.add_subparsers(title="run commands", metavar="ACTION", parser_class=Parser)
    parents = [common, identity]
    if only in (None, "start"):
        start = sub.add_parser("start", help="start a run; prints its id and makes it this session's current run",
                               parents=parents,
                               description="Start a run on the task named by --task (or CONTINUITY_TASK_ID); git "
                               "branch and commit are recorded. File changes and commands logged in this session "
                               "are attributed to it until it completes.")
        start.add_argument("--role", help="the agent's role, e.g. software_engineer")
        start.add_argument("--context", choices=("primary", "subagent"), default="primary",
                           help="primary (default) or subagent (only writes a delegation_summary)")
        start.add_argument("--parent-run", metavar="RUN", type=looked_up("run", name=True),
                           help="the run that delegated this one")
        start.set_defaults(handler=_start)
    if only in (None, "complete"):
        complete = sub.add_parser("complete", help="complete a run (the task's status is not changed)",
                                  parents=parents,
                                  description="Complete a run with a one-line output summary. A subagent run's "
                                  "completion files a delegation_summary under the topmost primary run.")
        complete.add_argument("run_id", metavar="RUN", type=looked_up("run"))
        complete.add_argument("--output-summary", default="", metavar="TEXT",
                              help="what the run produced, in one line")
        complete.add_argument("--artifact", action="append", default=[], metavar="PATH",
                              help="an artifact produced (repeatable)")
        complete.add_argument("--redact", action="store_true",
                              help="store secret-like text as [REDACTED:<rule>] instead of refusing")
        complete.set_defaults(handler=_complete)
    if only in (None, "show"):
        show = sub.add_parser("show", help="one run, whole", parents=parents,
                              description="Show one run: task, role, context, parent, git facts, files, outcome.")
        show.add_argument("run_id", metavar="RUN", type=looked_up("run"))
        show.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood at this point")
        show.set_defaults(handler=_show_run)
    parser.set_defaults(handler=lambda args, out: _missing("run", "start, complete or show"))


def _missing(command: str, actions: str) -> int:
    from continuity.core.errors import UsageError

    raise UsageError(f"{command}: choose an action: {actions} (see --help)")


def _who(args: argparse.Namespace, store: Any) -> Any:
    from continuity.cli.common import identity_from

    return identity_from(args, store)


def _written(out: Output, store: Any, action: str, stored: list[Any], warnings: list[str], data: dict[str, Any],
             text: str) -> int:
    from continuity.cli.output import warn

    warn(warnings)
    out.emit({"ok": True, "action": action, **data, "event_ids": [item.event_id for item in stored],
              "warnings": warnings}, text)
    return 0


def _create(args: argparse.Namespace, out: Output) -> int:
    from continuity.tasks import decide, service

    store = open_store(args)
    who = _who(args, store)
    request = decide.TaskCreate(title=args.title, description=args.description or "",
                                done_criteria=args.done_criteria or "", priority=args.priority,
                                labels=tuple(args.label or ()), assigned_to=args.assign, parent_task_id=args.parent)
    task_id = service.new_id("task")
    stored, warnings = service.record(store, who, lambda state: decide.decide_create_task(state, who, request, task_id),
                                      redact=args.redact)
    return _written(out, store, "task-create", stored, warnings, {"task_id": task_id, "status": "queued",
                                                                  "version": 1}, task_id)


def _labels(args: argparse.Namespace) -> tuple[str, ...] | None:
    """`--label` values (they replace the labels), () for `--no-labels`, None when neither was given."""
    if args.no_labels:
        from continuity.core.errors import UsageError

        if args.label is not None:
            raise UsageError("give labels or --no-labels, not both; nothing written")
        return ()
    return tuple(args.label) if args.label is not None else None


def _update(args: argparse.Namespace, out: Output) -> int:
    from continuity.tasks import decide, service

    store = open_store(args)
    who = _who(args, store)
    request = decide.TaskUpdate(
        task_id=args.task_id, status=args.status, note=args.note, title=args.title, description=args.description,
        done_criteria=args.done_criteria, priority=args.priority,
        labels=_labels(args), assigned_to=args.assign, unassign=args.unassign,
        expected_version=args.expected_version, reopen=args.reopen)
    seen: dict[str, str] = {}
    stored, warnings = service.record(store, who, lambda state: decide.decide_update_task(state, who, request, seen),
                                      redact=args.redact)
    event: Any = stored[0].event
    if event.status in ("completed", "blocked"):
        warnings = warnings + service.after_write(store)
    status = event.status or seen.get("status")  # an update of fields only: the status it left the task in
    text = f"{args.task_id}: {event.from_status} -> {event.status} (v{event.version})" if event.status else \
        f"{args.task_id}: updated (v{event.version})"
    return _written(out, store, "task-update", stored, warnings,
                    {"task_id": args.task_id, "status": status, "version": event.version}, text)


def _state(args: argparse.Namespace, view: Any = None) -> tuple[Any, Any, list[str]]:
    """The store, the project's tasks state (only `view`'s fields, if given) and the warnings (printed)."""
    from continuity.cli.output import warn
    from continuity.tasks import service

    store = open_store(args)
    project, said = project_to_read(args, store)
    state, warnings, _ = service.tasks_state(store, project, as_of=getattr(args, "as_of", None), view=view)
    warnings = [*said, *warnings]
    warn(warnings)
    return store, state, warnings


def _task_list() -> Any:
    from projections.tasks import TaskList

    return TaskList


def _show(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.errors import TaskNotFound
    from continuity.tasks.service import task_dict
    from projections.tasks import problems_of

    _, state, warnings = _state(args, _task_list())
    task = state.tasks.get(args.task_id)
    if task is None:
        raise TaskNotFound(f"unknown task {quoted(args.task_id, redact=True)}")
    data = task_dict(task)
    lines = [f"{task.task_id} [{task.status}] v{task.version} {task.title}"]
    lines += [f"  {key}: {value}" for key, value in data.items()
              if key not in ("task_id", "status", "version", "title") and value not in (None, "", [])]
    problems = problems_of(state.problems, task.task_id)
    lines += [f"PROBLEM: {problem}" for problem in problems]
    out.emit({"ok": True, "task": data, "problems": problems, "warnings": warnings},
             "\n".join(one_line(line) for line in lines))
    return 0


def _list(args: argparse.Namespace, out: Output) -> int:
    from continuity.tasks.queries import newest_first, page, ready
    from continuity.tasks.service import task_dict

    limit = limit_of(args)
    if args.assigned is not None:  # an id no task can be assigned to is a mistake to say, not "no tasks"
        from continuity.team.decide import checked_name

        checked_name(args.assigned, "agent", "task list --assigned")
    _, state, warnings = _state(args, _task_list())
    found = ready(state, args.assigned) if args.ready else \
        newest_first(state, getattr(args, "status", None), args.assigned)
    tasks, more = page(found, limit)
    lines = [f"{t.task_id} [{t.status}] v{t.version} {t.title}" + (f" @{t.assigned_to}" if t.assigned_to else "")
             for t in tasks]
    if not out.as_json:  # stdout is one line per task shown (it pipes): the merge problems are warnings beside it
        from continuity.cli.output import warn

        warn(f"PROBLEM: {problem}" for problem in state.problems)
    emit_listing(out, {"ok": True, "tasks": [task_dict(t) for t in tasks], "total": len(found), "more": more,
                       "problems": list(state.problems), "warnings": warnings}, lines, more, "tasks")
    return 0


def _start(args: argparse.Namespace, out: Output) -> int:
    import os

    from continuity.core.errors import UsageError
    from continuity.tasks import decide, service
    from continuity.tasks.current import write_current

    task_id = args.task or os.environ.get("CONTINUITY_TASK_ID")
    if not task_id:
        raise UsageError("run start: name the task with --task TASK")
    store = open_store(args)
    who = _who(args, store)
    request = decide.RunStart(task_id=task_id, role=args.role, context=args.context, parent_run_id=args.parent_run)
    run_id = service.new_id("run")
    git = service.git_at(store.root)
    stored, warnings = service.record(
        store, who, lambda state: decide.decide_start_run(state, who, request, run_id, git))
    hint = write_current(store.path, store.local_dir, who.session_id, run_id, task_id)
    warnings = [*warnings, *([hint] if hint else [])]
    return _written(out, store, "run-start", stored, warnings, {"run_id": run_id, "task_id": task_id,
                                                                "git_branch": git.branch, "git_commit": git.commit},
                    run_id)


def _complete(args: argparse.Namespace, out: Output) -> int:
    from continuity.tasks import decide, service

    store = open_store(args)
    who = _who(args, store)
    request = decide.RunComplete(run_id=args.run_id, output_summary=args.output_summary,
                                 artifacts=tuple(args.artifact))
    stored, warnings = service.record(store, who, lambda state: decide.decide_complete_run(state, who, request),
                                      redact=args.redact)
    service.completed_run_hints(store, who.project, args.run_id)
    # a subagent's completion files a delegation_summary; a primary run's fills its task's memory in (the file is
    # rewritten): the memory files follow the write, as the MCP tool's do
    warnings = warnings + service.after_write(store)
    return _written(out, store, "run-complete", stored, warnings, {"run_id": args.run_id},
                    f"{args.run_id}: completed")


def _show_run(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.errors import TaskNotFound
    from continuity.tasks.service import task_dict

    _, state, warnings = _state(args)
    run = state.runs.get(args.run_id)
    if run is None:
        raise TaskNotFound(f"unknown run {quoted(args.run_id, redact=True)}")
    data = task_dict(run)
    lines = [f"{run.run_id} task {run.task_id} ({run.context}) " + ("completed" if run.completed_at else "open")]
    lines += [f"  {key}: {value}" for key, value in data.items()
              if key not in ("run_id", "task_id", "context") and value not in (None, "", [], 0)]
    out.emit({"ok": True, "run": data, "warnings": warnings}, "\n".join(one_line(line) for line in lines))
    return 0
