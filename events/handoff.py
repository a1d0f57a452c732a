"""Handoff events: work passed from one agent (or host) to another, with its lifecycle.

A handoff is created `pending`, then accepted or rejected by its addressee, and closed
when done (or withdrawn while pending). The creating event names the handoff's document
in the envelope's `refs.handoffs`, so the resume bundle lists it like seed 004's files.
"""

from __future__ import annotations

from events.base import Event, Label, Name, Text, Texts


class HandoffCreated(Event, frozen=True, kw_only=True, tag="handoff.created"):
    """A handoff to an agent (`to_agent`) or to whoever works on a host (`to_host`); the message says what."""

    type: Label = "handoff"
    handoff_id: Name
    to_agent: Name | None = None
    to_host: Name | None = None
    for_task: Name | None = None
    artifacts: Texts = ()


class HandoffAccepted(Event, frozen=True, kw_only=True, tag="handoff.accepted"):
    """The addressee took the handoff on."""

    type: Label = "handoff"
    handoff_id: Name
    note_text: Text = ""


class HandoffRejected(Event, frozen=True, kw_only=True, tag="handoff.rejected"):
    """The addressee declined the handoff (the note says why)."""

    type: Label = "handoff"
    handoff_id: Name
    note_text: Text = ""


class HandoffClosed(Event, frozen=True, kw_only=True, tag="handoff.closed"):
    """The handoff is done (after acceptance) or withdrawn (while pending)."""

    type: Label = "handoff"
    handoff_id: Name
    note_text: Text = ""
