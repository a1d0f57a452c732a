"""Decisions of team continuity: snapshots, and the role commands (create, claim, renew, release, checkpoint)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from continuity.core.errors import InvalidTransition, MessageNotFound, RoleConflict, RoleNotFound, UsageError
from continuity.core.identity import Identity
from continuity.team.plain import task_slug
from events import clock
from events.base import Event, Name
from events.team import (
    MessageAcked,
    MessageSent,
    PresenceRecorded,
    RoleCheckpointed,
    RoleClaimed,
    RoleCreated,
    RoleReleased,
    RoleRenewed,
    SnapshotTaken,
)
from projections.inbox import InboxState
from projections.roles import Role, RolesState, fresh_at


class SnapshotRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What `snapshot <team> <agent> <task>` was asked to record."""

    team: str
    agent: str
    task: str
    objective: str
    decisions: tuple[str, ...] = ()
    next_actions: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    context_used_percent: int | None = None
    transcript_path: str | None = None


def decide_snapshot(identity: Identity, request: SnapshotRequest, now_us: int) -> list[Event]:
    """One snapshot taken at `now_us` (the wall clock); the event's own checks refuse bad names and oversized
    text."""
    from continuity.team.plain import filled
    from events.guard import refuse_secret_id

    for kind, name in (("team", request.team), ("agent", request.agent)):  # named as given (the event's message,
        refuse_secret_id(kind, name)  # made of them, was the field the refusal named)
    if not request.objective.strip():
        raise UsageError("snapshot: --objective must not be empty")
    if request.context_used_percent is not None and not 0 <= request.context_used_percent <= 100:
        raise UsageError("snapshot: --context-percent must be between 0 and 100")
    fields = {**identity.fields(), "agent_id": identity.agent_id or request.agent}
    task = task_slug(request.task)
    return [SnapshotTaken(
        **fields, team=request.team, agent=request.agent, task=task,
        objective=request.objective, decisions=filled(request.decisions), next_actions=filled(request.next_actions),
        open_questions=filled(request.open_questions), artifacts=filled(request.artifacts),
        context_used_percent=request.context_used_percent, transcript_path=request.transcript_path,
        taken_at=clock.iso(now_us), message=f"snapshot {request.team}/{request.agent}/{task}",
    )]


# -- roles and leases ----------------------------------------------------------------------
#: The lease a claim takes when no --ttl is given.
DEFAULT_TTL_S = 3600
MAX_TTL_S = 366 * 86_400


def checked_name(value: str, kind: str, command: str) -> str:
    """`value` if it is a valid name (letters, digits, `._:@+=-`, no `..` or `/`), else a one-line usage error.

    A name that looks like a secret is refused (SecretRefused, exit 4) on reads too: every view and tool
    answer shows the team, agent or role it was asked about, and events carry them as ids.
    """
    from events.problems import quoted

    try:
        name = msgspec.convert(value, Name)
    except msgspec.ValidationError:  # quoted redacts before it cuts: a secret cut short no longer matches
        raise UsageError(f"{command}: invalid {kind} name {quoted(value, 40, redact=True)} (letters, digits "
                         "and ._:@+=- ; no '..' or '/')") from None
    from events.guard import refuse_secret_id

    refuse_secret_id(kind, name)
    return name


def ttl_seconds(text: str | None, command: str) -> int:
    """A lease length from `30s`, `15m`, `12h`, `2d` (default one hour), from 1 second to 366 days."""
    if text is None:
        return DEFAULT_TTL_S
    from continuity.team.resume import parse_duration

    seconds = parse_duration(text)
    if seconds is None or not 1 <= seconds <= MAX_TTL_S:
        from events.problems import quoted

        raise UsageError(f"{command}: invalid --ttl {quoted(text, 40, redact=True)}; use 30s, 15m, 12h or "
                         "2d (1s to 366d)")
    return int(seconds.to_integral_value(rounding="ROUND_CEILING"))


class RoleRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A role command's target: the team, the role, and the agent acting (None for create)."""

    team: str
    role: str
    agent: str | None = None
    ttl_seconds: int = DEFAULT_TTL_S
    description: str = ""


def _found(state: RolesState, request: RoleRequest, command: str) -> Role:
    role = state.teams.get(request.team, {}).get(request.role)
    if role is None:
        raise RoleNotFound(f"{command}: no role {request.role} in team/{request.team} "
                           f"(create it with `continuity role create {request.team} {request.role}`)")
    return role


