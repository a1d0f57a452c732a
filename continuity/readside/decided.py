"""Recording a decision optimistically: decide from a caught-up read model, check again under the lock.

Decide from the model's state, then append with a precondition that runs under the log's
lock. If events landed since the state was read, they are folded into a copy and the
decision is taken again: an error (a version conflict, a transition or invariant no longer
holding) aborts with nothing written; a different decision is retried from a fresh catch-up.
Events a sync landed meanwhile may sort before the state's last event, where reading on from
it misses them: a landing changes a token (`events.durable.mark_landed`), and a decision that
sees it changed under the lock is taken again from a fresh catch-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from continuity.core.store import Store
from events.base import Event
from events.durable import landed_mark
from events.errors import WriteFailed
from events.log import Head
from events.sealing import StoredEvent
from projections.readmodel import ReadModel

S = TypeVar("S")
#: (store, project) -> (the project's state, warnings, the last event folded into it)
Load = Callable[[Store, str], tuple[Any, list[str], str | None]]
RETRIES = 5


class _Moved(Exception):
    """The decision changed under the lock: take it again from a fresh catch-up."""


def record_decided(store: Store, model: ReadModel[S], project: str, load: Load,
                   decide: Callable[[S], list[Event]], *, redact: bool = False,
                   what: str = "state") -> tuple[list[StoredEvent], list[str]]:
    """Decide from the current state and append, re-deciding under the lock (see the module doc)."""
    log = store.open_log()
    for _ in range(RETRIES):
        landed = landed_mark(store.local_dir)  # before the catch-up: a sync landing after it changes the token
        state, warnings, seen = load(store, project)
        drafts = decide(state)

        def precondition(head: Head | None, state: Any = state, seen: str | None = seen,
                         drafts: list[Event] = drafts, landed: bytes | None = landed) -> None:
            if landed_mark(store.local_dir) != landed:
                # A sync landed events since the catch-up: some may sort before `seen`, where reading on from it
                # would not find them (another clone's claim of the same task). Decide again from a fresh catch-up.
                raise _Moved
            if head is None or head.name == seen:
                return
            fresh = model.empty()
            fresh.projects[project] = _copy(model, state)
            for stored in log.read(after=seen, on_error=lambda name, error: None):
                model.apply(fresh, stored.name, stored.event)
            if decide(model.project(fresh, project)) != drafts:
                raise _Moved

        try:
            return log.append_many(drafts, redact=redact, precondition=precondition), warnings
        except _Moved:
            continue
    raise WriteFailed(f"event not written: the {what} kept changing while deciding; try again")


def _copy(model: ReadModel[S], state: S) -> S:
    """A deep copy of a project's state: only when another writer got in first (rare), so the
    decoder is built then, not on every write."""
    copy: S = msgspec.msgpack.Decoder(model.state_type).decode(msgspec.msgpack.encode(state))
    return copy


def refreshed(model: ReadModel[Any], names: tuple[str, ...] | None = None) -> Load:
    """A `Load` that catches up the named models (`model` alone by default, documents written) and reads `model`."""

    def load(store: Store, project: str) -> tuple[Any, list[str], str | None]:
        from continuity.readside.writers import refresh

        outcome = refresh(store, names or (model.name,))
        whole = outcome.models.state(model.name)
        return model.project(whole, project), outcome.warnings, whole.last_name

    return load


class OutOfTime(WriteFailed):
    """The state a decision restates was not caught up by its deadline (a hook the harness kills): nothing
    decided, nothing written (a state days old would restate old work as the latest)."""


def viewed(name: str, deadline: float | None = None) -> Load:
    """A `Load` of one model as every command reads it (`current_view`: caught up, documents written; read in
    memory where the saved models cannot be used), for a decision that restates it: a read that stopped short
    refuses (OutOfTime when `deadline` passed; WriteFailed naming the day folder it could not read), since what
    it restates would leave out what it could not read."""

    def load(store: Store, project: str) -> tuple[Any, list[str], str | None]:
        from continuity.readside.query import current_view
        from projections.registry import REGISTRY

        view = current_view(store, (name,), deadline=deadline)
        if view.out_of_time:
            raise OutOfTime(view.stopped or "out of time")
        if view.stopped is not None:
            raise WriteFailed(f"not written: {view.stopped}; what it would restate is not whole")
        whole = view.models.state(name)
        return REGISTRY[name].project(whole, project), view.warnings, whole.last_name

    return load
