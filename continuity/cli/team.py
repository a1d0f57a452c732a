"""`continuity snapshot` and `continuity resume` (seed 000's team continuity)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from continuity.cli.common import Output, bounded_int, open_store
from continuity.cli.output import reader_may_leave, shown_json, shown_text

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
    from continuity.cli.output import warn
    from continuity.core.errors import StoreNotFound
    from continuity.core.identity import resolve_identity
    from continuity.team.decide import SnapshotRequest
    from continuity.team.service import take_snapshot
    from events.errors import StoreUnsafe, WriteFailed

    try:
        store = open_store(args)
    except StoreNotFound as error:  # seed 000: one line saying nothing was saved, exit 3 (as for any store)
        out.error(f"snapshot: nothing was saved ({error})", EXIT_NOT_SAVED)
        return EXIT_NOT_SAVED
    request = SnapshotRequest(
        team=args.team, agent=args.agent, task=args.task, objective=args.objective,
        decisions=tuple(args.decision), next_actions=tuple(args.next), open_questions=tuple(args.open_question),
        artifacts=tuple(args.artifact), context_used_percent=args.context_percent, transcript_path=args.transcript,
    )
    try:
        data, warnings = take_snapshot(store, resolve_identity(store.project, {"agent_id": args.agent}), request)
    except (WriteFailed, StoreUnsafe) as error:  # seed 000: a snapshot that cannot be made durable is exit 3
        out.error(f"snapshot: nothing was saved ({error})", EXIT_NOT_SAVED)
        return EXIT_NOT_SAVED
    warn(warnings)
    out.emit(data, f"snapshot {data['checkpoint_id']}")
    return 0


def _resume(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.errors import StoreNotFound
    from continuity.team.service import ResumeRequest, resume
    from events.errors import StoreUnsafe

    try:
        store, missing = open_store(args), ""
    except (StoreNotFound, StoreUnsafe) as error:  # no store: no snapshot, as seed 000 reads an empty team folder
        store, missing = None, str(error)
    result = resume(store, ResumeRequest(team=args.team, agent=args.agent, task=args.task, max_age=args.max_age,
                                         as_of=args.as_of), missing=missing)
    warn(result.warnings)
    with reader_may_leave():  # a stale snapshot's exit 2 stands when the reader has left
        if out.as_json:
            sys.stdout.buffer.write(shown_json(result.data) + b"\n")
        else:
            sys.stdout.write(shown_text(result.brief))
        sys.stdout.flush()
    if result.line is not None:
        with contextlib.suppress(OSError):  # the exit code says it when stderr takes nothing
            sys.stderr.write(result.line + "\n")
        return EXIT_NOT_FRESH
    return 0
