"""What recall can find in an event: its searchable text, one pure function per event family.

The recall index (continuity/recall/) stores one row per event holding this text; the
envelope fields (kind, agent, host, time) are kept beside it for filters. Text only:
ids, hashes, paths other than the files an event touched, and lifecycle markers with
nothing to say (briefs served, heartbeats, acknowledgements) give no row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from events.archive import ArchiveCreated, HostSwitched
from events.base import Event
from events.context import ContextServed
from events.guard import might_hold_secret, redact_text
from events.handoff import HandoffAccepted, HandoffClosed, HandoffCreated, HandoffRejected
from events.session import SessionEnded
from events.task import RunCompleted, TaskCreated, TaskUpdated
from events.team import MessageSent, RoleCreated, SnapshotTaken
from events.workstream import (
    ApproachRejected,
    ContextCheckpointed,
    CursorMoved,
    DecisionRecorded,
    FindingConfirmed,
    ValidationRecorded,
    WorkItemAdded,
    WorkItemRevised,
    WorkstreamRevised,
    WorkstreamStarted,
)

#: The format of the index's rows: bump it when what is indexed changes (the index is rebuilt).
FORMAT = 4
#: The bytes FTS5's snippets mark a match with (continuity/recall/plain.py), and the control pictures every view
#: shows them as: text holding them is indexed with the pictures, so no text can forge a match.
SNIPPET_MARKS = (("\x02", "\u2402"), ("\x03", "\u2403"))

Texts = Callable[[Any], Iterable[str | None]]


def _envelope(event: Event) -> Iterable[str | None]:
    """Seed 004's texts: the message, the summary, commands run and files touched."""
    summary, refs = event.summary, event.refs
    yield event.message
    yield from summary.done
    yield summary.in_progress
    yield from summary.next
    yield from summary.blockers
    for command in refs.commands:
        yield command.command
        yield command.summary
    yield from refs.files
    note = event.note or {}
    goal = note.get("goal")
    yield goal if isinstance(goal, str) else None


def _archive(event: ArchiveCreated) -> Iterable[str | None]:
    state = event.state
    yield event.reason
    yield state.current_goal
    yield from state.done
    yield state.in_progress
    yield from state.next
    yield from state.blockers


def _cursor(cursor: Any) -> Iterable[str | None]:
    yield cursor.next_action
    yield cursor.last_completed_action
    yield cursor.phase


def _items(items: Iterable[Any]) -> Iterable[str | None]:
    for item in items:
        yield item.title
        for group in (item.scope, item.acceptance_criteria, item.validation_requirements, item.notes):
            yield from group or ()


#: Event class -> the texts it adds to the envelope's (the most specific class wins).
EXTRA: dict[type[Event], Texts] = {
    ArchiveCreated: _archive,
    HostSwitched: lambda e: (e.reason,),
    SessionEnded: lambda e: (e.reason,),
    TaskCreated: lambda e: (e.title, e.description, e.done_criteria),
    TaskUpdated: lambda e: (e.note_text, e.title, e.description, e.done_criteria),
    RunCompleted: lambda e: (e.output_summary,),
    SnapshotTaken: lambda e: (e.objective, *e.decisions, *e.next_actions, *e.open_questions, *e.artifacts),
    RoleCreated: lambda e: (e.description,),
    MessageSent: lambda e: (e.text,),
    HandoffCreated: lambda e: e.artifacts,
    HandoffAccepted: lambda e: (e.note_text,),
    HandoffRejected: lambda e: (e.note_text,),
    HandoffClosed: lambda e: (e.note_text,),
    WorkstreamStarted: lambda e: (e.title, e.objective, *_cursor(e.cursor)),
    WorkstreamRevised: lambda e: (e.title, e.objective),
    WorkItemAdded: lambda e: _items(e.items),
    WorkItemRevised: lambda e: _items(e.revisions),
    CursorMoved: lambda e: _cursor(e.cursor),
    ContextCheckpointed: lambda e: (e.scope, e.objective, e.next_action, *e.open_questions, *e.validation_notes),
    DecisionRecorded: lambda e: e.texts,
    FindingConfirmed: lambda e: e.texts,
    ApproachRejected: lambda e: e.texts,
    ValidationRecorded: lambda e: (text for entry in e.entries for text in (entry.summary, entry.command)),
}
#: Events never indexed: what a session was shown is a copy of other events' text.
SKIPPED: frozenset[type[Event]] = frozenset({ContextServed})


def text_of(event: Event) -> str:
    """The event's searchable text: its non-empty texts, each once, one per line ("" when it has none), with the
    snippets' match marks as their control pictures (SNIPPET_MARKS), and what looks like a secret redacted.

    Redacted here, not in the answers: an event another clone wrote (or one older than a guard rule) can hold a
    secret, and a snippet that starts inside it (FTS5 cuts by words) shows the token's body without the prefix
    its rule needs, which no redaction of the answer can find; nor is a secret searchable or kept in the index.
    """
    kind = type(event)
    if kind in SKIPPED:
        return ""
    extra = next((EXTRA[base] for base in kind.__mro__ if base in EXTRA), None)
    seen: dict[str, None] = {}
    for text in (*_envelope(event), *(extra(event) if extra else ())):
        if text and text.strip():
            seen.setdefault(text, None)
    body = "\n".join(seen)
    for mark, picture in SNIPPET_MARKS:
        if mark in body:
            body = body.replace(mark, picture)
    return redact_text(body)[0] if might_hold_secret(body) else body
