"""`continuity role create|claim|renew|release|show|list` and `continuity checkpoint <team> --role R` (seed 000)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from continuity.cli.common import Output, Parser, open_store

ACTIONS = {
    "create": "establish a role in a team (its document appears at team/<team>/roles/<role>.md)",
    "claim": "claim a role under a lease; refused while another agent's lease is fresh, an expired one is "
             "taken over",
    "renew": "extend your lease on a role you hold",
    "release": "give up a role you hold",
    "show": "a role: holder, lease state now, checkpoint_ref, history (lost claims included)",
    "list": "every role of a team with its holder and lease state",
}
#: Seed 000's code for `checkpoint --role` on a role that is not there.
EXIT_CHECKPOINT_FAILED = 1


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `role` and its actions."""
    parser = commands.add_parser("role", help="team roles held under leases (seed 000)", parents=[common],
                                 description="Team roles held under leases: one holder at a time, decided by "
                                 "log order (docs/team.md).")
    sub = parser.add_subparsers(title="role commands", metavar="ACTION", parser_class=Parser)
    for action, text in ACTIONS.items():
        each = sub.add_parser(action, help=text, parents=[common], description=text[0].upper() + text[1:] + ".")
        each.add_argument("team", help="the team")
        if action != "list":
            each.add_argument("role", help="the role")
        if action in ("claim", "renew", "release"):
            each.add_argument("--agent", help="the agent acting (env CONTINUITY_AGENT)")
        if action in ("claim", "renew"):
            each.add_argument("--ttl", metavar="DUR", help="lease length: 30s, 15m, 12h, 2d (default 1h, at most 366d)")
        if action == "create":
            each.add_argument("--description", default="", help="what the role is for")
            each.add_argument("--agent", help="the agent creating it (env CONTINUITY_AGENT)")
        if action in ("show", "list"):
            each.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood then")
        each.set_defaults(handler=_show if action == "show" else _list if action == "list" else _write,
                          action=action)

    def missing(args: argparse.Namespace, out: Output) -> int:
        from continuity.core.errors import UsageError

        raise UsageError("role: choose an action: create, claim, renew, release, show or list (see --help)")

    parser.set_defaults(handler=missing)


def _request(args: argparse.Namespace, identity: Any) -> Any:
    from continuity.core.errors import UsageError
    from continuity.team.decide import RoleRequest, checked_name, ttl_seconds

    command = f"role {args.action}"
    team = checked_name(args.team, "team", command)
    role = checked_name(args.role, "role", command)
    agent = identity.agent_id
    if args.action != "create":
        if not agent:
            raise UsageError(f"{command}: give --agent or set CONTINUITY_AGENT")
        agent = checked_name(agent, "agent", command)
    return RoleRequest(team=team, role=role, agent=agent, ttl_seconds=ttl_seconds(getattr(args, "ttl", None), command),
                       description=getattr(args, "description", ""))


