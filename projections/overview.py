"""The overview of a project: how many events, when, the most recent ones, briefs served."""

import msgspec

from events.base import Event
from events.context import ContextServed
from events.names import parse_name
from projections.common import append_bounded, written_apart
from projections.readmodel import ReadModel

RECENT_LIMIT = 20
NOTABLE_LIMIT = 20
MESSAGE_CHARS = 300
#: Events a successor rarely needs one by one: turn markers, session markers, briefs served.
ROUTINE_KINDS = frozenset({"context.served", "session.started", "session.ended"})
ROUTINE_TYPES = frozenset({"turn_start", "turn_end", "subagent_end", "compaction"})


class IndexEntry(msgspec.Struct, kw_only=True):
    """A recent event, as the resume bundle lists it."""

    name: str
    event_id: str
    kind: str
    type: str
    created_at: str
    phase: str | None = None
    host: str | None = None
    message: str = ""
    #: Its writer's clock, where the log's time had run ahead of it (projections.common.written_apart).
    written_at: str | msgspec.UnsetType = msgspec.UNSET


class Overview(msgspec.Struct, kw_only=True):
    """Counts, first and last times, the newest events of one project."""

    events: int = 0
    first_at: str | None = None
    last_at: str | None = None
    last_event_id: str | None = None
    recent: list[IndexEntry] = msgspec.field(default_factory=list)
    #: The newest events that are not routine (edits, commands, checkpoints, archives, notes).
    notable: list[IndexEntry] = msgspec.field(default_factory=list)
    served: int = 0
    #: For each node (clone) that wrote events of the project, the stamp of its newest one folded. A
    #: clone's events arrive in its own order, so this says exactly which events a view folded, even
    #: after a sync lands events stamped earlier than ones already folded (docs/projections.md).
    nodes: dict[str, str] = msgspec.field(default_factory=dict)


def is_routine(entry: IndexEntry) -> bool:
    """Whether an event is routine (a turn or session marker, a brief served)."""
    return entry.kind in ROUTINE_KINDS or (entry.kind == "work.logged" and entry.type in ROUTINE_TYPES)


def _cut(message: str) -> str:
    """A message's first MESSAGE_CHARS, cut before a secret the cut would split (an event a sync brought in may hold
    one: its first characters match no rule, so a view that redacts what it shows would show them)."""
    if len(message) <= MESSAGE_CHARS:
        return message
    from events.guard import cut

    return cut(message, MESSAGE_CHARS, before=MESSAGE_CHARS, after=MESSAGE_CHARS)


def on_event(state: Overview, name: str, event: Event) -> Overview:
    """Count the event and keep it among the recent ones."""
    state.events += 1
    state.first_at = state.first_at or event.created_at
    state.last_at = event.created_at
    state.last_event_id = event.event_id
    parsed = parse_name(name)
    if parsed is not None and parsed.stamp > state.nodes.get(parsed.node, ""):
        state.nodes[parsed.node] = parsed.stamp
    entry = IndexEntry(
        name=name, event_id=event.event_id, kind=event.kind, type=event.type,
        created_at=event.created_at, phase=event.phase, host=event.host,
        message=_cut(event.message), written_at=written_apart(event),
    )
    append_bounded(state.recent, entry, RECENT_LIMIT)
    if not is_routine(entry):
        append_bounded(state.notable, entry, NOTABLE_LIMIT)
    return state


def on_served(state: Overview, name: str, event: ContextServed) -> Overview:
    """A brief was served: count it, then fold it like any event."""
    state.served += 1
    return on_event(state, name, event)


MODEL = ReadModel(
    "overview", format=6, state=Overview, initial=Overview,
    folds={Event: on_event, ContextServed: on_served},
    bounds={"RECENT_LIMIT": RECENT_LIMIT, "NOTABLE_LIMIT": NOTABLE_LIMIT, "MESSAGE_CHARS": MESSAGE_CHARS},
)
