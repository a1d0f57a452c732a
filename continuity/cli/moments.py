"""`continuity moments list|deliver <team>`: the checkpoint channel (seed 000), re-derived from the log."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, Parser, open_store

ACTIONS = {
    "list": "every checkpoint moment of a team (one per saved snapshot), with the sinks that received it",
    "deliver": "deliver the moments a sink has not received (each moment once per sink)",
}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `moments` and its actions."""
    parser = commands.add_parser("moments", help="the checkpoint channel: one moment per saved snapshot (seed 000)",
                                 parents=[common], description="The checkpoint channel: one moment per saved "
                                 "snapshot, delivered to the sinks team/<team>/_coord/bus-v3/checkpoints.json "
                                 "names (docs/team.md).")
    sub = parser.add_subparsers(title="moments commands", metavar="ACTION", parser_class=Parser)
    for action, text in ACTIONS.items():
        each = sub.add_parser(action, help=text, parents=[common], description=text[0].upper() + text[1:] + (
            "." if action == "list" else ". Exit 0, or 5 when a sink failed (what it did not receive stays due)."))
        each.add_argument("team", help="the team")
        if action == "list":
            each.add_argument("--pending", action="store_true", help="only moments some sink has not received")
            each.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood then")
            each.set_defaults(handler=_list)
        else:
            each.add_argument("--agent", help="the agent delivering (env CONTINUITY_AGENT)")
            each.set_defaults(handler=_deliver)

    def missing(args: argparse.Namespace, out: Output) -> int:
        from continuity.core.errors import UsageError

        raise UsageError("moments: choose an action: list or deliver (see --help)")

    parser.set_defaults(handler=missing)


def _list(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.moments.view import listing, render
    from continuity.team.decide import checked_name
    from continuity.team.service import TeamRead

    team = checked_name(args.team, "team", "moments list")
    store = open_store(args)
    read = TeamRead(store, ("moments",), as_of=args.as_of)
    data, lines = listing(store, team, read.of("moments").teams.get(team) or _empty(), pending_only=args.pending)
    warn(read.warnings + lines)
    out.emit(data, render(data))
    return 0


def _deliver(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.errors import EXIT_WRITE_FAILED
    from continuity.core.identity import resolve_identity
    from continuity.moments.deliver import deliver
    from continuity.team.decide import checked_name

    team = checked_name(args.team, "team", "moments deliver")
    store = open_store(args)
    identity = resolve_identity(store.project, {"agent_id": args.agent})
    done = deliver(store, identity, team)
    warn(done.lines)
    failed = done.failed
    total = sum(done.delivered.values())
    text = (f"checkpoint channel for team/{team}: {done.state}; nothing delivered" if not total else
            f"delivered {total} moment(s): " + ", ".join(f"{n} to {sink}" for sink, n in done.delivered.items()))
    return out.emit_report({"ok": not failed, "action": "moments deliver", "team": team, "channel": done.state,
                            "delivered": done.delivered, "failed": failed}, text, EXIT_WRITE_FAILED if failed else 0,
                           f"moments deliver: not delivered to {', '.join(failed)} (the lines above say why)")


def _empty() -> Any:
    from projections.moments import TeamMoments

    return TeamMoments()
