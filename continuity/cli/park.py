"""`continuity park <team>`: the session-exit verb (seed 000). Loud when it cannot write a checkpoint."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from continuity.cli.common import Output, open_store

HELP = ("snapshot every role you hold under a fresh lease (or just --role R) and point its checkpoint_ref at "
        "the snapshot")


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `park`."""
    parser = commands.add_parser("park", help=HELP, parents=[common], description=HELP[0].upper() + HELP[1:] + (
        ". Prints `parked <role> -> <path>` per role. Exit 2 when nothing is held, 1 when the role state cannot "
        "be read, 3 when --handoff finds problems, 5 when the write fails: CHECKPOINT NOT WRITTEN, nothing "
        "written."))
    parser.add_argument("team", help="the team")
    parser.add_argument("--agent", help="the agent parking (env CONTINUITY_AGENT)")
    parser.add_argument("--role", help="park only this role (you must hold a fresh lease on it)")
    parser.add_argument("--objective", help="one line: what the work is for (default: parked role <role> at "
                        "session exit)")
    parser.add_argument("--decision", action="append", default=[], metavar="TEXT", help="a decision (repeatable)")
    parser.add_argument("--next", action="append", default=[], metavar="TEXT", help="a next action (repeatable)")
    parser.add_argument("--open-question", action="append", default=[], metavar="TEXT",
                        help="an open question (repeatable)")
    parser.add_argument("--artifact", action="append", default=[], metavar="REF",
                        help="an artifact (repeatable); <remote>#<ref>@<commit> claims pushed state")
    parser.add_argument("--handoff", action="store_true",
                        help="parking for a successor: check the parking doctrine first (docs/team.md)")
    parser.set_defaults(handler=_park)


def _park(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.errors import UsageError
    from continuity.core.identity import resolve_identity
    from continuity.team import decide
    from continuity.team.parking import EXIT_UNREADABLE, ParkResult, park, refuse_secret_names, unreadable_line
    from events.errors import ContinuityError

    agent = args.agent or os.environ.get("CONTINUITY_AGENT")  # resolve_identity's order: the flag, then the env
    if not agent:
        raise UsageError("park: give --agent or set CONTINUITY_AGENT")
    request = decide.ParkRequest(
        team=decide.checked_name(args.team, "team", "park"),
        agent=decide.checked_name(agent, "agent", "park"),
        role=None if args.role is None else decide.checked_name(args.role, "role", "park"),
        objective=args.objective, decisions=tuple(args.decision), next_actions=tuple(args.next),
        open_questions=tuple(args.open_question), artifacts=tuple(args.artifact))
    refuse_secret_names(request)
    try:
        store = open_store(args)
        project = store.project  # a config that cannot be read
    except ContinuityError as error:  # seed 000: the role state cannot be read, so nothing is parked (exit 1)
        from continuity.core.text import one_line

        return _refused(out, ParkResult(code=EXIT_UNREADABLE, errors=[
            one_line(f"park: {error}"), unreadable_line(request.agent, request.team)]))
    result = park(store, resolve_identity(project, {"agent_id": agent}), request, handoff=args.handoff)
    warn(result.warnings)
    if result.code != 0:
        return _refused(out, result)
    import msgspec

    out.emit({"ok": True, "action": "park", "parked": msgspec.to_builtins(result.parked)},
             "\n".join(result.lines()))
    return 0


def _refused(out: Output, result: Any) -> int:
    """Print a park that wrote nothing: its findings and banner on stderr (and the --json object); its code."""
    if out.as_json:
        out.emit({"ok": False, "exit_code": result.code, "message": result.errors[-1], "errors": result.errors})
    sys.stderr.write("".join(line + "\n" for line in result.errors))
    sys.stderr.flush()
    code: int = result.code
    return code
