"""Handoffs and artifacts referenced by events: where they are, when last mentioned.

Whether a handoff is still pending, or what state an artifact is in, is read from the
files themselves by the view (a live fact), not stored here.
"""

import msgspec

from events.base import Event
from projections.common import touch_bounded, written_apart
from projections.readmodel import ReadModel

REFS_LIMIT = 50


class Mention(msgspec.Struct, kw_only=True):
    """The latest event that referred to a path."""

    path: str
    event_id: str
    created_at: str
    phase: str | None = None
    #: Its writer's clock, where the log's time had run ahead of it (projections.common.written_apart).
    written_at: str | msgspec.UnsetType = msgspec.UNSET


class RefsState(msgspec.Struct, kw_only=True):
    """Handoffs and artifacts, least recently mentioned first."""

    handoffs: dict[str, Mention] = msgspec.field(default_factory=dict)
    artifacts: dict[str, Mention] = msgspec.field(default_factory=dict)


def apply(state: RefsState, name: str, event: Event) -> RefsState:
    """Fold one event's handoff and artifact references."""
    for paths, mapping in ((event.refs.handoffs, state.handoffs), (event.refs.artifacts, state.artifacts)):
        for path in paths:
            mention = Mention(path=path, event_id=event.event_id, created_at=event.created_at, phase=event.phase,
                              written_at=written_apart(event))
            touch_bounded(mapping, path, mention, REFS_LIMIT)
    return state


MODEL = ReadModel("refs", format=3, state=RefsState, initial=RefsState, folds={Event: apply},
                  bounds={"REFS_LIMIT": REFS_LIMIT})
