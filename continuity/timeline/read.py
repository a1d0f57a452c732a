"""Reading the log for the timeline: one pass over the day folders in the window, each event decoded once.

Day folders and event files outside --since/--until are skipped by name (a file's name
starts with its time), so a narrow window reads only its own days. Unreadable events are
skipped with one warning, as every read does; so are events larger than any writer makes.
The events the read models and recall leave out are left out too, with their warnings: one
whose content is not what its file name spells (renamed or forged), and day folders stamped
more than a day ahead of this machine's clock (one year-9999 event made every real event
fall on one point of the axis).
"""

from __future__ import annotations

from continuity.core.store import Store
from continuity.readside.catchup import Days, Progress, early_warning
from continuity.timeline.model import Builder, Page
from events import clock, names
from events.base import MAX_EVENT_BYTES
from events.durable import unreadable_error
from events.errors import EventUndecodable
from events.plain import MAX_DEPTH, nested_deeper_than


def read_page(store: Store, project: str, *, since: str | None = None, until: str | None = None,
              progress: Progress | None = None, builder: Builder | None = None) -> Page:
    """The page model of `project`'s events from `since` to `until` (ISO times; None: no bound)."""
    log, unsafe = store.open_events_reader()
    days = Days(log, log.clock_us())  # events stamped early wait, as for the read models and recall
    builder = builder or Builder(project, since=since, until=until)
    builder.warnings.extend(unsafe)
    if days.early:
        builder.warnings.append(early_warning(days.early))
    if days.unlistable is not None:  # the page says no event could be read, and why
        builder.skipped.append(f"events/ cannot be listed ({days.unlistable}); no event is shown")
    low = clock.stamp(clock.parse_iso(since)) if since else None
    high = clock.stamp(clock.parse_iso(until)) if until else None
    wanted = [day for day in days.days
              if (low is None or day >= names.shard_of(low)) and (high is None or day <= names.shard_of(high))]
    total = sum(days.count(day) for day in wanted) if progress is not None else None
    done = 0
    for day in wanted:
        try:
            entries = days.listing(day)
        except OSError as error:  # a day folder that cannot be listed: the page says its events are missing
            builder.skipped.append(f"events/{day}/: cannot be read ({error.strerror or error})")
            continue
        listed = [name for name in entries if names.parse_name(name) is not None
                  and (low is None or name[:22] >= low) and (high is None or name[:22] <= high)]
        before = None
        for name, raw in log.read_files(day, listed, unreadable_as_empty=True):
            twin, before = names.twin(name, before), name
            if twin:
                builder.skipped.append(f"{name}: {names.TWIN}")
                continue
            if len(raw) > MAX_EVENT_BYTES:  # no writer makes one: it would summarize the page, or swell it
                builder.skipped.append(f"{name}: {len(raw)} bytes, over the {MAX_EVENT_BYTES} an event may hold")
                continue
            try:
                event = log.codec.decode(raw)
            except EventUndecodable as error:
                builder.skipped.append(f"{name}: {unreadable_error(raw, error)}")
                continue
            if not names.content_matches(name, event.event_id, event.created_at):
                builder.skipped.append(f"{name}: {names.FORGED}")  # never shown under another event's id or time
                continue
            if nested_deeper_than(event.note, MAX_DEPTH):  # no writer of ours makes one (events/sealing.py); the
                # page's summaries walk notes, which one such event (a sync can bring it) made fail for everyone
                builder.skipped.append(f"{name}: a note nested more than {MAX_DEPTH - 1} levels deep, as no writer "
                                       "of ours makes it")
                continue
            builder.add(name, raw, event)
        days.forget(day)
        done += len(listed)
        if progress is not None:
            progress(done, total)
    return builder.page()
