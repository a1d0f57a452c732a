"""Team views as text for people: queue, inbox, briefing and health (one line per item, neutralized)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from continuity.core.text import one_line, shortened
from continuity.team.resume import format_age

#: A message or handoff shown in a listing (queue, briefing) at most; `inbox` shows messages whole.
GIST_CHARS = 300


def _age(seconds: float | None) -> str:
    return format_age(None if seconds is None else Decimal(str(seconds)))


def messages(items: list[dict[str, Any]], *, whole: bool = False) -> list[str]:
    """`  - <id> from <agent> (<sent_at>): <text>` per message (`whole`: the text uncut, as `inbox` reads it)."""
    return [f"  - {m['message_id']} from {one_line(m['from'] or '-')} ({m['sent_at']}): "
            f"{one_line(m['text'] if whole else gist(m['text'], 'continuity inbox shows it whole'))}"
            + (" [read]" if m.get("acked_at") else "") for m in items]


def handoffs(items: list[dict[str, Any]]) -> list[str]:
    """`  - <id> from <agent>: <message>` per pending handoff."""
    return [f"  - {h['handoff_id']} from {one_line(h['from'] or '-')}"
            + (f" to any agent on {one_line(h['to_host'])}" if h.get("to_host") and not h.get("to") else "")
            + (f" (task {one_line(h['task'])})" if h.get("task") else "")
            + f": {one_line(_handoff_gist(h))}" for h in items]


def _handoff_gist(handoff: dict[str, Any]) -> str:
    return gist(handoff["message"], f"continuity handoff show {handoff['handoff_id']}")


def gist(text: str, whole: str) -> str:
    """A message as a listing shows it: up to GIST_CHARS characters, then how many more there are and `whole`,
    the command that shows it all."""
    if len(text) <= GIST_CHARS:
        return text
    shown = shortened(text, GIST_CHARS)
    return f"{shown} ({len(text) - len(shown) + 1} more characters: {whole})"


def queue_text(data: dict[str, Any]) -> str:
    """The queue: unread messages, pending handoffs, claimable roles."""
    lines = [f"queue for {one_line(data['agent'])} in team/{data['team']}"]
    for title, rows in (("messages", messages(data["messages"])), ("handoffs", handoffs(data["handoffs"])),
                        ("claimable roles", [f"  - {r['role']} ({r['lease_state']}): {r['command']}"
                                             for r in data["claimable_roles"]])):
        lines.append(f" {title}:" if rows else f" {title}: none")
        lines += rows
    return "\n".join(lines) + "\n"


def _section(title: str, block: dict[str, Any], rows: list[str]) -> list[str]:
    head = f"## {title}" + (f" (DEGRADED: {one_line(block['degraded'])})" if block["degraded"] else "")
    return ["", head, *(rows or ["  (none)"])]


def briefing_text(data: dict[str, Any]) -> str:
    """The briefing: header, then each section (a degraded one says so in its heading)."""
    who = f" for {one_line(data['agent'])}" if data["agent"] else ""
    lines = [f"# Briefing: team/{data['team']}{who} at {data['at']}"]
    lines += _section("Presence", data["presence"], [
        f"  - {one_line(p['agent'])}: {p['presence']}, last seen {_age(p['presence_age_seconds'])} ago"
        if p["last_seen"] else f"  - {one_line(p['agent'])}: never seen" for p in data["presence"]["items"]])
    lines += _section("Board", data["board"], [
        f"  - {r['role']}: " + (f"{one_line(r['holder'])} ({r['lease_state']}, until {r['lease_expires_at']})"
                                if r["holder"] else "free")
        + (f"; resume from {one_line(r['checkpoint_ref'])}" if r.get("checkpoint_ref") else "")
        for r in data["board"]["items"]])
    lines += _section("Inbox", data["inbox"], messages(data["inbox"]["items"]))
    lines += _section("Needs me", data["needs_me"], [
        f"  - {one_line(n['agent'])}: " + (f"handoff {n['handoff_id']}: {one_line(_handoff_gist(n))}"
                                           if n["kind"] == "handoff" else
                                           f"{n['unread']} unread message(s): {n['command']}" if n["kind"] == "inbox"
                                           else f"lease on {n['role']} expired: {n['command']}")
        for n in data["needs_me"]["items"]])
    lines += _section("Pending reviews", data["pending_reviews"], [])
    lines += _section("Pending handoffs", data["pending_handoffs"], handoffs(data["pending_handoffs"]["items"]))
    snapshots = data["latest_snapshot"]
    rows: list[str] = []
    for agent, snapshot in snapshots["items"].items():
        if snapshot.get("snapshot", True) is None:
            rows.append(f"  - {one_line(agent)}: no snapshot")
        else:
            rows.append(f"  - {one_line(agent)}: {one_line(snapshot['task'])}: {one_line(snapshot['objective'])} "
                        f"({_age(snapshot['checkpoint_age_seconds'])} old)")
            rows += [f"      next: {one_line(item)}" for item in snapshot["next_actions"][:3]]
    lines += _section("Latest snapshot", snapshots, rows)
    if "work" in data:
        lines += _section("Work", data["work"], work_rows(data["work"]["items"]))
    return "\n".join(lines) + "\n"


WORK_SHOWN = 5


def work_rows(work: dict[str, Any]) -> list[str]:
    """Open runs, open tasks and the newest memories, a few lines each, with how many more there are."""
    rows = [f"  - run {one_line(run['run_id'])} on {one_line(run['task_id'] or '-')}: "
            f"{one_line(run.get('task_title') or '')} (started {run.get('started') or 'unknown'})".rstrip()
            for run in work["open_runs"][:WORK_SHOWN]]
    rows += [f"  - task {one_line(task['task_id'])} [{task['status']}]: {one_line(task['title'])}"
             for task in work["open_tasks"][:WORK_SHOWN]]
    if work["open_tasks_total"] > WORK_SHOWN:
        rows.append(f"    ... {work['open_tasks_total'] - WORK_SHOWN} more open task(s): continuity task list")
    rows += [f"  - memory {one_line(memory['memory_id'])} ({memory['kind']}, {memory['age']}): "
             f"{one_line(memory['title'])}" for memory in work["memories"][:3]]
    return rows


def health_text(data: dict[str, Any]) -> str:
    """Health: per agent presence age, snapshot age, leases and flags; then expired leases still held."""
    lines = [f"health of team/{data['team']} at {data['at']}"]
    for agent in data["agents"]:
        leases = ", ".join(f"{lease['role']} ({lease['lease_state']})" for lease in agent["leases"]) or "none"
        flags = f"  [{', '.join(agent['flags'])}]" if agent["flags"] else ""
        lines.append(f"  {one_line(agent['agent'])}: presence {_age(agent['presence_age_seconds'])}, snapshot "
                     f"{_age(agent['snapshot_age_seconds'])}, leases {leases}{flags}")
    if not data["agents"]:
        lines.append("  no agents in this team yet")
    for lease in data["expired_leases"]:
        lines.append(f"  expired lease still held: {lease['role']} by {one_line(lease['holder'] or '-')} since "
                     f"{lease['lease_expires_at']}; take over: {lease['takeover']}")
    return "\n".join(lines) + "\n"
