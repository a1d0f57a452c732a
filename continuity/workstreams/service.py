"""The workstream commands' API, shared by the CLI and the MCP tools: load the state, decide, record."""

from __future__ import annotations

from collections.abc import Callable

from continuity.core.identity import Identity
from continuity.core.store import Store
from events.base import Event
from events.errors import ContinuityError
from events.sealing import StoredEvent
from projections.workstreams import MODEL, WorkstreamsState

NAMES = ("workstreams",)


def workstreams_state(store: Store, project: str, *,
                      as_of: str | None = None) -> tuple[WorkstreamsState, list[str], str | None]:
    """The project's `workstreams` state (caught up and its files written, or as of a point), warnings, last event."""
    from continuity.readside.query import current_view

    view = current_view(store, NAMES, as_of=as_of)
    state = view.models.state("workstreams")
    return MODEL.project(state, project), view.warnings, state.last_name


def record(store: Store, identity: Identity, decide: Callable[[WorkstreamsState], list[Event]], *,
           redact: bool = False) -> tuple[list[StoredEvent], list[str]]:
    """Decide from the current state and append, deciding again under the lock (continuity/readside/decided.py)."""
    from continuity.readside.decided import record_decided

    return record_decided(store, MODEL, identity.project, lambda store, project: workstreams_state(store, project),
                          decide, redact=redact, what="workstream")


def after_write(store: Store) -> list[str]:
    """Catch the model up after a write and write its documents; warnings only, never raises."""
    from continuity.readside.writers import refresh

    try:
        return refresh(store, NAMES).warnings
    except (OSError, ContinuityError) as error:  # a durable write stands whatever the read side does
        return [f"the events are saved, but workstream documents were not updated: {error}"]
