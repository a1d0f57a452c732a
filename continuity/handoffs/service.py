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


def create(store: Store, identity: Identity, request: Any) -> dict[str, Any]:
    """A new pending handoff (`request` a HandoffCreate); its document appears under handoffs/."""
    import os

    from continuity.handoffs.decide import decide_create, doc_relpath
    from continuity.team.decide import checked_name

    for value, kind in ((request.to_agent, "agent"), (request.to_host, "host"), (request.for_task, "task")):
        if value is not None:
            checked_name(value, kind, "handoff create")
    handoff_id = f"HO-{os.urandom(5).hex()}"
    stored, _, warnings = record(store, identity, lambda state: decide_create(state, identity, request, handoff_id))
    return {"ok": True, "action": "handoff create", "handoff_id": handoff_id, "event_id": stored.event_id,
            "path": doc_relpath(handoff_id), "warnings": warnings}


MOVES = {"accept": "accepted", "reject": "rejected", "close": "closed"}


def move(store: Store, identity: Identity, handoff_id: str, verb: str, note: str) -> dict[str, Any]:
    """accept, reject or close a handoff, decided under the lock."""
    from continuity.handoffs.decide import decide_move
    from continuity.team.decide import checked_name

    handoff_id = checked_name(handoff_id, "handoff", f"handoff {verb}")
    action = MOVES[verb]
    stored, _, warnings = record(store, identity, lambda state: decide_move(state, identity, handoff_id, action, note))
    return {"ok": True, "action": f"handoff {verb}", "handoff_id": handoff_id, "state": action,
            "event_id": stored.event_id, "warnings": warnings}


def chosen(state: HandoffsState, wanted_state: str | None, to_agent: str | None) -> list[Any]:
    """The handoffs in a state (default pending and accepted; `all`), to an agent when named, newest first."""
    everything = list(state.open.values()) + list(state.done.values())
    wanted = {"pending", "accepted"} if wanted_state is None else \
        {"pending", "accepted", "rejected", "closed"} if wanted_state == "all" else {wanted_state}
    return sorted((handoff for handoff in everything if handoff.state in wanted and
                   (to_agent is None or handoff.to_agent == to_agent)),
                  key=lambda handoff: (handoff.created_at, handoff.handoff_id), reverse=True)


def listing(store: Store, wanted_state: str | None, to_agent: str | None, as_of: str | None = None) -> dict[str, Any]:
    """`handoff list --json`: the documents of the handoffs chosen, and the read's warnings."""
    from continuity.handoffs.files import handoff_document
    from continuity.team.service import TeamRead

    read = TeamRead(store, NAMES, as_of)
    return {"handoffs": [handoff_document(handoff) for handoff in chosen(read.of("handoffs"), wanted_state, to_agent)],
            "warnings": read.warnings}
