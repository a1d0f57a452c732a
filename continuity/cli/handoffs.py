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
    import os

    from continuity.cli.output import warn
    from continuity.handoffs.decide import HandoffCreate, decide_create, doc_relpath
    from continuity.handoffs.service import record
    from continuity.team.decide import checked_name

    for value, kind in ((args.to_agent, "agent"), (args.to_host, "host"), (args.for_task, "task")):
        if value is not None:
            checked_name(value, kind, "handoff create")
    store = open_store(args)
    identity = _identity(store, args)
    request = HandoffCreate(to_agent=args.to_agent, to_host=args.to_host, for_task=args.for_task,
                            message=args.message, artifacts=tuple(args.artifact))
    handoff_id = f"HO-{os.urandom(5).hex()}"
    stored, _, warnings = record(store, identity, lambda state: decide_create(state, identity, request, handoff_id))
    warn(warnings)
    out.emit({"ok": True, "action": "handoff create", "handoff_id": handoff_id, "event_id": stored.event_id,
              "path": doc_relpath(handoff_id)}, f"handoff {handoff_id} -> {doc_relpath(handoff_id)}")
    return 0


def _move(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.handoffs.decide import decide_move
    from continuity.handoffs.service import record
    from continuity.team.decide import checked_name

    handoff_id = checked_name(args.handoff_id, "handoff", f"handoff {args.action}")
    action = {"accept": "accepted", "reject": "rejected", "close": "closed"}[args.action]
    store = open_store(args)
    identity = _identity(store, args)
    stored, _, warnings = record(store, identity,
                                 lambda state: decide_move(state, identity, handoff_id, action, args.note))
    warn(warnings)
    out.emit({"ok": True, "action": f"handoff {args.action}", "handoff_id": handoff_id, "state": action,
              "event_id": stored.event_id}, f"handoff {handoff_id} {action}")
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
    from continuity.core.text import one_line
    from continuity.handoffs.files import handoff_document
    from continuity.team.decide import checked_name

    if args.to_agent is not None:
        checked_name(args.to_agent, "agent", "handoff list")
    state = _read(args)
    everything = list(state.open.values()) + list(state.done.values())
    wanted = {"pending", "accepted"} if args.state is None else \
        {"pending", "accepted", "rejected", "closed"} if args.state == "all" else {args.state}
    chosen = sorted((handoff for handoff in everything if handoff.state in wanted and
                     (args.to_agent is None or handoff.to_agent == args.to_agent)),
                    key=lambda handoff: (handoff.created_at, handoff.handoff_id), reverse=True)
    lines = [f"{handoff.handoff_id}\t{handoff.state}\t{one_line(handoff.from_agent or '-')} -> "
             f"{one_line(handoff.to_agent or 'host ' + (handoff.to_host or '-'))}\t{one_line(handoff.message)[:80]}"
             for handoff in chosen]
    out.emit({"handoffs": [handoff_document(handoff) for handoff in chosen]},
             "\n".join(lines) if lines else "no handoffs")
    return 0
