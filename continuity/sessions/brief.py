"""The resume bundle: a view of the projection plus live inputs, as JSON or a Markdown brief.

Pure: `build(project_state, inputs)` and `render_markdown(bundle, max_chars)` read
nothing else, so a brief served once can be rendered again, byte for byte, from the
log and the inputs its `context.served` event recorded.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

import msgspec

from continuity.core.paths import archive_relpath, event_relpath
from continuity.core.text import block, one_line, shortened
from continuity.readside.views import ProjectView
from continuity.sessions.archives import next_action_of, resume_command
from events import clock
from events.context import ViewInputs
from projections.sessions import SESSIONS_LIMIT, fields

ACTIVE_SECONDS = 2 * 3600
DEFAULT_MAX_CHARS = 8000
#: The header without its warnings (which give way: `render_markdown`) plus a whole next action (at most 1,000
#: characters, 2,000 UTF-16 units) always fit in this, so the budget holds without cutting the next action.
MIN_MAX_CHARS = 2500
#: The largest budget asked for anywhere (the CLI's --max-chars, MCP's max_chars): no brief comes near it.
MAX_MAX_CHARS = 10**9
WARNINGS_SHOWN = 3
#: Counted up whenever the brief's text for the same log changes (2: the workstream section after the blockers,
#: its count in the heading, a warning that the brief is incomplete first; 3: with a workstream's cursor as the next
#: action, every next step of the work log under Next steps, a project not a Name quoted in the resume command, the
#: agent's own work beside the project's, the cut note's "has more"; 4: read models that keep an open run, a
#: session not ended, past their bounds, so a brief served past them shows what it had let go of; 5: a project whose
#: work is known but has no next step says so instead of "nothing is known yet"):
#: `context.served` records it, so a replay whose text differs names the change (releases share a version while
#: briefs change between them).
BRIEF_REVISION = 5
#: What the Markdown brief shows of tasks, runs and memories (the JSON bundle carries more).
TASKS_SHOWN = 8
RUNS_SHOWN = 3
MEMORIES_SHOWN = 5
TITLE_CHARS = 100
#: The recall section: after what matters more (next action, blockers, tasks, decisions, recent events).
EARLIER_HEADING = "## Earlier, on the same subject"


def age(then: str | None, now: str) -> str:
    """`just now`, `12m ago`, `3h ago`, `2d ago` (or `unknown`)."""
    if not then:
        return "unknown"
    try:
        seconds = (clock.parse_iso(now) - clock.parse_iso(then)) // 1_000_000
    except ValueError:  # a time no reader takes (an event forged by hand): the brief is served all the same
        return "unknown"
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"  # pragma: no cover


def build(
    project: ProjectView, inputs: ViewInputs, *, as_of: str | None = None, session_id: str | None = None,
    agent_id: str | None = None, run_id: str | None = None, host: str | None = None,
) -> dict[str, Any]:
    """The bundle as a dict: seed 004's resume-bundle fields and more.

    For the session, agent and run it is served to, when given: the session's compaction
    count, its current run, the agent's open tasks (every open task when no agent is named),
    its team resume; pending handoffs addressed to another agent or host are left out.
    """
    now = inputs.now
    session = project.sessions.sessions.get(session_id) if session_id else None
    compaction = (
        {"session_id": session.session_id, "compactions": session.compactions}
        if session is not None and session.source == "compact" else None
    )
    archive = project.latest_archive()
    work = project.work
    workstream = _workstream(project)  # a tracked workstream's cursor is the next action (seed 002)
    next_action = _next_action(project, workstream, archive)
    sessions_active, sessions_stale = [], []
    now_us = clock.parse_iso(now)
    # the newest SESSIONS_LIMIT the model holds: it keeps sessions not ended (a harness with no SessionEnd leaves
    # every one of them so) past that bound, and a brief must not cost more for them
    for info in islice(reversed(project.sessions.sessions.values()), SESSIONS_LIMIT):
        entry = {**fields(info), "age": age(info.last_seen, now)}
        seen_us = clock.parse_iso(info.last_seen) if info.last_seen else 0
        if info.ended_at is None and now_us - seen_us <= ACTIVE_SECONDS * 1_000_000:
            sessions_active.append(entry)
        else:
            sessions_stale.append(entry)
    handoffs = [
        {"path": mention.path, "state": inputs.handoff_states.get(mention.path, "unknown"),
         "mentioned": age(_at(mention), now), "event_id": mention.event_id}
        for mention in reversed(project.refs.handoffs.values())
    ]
    pending = [h for h in handoffs if h["state"] not in ("accepted", "done", "closed", "completed", "rejected")
               and _addressed_to(inputs.handoff_to.get(h["path"]), agent_id, host)]
    mine = [h for h in pending if agent_id and inputs.handoff_to.get(h["path"]) == f"agent:{agent_id}"]
    git = msgspec.to_builtins(inputs.git) if inputs.git else None
    return {
        "ok": True,
        "action": "resume-bundle",
        "project": project.project,
        "generated_at": now,
        "as_of": as_of,
        "compaction": compaction,
        "latest_archive": archive_relpath(archive.archive_id) if archive else None,
        "latest_markdown_archive": inputs.latest_markdown,
        "archive": msgspec.to_builtins(archive) if archive else None,
        "archive_age": age(project.latest_archive_at(), now) if archive else None,
        "work": {
            "current_goal": work.current_goal,
            "in_progress": work.in_progress,
            "next": list(work.next),
            "blockers": list(work.blockers),
            "done": list(work.done),
            "decisions": [_dated(n, now) for n in work.decisions],
            "open_questions": [_dated(n, now) for n in work.questions],
            "last_checkpoint": work.last_checkpoint_id,
            "last_checkpoint_age": age(work.last_checkpoint_at, now) if work.last_checkpoint_at else None,
        },
        "runtime_events": [
            _dated(entry, now, path=event_relpath(entry.name)) for entry in reversed(project.recent)
        ],
        "runs": {
            "files": [msgspec.to_builtins(run) for run in inputs.runs],
            "seen": [fields(run) | {"age": age(run.last_seen, now)}
                     for run in reversed(project.sessions.runs.values())][:20],
        },
        "sessions": {"active": sessions_active, "stale": sessions_stale[:20],
                     "last_host": project.sessions.last_host},
        "pending_handoffs": pending,
        "artifact_states": [
            {"path": m.path, "state": inputs.artifact_states.get(m.path, "unknown"),
             "mentioned": age(_at(m), now)}
            for m in reversed(project.refs.artifacts.values())
        ][:50],
        "git": git,
        "read_first": list(inputs.read_first),
        "next_action": next_action,
        "recommended_commands": [
            resume_command(project.project),
            'continuity checkpoint -m "<what changed>" --next "<next step>"',
            "continuity archive --gate agent --reason \"<why>\"",
        ],
        "tasks": _tasks(project, now, agent_id=agent_id, session_id=session_id, run_id=run_id),
        "events": project.events,
        "warnings": [*merge_warnings(project), *inputs.warnings],
        "workstream": workstream,
        "team": _team(project, agent_id, now, mine),
        "own_work": _own_work(project, agent_id, now),
        "earlier": [_dated(hit, now) for hit in inputs.recall],
    }


def _holds(project: ProjectView, name: str) -> bool:
    """Whether the command loaded the model and it holds state for the project: when not, the brief's part of it is
    as before any of its events, told without loading the model's module (a project that never used the feature)."""
    return name in project.models.states and project.has(name)


