"""The invariants of a workstream (seed 002): item transitions, and structural checks over the state.

`structure_problems` returns the refusal texts, first problem first: the decisions refuse
with the first (continuity/workstreams/decide.py), `work status` reports them all for a
state a merge of two clones produced.
"""

from __future__ import annotations

from typing import NamedTuple, NoReturn

from continuity.core.errors import InvariantRefused
from events.workstream import TERMINAL, StatusChange
from projections.workstreams import Item, Workstream, item_transition_ok


def refuse(text: str) -> NoReturn:
    """Refuse the change (exit 12): nothing is written."""
    raise InvariantRefused(text)


def transition(ws_id: str, item: Item, new: str, reopen: bool) -> StatusChange:
    """The status change of an item to `new`, or a refusal naming why it is not allowed."""
    if reopen and item.status not in TERMINAL:  # to its own status too: a reopen of nothing is not recorded
        refuse(f"Work item {item.id} of workstream {ws_id} is {item.status}, not terminal: nothing to reopen "
               f"(use --status without --reopen)")
    if reopen and new in TERMINAL:
        refuse(f"Work item {item.id} of workstream {ws_id} is {item.status}: a reopen needs an unresolved status "
               f"(continuity work item set {item.id} --status PENDING --reopen)")
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


def cyclic_items(ws: Workstream) -> list[str]:
    """Every item on some cycle of `dependsOn` (strongly connected components, iterative Tarjan), in item order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cyclic: set[str] = set()
    for root in ws.items:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, at = work[-1]
            if at == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            deps = [dep for dep in ws.items[node].depends_on if dep in ws.items]
            if at < len(deps):
                work[-1] = (node, at + 1)
                dep = deps[at]
                if dep not in index:
                    work.append((dep, 0))
                elif dep in on_stack:
                    low[node] = min(low[node], index[dep])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in ws.items[node].depends_on:
                    cyclic.update(component)
    return [item_id for item_id in ws.items if item_id in cyclic]


class Finding(NamedTuple):
    """A structural problem of a workstream's state: its kind, the ids it names, the refusal text."""

    kind: str
    ids: tuple[str, ...]
    text: str


def structure_findings(ws: Workstream) -> list[Finding]:
    """Every structural problem of one workstream, in a stable order."""
    found: list[Finding] = []
    for item in ws.items.values():
        unknown = [dep for dep in item.depends_on if dep not in ws.items]
        if unknown:
            found.append(Finding("unknown_dependency", (item.id, *unknown),
                                 f"Work item {item.id} of workstream {ws.id} depends on unknown work items: "
                                 f"{', '.join(unknown)}"))
    cycle = dependency_cycle(ws)
    if cycle is not None:
        found.append(Finding("dependency_cycle", tuple(cyclic_items(ws)),
                             f"Workstream {ws.id} contains a dependency cycle at {cycle}"))
    for item in ws.items.values():
        if item.status != "BLOCKED":
            continue
        valid = [blocker for blocker in item.blocked_by if blocker in ws.items and blocker != item.id]
        if not valid or len(valid) != len(item.blocked_by):
            named = ", ".join(item.blocked_by) or "none"
            found.append(Finding("blocked_without_blocker", (item.id,),
                                 f"Work item {item.id} is BLOCKED without a valid blocker (blockedBy: {named}); "
                                 f"blockedBy must name other work items of workstream {ws.id}"))
    for field, value in (("currentItemId", ws.cursor.current_item_id),
                         ("lastCompletedItemId", ws.cursor.last_completed_item_id)):
        if value is not None and value not in ws.items:
            found.append(Finding("cursor_unknown_item", (field, value),
                                 f"Cursor {field} of workstream {ws.id} names unknown work item {value}"))
    if ws.status in TERMINAL:
        open_items = [item.id for item in ws.items.values() if item.status not in TERMINAL]
        if open_items:
            found.append(Finding("unresolved_in_ended", tuple(open_items),
                                 f"Workstream {ws.id} cannot be {ws.status} while work items are unresolved: "
                                 f"{', '.join(open_items)} (transition them explicitly first)"))
    return found


def structure_problems(ws: Workstream) -> list[str]:
    """Every structural problem of one workstream, as refusal texts, in a stable order."""
    return [finding.text for finding in structure_findings(ws)]


def introduced(before: Workstream | None, after: Workstream) -> list[str]:
    """The structural problems `after` has that `before` did not (a problem that only shrank is not new).

    A granular command is refused only for these: a cycle a merge left does not block a note
    on another item, and an edit that fixes part of a problem is accepted.
    """
    old = structure_findings(before) if before is not None else []
    new = []
    for finding in structure_findings(after):
        known = [set(ids) for kind, ids, _ in old if kind == finding.kind]
        if any(set(finding.ids) <= ids for ids in known):
            continue
        if finding.kind == "dependency_cycle" and known:  # name where the new cycle is, not the old one
            fresh = [item_id for item_id in finding.ids if item_id not in known[0]]
            new.append(f"Workstream {after.id} contains a dependency cycle at {fresh[0]}")
        else:
            new.append(finding.text)
    return new