def _envelope(identity: Identity, request: RoleRequest) -> dict[str, Any]:
    return {**identity.fields(), "agent_id": request.agent or identity.agent_id, "team": request.team,
            "role": request.role}


def decide_role_create(state: RolesState, identity: Identity, request: RoleRequest) -> list[Event]:
    """A new role; one that exists already is a conflict."""
    roles = state.teams.get(request.team, {})
    if request.role in roles:
        raise RoleConflict(f"role create: role {request.role} already exists in team/{request.team}")
    task = park_task(request.role)
    meets = sorted(other for other in roles if park_task(other) == task)
    if meets:  # both would park to one snapshot, `role-<slug>`
        raise RoleConflict(f"role create: role {request.role} would park to the same snapshot ({task}) as role "
                           f"{meets[0]} in team/{request.team}; choose another name")
    return [RoleCreated(**_envelope(identity, request), description=request.description,
                        message=f"role {request.team}/{request.role} created")]


def decide_role_claim(state: RolesState, identity: Identity, request: RoleRequest, now_us: int) -> list[Event]:
    """Claim a free role, re-claim one's own, or take over an expired lease; a fresh foreign lease refuses."""
    role = _found(state, request, "role claim")
    assert request.agent is not None
    holder = role.holder
    if holder is not None and holder != request.agent and fresh_at(role, now_us):
        raise RoleConflict(f"role claim: {request.role} in team/{request.team} is held by {holder} under a "
                           f"fresh lease until {role.lease_expires_at}; nothing written")
    takeover = holder if holder is not None and holder != request.agent else None
    message = f"role {request.team}/{request.role} claimed by {request.agent}" + (
        f" (takeover from {takeover})" if takeover else "")
    return [RoleClaimed(**_envelope(identity, request), agent=request.agent, ttl_seconds=request.ttl_seconds,
                        takeover_from=takeover, message=message)]


def decide_role_renew(state: RolesState, identity: Identity, request: RoleRequest) -> list[Event]:
    """Extend the holder's lease; only the holder may (an expired lease not yet taken over included)."""
    role = _found(state, request, "role renew")
    assert request.agent is not None
    if role.holder != request.agent:
        raise RoleConflict(f"role renew: {request.agent} does not hold {request.role} in team/{request.team} "
                           f"(held by {role.holder or 'nobody'}); nothing written")
    return [RoleRenewed(**_envelope(identity, request), agent=request.agent, ttl_seconds=request.ttl_seconds,
                        message=f"role {request.team}/{request.role} renewed by {request.agent}")]


def decide_role_release(state: RolesState, identity: Identity, request: RoleRequest) -> list[Event]:
    """Free the role; only the holder may."""
    role = _found(state, request, "role release")
    assert request.agent is not None
    if role.holder != request.agent:
        raise RoleConflict(f"role release: {request.agent} does not hold {request.role} in team/{request.team} "
                           f"(held by {role.holder or 'nobody'}); nothing written")
    return [RoleReleased(**_envelope(identity, request), agent=request.agent,
                         message=f"role {request.team}/{request.role} released by {request.agent}")]


def decide_role_checkpoint(state: RolesState, identity: Identity, request: RoleRequest, ref: str, *,
                           parked: bool = False) -> list[Event]:
    """Point the role's `checkpoint_ref` at `ref` (the role must exist; a blank ref, or one of more than one
    line, names no snapshot: refused, as an empty one is)."""
    if not ref.strip():
        raise UsageError("checkpoint: --ref must name the role's snapshot; it is blank")
    if "\t" in ref or ref.splitlines() != [ref]:  # every line break Python knows (U+2028, NEL, ...)
        raise UsageError("checkpoint: --ref must be one line (it holds a tab or a line break)")
    _found(state, request, "checkpoint")
    return [RoleCheckpointed(**_envelope(identity, request), checkpoint_ref=ref, parked=parked,
                             message=f"role {request.team}/{request.role} checkpoint_ref -> {ref}")]


# -- park ----------------------------------------------------------------------------------
class NothingToPark(Exception):
    """The agent holds no fresh role (or not the one named): park writes nothing (seed 000: exit 2)."""


class ParkRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What `park <team>` was asked: the agent, one role or all, and the snapshot's content."""

    team: str
    agent: str
    role: str | None = None
    objective: str | None = None
    decisions: tuple[str, ...] = ()
    next_actions: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()


