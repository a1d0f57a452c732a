"""The workstream documents, built from the `workstreams` state alone (so a rebuild writes the same bytes).

`workstreams/{active,archive}/<id>.json` hold seed 002's Workstream shape (camelCase);
`.ai-bridge/context-runtime.json` and `.md` the resume contract: the active workstream,
its cursor and unresolved items, the newest checkpoint, the validation ledger with what
each entry is bound to, and the problems a merge left. Validation freshness against the
live worktree is a view (`continuity work status`), never written here.
"""

from __future__ import annotations

from typing import Any

from continuity.core.text import block, one_line, shortened
from events.workstream import TERMINAL
from projections.workstreams import (
    Item,
    Problem,
    Validation,
    Workstream,
    WorkstreamsState,
    active,
    active_ids,
    open_problems,
    unresolved,
)

#: The runtime document's shape; 2: `validationFreshness` is an object in every document (it was a string in
#: one written from the log alone).
RUNTIME_FORMAT = 2
SHOWN_EVIDENCE = 20
SHOWN_VALIDATIONS = 50
SHOWN_ARCHIVED = 20
#: Where the live views (freshness, context state, membership) come from.
#: What a runtime document written from the log alone says of validation freshness (its `problem`).
NOT_OBSERVED = ("not observed since the last change (`continuity work status` compares each entry's head and "
                "fingerprint with the worktree)")
LIVE_HINT = ("`continuity work status` shows them for the worktree as it is now (`work start` and this clone's "
             "writes also write them here)")


def item_document(item: Item) -> dict[str, Any]:
    """A work item in seed 002's shape."""
    return {"id": item.id, "title": item.title, "status": item.status, "priority": item.priority,
            "scope": item.scope, "acceptanceCriteria": item.acceptance_criteria, "dependsOn": item.depends_on,
            "blockedBy": item.blocked_by, "validationRequirements": item.validation_requirements,
            "notes": item.notes}


def cursor_document(ws: Workstream) -> dict[str, Any]:
    """A cursor in seed 002's shape."""
    cursor = ws.cursor
    return {"currentItemId": cursor.current_item_id, "lastCompletedItemId": cursor.last_completed_item_id,
            "phase": cursor.phase, "lastCompletedAction": cursor.last_completed_action,
            "nextAction": cursor.next_action}


def workstream_document(ws: Workstream) -> dict[str, Any]:
    """A workstream in seed 002's shape: header, repositories, cursor, items in order."""
    return {"id": ws.id, "title": ws.title, "status": ws.status, "objective": ws.objective,
            "repositories": [{"repository": r.repository, "role": r.role} for r in ws.repositories],
            "cursor": cursor_document(ws), "items": [item_document(item) for item in ws.items.values()]}


def validation_document(found: Validation) -> dict[str, Any]:
    """A ledger entry in seed 002's shape, plus what it is bound to and when it was recorded."""
    entry = found.entry
    return {"id": entry.id, "kind": entry.kind, "result": entry.result, "repository": entry.repository,
            "scope": entry.scope, "summary": entry.summary, "timestamp": entry.timestamp, "command": entry.command,
            "evidenceRefs": list(entry.evidence_refs), "head": found.head, "fingerprint": found.fingerprint,
            "recordedAt": found.recorded_at, "eventId": found.event_id}


#: Resolved problems a runtime document lists (newest last; `work status --as-of` shows any point).
SHOWN_RESOLVED = 20


def problem_document(problem: Problem) -> dict[str, Any]:
    """A recorded problem: id, kind, workstream, ids, text, the event that made it, what resolved it."""
    done = problem.resolved
    return {"id": problem.id, "kind": problem.kind, "workstreamId": problem.workstream_id, "ids": problem.ids,
            "text": problem.text, "eventId": problem.event_id, "at": problem.at, "resolvedBy": None if done is None
            else {"by": done.by, "eventId": done.event_id, "agentId": done.agent_id, "at": done.at,
                  "reason": done.reason}}


