"""The team part of the SessionStart brief: the agent's team resume and the handoffs addressed to it.

Pure, like the rest of the brief (continuity/sessions/brief.py): from the `team` read model,
the time the brief is made and the pending handoffs already gathered, so a served brief
renders again byte for byte.
"""

from __future__ import annotations

from typing import Any

from continuity.core.text import one_line, shortened
from continuity.team import resume
from events import clock
from projections.team import Teams, order_key

#: How many teams' resumes the brief shows (the agent's newest snapshots first).
TEAMS_SHOWN = 3
#: How many items of each snapshot list the brief shows, and how much of each text (the resume command
#: shows them whole).
ITEMS_SHOWN = 5
ITEM_CHARS = 200


def team_part(teams: Teams, agent_id: str | None, now: str, handoffs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The agent's newest snapshot in each team it belongs to (newest first) and its handoffs; None: not in a team."""
    if not agent_id:
        return None
    now_us = clock.parse_iso(now)
    found = []
    for team, members in teams.teams.items():
        snapshot = resume.pick(members.get(agent_id), None)
        if snapshot is not None:
            found.append((order_key(snapshot), team, snapshot))
    found.sort(key=lambda each: (each[0], each[1]), reverse=True)
    shown = []
    for _, team, snapshot in found[:TEAMS_SHOWN]:
        age = resume.age_seconds(snapshot.age_from, now_us)
        shown.append({"team": team, **resume.as_json(snapshot, age, None), "age": resume.format_age(age)})
    if not shown and not handoffs:
        return None
    return {"agent": agent_id, "teams": shown, "teams_total": len(found), "handoffs": handoffs}


def team_lines(part: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(heading, lines) for the brief: one section per team resume, then the handoffs for the agent."""
    sections = []
    agent = one_line(part["agent"])
    for entry in part["teams"]:
        lines = [one_line(f"- {entry['task']}: {shortened(entry['objective'], ITEM_CHARS)} (as of "
                          f"{entry['created_at']}, age {entry['age']})")]
        for title, key in (("next", "next_actions"), ("open question", "open_questions"),
                           ("decision", "decisions")):
            items = entry[key]
            lines += [one_line(f"  - {title}: {shortened(item, ITEM_CHARS)}") for item in items[:ITEMS_SHOWN]]
            if len(items) > ITEMS_SHOWN:
                lines.append(f"  - … {len(items) - ITEMS_SHOWN} more {title}s")
        lines.append(one_line(f"- whole brief: `continuity resume {entry['team']} {part['agent']}`"))
        sections.append((one_line(f"## Team resume: {entry['team']} ({agent})"), lines))
    if part["teams_total"] > len(part["teams"]):
        sections.append(("## Other teams", [f"- {part['teams_total'] - len(part['teams'])} more: "
                                            f"`continuity briefing <team> --agent {agent}`"]))
    if part["handoffs"]:
        sections.append((f"## Handoffs for {agent}", [
            one_line(f"- {h['path']} ({h['state']}, mentioned {h['mentioned']})") for h in part["handoffs"]]))
    return sections
