"""Tracked workstreams (seed 002), per project: workstreams and items, the cursor, evidence, the ledger.

The writers check every invariant before an event is written (continuity/workstreams/
decide.py); the fold still tolerates what only a merge of two clones can produce. A
conflict that is a fact of the history (a status changed from a status it no longer had,
a validation id reused with other content, a workstream or item added twice with other
content) is recorded in `problems` as a `Problem` (kind, workstream, ids) and stays open
until an explicit act resolves it: a later checkpoint of its workstream that was decided
while it was open (`context.checkpointed` names it in `acknowledged`), or
`workstream.problems_resolved` (`continuity work resolve`); both are kept with the
problem, as history. A broken state (two active workstreams, work left unresolved in an
ended one, a dependency cycle) is not recorded: the views compute it from the state
(continuity/workstreams/documents.py), so it holds exactly while the state is broken.
First wins for ids added twice (a start or an item two clones recorded alike is no
conflict). Bounds: ARCHIVE_LIMIT terminal workstreams (the oldest forgotten past it;
their ids are kept, up to RETIRED_LIMIT, so none starts again),
EVIDENCE_LIMIT decisions, findings and rejected approaches each, VALIDATIONS_LIMIT ledger
entries, PROBLEMS_LIMIT problems.
"""

from __future__ import annotations

from typing import Any

import msgspec

from events.workstream import (
    TERMINAL,
    ApproachRejected,
    ContextCheckpointed,
    Cursor,
    CursorMoved,
    DecisionRecorded,
    FindingConfirmed,
    RepositoryRole,
    ValidationEntry,
    ValidationRecorded,
    WorkItemAdded,
    WorkItemData,
    WorkItemRevised,
    WorkItemStatusChanged,
    WorkProblemsResolved,
    WorkstreamRevised,
    WorkstreamStarted,
    WorkstreamStatusChanged,
)
from projections.common import append_bounded
from projections.readmodel import ReadModel

ARCHIVE_LIMIT = 200
EVIDENCE_LIMIT = 200
VALIDATIONS_LIMIT = 5000
#: The most ledger ids kept by digest alone past VALIDATIONS_LIMIT (about 80 bytes each in the saved model).
RECORDED_LIMIT = 200_000
PROBLEMS_LIMIT = 100
RETIRED_LIMIT = 20000

#: Allowed workstream status changes (terminal statuses allow none).
WORKSTREAM_TRANSITIONS: dict[str, frozenset[str]] = {
    "PROPOSED": frozenset({"IN_PROGRESS", "BLOCKED", *TERMINAL}),
    "IN_PROGRESS": frozenset({"BLOCKED", *TERMINAL}),
    "BLOCKED": frozenset({"IN_PROGRESS", *TERMINAL}),
}
UNRESOLVED_ITEM = frozenset({"PENDING", "IN_PROGRESS", "BLOCKED"})


def item_transition_ok(old: str, new: str, reopen: bool) -> bool:
    """Whether an item may go from `old` to `new`: freely among unresolved ones, out of terminal only by reopen."""
    if old == new:
        return True
    if old in TERMINAL:
        return reopen and new in UNRESOLVED_ITEM
    return not reopen


def workstream_transition_ok(old: str, new: str) -> bool:
    """Whether a workstream may go from `old` to `new`."""
    return old == new or new in WORKSTREAM_TRANSITIONS.get(old, frozenset())


class Item(msgspec.Struct, kw_only=True):
    """One work item as its events left it."""

    id: str
    title: str
    status: str
    priority: str
    scope: list[str] = msgspec.field(default_factory=list)
    acceptance_criteria: list[str] = msgspec.field(default_factory=list)
    depends_on: list[str] = msgspec.field(default_factory=list)
    blocked_by: list[str] = msgspec.field(default_factory=list)
    validation_requirements: list[str] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    added_at: str = ""
    updated_at: str = ""


class Workstream(msgspec.Struct, kw_only=True):
    """One workstream: header, cursor and items (in the order they were added)."""

    id: str
    title: str
    status: str
    objective: str
    repositories: list[RepositoryRole]
    cursor: Cursor
    items: dict[str, Item] = msgspec.field(default_factory=dict)
    started_at: str = ""
    updated_at: str = ""
    ended_at: str | None = None