def problem_details(state: WorkstreamsState) -> list[dict[str, Any]]:
    """What a merge left, open now: the recorded conflicts, then what the state itself breaks.

    The state's problems are computed, never recorded, so they hold exactly while the state
    is broken: two workstreams active at once, work left unresolved in an ended workstream,
    and each unresolved workstream's structural problems (a cycle, ...). They carry no id:
    fixing the state clears them.
    """
    from continuity.workstreams.rules import structure_findings

    found = [problem_document(problem) for problem in open_problems(state)]

    def computed(kind: str, ws_id: str, ids: Any, text: str) -> None:
        found.append({"id": None, "kind": kind, "workstreamId": ws_id, "ids": list(ids), "text": text,
                      "eventId": None, "at": None, "resolvedBy": None})

    ids = active_ids(state)
    for index, ws_id in enumerate(ids[1:], 1):  # ids: every other workstream active with it (three active: two)
        earlier = ids[:index]
        computed("two_active", ws_id, [other for other in ids if other != ws_id],
                 f"workstream {ws_id} was started while {', '.join(earlier)} "
                 f"{'was' if len(earlier) == 1 else 'were'} still active "
                 "(concurrent writers merged? end the one the team drops with a tracked checkpoint)")
    for ws in state.workstreams.values():
        if ws.status in TERMINAL:
            open_ids = [item.id for item in unresolved(ws)]
            if open_ids:
                computed("unresolved_in_ended", ws.id, open_ids,
                         f"workstream {ws.id} is {ws.status} (archived) while work items are unresolved: "
                         f"{', '.join(open_ids)} (concurrent writers merged? carry them into an active workstream, "
                         f"then `continuity work item set ID --workstream {ws.id} --status SUPERSEDED`)")
        else:
            for finding in structure_findings(ws):
                computed(finding.kind, ws.id, finding.ids, finding.text)
    return found


def problems_of(state: WorkstreamsState) -> list[str]:
    """The texts of the problems open now (problem_details)."""
    return [problem["text"] for problem in problem_details(state)]


def resolved_problems(state: WorkstreamsState) -> list[dict[str, Any]]:
    """The recorded problems an explicit act resolved, with what resolved them (history), oldest first."""
    return [problem_document(problem) for problem in state.problems if problem.resolved is not None]


def runtime_document(state: WorkstreamsState, project: str) -> dict[str, Any]:
    """`.ai-bridge/context-runtime.json`: the resume contract."""
    ws = active(state)
    checkpoint = state.checkpoint
    next_action = ws.cursor.next_action if ws is not None else (checkpoint.next_action if checkpoint else None)
    details = problem_details(state)
    return {
        "format": RUNTIME_FORMAT,
        "project": project,
        "lastEventId": state.last_event_id,
        "activeWorkstream": None if ws is None else {
            "id": ws.id, "title": ws.title, "status": ws.status, "objective": ws.objective,
            "repositories": [{"repository": r.repository, "role": r.role} for r in ws.repositories],
            "items": len(ws.items), "unresolved": len(unresolved(ws)), "updatedAt": ws.updated_at},
        "cursor": cursor_document(ws) if ws is not None else None,
        "unresolvedItems": [item_document(item) for item in unresolved(ws)] if ws is not None else [],
        "nextAction": next_action,
        "checkpoint": None if checkpoint is None else {
            "schemaVersion": checkpoint.schema_version, "mode": checkpoint.mode, "repository": checkpoint.repository,
            "scope": checkpoint.scope, "status": checkpoint.status, "objective": checkpoint.objective,
            "nextAction": checkpoint.next_action, "openQuestions": checkpoint.open_questions,
            "validation": checkpoint.validation_notes, "workstreamId": checkpoint.workstream_id,
            "at": checkpoint.at, "eventId": checkpoint.event_id},
        "decisions": [entry.text for entry in state.decisions[-SHOWN_EVIDENCE:]],
        "confirmedFindings": [entry.text for entry in state.findings[-SHOWN_EVIDENCE:]],
        "rejectedApproaches": [entry.text for entry in state.rejected[-SHOWN_EVIDENCE:]],
        "validationLedger": [validation_document(v) for v in list(state.validations.values())[-SHOWN_VALIDATIONS:]],
        "validationFreshness": {"head": None, "fingerprint": None, "problem": NOT_OBSERVED, "entries": {}},
        "archivedWorkstreams": state.archived[-SHOWN_ARCHIVED:],
        "problems": [problem["text"] for problem in details],
        "problemDetails": details,
        "resolvedProblems": resolved_problems(state)[-SHOWN_RESOLVED:],
    }


