"""A checkpoint document against the known workstream: the events that describe the change.

The diff's own invariants (lost items, transitions, switching and archived workstreams) are
checked here; the structural ones on the result (rules.structure_problems) by the caller,
continuity/workstreams/decide.py. Item lists travel in one event each, split over several
only above CHUNK_BYTES (an event holds at most 256 KiB).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from continuity.workstreams.document import Checkpoint, DocCursor, DocItem, DocWorkstream
from continuity.workstreams.rules import refuse, transition
from events.base import Event
from events.guard import cut
from events.workstream import (
    TERMINAL,
    ApproachRejected,
    Cursor,
    CursorMoved,
    DecisionRecorded,
    FindingConfirmed,
    ItemRevision,
    RepositoryRole,
    StatusChange,
    WorkItemAdded,
    WorkItemData,
    WorkItemRevised,
    WorkItemStatusChanged,
    WorkstreamRevised,
    WorkstreamStarted,
    WorkstreamStatusChanged,
)
from projections.workstreams import (
    Item,
    WorkstreamsState,
    active,
    active_ids,
    unresolved,
    workstream_transition_ok,
)

T = TypeVar("T")
#: Item lists are split over several events above this many encoded bytes (an event holds 256 KiB).
CHUNK_BYTES = 160_000
REVISABLE = ("title", "priority", "scope", "acceptance_criteria", "depends_on", "blocked_by",
             "validation_requirements", "notes")


def chunks(values: Sequence[T], limit: int = CHUNK_BYTES) -> list[list[T]]:
    """`values` split into runs whose JSON encodings add up to at most `limit` bytes (never empty runs)."""
    runs: list[list[T]] = []
    size = 0
    for value in values:
        cost = len(msgspec.json.encode(value)) + 1
        if not runs or size + cost > limit:
            runs.append([])
            size = 0
        runs[-1].append(value)
        size += cost
    return runs


def item_data(doc: DocItem) -> WorkItemData:
    """A document item as event data."""
    return WorkItemData(id=doc.id, title=doc.title, status=doc.status, priority=doc.priority, scope=doc.scope,
                        acceptance_criteria=doc.acceptance_criteria, depends_on=doc.depends_on,
                        blocked_by=doc.blocked_by, validation_requirements=doc.validation_requirements,
                        notes=doc.notes)


def cursor_of(doc: DocCursor) -> Cursor:
    """A document cursor as event data."""
    return Cursor(current_item_id=doc.current_item_id, last_completed_item_id=doc.last_completed_item_id,
                  phase=doc.phase, last_completed_action=doc.last_completed_action, next_action=doc.next_action)


def revision_of(item: Item, data: WorkItemData) -> ItemRevision | None:
    changed: dict[str, Any] = {}
    for field in REVISABLE:
        new = getattr(data, field)
        old = getattr(item, field)
        if (list(new) if isinstance(new, tuple) else new) != old:
            changed[field] = new
    return ItemRevision(item_id=item.id, **changed) if changed else None


def item_events(env: dict[str, Any], ws_id: str, added: list[WorkItemData], revisions: list[ItemRevision],
                 changes: list[StatusChange]) -> list[Event]:
    """The item events of a checkpoint, ordered so that every prefix of them keeps the workstream's invariants
    whenever the whole does (a batch lands file by file: a kill leaves a prefix). New items come first (what
    later events name exists), then the status changes out of BLOCKED (an item stops being blocked before a
    revision empties its blockedBy), the revisions (a blocker is named before its item becomes BLOCKED), and
    the other status changes."""
    events: list[Event] = []
    for run in chunks(added):
        events.append(WorkItemAdded(**env, workstream_id=ws_id, items=tuple(run),
                                    message=f"workstream {ws_id}: {len(run)} work item(s) added"))
    unblocking = [change for change in changes if change.from_status == "BLOCKED"]
    events += _status_events(env, ws_id, unblocking)
    for revised in chunks(revisions):
        events.append(WorkItemRevised(**env, workstream_id=ws_id, revisions=tuple(revised),
                                      message=f"workstream {ws_id}: {len(revised)} work item(s) revised"))
    events += _status_events(env, ws_id, [change for change in changes if change.from_status != "BLOCKED"])
    return events


def _status_events(env: dict[str, Any], ws_id: str, changes: list[StatusChange]) -> list[Event]:
    events: list[Event] = []
    for changed in chunks(changes):
        text = ", ".join(f"{c.item_id} {c.from_status} -> {c.status}" for c in changed[:5])
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        events.append(WorkItemStatusChanged(**env, workstream_id=ws_id, changes=tuple(changed),
                                            message=f"workstream {ws_id}: {text}{more}"))
    return events


def started_events(env: dict[str, Any], doc: DocWorkstream) -> list[Event]:
    """A new workstream: started, its items, and (when the cursor names an item) the cursor once they exist, so a
    kill after the first event leaves no cursor naming an item that is not there."""
    repositories = tuple(RepositoryRole(repository=r.repository, role=r.role) for r in doc.repositories)
    cursor = cursor_of(doc.cursor)
    first = msgspec.structs.replace(cursor, current_item_id=None, last_completed_item_id=None)
    started: list[Event] = [WorkstreamStarted(
        **env, workstream_id=doc.id, title=doc.title, status=doc.status, objective=doc.objective,
        repositories=repositories, cursor=first, message=f"workstream {doc.id} started: {doc.title}")]
    started += item_events(env, doc.id, [item_data(item) for item in doc.items], [], [])
    if first != cursor:
        started.append(CursorMoved(**env, workstream_id=doc.id, cursor=cursor,
                                   message=f"workstream {doc.id}: next {cut(cursor.next_action, 200)}"))
    return started


def workstream_events(state: WorkstreamsState, env: dict[str, Any], doc: DocWorkstream) -> list[Event]:
    """The events that turn the known workstream into the document's (the invariants of a diff checked here)."""
    current = active(state)
    # A second unresolved workstream exists only because a sync merged two clones: a document for
    # it switches nothing, and is how the team ends the one it drops (the older is shown active).
    if current is not None and current.id != doc.id and doc.id not in active_ids(state):
        refuse(f"Active workstream {current.id} is {current.status}: terminate it (COMPLETED, CANCELLED or "
               f"SUPERSEDED) before switching to workstream {doc.id}")
    known = state.workstreams.get(doc.id)
    if known is None and doc.id in state.retired:
        refuse(f"Workstream {doc.id} is archived: it cannot change (start a new workstream id)")
    if known is None:
        return started_events(env, doc)
    if known.status in TERMINAL:
        refuse(f"Workstream {doc.id} is {known.status} and archived: it cannot change (start a new workstream id)")
    ids = {item.id for item in doc.items}
    missing = [item.id for item in unresolved(known) if item.id not in ids]
    if missing:
        refuse(f"Checkpoint would lose existing work items: {', '.join(missing)}")
    events: list[Event] = []
    repositories = tuple(RepositoryRole(repository=r.repository, role=r.role) for r in doc.repositories)
    header: dict[str, Any] = {}
    if doc.title != known.title:
        header["title"] = doc.title
    if doc.objective != known.objective:
        header["objective"] = doc.objective
    if list(repositories) != known.repositories:
        header["repositories"] = repositories
    if header:
        events.append(WorkstreamRevised(**env, workstream_id=doc.id, **header, message=f"workstream {doc.id} revised"))
    added, revisions, changes = [], [], []
    for entry in doc.items:
        data = item_data(entry)
        item = known.items.get(entry.id)
        if item is None:
            added.append(data)
            continue
        revision = revision_of(item, data)
        if revision is not None:
            revisions.append(revision)
        if data.status != item.status:
            changes.append(transition(doc.id, item, data.status, False))
    events += item_events(env, doc.id, added, revisions, changes)
    cursor = cursor_of(doc.cursor)
    if cursor != known.cursor:
        events.append(CursorMoved(**env, workstream_id=doc.id, cursor=cursor,
                                  message=f"workstream {doc.id}: next {cut(cursor.next_action, 200)}"))
    if doc.status != known.status:
        if not workstream_transition_ok(known.status, doc.status):
            refuse(f"Invalid workstream status transition for {doc.id}: {known.status} -> {doc.status}")
        events.append(WorkstreamStatusChanged(**env, workstream_id=doc.id, from_status=known.status,  # type: ignore[arg-type]
                                              status=doc.status, message=f"workstream {doc.id}: {known.status} -> "
                                              f"{doc.status}"))
    return events


def evidence_events(state: WorkstreamsState, env: dict[str, Any], doc: Checkpoint, ws_id: str | None) -> list[Event]:
    events: list[Event] = []
    for kind, texts, kept in ((DecisionRecorded, doc.decisions, state.decisions),
                              (FindingConfirmed, doc.confirmed_findings, state.findings),
                              (ApproachRejected, doc.rejected_approaches, state.rejected)):
        known = {entry.text for entry in kept}
        new = tuple(text for text in texts if text not in known)
        for run in chunks(new) if new else ():  # as items are: a long list takes several events, each within bounds
            events.append(kind(**env, workstream_id=ws_id, texts=tuple(run), message=cut(run[0], 300)))
    return events
