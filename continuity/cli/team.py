"""`continuity snapshot` and `continuity resume` (seed 000's team continuity)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from continuity.cli.common import Output, bounded_int, open_store

HELP = {
    "snapshot": "record a structured team snapshot of an agent's task (seed 000)",
    "resume": "the deterministic resume brief of an agent's newest team snapshot (seed 000)",
}
#: Seed 000's exit codes for these commands.
EXIT_NOT_SAVED = 3
EXIT_NOT_FRESH = 2


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `snapshot` or `resume`."""
    parser = commands.add_parser(name, help=HELP[name], parents=[common],
                                 description=HELP[name][0].upper() + HELP[name][1:] + ".")
    parser.add_argument("team", help="the team")
    parser.add_argument("agent", help="the agent")
    if name == "snapshot":
        parser.add_argument("task", help="the task (made one path segment)")
        parser.add_argument("--objective", required=True, help="what the work is for")
        parser.add_argument("--decision", action="append", default=[], metavar="TEXT", help="a decision (repeatable)")
        parser.add_argument("--next", action="append", default=[], metavar="TEXT", help="a next action (repeatable)")
        parser.add_argument("--open-question", action="append", default=[], metavar="TEXT",
                            help="an open question (repeatable)")
        parser.add_argument("--artifact", action="append", default=[], metavar="REF",
                            help="an artifact: a path or URL (repeatable)")
        parser.add_argument("--context-percent", type=bounded_int(0, 100), metavar="N",
                            help="how much of the context window was used (0-100)")
        parser.add_argument("--transcript", metavar="PATH", help="the session transcript")
        parser.set_defaults(handler=_snapshot)
        return
    parser.add_argument("task", nargs="?", help="one task (default: the newest across the agent's tasks)")
    parser.add_argument("--max-age", metavar="DUR",
                        help="fail (exit 2) unless the snapshot is at most this old: 30s, 15m, 12h, 2d")
    parser.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="answer as the log stood then")
    parser.set_defaults(handler=_resume)


def _snapshot(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.identity import resolve_identity
    from continuity.readside.writers import refresh
    from continuity.team.decide import SnapshotRequest, decide_snapshot
    from continuity.team.files import snapshot_relpath
    from events.errors import WriteFailed

    store = open_store(args)
    request = SnapshotRequest(
        team=args.team, agent=args.agent, task=args.task, objective=args.objective,
        decisions=tuple(args.decision), next_actions=tuple(args.next), open_questions=tuple(args.open_question),
        artifacts=tuple(args.artifact), context_used_percent=args.context_percent, transcript_path=args.transcript,
    )
    identity = resolve_identity(store.project, {"agent_id": args.agent})
    drafts = decide_snapshot(identity, request)
    try:
        stored = store.open_log().append_many(drafts)[0]
    except WriteFailed as error:
        out.error(f"snapshot: nothing was saved ({error})", EXIT_NOT_SAVED)
        return EXIT_NOT_SAVED
    event: Any = stored.event
    checkpoint_id = f"CHK-{event.created_at}-{event.task}"
    outcome = refresh(store, ("team",))
    from continuity.cli.output import warn
    from continuity.moments.deliver import emit_after_save

    warn(outcome.warnings + emit_after_save(store, identity, [stored]))
    out.emit({"ok": True, "action": "snapshot", "checkpoint_id": checkpoint_id, "event_id": stored.event_id,
              "path": snapshot_relpath(event.team, event.agent, event.task)}, f"snapshot {checkpoint_id}")
    return 0


def _resume(args: argparse.Namespace, out: Output) -> int:
    import orjson

    from continuity.core.store import now_us
    from continuity.readside.query import current_view
    from continuity.team import resume
    from continuity.team.service import as_of_us

    store = open_store(args)
    project, warnings = store.reading_project()
    view = current_view(store, ("team",), as_of=args.as_of)
    from continuity.cli.output import warn

    warn(warnings + view.warnings)
    teams = view.project(project).of("team").teams
    member = teams.get(args.team, {}).get(args.agent)
    snapshot = resume.pick(member, args.task)
    now = now_us() if args.as_of is None else as_of_us(args.as_of)
    age = resume.age_seconds(snapshot.created_at, now) if snapshot is not None else None
    error_code, line = resume.freshness(args.max_age, age, snapshot)
    if out.as_json:
        sys.stdout.buffer.write(orjson.dumps(resume.as_json(snapshot, age, error_code), option=orjson.OPT_INDENT_2)
                                + b"\n")
    else:
        sys.stdout.write(resume.brief(snapshot, age))
    sys.stdout.flush()
    if line is not None:
        sys.stderr.write(line + "\n")
        return EXIT_NOT_FRESH
    return 0
