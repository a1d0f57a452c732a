"""The structural invariants of a workstream (seed 002), as pure checks over the projection's state.

Each returns the refusal texts, first problem first: the decisions refuse with the first
(continuity/workstreams/decide.py), `work status` reports them all for a state a merge
of two clones produced.
"""

from __future__ import annotations

from events.workstream import TERMINAL
from projections.workstreams import Workstream


def dependency_cycle(ws: Workstream) -> str | None:
    """The item at which a cycle of `dependsOn` closes (items visited in order), or None."""
    done: set[str] = set()
    for start in ws.items:
        if start in done:
            continue
        on_path: set[str] = {start}
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, index = stack[-1]
            deps = ws.items[node].depends_on if node in ws.items else []
            if index >= len(deps):
                stack.pop()
                on_path.discard(node)
                done.add(node)
                continue
            stack[-1] = (node, index + 1)
            dep = deps[index]
            if dep in on_path:
                return dep
            if dep not in done and dep in ws.items:
                on_path.add(dep)
                stack.append((dep, 0))
    return None


def structure_problems(ws: Workstream) -> list[str]:
    """Every structural problem of one workstream, in a stable order."""
    problems: list[str] = []
    for item in ws.items.values():
        unknown = [dep for dep in item.depends_on if dep not in ws.items]
        if unknown:
            problems.append(f"Work item {item.id} of workstream {ws.id} depends on unknown work items: "
                            f"{', '.join(unknown)}")
    cycle = dependency_cycle(ws)
    if cycle is not None:
        problems.append(f"Workstream {ws.id} contains a dependency cycle at {cycle}")
    for item in ws.items.values():
        if item.status != "BLOCKED":
            continue
        valid = [blocker for blocker in item.blocked_by if blocker in ws.items and blocker != item.id]
        if not valid or len(valid) != len(item.blocked_by):
            named = ", ".join(item.blocked_by) or "none"
            problems.append(f"Work item {item.id} is BLOCKED without a valid blocker (blockedBy: {named}); "
                            f"blockedBy must name other work items of workstream {ws.id}")
    for field, value in (("currentItemId", ws.cursor.current_item_id),
                         ("lastCompletedItemId", ws.cursor.last_completed_item_id)):
        if value is not None and value not in ws.items:
            problems.append(f"Cursor {field} of workstream {ws.id} names unknown work item {value}")
    if ws.status in TERMINAL:
        open_items = [item.id for item in ws.items.values() if item.status not in TERMINAL]
        if open_items:
            problems.append(f"Workstream {ws.id} cannot be {ws.status} while work items are unresolved: "
                            f"{', '.join(open_items)} (transition them explicitly first)")
    return problems
