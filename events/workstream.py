"""Tracked workstreams (seed 002): a workstream, its work items, its cursor, and the evidence around it.

A checkpoint document (or a granular command) becomes the events that describe the
change. Item events carry lists, so a checkpoint of 500 items is a handful of events,
not 500; a list too large for one event is split over several (continuity/workstreams/diff.py).
Every event names its workstream in `workstream_id`; the evidence events (decisions,
findings, rejected approaches) belong to the project and name the active workstream if any.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from events.base import END, Event, Label, Text

#: A workstream, work item or validation id (seed 002): 1-128 characters.
WorkId = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*" + END)]
_NO_CONTROL = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
#: A non-empty entry of a string list (scope, criteria, notes, decisions, ...).
Entry = Annotated[str, msgspec.Meta(min_length=1, max_length=4000, pattern=_NO_CONTROL)]
Entries = Annotated[tuple[Entry, ...], msgspec.Meta(max_length=256)]
Ids = Annotated[tuple[WorkId, ...], msgspec.Meta(max_length=256)]
#: A title: one line, not empty.
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=500,
                                    pattern=r"^[^\x00-\x1f\x7f]*\S[^\x00-\x1f\x7f]*" + END)]
#: A next action: never empty, short enough to show whole in a resume brief.
NextAction = Annotated[str, msgspec.Meta(min_length=1, max_length=1000,
                                         pattern=r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*\S[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$")]
Short = Annotated[str, msgspec.Meta(max_length=1000, pattern=_NO_CONTROL)]

ItemStatus = Literal["PENDING", "IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED", "SUPERSEDED"]
WorkstreamStatus = Literal["PROPOSED", "IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED", "SUPERSEDED"]
CheckpointStatus = Literal["PROPOSED", "IN_PROGRESS", "IMPLEMENTED", "VALIDATED", "APPROVED", "MERGED",
                           "DEPLOYED", "SUPERSEDED", "STALE", "BLOCKED", "UNKNOWN"]
Priority = Literal["CRITICAL", "HIGH", "MEDIUM", "LOW"]
ValidationResult = Literal["PASS", "FAIL", "INCONCLUSIVE", "SKIPPED"]

ITEM_STATUSES: tuple[str, ...] = ("PENDING", "IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED", "SUPERSEDED")
WORKSTREAM_STATUSES: tuple[str, ...] = ("PROPOSED", "IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED",
                                        "SUPERSEDED")
PRIORITIES: tuple[str, ...] = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
#: Item and workstream statuses that end the work: terminal items are resolved.
TERMINAL: frozenset[str] = frozenset({"COMPLETED", "CANCELLED", "SUPERSEDED"})


#: Work items a workstream holds at most (a checkpoint document lists every one of them).
MAX_ITEMS = 5000

class WorkItemData(msgspec.Struct, frozen=True, kw_only=True):
    """One work item as a checkpoint states it (seed 002's WorkItem, snake_case)."""

    id: WorkId
    title: Title
    status: ItemStatus = "PENDING"
    priority: Priority = "MEDIUM"
    scope: Entries = ()
    acceptance_criteria: Entries = ()
    depends_on: Ids = ()
    blocked_by: Ids = ()
    validation_requirements: Entries = ()
    notes: Entries = ()


class RepositoryRole(msgspec.Struct, frozen=True, kw_only=True):
    """A repository taking part in a workstream, and its role there."""

    repository: WorkId
    role: Label


class Cursor(msgspec.Struct, frozen=True, kw_only=True):
    """Where the work stands: the current item, the last completed one and action, the phase, the next action."""

    current_item_id: WorkId | None = None
    last_completed_item_id: WorkId | None = None
    phase: Short | None = None
    last_completed_action: Short | None = None
    next_action: NextAction


class StatusChange(msgspec.Struct, frozen=True, kw_only=True):
    """One item's status change; `reopen` marks the explicit way out of a terminal status."""

    item_id: WorkId
    from_status: ItemStatus
    status: ItemStatus
    reopen: bool = False


class ItemRevision(msgspec.Struct, frozen=True, kw_only=True):
    """One item's changed fields other than its status (None: unchanged)."""

    item_id: WorkId
    title: Title | None = None
    priority: Priority | None = None
    scope: Entries | None = None
    acceptance_criteria: Entries | None = None
    depends_on: Ids | None = None
    blocked_by: Ids | None = None
    validation_requirements: Entries | None = None
    notes: Entries | None = None


class ValidationEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One immutable validation ledger entry (seed 002): what was actually run, and its result."""

    id: WorkId
    kind: Label
    result: ValidationResult
    repository: WorkId
    scope: Short
    summary: Text
    timestamp: Short
    command: Text | None = None
    evidence_refs: Entries = ()


class WorkstreamStarted(Event, frozen=True, kw_only=True, tag="workstream.started"):
    """A workstream began (it becomes the active one); its items follow in `work_item.added`."""

    type: Label = "workstream"
    workstream_id: WorkId
    title: Title
    status: WorkstreamStatus = "IN_PROGRESS"
    objective: Text = ""
    repositories: Annotated[tuple[RepositoryRole, ...], msgspec.Meta(min_length=1, max_length=64)]
    cursor: Cursor


class WorkstreamRevised(Event, frozen=True, kw_only=True, tag="workstream.revised"):
    """A workstream's title, objective or repositories changed (None: unchanged)."""

    type: Label = "workstream"
    workstream_id: WorkId
    title: Title | None = None
    objective: Text | None = None
    repositories: Annotated[tuple[RepositoryRole, ...], msgspec.Meta(min_length=1, max_length=64)] | None = None


class WorkstreamStatusChanged(Event, frozen=True, kw_only=True, tag="workstream.status_changed"):
    """A workstream's status changed; a terminal status moves it to the archive."""

    type: Label = "workstream"
    workstream_id: WorkId
    from_status: WorkstreamStatus
    status: WorkstreamStatus


class WorkItemAdded(Event, frozen=True, kw_only=True, tag="work_item.added"):
    """Work items were added to a workstream, in this order."""

    type: Label = "workstream"
    workstream_id: WorkId
    items: Annotated[tuple[WorkItemData, ...], msgspec.Meta(min_length=1, max_length=MAX_ITEMS)]


class WorkItemStatusChanged(Event, frozen=True, kw_only=True, tag="work_item.status_changed"):
    """Work items' statuses changed (each from the status its writer saw)."""

    type: Label = "workstream"
    workstream_id: WorkId
    changes: Annotated[tuple[StatusChange, ...], msgspec.Meta(min_length=1, max_length=MAX_ITEMS)]


class WorkItemRevised(Event, frozen=True, kw_only=True, tag="work_item.revised"):
    """Work items' fields other than status changed."""

    type: Label = "workstream"
    workstream_id: WorkId
    revisions: Annotated[tuple[ItemRevision, ...], msgspec.Meta(min_length=1, max_length=MAX_ITEMS)]


class CursorMoved(Event, frozen=True, kw_only=True, tag="workstream.cursor_moved"):
    """The workstream's execution cursor moved: the whole new cursor."""

    type: Label = "workstream"
    workstream_id: WorkId
    cursor: Cursor


class ContextCheckpointed(Event, frozen=True, kw_only=True, tag="context.checkpointed"):
    """A checkpoint document's own fields (seed 002's top level): what the context says now.

    Open questions and validation notes are the document's current lists; decisions,
    findings and rejected approaches are evidence and have events of their own.
    """

    type: Label = "checkpoint"
    schema_version: Literal[1, 2] = 2
    mode: Literal["snapshot", "tracked"] = "tracked"
    repository: WorkId
    scope: Text = ""
    status: CheckpointStatus
    objective: Text = ""
    next_action: NextAction
    open_questions: Entries = ()
    validation_notes: Entries = ()
    workstream_id: WorkId | None = None
    #: The ids of the recorded merge problems of this workstream open when the checkpoint was decided:
    #: the document, the agent's full statement of the workstream, resolves them.
    acknowledged: Ids = ()


class DecisionRecorded(Event, frozen=True, kw_only=True, tag="decision.recorded"):
    """Decisions were recorded (evidence: kept when a later checkpoint leaves them out)."""

    type: Label = "decision"
    workstream_id: WorkId | None = None
    texts: Annotated[tuple[Entry, ...], msgspec.Meta(min_length=1, max_length=256)]


class FindingConfirmed(Event, frozen=True, kw_only=True, tag="finding.confirmed"):
    """Findings were confirmed (evidence: kept when a later checkpoint leaves them out)."""

    type: Label = "finding"
    workstream_id: WorkId | None = None
    texts: Annotated[tuple[Entry, ...], msgspec.Meta(min_length=1, max_length=256)]


class ApproachRejected(Event, frozen=True, kw_only=True, tag="approach.rejected"):
    """Approaches were rejected (evidence: kept when a later checkpoint leaves them out)."""

    type: Label = "rejected_approach"
    workstream_id: WorkId | None = None
    texts: Annotated[tuple[Entry, ...], msgspec.Meta(min_length=1, max_length=256)]


class ValidationRecorded(Event, frozen=True, kw_only=True, tag="validation.recorded"):
    """Validation ledger entries were appended; each id is immutable.

    `head` and `fingerprint` are the repository HEAD and worktree fingerprint the
    recording command observed (None when it could not: outside git, or no git).
    """

    type: Label = "validation"
    workstream_id: WorkId | None = None
    entries: Annotated[tuple[ValidationEntry, ...], msgspec.Meta(min_length=1, max_length=256)]
    head: Short | None = None
    fingerprint: Short | None = None


class WorkProblemsResolved(Event, frozen=True, kw_only=True, tag="workstream.problems_resolved"):
    """Problems a merge of clones recorded were resolved by an explicit act (`continuity work resolve`), and why."""

    type: Label = "workstream"
    workstream_id: WorkId | None = None
    problem_ids: Annotated[tuple[WorkId, ...], msgspec.Meta(min_length=1, max_length=256)]
    reason: Entry


#: Every workstream event type (events/catalog.py adds them to the union).
WORKSTREAM_EVENTS: tuple[type[Event], ...] = (
    WorkstreamStarted, WorkstreamRevised, WorkstreamStatusChanged, WorkItemAdded, WorkItemStatusChanged,
    WorkItemRevised, CursorMoved, ContextCheckpointed, DecisionRecorded, FindingConfirmed, ApproachRejected,
    ValidationRecorded, WorkProblemsResolved,
)
