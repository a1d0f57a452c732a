"""The handoff commands' API, shared by the CLI and the MCP tools: decide under the lock, record, catch up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from continuity.core.identity import Identity
from continuity.core.store import Store
from events.base import Event
from events.sealing import StoredEvent
from projections.handoffs import MODEL, HandoffsState

NAMES = ("handoffs",)


def record(store: Store, identity: Identity, decide: Callable[[HandoffsState], list[Event]],
           ) -> tuple[StoredEvent, HandoffsState | None, list[str]]:
    """Decide from the current handoffs and append under the lock; then the documents catch up."""
    from continuity.readside.decided import record_decided, refreshed
    from continuity.team.service import caught_up

    stored, warnings = record_decided(store, MODEL, identity.project, refreshed(MODEL, NAMES), decide, what="handoff")
    states, more = caught_up(store, identity.project, NAMES)
    found: Any = states.get("handoffs")
    return stored[0], found, warnings + more
