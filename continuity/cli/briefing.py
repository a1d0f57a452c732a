"""`continuity briefing` and `continuity health`: a team at a glance (seed 000). Pure reads, exit 0."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, open_store

HELP = {
    "briefing": "session start in one call: presence, role board, inbox, needs-me, pending reviews and handoffs, "
                "latest snapshot (always exit 0)",
    "health": "per agent: presence age, snapshot age, leases; continuity-stale and expired leases flagged",
}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `briefing` or `health`."""
    text = HELP[name]
    parser = commands.add_parser(name, help=text, parents=[common], description=text[0].upper() + text[1:] + ".")
    parser.add_argument("team", help="the team")
    if name == "briefing":
        parser.add_argument("--agent", help="whose briefing (env CONTINUITY_AGENT; default: the whole team)")
        parser.add_argument("--all", action="store_true", help="every member's inbox, needs and snapshot")
    parser.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood then")
    parser.set_defaults(handler=_briefing if name == "briefing" else _health)


def _briefing(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.errors import StoreNotFound
    from continuity.team import render
    from continuity.team.service import BriefingRequest, briefing
    from events.errors import StoreUnsafe

    request = BriefingRequest(team=args.team, agent=args.agent, all=args.all, as_of=args.as_of)
    try:
        store, missing = open_store(args), ""
    except (StoreNotFound, StoreUnsafe) as error:  # a session start is never blocked: empty, degraded sections
        store, missing = None, str(error)
    data, warnings = briefing(store, request, missing=missing)
    warn(warnings)
    out.emit(data, render.briefing_text(data))
    return 0


def _health(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team import board, render
    from continuity.team.decide import checked_name
    from continuity.team.service import TeamRead

    team = checked_name(args.team, "team", "health")
    read = TeamRead(open_store(args), ("inbox", "roles", "team"), args.as_of)
    warn(read.warnings)
    data = board.health(read.of("inbox"), read.of("roles"), read.of("team"), team, read.now_us)
    out.emit(data, render.health_text(data))
    return 0