class Evidence(msgspec.Struct, kw_only=True):
    """A decision, finding or rejected approach: its text, when, in which workstream."""

    text: str
    at: str
    event_id: str
    workstream_id: str | None = None


class Validation(msgspec.Struct, kw_only=True):
    """A ledger entry and what it is bound to: the HEAD and worktree fingerprint when it was recorded."""

    entry: ValidationEntry
    head: str | None
    fingerprint: str | None
    recorded_at: str
    event_id: str
    workstream_id: str | None = None


class CheckpointInfo(msgspec.Struct, kw_only=True):
    """The newest checkpoint document's own fields."""

    schema_version: int
    mode: str
    repository: str
    scope: str
    status: str
    objective: str
    next_action: str
    open_questions: list[str]
    validation_notes: list[str]
    workstream_id: str | None
    at: str
    event_id: str


class Resolution(msgspec.Struct, kw_only=True):
    """What resolved a recorded problem: `checkpoint` (of its workstream) or `resolve`; which event, who, when, why."""

    by: str
    event_id: str
    agent_id: str | None
    at: str
    reason: str


class Problem(msgspec.Struct, kw_only=True):
    """A conflict a merge recorded: its kind, workstream and ids, the event that made it, and what resolved it.

    Kinds: `validation_reused` (ids: the validation id), `started_twice`, `item_added_twice`
    (ids: the item), `stale_item_status` (ids: the item), `stale_workstream_status`.
    """

    id: str
    kind: str
    workstream_id: str | None
    ids: list[str]
    text: str
    event_id: str
    at: str
    resolved: Resolution | None = None


class WorkstreamsState(msgspec.Struct, kw_only=True):
    """Workstreams by id (unresolved and archived), the archive order, evidence, ledger, problems."""

    workstreams: dict[str, Workstream] = msgspec.field(default_factory=dict)
    archived: list[str] = msgspec.field(default_factory=list)
    checkpoint: CheckpointInfo | None = None
    decisions: list[Evidence] = msgspec.field(default_factory=list)
    findings: list[Evidence] = msgspec.field(default_factory=list)
    rejected: list[Evidence] = msgspec.field(default_factory=list)
    validations: dict[str, Validation] = msgspec.field(default_factory=dict)
    problems: list[Problem] = msgspec.field(default_factory=list)
    last_event_id: str | None = None
    #: Ids of archived workstreams forgotten past ARCHIVE_LIMIT: never started again (their files stay).
    retired: list[str] = msgspec.field(default_factory=list)
    #: Ledger ids whose entries aged out of `validations` (VALIDATIONS_LIMIT): id -> a digest of the entry, so an id
    #: stays immutable past the newest entries kept whole (seed 002: ledger ids are immutable), up to RECORDED_LIMIT.
    recorded: dict[str, int] = msgspec.field(default_factory=dict)


def active_ids(state: WorkstreamsState) -> list[str]:
    """Ids of the workstreams not yet terminal, oldest first (one, or none, unless a merge made more)."""
    return [ws.id for ws in state.workstreams.values() if ws.status not in TERMINAL]


def active(state: WorkstreamsState) -> Workstream | None:
    """The active workstream (the oldest unresolved one), or None."""
    ids = active_ids(state)
    return state.workstreams[ids[0]] if ids else None


def unresolved(ws: Workstream) -> list[Item]:
    """A workstream's items not yet terminal, in order."""
    return [item for item in ws.items.values() if item.status not in TERMINAL]


def problem_id(kind: str, workstream_id: str | None, ids: list[str], event_id: str) -> str:
    """A recorded problem's id: the same on every clone (it hashes what made it), short enough to type."""
    import hashlib  # only a merge's conflict needs it: a checkpoint's path imports no hashing

    key = "\0".join((kind, workstream_id or "", ",".join(ids), event_id))
    return "P-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def open_problems(state: WorkstreamsState) -> list[Problem]:
    """The recorded problems nothing resolved yet, oldest first."""
    return [problem for problem in state.problems if problem.resolved is None]


