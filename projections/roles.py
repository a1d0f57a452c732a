"""Team roles and their leases (seed 000), per team: who holds each role, until when, its resume point.

Who holds a role is decided here, by log order, on every replica alike: a claim made
while another agent's lease is fresh (at the claim event's own time) loses, and the
loss is kept in the role's history, so two clones that both claimed offline agree on
one holder once their logs are merged. A claim after the lease expired is a takeover.
Freshness *now* is a view (continuity/team/roles.py), never stored.
"""

from __future__ import annotations

import msgspec

from events import clock
from events.base import Event
from events.team import RoleCheckpointed, RoleClaimed, RoleCreated, RoleReleased, RoleRenewed
from projections.common import append_bounded, touch_keeping
from projections.readmodel import ReadModel

TEAMS_LIMIT = 100
ROLES_LIMIT = 1000
HISTORY_LIMIT = 20


class RoleNote(msgspec.Struct, kw_only=True, array_like=True):
    """One line of a role's history: when (its writer's clock, `clock.written`: a history read after a teammate's
    fast clock is in the order things were done), who, what happened (claimed, lost, took over, ...)."""

    at: str
    agent: str
    action: str
    detail: str = ""


class Role(msgspec.Struct, kw_only=True):
    """A role as its events left it. `holder` is None when the role is free."""

    role: str
    team: str
    description: str = ""
    created_at: str = ""
    created_by: str | None = None
    holder: str | None = None
    claimed_at: str | None = None
    lease_expires_at: str | None = None
    checkpoint_ref: str | None = None
    checkpoint_at: str | None = None
    checkpoint_by: str | None = None
    history: list[RoleNote] = msgspec.field(default_factory=list)


class RolesState(msgspec.Struct, kw_only=True):
    """Every team's roles, by team then role name."""

    teams: dict[str, dict[str, Role]] = msgspec.field(default_factory=dict)


def expires(at: str, ttl_seconds: int) -> str:
    """The end of a lease taken at `at` for `ttl_seconds`."""
    return clock.iso(clock.parse_iso(at) + ttl_seconds * 1_000_000)


def fresh_at(role: Role, at_us: int) -> bool:
    """Whether the role's lease is held and not expired at `at_us`."""
    return role.holder is not None and role.lease_expires_at is not None and \
        at_us < clock.parse_iso(role.lease_expires_at)


def _held(role: Role) -> bool:
    return role.holder is not None


def _holds_any(roles: dict[str, Role]) -> bool:
    return any(role.holder is not None for role in roles.values())


def _role(state: RolesState, team: str, name: str, at: str, agent: str | None) -> Role:
    """The role (made when new), touched as its team's and the project's newest. Past the bounds the least
    recently active free role, and team holding none, is forgotten; a held role is not (its lease expired or
    not: forgotten, its holder's park found nothing and another agent could create and claim it again), up to
    ten times the bounds (held roles whose holders never release them must not grow the model for good, nor
    make every fold scan thousands)."""
    roles = state.teams.get(team)
    if roles is None:
        roles = {}
    touch_keeping(state.teams, team, roles, TEAMS_LIMIT, _holds_any, 10 * TEAMS_LIMIT)
    role = roles.get(name)
    if role is None:
        role = Role(role=name, team=team, created_at=at, created_by=agent)
    touch_keeping(roles, name, role, ROLES_LIMIT, _held, 10 * ROLES_LIMIT)
    return role


def _note(role: Role, event: Event, agent: str, action: str, detail: str = "") -> None:
    """One line of history, at the event's writer's clock (`clock.written`)."""
    append_bounded(role.history, RoleNote(at=clock.written(event), agent=agent, action=action, detail=detail),
                   HISTORY_LIMIT)


def on_created(state: RolesState, name: str, event: RoleCreated) -> RolesState:
    """Establish the role; a second creation (another replica's: a clone refuses its own) keeps the first
    description and is noted as `create-ignored` with the description it gave."""
    known = event.role in state.teams.get(event.team, {})
    role = _role(state, event.team, event.role, event.created_at, event.agent_id)
    if not known:
        role.description = event.description
        _note(role, event, event.agent_id or "-", "created")
    else:
        _note(role, event, event.agent_id or "-", "create-ignored",
              f"its description: {_shortened(event.description)}" if event.description else "it gave none")
    return state