def _workstream(project: ProjectView) -> dict[str, Any] | None:
    """The active workstream's section (workstreams.documents.brief_section), or None."""
    if not _holds(project, "workstreams"):
        return None
    from continuity.workstreams.documents import brief_section

    return brief_section(project)


def _tasks(project: ProjectView, now: str, *, agent_id: str | None, session_id: str | None,
           run_id: str | None) -> dict[str, Any]:
    """The tasks section (tasks.resume.work_of); for a project with no task, run or memory, what it gives then."""
    if not _holds(project, "tasks"):
        return {"agent_id": agent_id, "current_run": None, "open_runs": [], "open_runs_total": 0, "open_tasks": [],
                "open_tasks_total": 0, "memories": [], "memories_total": 0}
    from continuity.tasks.resume import work_of

    return work_of(project.tasks, lambda then: age(then, now), agent_id=agent_id, session_id=session_id,
                   run_id=run_id)


def _team(project: ProjectView, agent_id: str | None, now: str,
          handoffs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The team section (team.brief.team_part); for a project with no snapshot, what it gives then."""
    if not _holds(project, "team"):
        if not agent_id or not handoffs:
            return None
        return {"agent": agent_id, "teams": [], "teams_total": 0, "handoffs": handoffs}
    from continuity.team.brief import team_part

    return team_part(project.of("team"), agent_id, now, handoffs)


def _own_work(project: ProjectView, agent_id: str | None, now: str) -> dict[str, Any] | None:
    """What the agent served stated last (its log entries and checkpoints: projections/agentwork.py) where the
    project's work state, which is whoever wrote last, says otherwise: another agent's checkpoint replaced its next
    steps, in progress and blockers in the sections of the project's, and nothing said so. None when they agree."""
    if not agent_id:
        return None
    own = project.of("agentwork").agents.get(agent_id)
    work = project.work
    if own is None or not (own.next or own.in_progress or own.blockers) or (
            own.next == work.next and own.in_progress == work.in_progress and own.blockers == work.blockers):
        return None
    return {"agent": agent_id, "next": list(own.next), "in_progress": own.in_progress, "blockers": list(own.blockers),
            "age": age(own.updated_at, now) if own.updated_at else None}


def _at(entry: Any) -> str:
    """When an entry's event was written by its writer's clock: its `written_at` where the log's time had run ahead
    of that clock (projections.common.written_apart), else its `created_at`; ages count from it, as the archive's,
    the checkpoint's and the sessions' do."""
    written = entry.written_at
    return written if isinstance(written, str) else str(entry.created_at)


def _dated(entry: Any, now: str, **more: Any) -> dict[str, Any]:
    """An entry as the bundle lists it, with its age; its `written_at` only gives the age (the bundle's shape is
    the same whatever the writers' clocks)."""
    found: dict[str, Any] = msgspec.to_builtins(entry)
    found.pop("written_at", None)
    return found | more | {"age": age(_at(entry), now)}


def merge_warnings(project: ProjectView) -> list[str]:
    """A line for the workstream invariants and one for the task conflicts a sync merge left.

    The brief shows only the oldest active workstream and the open tasks: without these lines a
    second active workstream, an item hidden in an ended one or a contested task update would
    reach the agent resuming nowhere. Derived from the read models, so a replay shows them too.
    """
    found: list[str] = []
    broken: list[str] = []
    if _holds(project, "workstreams"):
        from continuity.workstreams.documents import brief_problems

        broken = brief_problems(project)
    if broken:
        found.append(f"{len(broken)} workstream problem(s) left by a merge (`continuity work status` lists them): "
                     f"{broken[0]}")
    contested = project.tasks.problems if _holds(project, "tasks") else []
    if contested:
        found.append(f"{len(contested)} task conflict(s) left by a merge (`continuity verify` lists them): "
                     f"{contested[0]}")
    return found


def _addressed_to(to: str | None, agent_id: str | None, host: str | None) -> bool:
    """Whether a handoff is for the brief's reader: no addressee, or the reader's agent or host (when known)."""
    if to is None:
        return True
    kind, _, name = to.partition(":")
    if kind == "agent":
        return agent_id is None or name == agent_id
    if kind == "host":
        return host is None or name == host
    return True


def _next_action(project: ProjectView, workstream: dict[str, Any] | None, archive: Any) -> str:
    """What to do next: the workstream's cursor, else the newest next step, the archive's, or what is in progress."""
    work = project.work
    if workstream:
        found: str = workstream["cursor"]["nextAction"]
        return found
    if work.next:
        return work.next[0]
    if archive:
        return next_action_of(archive.state)
    if work.in_progress:
        return f"Continue: {work.in_progress}"
    if work.last_checkpoint_id or work.done or work.current_goal or work.blockers:
        return NO_NEXT_STEP
    return "Record a checkpoint: nothing is known yet."


#: The next action of a project whose work is known but whose last checkpoint named no next step (a checkpoint
#: stating any of done/in progress/next/blockers replaces the other three: `--done` alone leaves no next step).
NO_NEXT_STEP = ("No next step recorded: choose one from the work below and record it with "
                "`continuity checkpoint --next \"<next step>\"`.")


def subject(project: ProjectView) -> tuple[list[str], frozenset[str]]:
    """What the brief is about (its next action and open blockers) and the ids of the events it shows.

    The recall section searches the first and leaves out the second (docs/recall.md).
    """
    archive = project.latest_archive()
    work = project.work
    shown = {entry.event_id for entry in project.recent}
    shown.update(note.event_id for note in (*work.decisions, *work.questions))
    if work.last_checkpoint_id:
        shown.add(work.last_checkpoint_id)
    if archive is not None and archive.event_id:
        shown.add(archive.event_id)
    return [_next_action(project, _workstream(project), archive), *work.blockers], frozenset(shown)


def _item(text: str) -> str:
    """A list item whose text, however many lines, cannot start a section or an item of its own."""
    return f"- {block(text)}"


def _lines(bundle: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(heading, lines) in priority order; the first section is never cut.

    Text from events and files goes through `one_line` (inside a line) or `block` (where it
    starts one), so it shows as written but cannot add a heading, an item or a terminal control.
    The next action is shown on one line: kept the same length, it always fits the budget whole.
    """
    work = bundle["work"]
    sections: list[tuple[str, list[str]]] = [("## Next action", [block(one_line(bundle["next_action"]))])]
    own = bundle.get("own_work")
    if own:  # the project's state above and below is another agent's: this agent's own last word, named
        when = f", {own['age']}" if own["age"] else ""
        sections.append((one_line(f"## Your own work ({own['agent']}{when}; the rest is the project's)"), [
            *(_item(f"next: {step}") for step in own["next"]),
            *([_item(f"in progress: {own['in_progress']}")] if own["in_progress"] else []),
            *(_item(f"blocker: {blocker}") for blocker in own["blockers"])]))
    team = bundle.get("team")
    if team:
        from continuity.team.brief import team_lines

        sections.extend(team_lines(team))
    sections.append(("## Blockers", [_item(b) for b in work["blockers"]]))
    if work["in_progress"]:
        sections.append(("## In progress", [block(work["in_progress"])]))
    if bundle.get("workstream"):  # after the blockers: thousands of items must not crowd them out
        from continuity.workstreams.documents import brief_lines

        sections.append(brief_lines(bundle["workstream"]))
    sections.extend(_task_sections(bundle["tasks"]))
    sections.append(("## Open questions", [f"{_item(q['text'])} ({q['age']})"
                                           for q in reversed(work["open_questions"])]))
    sections.append(("## Decisions", [f"{_item(d['text'])} ({d['age']})" for d in reversed(work["decisions"])]))
    sections.append(("## Newest memories", [
        one_line(f"- {_short(m['title'])} ({m['kind']}, {m['age']}; {m['memory_id']})")
        for m in bundle["tasks"]["memories"][:MEMORIES_SHOWN]]))
    shown = {h["path"] for h in team["handoffs"]} if team else set()
    sections.append(("## Pending handoffs", [f"{_item(one_line(h['path']))} ({one_line(h['state'])}, mentioned "
                                             f"{h['mentioned']})" for h in bundle["pending_handoffs"]
                                             if h["path"] not in shown]))
    sections.append(("## Recent events", [
        one_line(f"- {e['age']}: {e['kind']}" + (f" [{e['phase']}]" if e.get("phase") else "")
                 + (f" {e['message']}" if e["message"] else "")) for e in bundle["runtime_events"]
    ]))
    sections.append((EARLIER_HEADING, [
        one_line(f"- {e['age']}: {e['kind']}" + (f" by {e['agent_id']}" if e["agent_id"] else "")
                 + f" ({e['event_id']}): {e['snippet']}") for e in bundle.get("earlier", ())
    ]))
    # the first step is the next action above, unless a workstream's cursor is (then every step is listed here)
    steps = work["next"][1:] if work["next"][:1] == [bundle["next_action"]] else work["next"]
    sections.append(("## Next steps", [_item(n) for n in steps]))
    sections.append(("## Done", [_item(d) for d in reversed(work["done"])]))
    git = bundle["git"]
    if git:
        where = _where(git)
        drift = []
        if git["head_moved"]:
            drift.append(f"- HEAD moved since the archive; now {where}")
            drift.extend(f"- changed since: {one_line(path)}" for path in git["changed_since_archive"])
        drift.extend(f"- newly dirty: {one_line(path)}" for path in git["new_dirty_files"])
        if not drift:
            drift.append(f"- {where}, no drift since the archive")
        sections.append(("## Git", drift))
    active = bundle["sessions"]["active"]
    sections.append(("## Active sessions", [one_line(f"- {s['session_id']}" + (f" on {s['host']}" if s["host"] else "")
                                                     + f" ({s['age']})") for s in active]))
    sections.append(("## Read first", [_item(one_line(path)) for path in bundle["read_first"]]))
    sections.append(("## Commands", [f"- `{one_line(command)}`" for command in bundle["recommended_commands"]]))
    return [(heading, lines) for heading, lines in sections if lines]


def _where(git: dict[str, Any]) -> str:
    """`main at 0123456789ab`, `detached HEAD at 0123456789ab`, `main (no commit yet)`: one line."""
    head = (git["head"] or "")[:12]
    branch = git["branch"]
    if not head:
        return one_line(f"{branch} (no commit yet)" if branch else "no commit yet")
    return one_line(f"{branch} at {head}" if branch else f"detached HEAD at {head}")


def _short(text: str, limit: int = TITLE_CHARS) -> str:
    """`text` cut to `limit` characters (a title in a one-line entry)."""
    return shortened(text, limit)


def _task_sections(work: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The current run, the other open runs and the open tasks, a few lines each."""

    def run_line(run: dict[str, Any]) -> str:
        task = f'{run["task_id"]} "{_short(run["task_title"])}"' if run["task_title"] else str(run["task_id"])
        status = f' [{run["task_status"]}]' if run["task_status"] else ""
        role = f'{run["role"]}, ' if run["role"] else ""
        return one_line(f'- {run["run_id"]} on {task}{status} ({role}{run["context"]}, started {run["started"]}; '
                        f'{run["files"]} files, {run["commands"]} commands)')

    current = work["current_run"]
    sections = [("## Current run", [run_line(current)] if current else [])]
    others = [run_line(run) for run in work["open_runs"][:RUNS_SHOWN]]
    if work["open_runs_total"] > len(others):
        others.append(f"- … {work['open_runs_total'] - len(others)} more open")
    sections.append(("## Open runs", others))
    tasks = [one_line(f'- {t["task_id"]} [{t["status"]}] {_short(t["title"])}'
                      + (f' (p{t["priority"]})' if t["priority"] is not None else "")
                      + (f' @{t["assigned_to"]}' if t["assigned_to"] else "") + f', updated {t["updated"]}')
             for t in work["open_tasks"][:TASKS_SHOWN]]
    if work["open_tasks_total"] > len(tasks):
        tasks.append(f"- … {work['open_tasks_total'] - len(tasks)} more: `continuity task list`")
    heading = f"## Open tasks for {one_line(_short(work['agent_id']))}" if work["agent_id"] else "## Open tasks"
    sections.append((heading, tasks))
    return sections


def units(text: str) -> int:
    """`text`'s length as JavaScript counts it (UTF-16 code units: an emoji is two), which is how the harnesses
    that cut a hook's output past 10,000 characters count: a budget held in these units holds there too."""
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def render_markdown(bundle: dict[str, Any], max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The brief, filled in priority order, never longer than `max_chars` UTF-16 code units (`_units`)."""
    archive_line = (
        f"Latest archive {one_line(bundle['archive']['archive_id'])} ({bundle['archive_age']})."
        if bundle["archive"] else "No archive yet."
    )
    header = [
        f"# Resume: {one_line(bundle['project'])}",
        f"{archive_line} {bundle['events']} events; brief generated {bundle['generated_at']}.",
    ]
    if bundle.get("compaction"):
        count = bundle["compaction"]["compactions"]
        header.append(f"Context was just compacted (compaction {count} of this session): "
                      "what follows is rebuilt from the log, not from memory.")
    # "has everything" overclaimed: the JSON bounds some lists too (open tasks, runs, memories: with their totals)
    cut_note = "(brief cut to fit; `continuity resume-bundle --format json` has more)"
    sections = _lines(bundle)
    budget = max_chars - units(cut_note) - 2
    # the warnings go in as far as the next action, shown whole, still fits after them (a long project name, the
    # compaction line and a next action of wide characters left no room at the smallest budget)
    room = budget - sum(units(line) + 1 for line in header) - sum(
        units(line) + 1 for line in ["", sections[0][0], *sections[0][1]])
    from continuity.readside.catchup import OUT_OF_TIME

    # a warning that the brief is incomplete (the catch-up ran out of time) first and whole: cut or crowded out by
    # others, it left the agent a partial state with no sign of it
    incomplete = [warning for warning in bundle["warnings"] if warning.startswith(OUT_OF_TIME)]
    shown = (incomplete + [warning for warning in bundle["warnings"] if warning not in incomplete])[:WARNINGS_SHOWN]
    warnings = [f"Warning: {one_line(shortened(warning, 400 if warning in incomplete else 200))}"
                for warning in shown]
    for line in warnings:
        room -= units(line) + 1
        if room < 0:
            break
        header.append(line)
    dropped = len(header) < len(warnings) + 2 + bool(bundle.get("compaction"))
    out = list(header)
    size = sum(units(line) + 1 for line in out)
    cut = False
    for index, (heading, lines) in enumerate(sections):
        opening = ["", heading]
        cost = sum(units(line) + 1 for line in opening)
        if index == 0:  # the next action goes in whole, whatever else has to go
            out.extend(opening + lines)
            size += cost + sum(units(line) + 1 for line in lines)
            continue
        if size + cost + units(lines[0]) + 1 > budget:
            cut = True
            break
        out.extend(opening)
        size += cost
        for line in lines:
            if size + units(line) + 1 > budget:
                cut = True
                break
            out.append(line)
            size += units(line) + 1
        if cut:
            break
    if cut or dropped:
        out.extend(["", cut_note])
    return "\n".join(out) + "\n"