def _problem(state: WorkstreamsState, event: Any, kind: str, workstream_id: str | None, ids: list[str],
             text: str) -> None:
    """Record a conflict (once); past PROBLEMS_LIMIT the oldest resolved one goes first, else the oldest."""
    found = problem_id(kind, workstream_id, ids, event.event_id)
    if any(problem.id == found for problem in state.problems):
        return
    state.problems.append(Problem(id=found, kind=kind, workstream_id=workstream_id, ids=ids, text=text,
                                  event_id=event.event_id, at=event.created_at))
    while len(state.problems) > PROBLEMS_LIMIT:
        resolved = [index for index, problem in enumerate(state.problems) if problem.resolved is not None]
        del state.problems[resolved[0] if resolved else 0]


def _resolve(state: WorkstreamsState, ids: Any, resolution: Resolution) -> None:
    """Mark the named open problems resolved (an id unknown here, or already resolved, is left as it is)."""
    wanted = set(ids)
    for problem in state.problems:
        if problem.id in wanted and problem.resolved is None:
            problem.resolved = resolution


def _touch(state: WorkstreamsState, event: Any) -> None:
    state.last_event_id = event.event_id


def item_of(data: WorkItemData, at: str) -> Item:
    """A projection item from an event's item data."""
    return Item(id=data.id, title=data.title, status=data.status, priority=data.priority, scope=list(data.scope),
                acceptance_criteria=list(data.acceptance_criteria), depends_on=list(data.depends_on),
                blocked_by=list(data.blocked_by), validation_requirements=list(data.validation_requirements),
                notes=list(data.notes), added_at=at, updated_at=at)


def _settle(state: WorkstreamsState, ws: Workstream, at: str) -> None:
    """A workstream that became terminal goes to the archive (the oldest archived forgotten past the limit).

    One a merge left unresolved work in (reported while it is so) is forgotten only when every
    archived one has some: forgetting it would hide that work.
    """
    if ws.status in TERMINAL:
        ws.ended_at = ws.ended_at or at
        if ws.id not in state.archived:
            state.archived.append(ws.id)
        while len(state.archived) > ARCHIVE_LIMIT:
            settled = [index for index, ws_id in enumerate(state.archived)
                       if ws_id not in state.workstreams or not unresolved(state.workstreams[ws_id])]
            forgotten = state.archived.pop(settled[0] if settled else 0)
            state.workstreams.pop(forgotten, None)
            append_bounded(state.retired, forgotten, RETIRED_LIMIT)


def _same_start(ws: Workstream, event: WorkstreamStarted) -> bool:
    """Whether a start is the one the workstream already had (two clones recorded one document alike)."""
    return (ws.title, ws.status, ws.objective, ws.repositories, ws.cursor) == (
        event.title, event.status, event.objective, list(event.repositories), event.cursor)


def _same_item(item: Item, data: WorkItemData) -> bool:
    """Whether an item added again is the item as it stands (two clones added it alike)."""
    again = item_of(data, item.added_at)
    again.updated_at = item.updated_at
    return again == item


def on_started(state: WorkstreamsState, name: str, event: WorkstreamStarted) -> WorkstreamsState:
    """A new workstream (a second start of a known id is a problem, and ignored, unless it is the same start).

    A start while another workstream is active is no recorded problem: the views report two
    active workstreams for as long as both are (continuity/workstreams/documents.py).
    """
    _touch(state, event)
    known = state.workstreams.get(event.workstream_id)
    if known is not None and _same_start(known, event):
        return state  # nothing to choose between: not a conflict
    if known is not None or event.workstream_id in state.retired:
        _problem(state, event, "started_twice", event.workstream_id, [],
                 f"workstream {event.workstream_id} was started twice (event {event.event_id} ignored)")
        return state
    ws = Workstream(id=event.workstream_id, title=event.title, status=event.status, objective=event.objective,
                    repositories=list(event.repositories), cursor=event.cursor, started_at=event.created_at,
                    updated_at=event.created_at)
    state.workstreams[ws.id] = ws
    _settle(state, ws, event.created_at)
    return state


def _known(state: WorkstreamsState, event: Any) -> Workstream | None:
    _touch(state, event)
    ws = state.workstreams.get(event.workstream_id)
    if ws is not None:
        ws.updated_at = event.created_at
    return ws


