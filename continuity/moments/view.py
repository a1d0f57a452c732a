"""`moments list`: the team's moments re-derived from the log, as each sink would receive them."""

from __future__ import annotations

from typing import Any

from continuity.core.store import Store
from continuity.moments import channel as config
from continuity.moments.decide import note
from continuity.moments.paths import config_relpath
from projections.moments import TeamMoments


def listing(store: Store, team: str, moments: TeamMoments, *, pending_only: bool = False) -> tuple[dict[str, Any],
                                                                                                   list[str]]:
    """The channel's state and every moment (note, path, tags, delivered and pending sinks); lines to print."""
    from continuity.team.plain import snapshot_relpath

    loaded = config.load_config(store.path, team)
    lines = [loaded.line] if loaded.line else []
    sinks = loaded.channel.sinks() if loaded.channel is not None else []
    items = []
    for moment in moments.moments.values():
        due = [sink for sink in sinks if sink not in moment.delivered]
        if pending_only and not due:
            continue
        tags, line = config.tags_for(store.path, team, moment.agent, "moment listed")  # a read sends nothing
        if line is not None and line not in lines:
            lines.append(line)
        path = snapshot_relpath(team, moment.agent, moment.task)
        items.append({"moment_id": moment.moment_id, "recorded_at": moment.created_at, "source": moment.agent,
                      "task": moment.task, "path": path, "tags": tags,
                      "note": note(moment.agent, moment.task, moment.objective, path),
                      "delivered": dict(moment.delivered), "pending": due})
    channel = {"state": loaded.state, "config": config_relpath(team), "sinks": sinks,
               "outbox": config.outbox_relpath(team, loaded.channel) if "outbox" in sinks and loaded.channel else None}
    return {"schema": "continuity.moments.v1", "team": team, "channel": channel, "moments": items}, lines


def render(data: dict[str, Any]) -> str:
    """The listing for people: the channel, then one moment per paragraph (its note on the second line)."""
    from continuity.core.text import one_line

    channel = data["channel"]
    sinks = ", ".join(channel["sinks"]) or "none"
    out = [f"checkpoint channel for team/{data['team']}: {channel['state']} (sinks: {sinks})"]
    if not data["moments"]:
        out.append("no moments")
    for item in data["moments"]:
        state = ", ".join([*(f"{sink} delivered" for sink in item["delivered"]),
                           *(f"{sink} pending" for sink in item["pending"])]) or "not delivered"
        out.append(f"{item['recorded_at']} {item['source']} {item['task']} {item['moment_id']} [{state}]")
        out.append("  " + one_line(item["note"]))
    return "\n".join(out)
