"""The team commands' API, shared by the CLI, the hooks and the MCP tools: load, decide, record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.readside.catchup import Outcome
from events.base import Event
from events.errors import ContinuityError
from events.sealing import StoredEvent
from projections import roles as roles_model
from projections.roles import RolesState


def refresh_roles(store: Store) -> Outcome:
    """Catch the `roles` model up (role documents written as it folds)."""
    from continuity.readside.writers import refresh

    return refresh(store, ("roles",))


def record_roles(store: Store, identity: Identity, decide: Callable[[RolesState], list[Event]],
                 ) -> tuple[list[StoredEvent], list[str]]:
    """Decide from the current roles and append, re-deciding under the append lock (continuity/readside/decided.py)."""
    from continuity.readside.decided import record_decided, refreshed

    return record_decided(store, roles_model.MODEL, identity.project, refreshed(roles_model.MODEL), decide,
                          what="role")


def caught_up(store: Store, project: str, names: tuple[str, ...]) -> tuple[dict[str, Any], list[str]]:
    """After a write: the named models caught up (documents written), for one project; never raises."""
    from continuity.readside.writers import refresh
    from projections.registry import REGISTRY

    try:
        outcome = refresh(store, names)
    except (OSError, ContinuityError) as error:  # a durable write stands whatever the read side does
        return {}, [f"projections not caught up ({error})"]
    states = {name: REGISTRY[name].project(outcome.models.state(name), project) for name in names}
    return states, outcome.warnings


def readable_roles(store: Store, project: str) -> tuple[RolesState | None, list[str]]:
    """The project's roles caught up, or None when they cannot be read whole (an unreadable event, an
    unsafe store, a failing disk): then which roles an agent holds is unknown, not empty."""
    try:
        outcome = refresh_roles(store)
    except (OSError, ContinuityError) as error:
        return None, [f"role state not read ({error})"]
    if any(line.startswith("skipped ") for line in outcome.warnings):
        return None, outcome.warnings
    return roles_model.MODEL.project(outcome.models.state("roles"), project), outcome.warnings


class TeamRead:
    """What a team read needs: the loaded models for the project, `now`, and warnings."""

    def __init__(self, store: Store, names: tuple[str, ...], as_of: str | None = None) -> None:
        from continuity.core.store import now_us  # looked up when called: one clock, replaceable in tests
        from continuity.readside.query import current_view

        self.project, warnings = store.reading_project()
        self.view = current_view(store, names, as_of=as_of)
        self.warnings: list[str] = warnings + self.view.warnings
        self.now_us = now_us() if as_of is None else as_of_us(as_of)

    def of(self, name: str) -> Any:
        """One loaded model's state for the project."""
        return self.view.project(self.project).of(name)


def as_of_us(point: str) -> int:
    """`now` for an audit replay: the point's own time (an event id carries its stamp)."""
    from events import clock

    if point.startswith("RCE-"):
        return clock.parse_stamp(point[4:26])
    return clock.parse_iso(point)