def on_revised(state: WorkstreamsState, name: str, event: WorkstreamRevised) -> WorkstreamsState:
    """Title, objective or repositories changed."""
    ws = _known(state, event)
    if ws is not None:
        ws.title = event.title if event.title is not None else ws.title
        ws.objective = event.objective if event.objective is not None else ws.objective
        if event.repositories is not None:
            ws.repositories = list(event.repositories)
    return state


def on_status(state: WorkstreamsState, name: str, event: WorkstreamStatusChanged) -> WorkstreamsState:
    """The workstream's status changed; terminal moves it to the archive."""
    ws = _known(state, event)
    if ws is None:
        return state
    # a change to where it already is (two clones made the same one) is no conflict
    if ws.status != event.status and (ws.status != event.from_status
                                      or not workstream_transition_ok(ws.status, event.status)):
        _problem(state, event, "stale_workstream_status", ws.id, [],
                 f"workstream {ws.id}: {event.from_status} -> {event.status} recorded while it was "
                 f"{ws.status} (concurrent writers merged?)")
    if ws.status in TERMINAL:
        return state  # the archive never gives a workstream back
    ws.status = event.status
    _settle(state, ws, event.created_at)
    return state


def on_items_added(state: WorkstreamsState, name: str, event: WorkItemAdded) -> WorkstreamsState:
    """Items appended to a workstream (an id it already has is a problem, and the first one stays)."""
    ws = _known(state, event)
    if ws is None:
        return state
    for data in event.items:
        if data.id in ws.items:
            if not _same_item(ws.items[data.id], data):
                _problem(state, event, "item_added_twice", ws.id, [data.id],
                         f"work item {data.id} of {ws.id} was added twice (the first stays)")
            continue
        ws.items[data.id] = item_of(data, event.created_at)
    return state


def on_item_status(state: WorkstreamsState, name: str, event: WorkItemStatusChanged) -> WorkstreamsState:
    """Item statuses changed."""
    ws = _known(state, event)
    if ws is None:
        return state
    for change in event.changes:
        item = ws.items.get(change.item_id)
        if item is None:
            continue
        # a change to where it already is (two clones made the same one) is no conflict
        if item.status != change.status and (item.status != change.from_status
                                             or not item_transition_ok(item.status, change.status, change.reopen)):
            _problem(state, event, "stale_item_status", ws.id, [item.id],
                     f"work item {item.id} of {ws.id}: {change.from_status} -> {change.status} recorded "
                     f"while it was {item.status} (concurrent writers merged?)")
        item.status = change.status
        item.updated_at = event.created_at
    return state


_REVISED = ("title", "priority", "scope", "acceptance_criteria", "depends_on", "blocked_by",
            "validation_requirements", "notes")


def on_item_revised(state: WorkstreamsState, name: str, event: WorkItemRevised) -> WorkstreamsState:
    """Item fields other than status changed."""
    ws = _known(state, event)
    if ws is None:
        return state
    for revision in event.revisions:
        item = ws.items.get(revision.item_id)
        if item is None:
            continue
        for field in _REVISED:
            value = getattr(revision, field)
            if value is not None:
                setattr(item, field, list(value) if isinstance(value, tuple) else value)
        item.updated_at = event.created_at
    return state


def on_cursor(state: WorkstreamsState, name: str, event: CursorMoved) -> WorkstreamsState:
    """The cursor moved."""
    ws = _known(state, event)
    if ws is not None:
        ws.cursor = event.cursor
    return state


def on_checkpointed(state: WorkstreamsState, name: str, event: ContextCheckpointed) -> WorkstreamsState:
    """The newest checkpoint document's own fields."""
    _touch(state, event)
    state.checkpoint = CheckpointInfo(
        schema_version=event.schema_version, mode=event.mode, repository=event.repository, scope=event.scope,
        status=event.status, objective=event.objective, next_action=event.next_action,
        open_questions=list(event.open_questions), validation_notes=list(event.validation_notes),
        workstream_id=event.workstream_id, at=event.created_at, event_id=event.event_id)
    if event.acknowledged:
        _resolve(state, event.acknowledged, Resolution(
            by="checkpoint", event_id=event.event_id, agent_id=event.agent_id, at=event.created_at,
            reason=f"a checkpoint of workstream {event.workstream_id} restated it after the problem was shown"))
    return state


