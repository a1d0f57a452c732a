"""Team views (pure): presence, the role board, inbox, queue, briefing and health, from read-model states
and a `now`. Nothing here is stored: ages and freshness exist only when asked.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from continuity.team import resume
from continuity.team.roles import lease_state, role_json
from events import clock
from projections.handoffs import HandoffsState
from projections.inbox import InboxState
from projections.roles import RolesState
from projections.team import Teams

if TYPE_CHECKING:
    from collections.abc import Collection

#: Presence counts as fresh for an hour (seed 000's lifecycle: snapshot at least hourly, inbox every 30 minutes).
PRESENCE_FRESH_S = 3600
#: A snapshot older than this, while the agent is present, makes it `continuity-stale`.
SNAPSHOT_FRESH_S = 3600
BRIEFING_SCHEMA = "coord.teams.briefing.v1"
HEALTH_SCHEMA = "coord.teams.health.v1"


def _age(at: str | None, now_us: int) -> Decimal | None:
    return None if at is None else resume.age_seconds(at, now_us)


def _seen_age(at: str | None, now_us: int) -> Decimal | None:
    """How long ago an agent was seen, from its newest event's time by its writer's clock (`clock.written`). A time
    still ahead of this clock (the fast machine's own events; before events said `written_at`, any event whose
    stamp followed one stamped ahead; this machine's own after its clock went back) belongs to an event a read
    folded, so one written before now: by an agent seen just now (age 0). Counted unknown instead, one fast clock
    hid every member's presence, and health stopped flagging `continuity-stale`. (A snapshot's age keeps seed
    000's rule.)"""
    age = _age(at, now_us)
    if age is not None or at is None:
        return age
    try:
        return Decimal(0) if clock.parse_iso(at) > now_us else None
    except (ValueError, OverflowError):
        return None


def _seconds(age: Decimal | None) -> float | None:
    return None if age is None else float(round(age, 3))


def members(inbox: InboxState, team: str) -> list[str]:
    """The team's agents (any team event named them), by name."""
    box = inbox.teams.get(team)
    return sorted(box.members) if box is not None else []


def presence(inbox: InboxState, team: str, now_us: int) -> list[dict[str, Any]]:
    """Per member: when last seen writing anything, how long ago, fresh or stale."""
    rows = []
    for agent in members(inbox, team):
        seen = inbox.seen.get(agent)
        age = _seen_age(seen, now_us)
        rows.append({"agent": agent, "last_seen": seen, "presence_age_seconds": _seconds(age),
                     "presence": "unknown" if age is None else "fresh" if age <= PRESENCE_FRESH_S else "stale"})
    return rows


def board(roles: RolesState, team: str, now_us: int) -> list[dict[str, Any]]:
    """Every role of the team with its holder and lease state now."""
    return [role_json(role, now_us) for _, role in sorted(roles.teams.get(team, {}).items())]


def inbox_items(inbox: InboxState, team: str, agent: str | None, *, read: bool = False) -> list[dict[str, Any]]:
    """Unread messages (to `agent`, or to anyone), oldest first; with `read`, the kept read ones too."""
    box = inbox.teams.get(team)
    if box is None:
        return []
    found = list(box.unread.values()) + (list(box.read.values()) if read else [])
    return [{"message_id": m.message_id, "from": m.from_agent, "to": m.to_agent, "text": m.text,
             "sent_at": m.sent_at, "acked_at": m.acked_at}
            for m in sorted(found, key=lambda m: (m.sent_at, m.message_id)) if agent is None or m.to_agent == agent]


def pending_handoffs(handoffs: HandoffsState, agents: Collection[str]) -> list[dict[str, Any]]:
    """Pending handoffs addressed to any of `agents`, and those addressed to a host (any agent may take one: these
    reads know no host, as `resume-bundle` with none), oldest first."""
    return [{"handoff_id": h.handoff_id, "from": h.from_agent, "to": h.to_agent, "to_host": h.to_host,
             "task": h.for_task, "message": h.message, "created_at": h.created_at}
            for h in sorted(handoffs.open.values(), key=lambda h: (h.created_at, h.handoff_id))
            if h.state == "pending" and (h.to_agent in agents or (h.to_agent is None and h.to_host))]


def claimable(roles: RolesState, team: str, agent: str, now_us: int) -> list[dict[str, Any]]:
    """Roles `agent` could claim now: free, or held under an expired lease (its own included)."""
    return [{"role": role.role, "holder": role.holder, "lease_state": lease_state(role, now_us),
             "command": f"continuity role claim {team} {role.role} --agent {agent}"}
            for _, role in sorted(roles.teams.get(team, {}).items()) if lease_state(role, now_us) != "fresh"]


def queue(inbox: InboxState, handoffs: HandoffsState, roles: RolesState, team: str, agent: str,
          now_us: int) -> dict[str, Any]:
    """What waits for `agent`: unread messages, pending handoffs to it, roles it could claim."""
    return {"team": team, "agent": agent, "messages": inbox_items(inbox, team, agent),
            "handoffs": pending_handoffs(handoffs, [agent]), "claimable_roles": claimable(roles, team, agent, now_us)}


def snapshot_state(teams: Teams, team: str, agent: str, now_us: int) -> tuple[Any, Decimal | None]:
    """The agent's newest snapshot in the team and its age."""
    snapshot = resume.pick(teams.teams.get(team, {}).get(agent), None)
    return snapshot, (resume.age_seconds(snapshot.age_from, now_us) if snapshot is not None else None)


def health(inbox: InboxState, roles: RolesState, teams: Teams, team: str, now_us: int) -> dict[str, Any]:
    """Per agent: presence age, snapshot age, leases; `continuity-stale` flags; expired leases still held."""
    agents = []
    held: dict[str | None, list[dict[str, Any]]] = {}  # the roles once, by holder: not once per member
    for _, role in sorted(roles.teams.get(team, {}).items()):
        held.setdefault(role.holder, []).append({"role": role.role, "lease_state": lease_state(role, now_us),
                                                 "lease_expires_at": role.lease_expires_at})
    for row in presence(inbox, team, now_us):
        agent = row["agent"]
        snapshot, age = snapshot_state(teams, team, agent, now_us)
        leases = held.get(agent, [])
        flags = []
        if row["presence"] == "fresh" and (age is None or age > SNAPSHOT_FRESH_S):
            flags.append("continuity-stale")
        if any(lease["lease_state"] == "expired" for lease in leases):
            flags.append("lease-expired")
        agents.append({**row, "snapshot_at": snapshot.created_at if snapshot else None,
                       "snapshot_age_seconds": _seconds(age), "leases": leases, "flags": flags})
    expired = [{"role": role.role, "holder": role.holder, "lease_expires_at": role.lease_expires_at,
                "takeover": f"continuity role claim {team} {role.role} --agent <you>"}
               for _, role in sorted(roles.teams.get(team, {}).items()) if lease_state(role, now_us) == "expired"]
    return {"schema": HEALTH_SCHEMA, "team": team, "at": clock.iso(now_us), "agents": agents,
            "expired_leases": expired}


def section(items: Any, degraded: str | None) -> dict[str, Any]:
    """A briefing section: its items, and why it is degraded (None when whole)."""
    return {"degraded": degraded, "items": items}


def briefing(*, inbox: InboxState, roles: RolesState, teams: Teams, handoffs: HandoffsState, team: str,
             agent: str | None, everyone: bool, now_us: int, degraded: str | None) -> dict[str, Any]:
    """Seed 000's session-start view in one call: presence, board, inbox, needs-me, pending reviews and
    handoffs, latest snapshot. `degraded` marks the sections built from a read that was not whole."""
    agents = members(inbox, team) if everyone or agent is None else [agent]
    # The board, the handoffs and the messages each read once and grouped by agent (per member, they made a
    # briefing of 1,000 members take seconds).
    rows = board(roles, team, now_us)
    handed = pending_handoffs(handoffs, set(agents))
    messages = inbox_items(inbox, team, None)
    expired_of: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["lease_state"] == "expired":
            expired_of.setdefault(row["holder"], []).append(row)
    handed_to: dict[str, list[dict[str, Any]]] = {}
    for item in handed:
        handed_to.setdefault(item["to"], []).append(item)
    unread_of: dict[str, list[dict[str, Any]]] = {}
    for item in messages:
        unread_of.setdefault(item["to"], []).append(item)
    needs: list[dict[str, Any]] = []
    for who in agents:
        needs += [{"agent": who, "kind": "handoff", **item} for item in handed_to.get(who, ())]
        needs += [{"agent": who, "kind": "lease-expired", "role": row["role"],
                   "command": f"continuity role renew {team} {row['role']} --agent {who}"}
                  for row in expired_of.get(who, ())]
        unread = len(unread_of.get(who, ()))
        if unread:
            needs.append({"agent": who, "kind": "inbox", "unread": unread,
                          "command": f"continuity inbox {team} --agent {who}"})
    snapshots = {}
    for who in agents:
        snapshot, age = snapshot_state(teams, team, who, now_us)
        snapshots[who] = resume.as_json(snapshot, age, None)
    return {
        "schema": BRIEFING_SCHEMA, "team": team, "agent": agent, "at": clock.iso(now_us),
        "presence": section(presence(inbox, team, now_us), degraded),
        "board": section(rows, degraded),
        "inbox": section([item for who in agents for item in unread_of.get(who, ())], degraded),
        "needs_me": section(needs, degraded),
        "pending_reviews": section([], None),
        "pending_handoffs": section(handed, degraded),
        "latest_snapshot": section(snapshots, degraded),
    }
