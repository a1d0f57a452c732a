"""`continuity send`, `inbox`, `queue` and `beat`: team messages, the work queue and presence (seed 000)."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, open_store

HELP = {
    "send": "send a message to an agent of a team",
    "inbox": "an agent's unread team messages; --ack ID marks one read",
    "queue": "what waits for an agent: unread messages, pending handoffs, roles it could claim",
    "beat": "record that an agent is alive in a team (any event it writes counts too)",
}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `send`, `inbox`, `queue` or `beat`."""
    text = HELP[name]
    parser = commands.add_parser(name, help=text, parents=[common], description=text[0].upper() + text[1:] + ".")
    parser.add_argument("team", help="the team")
    parser.add_argument("--agent", help=("the sender" if name == "send" else "the agent") + " (env CONTINUITY_AGENT)")
    if name == "send":
        parser.add_argument("--to", required=True, metavar="AGENT", help="the agent the message is for")
        parser.add_argument("--message", required=True, help="the message")
    if name == "inbox":
        parser.add_argument("--ack", metavar="ID", help="acknowledge (mark read) this message")
        parser.add_argument("--all", action="store_true", help="include the newest read messages")
    if name in ("inbox", "queue"):
        parser.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood then")
    parser.set_defaults(handler={"send": _send, "inbox": _inbox, "queue": _queue, "beat": _beat}[name])


def _who(args: argparse.Namespace, command: str, *, required: bool = True,
         reading: bool = False) -> tuple[Any, Any, str, str | None]:
    """The store, the identity, the team and the agent of a message command. `reading`: a read answers whatever a
    write would be refused for (a broken config.json, a planted `local/`), with a warning, as every read does."""
    from continuity.core.errors import UsageError
    from continuity.core.identity import resolve_identity
    from continuity.team.decide import checked_name

    team = checked_name(args.team, "team", command)
    if args.agent is not None:
        checked_name(args.agent, "agent", command)
    store = open_store(args)
    # a read's warnings about the project (a broken config.json) are said by the read itself (TeamRead), once
    project = store.reading_project()[0] if reading else store.project
    identity = resolve_identity(project, {"agent_id": args.agent})
    if required and not identity.agent_id:
        raise UsageError(f"{command}: give --agent or set CONTINUITY_AGENT")
    agent = None if identity.agent_id is None else checked_name(identity.agent_id, "agent", command)
    return store, identity, team, agent


def _send(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team.service import SendRequest, send

    store, identity, team, _ = _who(args, "send", required=False)
    data, warnings = send(store, identity, SendRequest(team=team, to=args.to, message=args.message, agent=args.agent))
    warn(warnings)
    out.emit(data, f"sent {data['message_id']} to {data['to']}")
    return 0


def _beat(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team.decide import decide_beat
    from continuity.team.service import caught_up

    store, identity, team, agent = _who(args, "beat")
    assert agent is not None
    stored = store.open_log().append_many(decide_beat(identity, team, agent))[0]
    warn(caught_up(store, identity.project, ("inbox",))[1])
    event: Any = stored.event
    out.emit({"ok": True, "action": "beat", "agent": agent, "at": event.created_at, "event_id": stored.event_id},
             f"beat {agent} at {event.created_at}")
    return 0


def _inbox(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team import render
    from continuity.team.service import InboxRequest, inbox

    store, identity, team, agent = _who(args, "inbox", reading=args.ack is None)
    data, warnings = inbox(store, identity, InboxRequest(team=team, agent=agent, ack=args.ack, all=args.all),
                           as_of=args.as_of)
    warn(warnings)
    if args.ack is not None:
        out.emit(data, f"acknowledged {data['message_id']}")
        return 0
    items = data["messages"]
    text = f"inbox of {agent} in team/{team}: " + (f"{len(items)} message(s)\n" if items else "empty\n")
    out.emit(data, text + "".join(line + "\n" for line in render.messages(items, whole=True)))
    return 0


def _queue(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team import board, render
    from continuity.team.service import TeamRead

    store, _, team, agent = _who(args, "queue", reading=True)
    assert agent is not None
    read = TeamRead(store, ("inbox", "handoffs", "roles"), args.as_of)
    warn(read.warnings)
    data = board.queue(read.of("inbox"), read.of("handoffs"), read.of("roles"), team, agent, read.now_us)
    out.emit(data, render.queue_text(data))
    return 0