def on_problems_resolved(state: WorkstreamsState, name: str, event: WorkProblemsResolved) -> WorkstreamsState:
    """Recorded problems resolved by `continuity work resolve`: who, when and why stay with each."""
    _touch(state, event)
    _resolve(state, event.problem_ids, Resolution(by="resolve", event_id=event.event_id, agent_id=event.agent_id,
                                                  at=event.created_at, reason=event.reason))
    return state


def _evidence(into: list[Evidence], event: Any) -> None:
    known = {entry.text for entry in into}
    for text in event.texts:
        if text not in known:
            append_bounded(into, Evidence(text=text, at=event.created_at, event_id=event.event_id,
                                          workstream_id=event.workstream_id), EVIDENCE_LIMIT)


def on_decision(state: WorkstreamsState, name: str, event: DecisionRecorded) -> WorkstreamsState:
    """Decisions recorded (a text already kept is not repeated)."""
    _touch(state, event)
    _evidence(state.decisions, event)
    return state


def on_finding(state: WorkstreamsState, name: str, event: FindingConfirmed) -> WorkstreamsState:
    """Findings confirmed."""
    _touch(state, event)
    _evidence(state.findings, event)
    return state


def on_rejected(state: WorkstreamsState, name: str, event: ApproachRejected) -> WorkstreamsState:
    """Approaches rejected."""
    _touch(state, event)
    _evidence(state.rejected, event)
    return state


def entry_digest(entry: ValidationEntry) -> int:
    """A digest of a ledger entry's whole content (64 bits), kept for an id once its entry ages out."""
    import hashlib

    return int.from_bytes(hashlib.blake2b(msgspec.msgpack.encode(entry), digest_size=8).digest(), "big")


def ledger_has(state: WorkstreamsState, entry: ValidationEntry) -> bool | None:
    """Whether the ledger holds `entry`'s id: None when never recorded, True with this very content, False with
    other content (ids are immutable: the newest entries are compared whole, older ones by their digest)."""
    known = state.validations.get(entry.id)
    if known is not None:
        return known.entry == entry
    digest = state.recorded.get(entry.id)
    return None if digest is None else digest == entry_digest(entry)


def on_validation(state: WorkstreamsState, name: str, event: ValidationRecorded) -> WorkstreamsState:
    """Ledger entries appended; an id seen before keeps its first entry (other content is a problem)."""
    _touch(state, event)
    for entry in event.entries:
        held = ledger_has(state, entry)
        if held is not None:
            if not held:
                _problem(state, event, "validation_reused", event.workstream_id, [entry.id],
                         f"validation id {entry.id} was recorded twice with different content "
                         "(the first stays; concurrent writers merged?)")
            continue
        state.validations[entry.id] = Validation(entry=entry, head=event.head, fingerprint=event.fingerprint,
                                                 recorded_at=event.created_at, event_id=event.event_id,
                                                 workstream_id=event.workstream_id)
        while len(state.validations) > VALIDATIONS_LIMIT:
            oldest = state.validations.pop(next(iter(state.validations)))
            state.recorded[oldest.entry.id] = entry_digest(oldest.entry)
            while len(state.recorded) > RECORDED_LIMIT:
                del state.recorded[next(iter(state.recorded))]
    return state


MODEL = ReadModel(
    "workstreams", format=6, state=WorkstreamsState, initial=WorkstreamsState,
    folds={WorkstreamStarted: on_started, WorkstreamRevised: on_revised, WorkstreamStatusChanged: on_status,
           WorkItemAdded: on_items_added, WorkItemStatusChanged: on_item_status, WorkItemRevised: on_item_revised,
           CursorMoved: on_cursor, ContextCheckpointed: on_checkpointed, DecisionRecorded: on_decision,
           FindingConfirmed: on_finding, ApproachRejected: on_rejected, ValidationRecorded: on_validation,
           WorkProblemsResolved: on_problems_resolved},
    bounds={"ARCHIVE_LIMIT": ARCHIVE_LIMIT, "EVIDENCE_LIMIT": EVIDENCE_LIMIT,
            "VALIDATIONS_LIMIT": VALIDATIONS_LIMIT, "RECORDED_LIMIT": RECORDED_LIMIT, "PROBLEMS_LIMIT": PROBLEMS_LIMIT,
            "RETIRED_LIMIT": RETIRED_LIMIT},
)
