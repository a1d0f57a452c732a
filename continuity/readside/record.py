"""Decide, then record, under the append lock: optimistic concurrency over one read model.

Decide from the caught-up model, then append with a precondition that runs under the
log's lock. If events landed since the state was read, they are folded into a copy and
the decision is taken again: an error (a version conflict, a lease held by another
agent) aborts with nothing written; a different decision is retried from a fresh
catch-up. Two writers can therefore never both act on the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from continuity.core.store import Store
from continuity.readside.catchup import Outcome
from events.base import Event
from events.log import Head
from events.sealing import StoredEvent
from projections.readmodel import ReadModel

RETRIES = 5


class _Moved(Exception):
    """The decision changed under the lock: take it again from a fresh catch-up."""


def record_decided(store: Store, project: str, model: ReadModel[Any], load: Callable[[Store], Outcome],
                   decide: Callable[[Any], list[Event]], *, redact: bool = False,
                   ) -> tuple[list[StoredEvent], list[str]]:
    """Decide from `model`'s state for `project` (caught up by `load`) and append, re-deciding under the lock."""
    log = store.open_log()
    copy = msgspec.msgpack.Decoder(model.state_type)
    encode = msgspec.msgpack.Encoder()
    for _ in range(RETRIES):
        outcome = load(store)
        whole = outcome.models.state(model.name)
        state, seen, warnings = model.project(whole, project), whole.last_name, outcome.warnings
        drafts = decide(state)

        def precondition(head: Head | None, state: Any = state, seen: str | None = seen,
                         drafts: list[Event] = drafts) -> None:
            if head is None or head.name == seen:
                return
            fresh = model.empty()
            fresh.projects[project] = copy.decode(encode.encode(state))
            for stored in log.read(after=seen, on_error=lambda name, error: None):
                model.apply(fresh, stored.name, stored.event)
            if decide(model.project(fresh, project)) != drafts:
                raise _Moved

        try:
            return log.append_many(drafts, redact=redact, precondition=precondition), warnings
        except _Moved:
            continue
    from events.errors import WriteFailed

    raise WriteFailed("event not written: the state kept changing while deciding; try again")