#: How much of an ignored creation's description its history line keeps.
IGNORED_DESCRIPTION_CHARS = 200


def _shortened(text: str) -> str:
    from events.guard import cut  # a cut that splits a token keeps its first characters, which match no rule

    return text if len(text) <= IGNORED_DESCRIPTION_CHARS else cut(text, IGNORED_DESCRIPTION_CHARS - 1) + "…"


def on_claimed(state: RolesState, name: str, event: RoleClaimed) -> RolesState:
    """The claim holds unless another agent's lease is fresh at the claim's time (then it is lost).

    A lease runs from its claim's (or renewal's) log time, the latest its writer can be said to have taken it; a
    claim is judged at its writer's own clock (`clock.written`: its `written_at` where the log's time had run ahead
    of that clock), the earliest it can be said to have been made. The log's time follows the newest event, which
    one fast clock pushes ahead of everyone's: judged by log time alone, a renewal made in time on a clone that had
    not seen that event lost to a later claim on one that had; judged by writers' clocks alone, a writer whose own
    clock runs fast took over a lease fresh by everyone else's. So a lease is held at least its ttl by either clock.
    """
    role = _role(state, event.team, event.role, event.created_at, event.agent_id)
    at_us = clock.parse_iso(clock.written(event))  # the history notes the claim at that time too
    previous = role.holder
    if previous is not None and previous != event.agent and fresh_at(role, at_us):
        _note(role, event, event.agent, "claim-lost", f"held by {previous} until {role.lease_expires_at}")
        return state
    if previous is not None and previous != event.agent:
        _note(role, event, event.agent, "took-over",
              f"from {previous}, whose lease expired at {role.lease_expires_at}")
    else:
        _note(role, event, event.agent, "claimed", f"for {event.ttl_seconds}s")
    role.holder = event.agent
    role.claimed_at = event.created_at
    role.lease_expires_at = expires(event.created_at, event.ttl_seconds)
    return state


def on_renewed(state: RolesState, name: str, event: RoleRenewed) -> RolesState:
    """The holder's lease runs `ttl_seconds` from now; anyone else's renewal is refused (noted)."""
    role = _role(state, event.team, event.role, event.created_at, event.agent_id)
    if role.holder != event.agent:
        _note(role, event, event.agent, "renew-refused", f"held by {role.holder or 'nobody'}")
        return state
    role.lease_expires_at = expires(event.created_at, event.ttl_seconds)
    _note(role, event, event.agent, "renewed", f"for {event.ttl_seconds}s")
    return state


def on_released(state: RolesState, name: str, event: RoleReleased) -> RolesState:
    """The holder frees the role; anyone else's release changes nothing (noted)."""
    role = _role(state, event.team, event.role, event.created_at, event.agent_id)
    if role.holder != event.agent:
        _note(role, event, event.agent, "release-refused", f"held by {role.holder or 'nobody'}")
        return state
    role.holder = role.claimed_at = role.lease_expires_at = None
    _note(role, event, event.agent, "released")
    return state


def on_checkpointed(state: RolesState, name: str, event: RoleCheckpointed) -> RolesState:
    """The role's resume point moves to the newest reference in log order; a park by an agent that does not hold the
    role (another replica's claim came first in log order, or took its expired lease over) changes nothing (noted):
    the next holder must not resume from it."""
    role = _role(state, event.team, event.role, event.created_at, event.agent_id)
    if event.parked and role.holder != event.agent_id:
        _note(role, event, event.agent_id or "-", "park-ignored",
              f"held by {role.holder or 'nobody'}: {event.checkpoint_ref}")
        return state
    role.checkpoint_ref = event.checkpoint_ref
    role.checkpoint_at = event.created_at
    role.checkpoint_by = event.agent_id
    _note(role, event, event.agent_id or "-", "parked" if event.parked else "checkpoint",
          event.checkpoint_ref)
    return state


MODEL = ReadModel(
    "roles", format=9, state=RolesState, initial=RolesState,
    folds={RoleCreated: on_created, RoleClaimed: on_claimed, RoleRenewed: on_renewed,
           RoleReleased: on_released, RoleCheckpointed: on_checkpointed},
    bounds={"TEAMS_LIMIT": TEAMS_LIMIT, "ROLES_LIMIT": ROLES_LIMIT, "HISTORY_LIMIT": HISTORY_LIMIT},
)
