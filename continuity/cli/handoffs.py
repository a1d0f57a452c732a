"""`continuity handoff create|accept|reject|close|show|list`: handoffs with a lifecycle."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, Parser, open_store

ACTIONS = {
    "create": "hand work to an agent (--to) or a host (--to-host); prints the handoff id",
    "accept": "take on a pending handoff addressed to you",
    "reject": "decline a pending handoff addressed to you (--note says why)",
    "close": "close a handoff: done after acceptance, or withdrawn while pending",
    "show": "one handoff, with its history",
    "list": "handoffs, newest first (pending and accepted by default)",
}
MODEL = ("handoffs",)


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `handoff` and its actions."""
    parser = commands.add_parser("handoff", help="hand work between agents and hosts, with a lifecycle",
                                 parents=[common], description="Handoffs: pending -> accepted -> closed, or "
                                 "rejected; withdrawn by closing while pending (docs/team.md).")
    sub = parser.add_subparsers(title="handoff commands", metavar="ACTION", parser_class=Parser)
    for action, text in ACTIONS.items():
        each = sub.add_parser(action, help=text, parents=[common], description=text[0].upper() + text[1:] + ".")
        if action in ("accept", "reject", "close", "show"):
            each.add_argument("handoff_id", metavar="ID")
        if action != "list" and action != "show":
            each.add_argument("--agent", help="the agent acting (env CONTINUITY_AGENT)")
        if action == "create":
            each.add_argument("--to", dest="to_agent", metavar="AGENT", help="the agent the work goes to")
            each.add_argument("--to-host", metavar="HOST", help="the host the work goes to (any agent there)")
            each.add_argument("--task", dest="for_task", metavar="TASK", help="the task handed off")
            each.add_argument("--message", required=True, help="what is handed off, and what to do first")
            each.add_argument("--artifact", action="append", default=[], metavar="REF",
                              help="an artifact that goes with it (repeatable)")
        elif action in ("accept", "reject", "close"):
            each.add_argument("--note", default="", help="a note kept in the handoff's history")
        if action == "list":
            each.add_argument("--state", choices=("pending", "accepted", "rejected", "closed", "all"),
                              help="only handoffs in this state (default: pending and accepted)")
            each.add_argument("--to", dest="to_agent", metavar="AGENT", help="only handoffs addressed to this agent")
        if action in ("list", "show"):
            each.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood then")
        each.set_defaults(handler=_create if action == "create" else _show if action == "show" else
                          _list if action == "list" else _move, action=action)

    def missing(args: argparse.Namespace, out: Output) -> int:
        from continuity.core.errors import UsageError

        raise UsageError("handoff: choose an action: create, accept, reject, close, show or list (see --help)")

    parser.set_defaults(handler=missing)


def _identity(store: Any, args: argparse.Namespace) -> Any:
    from continuity.core.identity import resolve_identity

    return resolve_identity(store.project, {"agent_id": args.agent})


def _create(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.handoffs.decide import HandoffCreate
    from continuity.handoffs.service import create

    store = open_store(args)
    data = create(store, _identity(store, args), HandoffCreate(
        to_agent=args.to_agent, to_host=args.to_host, for_task=args.for_task, message=args.message,
        artifacts=tuple(args.artifact)))
    warn(data.pop("warnings"))
    out.emit(data, f"handoff {data['handoff_id']} -> {data['path']}")
    return 0


def _move(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.handoffs.service import move

    store = open_store(args)
    data = move(store, _identity(store, args), args.handoff_id, args.action, args.note)
    warn(data.pop("warnings"))
    out.emit(data, f"handoff {data['handoff_id']} {data['state']}")
    return 0


def _read(args: argparse.Namespace) -> Any:
    from continuity.cli.output import warn
    from continuity.team.service import TeamRead

    read = TeamRead(open_store(args), MODEL, getattr(args, "as_of", None))
    warn(read.warnings)
    return read.of("handoffs")


def _show(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.errors import HandoffNotFound
    from continuity.handoffs.files import handoff_document
    from continuity.team.decide import checked_name

    handoff_id = checked_name(args.handoff_id, "handoff", "handoff show")
    handoff = _read(args).get(handoff_id)
    if handoff is None:
        raise HandoffNotFound(f"handoff show: no handoff {handoff_id}")
    out.emit(handoff_document(handoff), handoff_text(handoff))
    return 0


def handoff_text(handoff: Any) -> str:
    """One handoff for people: id, state, from, to, task, message, artifacts, history."""
    from continuity.core.text import one_line

    to = handoff.to_agent or f"host {handoff.to_host}"
    lines = [f"handoff {handoff.handoff_id} ({handoff.state})", f"  from: {one_line(handoff.from_agent or '-')}"
             f" on {one_line(handoff.from_host or '-')}", f"  to: {one_line(to)}"]
    if handoff.for_task:
        lines.append(f"  task: {one_line(handoff.for_task)}")
    lines.append(f"  message: {one_line(handoff.message)}")
    lines += [f"  artifact: {one_line(artifact)}" for artifact in handoff.artifacts]
    lines += [f"  - {note.at} {one_line(note.agent)} {note.action}" + (f": {one_line(note.note)}" if note.note else "")
              for note in handoff.history]
    return "\n".join(lines) + "\n"


def _list(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import shown_text, warn
    from continuity.core.text import one_line, shortened
    from continuity.handoffs.service import listing
    from continuity.team.decide import checked_name

    if args.to_agent is not None:
        checked_name(args.to_agent, "agent", "handoff list")
    data = listing(open_store(args), args.state, args.to_agent, getattr(args, "as_of", None))
    warn(data.pop("warnings"))
    lines = [f"{each['handoff_id']}\t{each['state']}\t{one_line(each['from']['agent'] or '-')} -> "
             f"{one_line(each['to']['agent'] or 'host ' + (each['to']['host'] or '-'))}\t"
             f"{one_line(shortened(shown_text(each['message']), 80))}"
             for each in data["handoffs"]]
    out.emit(data, "\n".join(lines) if lines else "no handoffs")
    return 0
