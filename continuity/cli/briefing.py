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
MODELS = ("inbox", "roles", "team", "handoffs")


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


def degraded_reason(warnings: list[str]) -> str | None:
    """Why a read is not whole (an unreadable event, projections that could not be read), or None."""
    for warning in warnings:
        if warning.startswith("skipped ") or "unavailable" in warning or "nothing read" in warning:
            return warning
    return None


def _briefing(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.identity import resolve_identity
    from continuity.team import board, render
    from continuity.team.decide import checked_name
    from continuity.team.service import TeamRead

    team = checked_name(args.team, "team", "briefing")
    store = open_store(args)
    agent = resolve_identity(store.project, {"agent_id": args.agent}).agent_id
    agent = None if agent is None else checked_name(agent, "agent", "briefing")
    read = TeamRead(store, MODELS, args.as_of)
    warn(read.warnings)
    data = board.briefing(inbox=read.of("inbox"), roles=read.of("roles"), teams=read.of("team"),
                          handoffs=read.of("handoffs"), team=team, agent=agent, everyone=args.all,
                          now_us=read.now_us, degraded=degraded_reason(read.warnings))
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
