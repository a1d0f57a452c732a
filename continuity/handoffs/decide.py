"""Decisions of handoffs: a request and the handoffs state become one event, or a refusal."""

from __future__ import annotations

from typing import Any

import msgspec

from continuity.core.errors import HandoffNotFound, InvalidTransition, UsageError
from continuity.core.identity import Identity
from continuity.core.paths import STORE_REL
from events.base import Event, Refs
from events.handoff import HandoffAccepted, HandoffClosed, HandoffCreated, HandoffRejected
from projections.handoffs import ALLOWED, HandoffsState, closers, may_act

#: Where handoff documents live, relative to the project root (the resume bundle reads their `state`).
DOCS = f"{STORE_REL}/handoffs"


def doc_relpath(handoff_id: str) -> str:
    """A handoff's document, relative to the project root."""
    return f"{DOCS}/{handoff_id}.json"


class HandoffCreate(msgspec.Struct, frozen=True, kw_only=True):
    """What `handoff create` was asked."""

    to_agent: str | None = None
    to_host: str | None = None
    for_task: str | None = None
    message: str
    artifacts: tuple[str, ...] = ()


def decide_create(state: HandoffsState, identity: Identity, request: HandoffCreate, handoff_id: str) -> list[Event]:
    """A new pending handoff to an agent or a host (exactly one), with a message."""
    if (request.to_agent is None) == (request.to_host is None):
        raise UsageError("handoff create: give exactly one of --to AGENT or --to-host HOST")
    if not request.message.strip():
        raise UsageError("handoff create: --message must not be empty")
    return [HandoffCreated(**identity.fields(), handoff_id=handoff_id, to_agent=request.to_agent,
                           to_host=request.to_host, for_task=request.for_task, artifacts=request.artifacts,
                           message=request.message, refs=Refs(handoffs=(doc_relpath(handoff_id),)))]


_EVENTS: dict[str, Any] = {"accepted": HandoffAccepted, "rejected": HandoffRejected, "closed": HandoffClosed}
_VERBS = {"accepted": "accept", "rejected": "reject", "closed": "close"}


def decide_move(state: HandoffsState, identity: Identity, handoff_id: str, action: str, note: str) -> list[Event]:
    """accept or reject (the addressee, while pending), close (either side, while pending or accepted)."""
    verb = _VERBS[action]
    handoff = state.get(handoff_id)
    if handoff is None:
        raise HandoffNotFound(f"handoff {verb}: no handoff {handoff_id}")
    if action not in ALLOWED.get(handoff.state, set()):
        raise InvalidTransition(f"handoff {verb}: {handoff_id} is {handoff.state}")
    actor = identity.agent_id
    unnamed = "an unnamed agent (give --agent or set CONTINUITY_AGENT)"
    # an actor who does not say who it is is no agent: it is refused, never waved through (the fold holds the same
    # rule, for a move another replica decided before it saw this one's)
    if not may_act(handoff, action, actor):
        if action in ("accepted", "rejected"):
            to = handoff.to_agent or f"host {handoff.to_host or '-'} (any agent may take it)"
            raise InvalidTransition(f"handoff {verb}: {handoff_id} is addressed to {to}, not {actor or unnamed}")
        who = " or ".join(closers(handoff)) or "a named agent"
        raise InvalidTransition(f"handoff close: only {who} may close {handoff_id}, not {actor or unnamed}")
    return [_EVENTS[action](**identity.fields(), handoff_id=handoff_id, note_text=note,
                            message=f"handoff {handoff_id} {action}")]
