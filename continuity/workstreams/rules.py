"""The invariants of a workstream (seed 002): item transitions, and structural checks over the state.

`structure_problems` returns the refusal texts, first problem first: the decisions refuse
with the first (continuity/workstreams/decide.py), `work status` reports them all for a
state a merge of two clones produced.
"""

from __future__ import annotations

from typing import NoReturn

from continuity.core.errors import InvariantRefused
from events.workstream import TERMINAL, StatusChange
from projections.workstreams import Item, Workstream, item_transition_ok


def refuse(text: str) -> NoReturn:
    """Refuse the change (exit 12): nothing is written."""
    raise InvariantRefused(text)


def transition(ws_id: str, item: Item, new: str, reopen: bool) -> StatusChange:
    """The status change of an item to `new`, or a refusal naming why it is not allowed."""
    if not item_transition_ok(item.status, new, reopen):
        if item.status in TERMINAL and new not in TERMINAL:
            refuse(f"Work item {item.id} of workstream {ws_id} is {item.status}: reopening terminal work needs an "
                   f"explicit reopen (continuity work item set {item.id} --status {new} --reopen)")
        if reopen:
            refuse(f"Work item {item.id} of workstream {ws_id} is {item.status}, not terminal: nothing to reopen "
                   f"(use --status without --reopen)")
        refuse(f"Invalid work item status transition for {item.id} of workstream {ws_id}: {item.status} -> {new}")
    return StatusChange(item_id=item.id, from_status=item.status, status=new, reopen=reopen)  # type: ignore[arg-type]


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