def held_roles(state: RolesState, request: ParkRequest, now_us: int) -> list[Role]:
    """The roles the agent holds under a fresh lease now (just `request.role` when named), by name."""
    roles = state.teams.get(request.team, {})
    wanted = [roles[request.role]] if request.role is not None and request.role in roles else \
        [] if request.role is not None else list(roles.values())
    return sorted((role for role in wanted if role.holder == request.agent and fresh_at(role, now_us)),
                  key=lambda role: role.role)


def held_teams(state: RolesState, agent: str, now_us: int) -> list[str]:
    """The teams in which the agent holds at least one role under a fresh lease now, by name."""
    return sorted({team for team, roles in state.teams.items()
                   for role in roles.values() if role.holder == agent and fresh_at(role, now_us)})


def park_task(role: str, others: Iterable[str] = ()) -> str:
    """The snapshot task a parked role is saved under: `role-<slug>` (seed 000).

    Two roles of a team whose slugs meet (`a:b` and `a@b` are both `role-a-b`) would share one
    snapshot, and one role's checkpoint would resume the other's: `role create` refuses such a
    name, but replicas may each have created one before a sync. Then a role whose name is not
    a slug as it stands takes `role--<digest>-<slug>` instead (no role's own slug starts
    `role--`: a name starts with a letter or a digit), so the two never meet.
    """
    task = task_slug(f"role-{role}")
    if task == f"role-{role}" or not any(task_slug(f"role-{other}") == task for other in others if other != role):
        return task
    import hashlib

    return task_slug(f"role--{hashlib.sha256(role.encode()).hexdigest()[:16]}-{role}")


def decide_park(state: RolesState, identity: Identity, request: ParkRequest, now_us: int) -> list[Event]:
    """Per fresh held role: a snapshot (task `role-<slug>`), then the role's checkpoint_ref pointing at it."""
    from continuity.team.plain import snapshot_relpath

    held = held_roles(state, request, now_us)
    if not held:
        raise NothingToPark(request.role)
    drafts: list[Event] = []
    for role in held:
        task = park_task(role.role, state.teams.get(request.team, {}))
        snapshot = SnapshotRequest(
            team=request.team, agent=request.agent, task=task,
            # blank (a session-exit script's empty variable, even one of spaces): the default, as seed 000's park
            objective=request.objective if request.objective and request.objective.strip() else
            f"parked role {role.role} at session exit",
            decisions=request.decisions, next_actions=request.next_actions,
            open_questions=request.open_questions, artifacts=request.artifacts)
        drafts += decide_snapshot(identity, snapshot, now_us)
        drafts += decide_role_checkpoint(state, identity, RoleRequest(team=request.team, role=role.role,
                                                                      agent=request.agent),
                                         snapshot_relpath(request.team, request.agent, task), parked=True)
    return drafts


# -- messages and presence -----------------------------------------------------------------
def decide_send(identity: Identity, team: str, to_agent: str, text: str, message_id: str) -> list[Event]:
    """One message from the writing agent to `to_agent` (a message from no one could be answered by no one)."""
    if not identity.agent_id:
        raise UsageError("send: give --agent or set CONTINUITY_AGENT (who the message is from)")
    if not text.strip():
        raise UsageError("send: --message must not be empty")
    return [MessageSent(**identity.fields(), team=team, to_agent=to_agent, text=text, message_id=message_id,
                        message=f"message {message_id} to {to_agent}")]


def decide_ack(state: InboxState, identity: Identity, team: str, agent: str, message_id: str) -> list[Event]:
    """Acknowledge an unread message addressed to `agent`."""
    box = state.teams.get(team)
    message = box.unread.get(message_id) if box is not None else None
    if message is None:
        read = box.read.get(message_id) if box is not None else None
        if read is not None and read.to_agent == agent:
            raise InvalidTransition(f"inbox: message {message_id} was already acknowledged at {read.acked_at}")
        raise MessageNotFound(f"inbox: no unread message {message_id} for {agent} in team/{team}")
    if message.to_agent != agent:
        raise MessageNotFound(f"inbox: no unread message {message_id} for {agent} in team/{team}")
    return [MessageAcked(**{**identity.fields(), "agent_id": agent}, team=team, agent=agent, message_id=message_id,
                         message=f"message {message_id} acknowledged")]


def decide_beat(identity: Identity, team: str, agent: str) -> list[Event]:
    """A heartbeat of `agent` in `team`."""
    return [PresenceRecorded(**{**identity.fields(), "agent_id": agent}, team=team, agent=agent,
                             message=f"{agent} present")]