def unhealthy_line(doc: dict[str, Any]) -> str:
    """The one line a failing `work status` or `work start` gives as its `message` (CLI --json and the MCP
    `work_status`): how many problems, and the first."""
    found = [*doc.get("problems", ()), *doc.get("membership", {}).get("problems", ())]
    first = found[0] if found else "see the report"
    return one_line(f"unhealthy: {len(found)} problem(s); first: {first}")


def _item_line(item: dict[str, Any], *, brief: bool = False) -> str:
    """A work item on one line; in the brief, a title cut as task titles are and at most BRIEF_IDS ids a list (an
    item of 500-character titles or 256 dependencies would otherwise take the room of every section after it)."""
    title = shortened(item["title"], BRIEF_TITLE_CHARS) if brief else item["title"]
    line = f"- [{item['status']}] {item['id']} ({item['priority']}): {one_line(title)}"
    for label, ids in (("depends on", item["dependsOn"]), ("blocked by", item["blockedBy"])):
        if ids:
            shown = ids[:BRIEF_IDS] if brief else ids
            line += f"; {label} {', '.join(shown)}" + (f" (+{len(ids) - len(shown)} more)" if len(shown) < len(ids)
                                                      else "")
    return line


def runtime_markdown(doc: dict[str, Any]) -> str:
    """`.ai-bridge/context-runtime.md`: the same resume contract, for people and agents to read."""
    out = [f"# Context runtime: {one_line(doc['project'])}", ""]
    ws = doc["activeWorkstream"]
    if ws is None:
        out += ["No active tracked workstream.", ""]
    else:
        out += [f"## Active workstream {ws['id']} [{ws['status']}]", "", block(one_line(ws["title"])),
                f"Objective: {block(ws['objective']) if ws['objective'] else '-'}",
                f"{ws['unresolved']} unresolved of {ws['items']} work items.", ""]
        cursor = doc["cursor"]
        out += ["## Cursor", "", f"- next action: {one_line(cursor['nextAction'])}",
                f"- current item: {cursor['currentItemId'] or '-'}",
                f"- last completed item: {cursor['lastCompletedItemId'] or '-'}",
                f"- phase: {one_line(cursor['phase'] or '-')}",
                f"- last completed action: {one_line(cursor['lastCompletedAction'] or '-')}", ""]
        out += ["## Unresolved work items", ""]
        out += [_item_line(item) for item in doc["unresolvedItems"]] or ["- none"]
        out.append("")
    if ws is None and doc["nextAction"]:
        out += ["## Next action", "", one_line(doc["nextAction"]), ""]
    checkpoint = doc["checkpoint"]
    if checkpoint is not None:
        out += ["## Newest checkpoint", "", f"- status: {checkpoint['status']} ({checkpoint['mode']}, schemaVersion "
                f"{checkpoint['schemaVersion']}, {checkpoint['at']})", f"- repository: {checkpoint['repository']}"]
        out += [f"- open question: {one_line(q)}" for q in checkpoint["openQuestions"]]
        out.append("")
    for heading, key in (("Decisions", "decisions"), ("Confirmed findings", "confirmedFindings"),
                         ("Rejected approaches", "rejectedApproaches")):
        if doc[key]:
            out += [f"## {heading}", "", *(f"- {one_line(text)}" for text in doc[key]), ""]
    fresh = doc["validationFreshness"]
    states = fresh["entries"]
    if doc.get("observedAt"):
        out += ["## Validation", "", f"Worktree now: head {(fresh['head'] or '-')[:12]}, fingerprint "
                f"{(fresh['fingerprint'] or '-')[:12]}" + (f" ({one_line(fresh['problem'])})" if fresh["problem"]
                                                          else "") + ". STALE evidence is history, not current.", ""]
    else:
        out += ["## Validation", "", f"Freshness is {fresh['problem']}.", ""]
    for v in doc["validationLedger"]:
        now = f"{states[v['id']]} " if v["id"] in states else ""
        out.append(f"- {v['id']} {now}{v['result']} ({v['kind']}, {v['repository']}): {one_line(v['summary'])} "
                   f"[head {(v['head'] or '-')[:12]}, fingerprint {(v['fingerprint'] or '-')[:12]}]")
    if not doc["validationLedger"]:
        out.append("- no entries")
    out.append("")
    if doc["problems"]:
        out += ["## Problems left by a merge", "", "A recorded conflict (with an id) stays until a tracked checkpoint "
                "of its workstream or `continuity work resolve ID --reason ...` resolves it; the others clear when "
                "the state is fixed.", ""]
        out += [f"- [{p['id']}] {one_line(p['text'])}" if p["id"] else f"- {one_line(p['text'])}"
                for p in doc["problemDetails"]]
        out.append("")
    if doc["resolvedProblems"]:
        out += ["## Resolved problems", ""]
        out += [f"- [{p['id']}] {one_line(p['text'])}: resolved by {p['resolvedBy']['by']} "
                f"{p['resolvedBy']['eventId']} ({p['resolvedBy']['agentId'] or '-'}): "
                f"{one_line(p['resolvedBy']['reason'])}" for p in doc["resolvedProblems"]]
        out.append("")
    out += _live_lines(doc)
    return "\n".join(out)


