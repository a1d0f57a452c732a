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


def _who(args: argparse.Namespace, command: str, *, required: bool = True) -> tuple[Any, Any, str, str | None]:
    from continuity.core.errors import UsageError
    from continuity.core.identity import resolve_identity
    from continuity.team.decide import checked_name

    team = checked_name(args.team, "team", command)
    if args.agent is not None:
        checked_name(args.agent, "agent", command)
    store = open_store(args)
    identity = resolve_identity(store.project, {"agent_id": args.agent})
    if required and not identity.agent_id:
        raise UsageError(f"{command}: give --agent or set CONTINUITY_AGENT")
    agent = None if identity.agent_id is None else checked_name(identity.agent_id, "agent", command)
    return store, identity, team, agent


def _append(store: Any, drafts: list[Any]) -> tuple[Any, list[str]]:
    from continuity.team.service import caught_up

    stored = store.open_log().append_many(drafts)[0]
    return stored, caught_up(store, drafts[0].project, ("inbox",))[1]


def _send(args: argparse.Namespace, out: Output) -> int:
    import os

    from continuity.cli.output import warn
    from continuity.team.decide import checked_name, decide_send

    store, identity, team, _ = _who(args, "send", required=False)
    to = checked_name(args.to, "agent", "send")
    message_id = f"MSG-{os.urandom(5).hex()}"
    stored, warnings = _append(store, decide_send(identity, team, to, args.message, message_id))
    warn(warnings)
    out.emit({"ok": True, "action": "send", "message_id": message_id, "to": to, "event_id": stored.event_id},
             f"sent {message_id} to {to}")
    return 0


def _beat(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team.decide import decide_beat

    store, identity, team, agent = _who(args, "beat")
    assert agent is not None
    stored, warnings = _append(store, decide_beat(identity, team, agent))
    warn(warnings)
    event: Any = stored.event
    out.emit({"ok": True, "action": "beat", "agent": agent, "at": event.created_at, "event_id": stored.event_id},
             f"beat {agent} at {event.created_at}")
    return 0


def _inbox(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team import board, render
    from continuity.team.service import TeamRead

    store, identity, team, agent = _who(args, "inbox")
    assert agent is not None
    if args.ack is not None:
        if args.as_of is not None:
            from continuity.core.errors import UsageError

            raise UsageError("inbox: --ack records; it does not go with --as-of")
        return _ack(store, identity, team, agent, args.ack, out)
    read = TeamRead(store, ("inbox",), args.as_of)
    warn(read.warnings)
    items = board.inbox_items(read.of("inbox"), team, agent, read=args.all)
    text = f"inbox of {agent} in team/{team}: " + (f"{len(items)} message(s)\n" if items else "empty\n")
    out.emit({"team": team, "agent": agent, "messages": items}, text + "".join(
        line + "\n" for line in render.messages(items)))
    return 0


def _ack(store: Any, identity: Any, team: str, agent: str, message_id: str, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.readside.decided import record_decided, refreshed
    from continuity.team.decide import checked_name, decide_ack
    from projections.inbox import MODEL

    message_id = checked_name(message_id, "message", "inbox")
    stored, warnings = record_decided(store, MODEL, identity.project, refreshed(MODEL),
                                      lambda state: decide_ack(state, identity, team, agent, message_id),
                                      what="inbox")
    warn(warnings)
    out.emit({"ok": True, "action": "ack", "message_id": message_id, "event_id": stored[0].event_id},
             f"acknowledged {message_id}")
    return 0


def _queue(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.team import board, render
    from continuity.team.service import TeamRead

    store, _, team, agent = _who(args, "queue")
    assert agent is not None
    read = TeamRead(store, ("inbox", "handoffs", "roles"), args.as_of)
    warn(read.warnings)
    data = board.queue(read.of("inbox"), read.of("handoffs"), read.of("roles"), team, agent, read.now_us)
    out.emit(data, render.queue_text(data))
    return 0
