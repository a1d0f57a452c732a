"""Audit replay: the projection as the log stood at an earlier point.

A point is an event id (`RCE-...`) or an ISO time. Replay folds every event up to and
including the point from the start, without touching the saved fold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from continuity.core.errors import UsageError
from continuity.readside.views import SESSION_MODELS, Models
from events import clock, names
from events.base import Event
from events.errors import EventUndecodable
from events.log import EventLog
from events.names import FORGED, content_matches
from events.names import twin as names_twin
from events.problems import quoted
from events.sealing import StoredEvent
from projections.readmodel import Projects
from projections.registry import models


def bad_point(point: str, flag: str = "--as-of") -> UsageError:
    """The one line for an `--as-of` (or `--until`) that is neither an event id nor a time."""
    return UsageError(f"{flag}: {quoted(point)} is neither an event id (RCE-...) nor an ISO time in range")


def resolve_point(log: EventLog, point: str, flag: str = "--as-of") -> tuple[str, StoredEvent | None]:
    """The last file name included at `point`, and the event itself when it is an id."""
    if point.startswith("RCE-"):
        parsed = names.parse_event_id(point)
        if parsed is not None:  # an event stamped early is no point to replay to until its time, as in every read
            _past(log, clock.parse_stamp(parsed[0]), point, flag)
        try:
            stored = log.find(point)
        except EventUndecodable as error:  # the point itself: nothing to answer from (the error names the event)
            raise EventUndecodable(f"{flag}: {error}; `continuity verify` names what is wrong") from None
        return stored.name, stored
    try:
        at_us = clock.parse_iso(point)
        stamp = clock.stamp(at_us)
    except (ValueError, OverflowError):
        raise bad_point(point, flag) from None
    _past(log, at_us, point, flag)
    return f"{stamp}-~", None  # sorts after every name with that stamp


def _past(log: EventLog, at_us: int, point: str, flag: str) -> None:
    """Refuse a point in the future: past this machine's clock and past the log's head (a log stamped ahead, a fast
    writer's clock, holds that time); an event stamped early is no point to replay to until its time comes."""
    from continuity.core.store import now_us

    if at_us > now_us() and at_us > _head_us(log):
        raise UsageError(f"{flag}: {quoted(point)} is in the future; an audit replays the past")


def known_at(name: str, stored: StoredEvent | None) -> Callable[[str, Event], bool] | None:
    """At a served brief (a `context.served` point): which events up to the point this store held then.

    The brief recorded, per clone that wrote events of its project, the stamp of the newest one it folded
    (`folded_nodes`); a clone's events arrive in its own order, so an event of that project from another clone
    stamped later, or from a clone it does not name, came in by a sync after it, stamped earlier. The serving
    clone's own events up to the point were all written before it. Of other projects, what the store held then is
    not recorded: their events are taken up to the point. None: every event up to the point (any other point, a
    brief recorded without `folded_nodes`, or one whose catch-up was cut short: its deadline, a day folder that
    could not be read; what it folded is then less than the store held).
    """
    from continuity.readside.catchup import cut_short
    from events.context import ContextServed

    served = stored.event if stored is not None else None
    point = names.parse_name(name)
    if not isinstance(served, ContextServed) or not served.folded_nodes or point is None:
        return None
    if any(cut_short(line) for line in served.inputs.warnings):
        return None
    project, nodes, own = served.project, served.folded_nodes, point.node

    def known(name: str, event: Event) -> bool:
        if event.project != project:
            return True
        parsed = names.parse_name(name)
        return parsed is not None and (parsed.node == own or parsed.stamp <= nodes.get(parsed.node, ""))

    return known


def _head_us(log: EventLog) -> int:
    """The newest event's time (0 when none, or when it cannot be found)."""
    from continuity.core.store import now_us
    from events.filelog import FileEventLog

    try:  # the head that counts as now: an event stamped early holds no time an audit may replay yet
        head = log.head_name(log.now_limit(now_us())) if isinstance(log, FileEventLog) else log.head_name()
    except OSError:
        return 0
    parsed = names.parse_name(head) if head else None
    return clock.parse_stamp(parsed.stamp) if parsed else 0


def bound_of(event_id: str) -> str | None:
    """A name that sorts right after the file of `event_id`, without reading it (None: not an id)."""
    parsed = names.parse_event_id(event_id)
    return None if parsed is None else f"{parsed[0]}-{parsed[1]}-~"


def point_time(point: str) -> str:
    """The time a replay answers at: an event's own (its id spells it), or the time given.

    An event of another project is a point in time like any other: as of it, a project's
    ages and active sessions are reckoned from it, not from the project's own newest event.
    """
    parsed = names.parse_event_id(point)
    return clock.iso(clock.parse_stamp(parsed[0]) if parsed else clock.parse_iso(point))


def point_written(point: str, stored: StoredEvent | None) -> str:
    """The time a replay answers at, as `point_time`, but by the point event's writer's clock where the event says
    it (`events.clock.written`): ages in the views count from writers' clocks too, so an archive is new at its own
    event and an agent seen just now at its own beat, whatever a fast teammate did to the log's time."""
    return clock.written(stored.event) if stored is not None else point_time(point)


def models_until(
    log: EventLog, last_name: str, warnings: list[str], names: tuple[str, ...] = SESSION_MODELS,
    *, writers: dict[str, Callable[[Projects[Any], str, Event], None]] | None = None,
    only: Callable[[str, Event], bool] | None = None, deadline: float | None = None, whole: bool = False,
    points: dict[str, str] | None = None,
) -> Models:
    """Fold every event whose name sorts at or before `last_name` into fresh read models.

    `only`: which of them to fold (a served brief's own events: continuity/sessions/service.py).
    `whole`: an audit replay, which must read every event before its point: a day folder that cannot be listed
    stops it (EventsUnlisted, exit 1) instead of answering as a log that ends there.
    `deadline` (`time.monotonic()`): past it, stop (checked every MID_DAY_CHUNK events) and say so in
    `warnings`, with catchup.OUT_OF_TIME's words: the models hold the log up to there.
    `points`: model -> the last event it folds (a served brief whose models stood at different points); a model
    not named folds none.
    """
    import time

    from continuity.readside.catchup import MID_DAY_CHUNK, OUT_OF_TIME

    chosen = models(names)
    states = {model.name: model.empty() for model in chosen}
    writers = writers or {}
    skipped = read = forged = 0
    before = first_skipped = first_forged = None
    for name, raw in log.read_raw():
        if name > last_name:
            break
        read += 1
        if deadline is not None and read % MID_DAY_CHUNK == 0 and time.monotonic() >= deadline:
            warnings.append(f"{OUT_OF_TIME} and this read ran out of time: events from {name} on are not in "
                            "this answer")
            break
        if name.endswith("/"):  # a day folder that cannot be listed: as a catch-up, stop before it, in order
            from events.durable import unreadable_error

            if whole:  # an audit answered "0 events" for a point it could read, after one unlistable day
                from events.errors import EventsUnlisted

                raise EventsUnlisted(f"events/{name} {unreadable_error(raw)}: an audit replay reads every event "
                                     "before its point; nothing answered")
            warnings.append(f"events/{name} {unreadable_error(raw)}: the replay stops before it "
                            "(its events and every later one are left out)")
            break
        twin, before = names_twin(name, before), name
        try:
            event = log.codec.decode(raw)
        except EventUndecodable as error:
            from events.durable import unreadable_error

            skipped += 1
            first_skipped = first_skipped or f"{name}: {unreadable_error(raw, error)}"
            continue
        if twin or not content_matches(name, event.event_id, event.created_at):  # as a catch-up: left out
            forged += 1
            first_forged = first_forged or name
            continue
        if only is not None and not only(name, event):
            continue
        for model in chosen:
            if points is not None and name > points.get(model.name, ""):
                continue
            model.apply(states[model.name], name, event)
            writer = writers.get(model.name)
            if writer is not None:
                writer(states[model.name], name, event)
    if skipped:  # which file, as a catch-up's warning says: the first
        warnings.append(f"skipped {skipped} unreadable event(s) during replay; first: {first_skipped}")
    if forged:
        warnings.append(f"left out {forged} event(s) during replay: {FORGED}, or a second file of one event; "
                        f"first: {first_forged}")
    return Models(states)