def _live_lines(doc: dict[str, Any]) -> list[str]:
    """The context state and membership sections: observed (`work start`, `work status`) or not observed."""
    membership = doc.get("membership")
    if membership is None:
        return ["## Context state and membership", "", f"Not observed since the last change: {LIVE_HINT}.", ""]
    out = []
    if doc.get("contextState"):
        out += [f"Context state: {doc['contextState']}"]
    managed = (f"registry {one_line(membership['registry'])}" if membership["managed"]
               else "not managed (no repositories/repositories.yaml)")
    out += [f"Membership: {managed}; this repository: {one_line(membership['repository'] or '-')}"]
    out += [f"- {one_line(problem)}" for problem in membership["problems"]]
    if doc.get("observedAt"):
        out += [f"Observed at {doc['observedAt']}; {LIVE_HINT}."]
    return [*out, ""]


#: Unresolved items a resume brief lists at most (the rest: `continuity work status`).
BRIEF_ITEMS = 20
#: What the brief shows of an item's or a workstream's title, and of an item's dependency and blocker lists.
BRIEF_TITLE_CHARS = 100
BRIEF_IDS = 5


def brief_problems(view: Any) -> list[str]:
    """The problems a merge left, for a resume bundle (a read-side project view); [] without the model."""
    try:
        state: WorkstreamsState = view.of("workstreams")
    except KeyError:
        return []
    return problems_of(state)


def brief_section(view: Any) -> dict[str, Any] | None:
    """The active workstream for a resume bundle (a read-side project view), or None.

    None too when the command did not load the `workstreams` model.
    """
    try:
        state: WorkstreamsState = view.of("workstreams")
    except KeyError:
        return None
    ws = active(state)
    if ws is None:
        return None
    items = unresolved(ws)
    return {"id": ws.id, "title": ws.title, "status": ws.status, "cursor": cursor_document(ws),
            "unresolved": [item_document(item) for item in items[:BRIEF_ITEMS]], "unresolved_total": len(items)}


def brief_lines(section: dict[str, Any]) -> tuple[str, list[str]]:
    """The brief's workstream section: heading, the cursor's item, the unresolved items in order.

    The cursor's next action is the brief's own next action (continuity/sessions/brief.py).
    """
    cursor = section["cursor"]
    lines: list[str] = []
    if cursor["currentItemId"]:
        lines.append(f"- current item: {cursor['currentItemId']}" +
                     (f" (phase {one_line(cursor['phase'])})" if cursor["phase"] else ""))
    lines += [_item_line(item, brief=True) for item in section["unresolved"]]
    more = section["unresolved_total"] - len(section["unresolved"])
    if more > 0:
        lines.append(f"- ... {more} more unresolved: `continuity work status`")
    title = one_line(shortened(section["title"], BRIEF_TITLE_CHARS))
    # the count in the heading too: a brief cut inside the section still says how much is unresolved
    return (f"## Workstream {section['id']} [{section['status']}]: {title} ({section['unresolved_total']} "
            "unresolved)"), lines
