"""Handoff documents (`.agent/runtime-continuity/handoffs/<id>.json`), written as the model folds."""

from __future__ import annotations

import os
from typing import Any

from continuity.core.fsio import pretty_json, reason_of, write_if_changed
from continuity.core.store import Store
from events.base import Event
from events.errors import ContinuityError
from projections.handoffs import Handoff, HandoffsState
from projections.readmodel import Projects

SCHEMA = "continuity.handoff.v1"


def handoff_document(handoff: Handoff) -> dict[str, Any]:
    """The document: `state` first after the ids (seed 004's brief reads `status` or `state`)."""
    return {
        "schema": SCHEMA, "handoff_id": handoff.handoff_id, "state": handoff.state,
        "from": {"agent": handoff.from_agent, "host": handoff.from_host, "session": handoff.from_session},
        "to": {"agent": handoff.to_agent, "host": handoff.to_host}, "task": handoff.for_task,
        "message": handoff.message, "artifacts": list(handoff.artifacts), "created_at": handoff.created_at,
        "updated_at": handoff.updated_at, "event_id": handoff.event_id,
        "history": [{"at": note.at, "agent": note.agent, "action": note.action, "note": note.note}
                    for note in handoff.history],
    }


class HandoffWriter:
    """Writes a handoff's document each time one of its events is folded (fail open: warnings)."""

    def __init__(self, store: Store, folder: str | None = None) -> None:
        from continuity.team.files import own_project

        self.folder = folder or store.path
        self.project = own_project(store)  # as the team documents: the store's own project's handoffs
        self.warnings: list[str] = []

    def __call__(self, state: Projects[HandoffsState], name: str, event: Event) -> None:
        if not event.kind.startswith("handoff.") or (self.project is not None and event.project != self.project):
            return
        handoff = state.projects[event.project].get(getattr(event, "handoff_id", ""))
        if handoff is None:
            return
        try:
            write_if_changed(os.path.join(self.folder, "handoffs", f"{handoff.handoff_id}.json"),
                             pretty_json(handoff_document(handoff)), within=self.folder)
        except (OSError, ContinuityError) as error:
            message = f"handoff documents not written: {reason_of(error, self.folder)}"
            if message not in self.warnings:
                self.warnings.append(message)