def _write(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.identity import resolve_identity
    from continuity.core.store import now_us
    from continuity.team import decide, service

    store = open_store(args)
    identity = resolve_identity(store.project, {"agent_id": args.agent})
    request = _request(args, identity)
    deciders = {
        "create": lambda state: decide.decide_role_create(state, identity, request),
        "claim": lambda state: decide.decide_role_claim(state, identity, request, now_us()),
        "renew": lambda state: decide.decide_role_renew(state, identity, request),
        "release": lambda state: decide.decide_role_release(state, identity, request),
    }
    stored, warnings = service.record_roles(store, identity, deciders[args.action])
    states, more = service.caught_up(store, identity.project, ("roles",))
    warn(warnings + more)
    event: Any = stored[0].event
    from continuity.team.roles import role_json, role_relpath

    role = states["roles"].teams[request.team][request.role] if states else None

    verb = {"create": "created", "claim": "claimed", "renew": "renewed", "release": "released"}[args.action]
    text = f"role {request.role} {verb}"
    if args.action in ("claim", "renew") and role is not None:
        text += f" by {request.agent}, lease until {role.lease_expires_at}"
        if getattr(event, "takeover_from", None):
            text += f" (took over from {event.takeover_from}, whose lease had expired)"
    elif args.action == "release":
        text += f" by {request.agent}"
    else:
        text += f" -> {role_relpath(request.team, request.role)}"
    out.emit({"ok": True, "action": f"role {args.action}", "event_id": stored[0].event_id,
              "takeover_from": getattr(event, "takeover_from", None),
              "role": role_json(role, now_us()) if role is not None else None}, text)
    return 0


def _show(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.errors import RoleNotFound
    from continuity.team.decide import checked_name
    from continuity.team.roles import role_json, role_text
    from continuity.team.service import TeamRead

    team, name = checked_name(args.team, "team", "role show"), checked_name(args.role, "role", "role show")
    store = open_store(args)
    read = TeamRead(store, ("roles",), args.as_of)
    warn(read.warnings)
    role = read.of("roles").teams.get(team, {}).get(name)
    if role is None:
        raise RoleNotFound(f"role show: no role {name} in team/{team}")
    out.emit(role_json(role, read.now_us), role_text(role, read.now_us))
    return 0


def _list(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.text import one_line
    from continuity.team.decide import checked_name
    from continuity.team.roles import lease_state, role_json
    from continuity.team.service import TeamRead

    team = checked_name(args.team, "team", "role list")
    store = open_store(args)
    read = TeamRead(store, ("roles",), args.as_of)
    warn(read.warnings)
    roles = sorted(read.of("roles").teams.get(team, {}).values(), key=lambda role: role.role)
    lines = [f"{role.role}\t{one_line(role.holder or '-')}\t{lease_state(role, read.now_us)}\t"
             f"{role.lease_expires_at or '-'}" for role in roles]
    out.emit({"team": team, "roles": [role_json(role, read.now_us) for role in roles]},
             "\n".join(lines) if lines else f"no roles in team/{team}")
    return 0


#: The options of a work checkpoint (`continuity checkpoint -m ...`), which the role form does not take.
WORK_FORM = (("-m/--message", "message"), ("--type", "type"), ("--phase", "phase"), ("--done", "done"),
             ("--in-progress", "in_progress"), ("--next", "next"), ("--blocker", "blocker"), ("--file", "file"),
             ("--artifact", "artifact"), ("--handoff", "handoff"), ("--command", "command"),
             ("--exit-code", "exit_code"), ("--command-summary", "command_summary"), ("--note-json", "note_json"))


def checkpoint_role(args: argparse.Namespace, out: Output) -> int:
    """`checkpoint <team> --role R [--ref PATH]`: set the role's resume point, or show it and its brief."""
    from continuity.cli.output import warn
    from continuity.core.errors import RoleNotFound, StoreNotFound, UsageError
    from continuity.team import decide, service

    if not args.text:
        raise UsageError("checkpoint --role: name the team first: continuity checkpoint <team> --role R")
    given = [flag for flag, value in WORK_FORM if getattr(args, value) not in (None, [])]
    if given:  # a work checkpoint's content would be dropped without a word
        raise UsageError(f"checkpoint --role takes only --ref (and --agent, --redact); {', '.join(given)} "
                         "belong to a work checkpoint (continuity checkpoint without --role)")
    team = decide.checked_name(args.text, "team", "checkpoint")
    role = decide.checked_name(args.role, "role", "checkpoint")
    failed = f"checkpoint failed: role {role} not found/parseable"
    try:
        store = open_store(args)
    except StoreNotFound:  # no store holds no role: seed 000's answer for a role it cannot find
        return _failed(out, failed)
    if args.ref is None:
        return _show_checkpoint(store, out, team, role, failed)
    from continuity.core.identity import resolve_identity

    identity = resolve_identity(store.project, {"agent_id": args.agent})
    request = decide.RoleRequest(team=team, role=role, agent=identity.agent_id)
    try:
        stored, warnings = service.record_roles(
            store, identity, lambda state: decide.decide_role_checkpoint(state, identity, request, args.ref),
            redact=args.redact)
    except RoleNotFound:
        return _failed(out, failed)
    from continuity.core.text import one_line

    warn(warnings + service.caught_up(store, identity.project, ("roles",))[1])
    event: Any = stored[0].event
    ref = event.checkpoint_ref  # as stored: with --redact, the secret is not in it
    redacted = f" (redacted: {', '.join(event.redacted)})" if event.redacted else ""
    out.emit({"ok": True, "action": "checkpoint", "team": team, "role": role, "checkpoint_ref": ref,
              "event_id": stored[0].event_id, "redacted": list(event.redacted)},
             f"checkpoint_ref for role {role} -> {one_line(ref)}{redacted}")
    return 0


def _failed(out: Output, line: str) -> int:
    if out.as_json:
        out.emit({"ok": False, "exit_code": EXIT_CHECKPOINT_FAILED, "message": line})
    with contextlib.suppress(OSError):  # the exit code says it when stderr takes nothing
        sys.stderr.write(line + "\n")
    return EXIT_CHECKPOINT_FAILED


def _show_checkpoint(store: Any, out: Output, team: str, name: str, failed: str) -> int:
    from continuity.cli.output import warn
    from continuity.core.text import one_line
    from continuity.team import resume
    from continuity.team.service import TeamRead

    read = TeamRead(store, ("roles", "team"))
    warn(read.warnings)
    role = read.of("roles").teams.get(team, {}).get(name)
    if role is None:
        return _failed(out, failed)
    if role.checkpoint_ref is None:
        out.emit({"team": team, "role": name, "checkpoint_ref": None, "snapshot": None},
                 f"role {name}: no checkpoint_ref set")
        return 0
    snapshot = snapshot_at(read.of("team"), team, role.checkpoint_ref)
    age = resume.age_seconds(snapshot.age_from, read.now_us) if snapshot is not None else None
    out.emit({"team": team, "role": name, "checkpoint_ref": role.checkpoint_ref,
              "snapshot": resume.as_json(snapshot, age, None)},
             f"role {name}: checkpoint_ref = {one_line(role.checkpoint_ref)}\n" + resume.brief(snapshot, age))
    return 0


def snapshot_at(teams: Any, team: str, ref: str) -> Any:
    """The snapshot a `checkpoint_ref` names (`team/<team>/member/<agent>/continuity/<task>/latest.json`)."""
    parts = ref.split("/")
    if len(parts) != 7 or parts[:2] != ["team", team] or parts[2] != "member" or parts[4] != "continuity" \
            or parts[6] != "latest.json":
        return None
    member = teams.teams.get(team, {}).get(parts[3])
    return None if member is None else member.tasks.get(parts[5])
