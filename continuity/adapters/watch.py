"""Following the log live (watchfiles): `continuity watch` and `continuity events tail --follow`.

Whenever the events folder changes, the loop lists the day folders that changed and shows
every event file it has not shown yet, whatever its name: a listing taken while writers
link files in can miss an older name and hold a newer one (ext4's hashed folders), and
`sync` brings in a teammate's events stamped before the newest one here. A cursor of "the
last name shown" would skip both for good; the loop keeps, per day folder it has listed,
the names it has accounted for. `watch` also keeps the projections current. Ctrl-C
(SIGINT) ends it cleanly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from continuity.core.store import Store
from events.errors import EventUndecodable, UnknownEventType
from events.sealing import StoredEvent

#: What a follower says once when events/ goes from under it.
GONE = "events/ is gone (removed or renamed): nothing new is shown until it is back"
#: How long the loop waits for file-system news before checking again anyway (ms).
POLL_MS = 500
#: A day folder changed this recently is listed again at every turn: folder times tick coarsely (a few ms), so a
#: file linked in the same tick as the listing before leaves the time as it was.
RECENT_NS = 2_000_000_000


#: How far a file's change time may fall behind the clock a process reads (file systems stamp with a coarse clock,
#: a tick of up to 10 ms): a file linked just after following began is never taken for one that was there.
COARSE_NS = 50_000_000


class _Days:
    """What the loop has accounted for: per day folder listed, its names; per day folder, its time when seen."""

    def __init__(self, after: str | None) -> None:
        from events import names

        self.after = after
        #: The day of `after`: days before it were there at the start (marked) or made since (all new).
        self.first = names.shard_of(after) if after else ""
        self.known: dict[str, set[str]] = {}
        self.marks: dict[str, int] = {}
        #: Per day, the files read mid-write (a copy not yet whole) and how they stood then: rewriting a file in
        #: place leaves its folder's time as it was, so the day is listed again when one of them changes.
        self.retrying: dict[str, dict[str, tuple[int, int]]] = {}
        #: When following began (less a file system clock's coarseness): files of an older day changed before it
        #: were there at the start.
        self.since = 0

    def start(self, events_dir: str, days: list[str]) -> None:
        """Days before the first one to show are not listed: only their times are kept, to notice one that changes."""
        import os
        import time

        self.since = time.time_ns() - COARSE_NS
        for day in days:
            if day < self.first:
                try:
                    self.marks[day] = os.stat(os.path.join(events_dir, day)).st_mtime_ns
                except OSError:
                    continue

    def retried(self, folder: str, day: str) -> bool:
        """Whether a file of `day` read mid-write has changed since (or gone): to be read again."""
        import os

        for name, stood in self.retrying.get(day, {}).items():
            try:
                info = os.stat(os.path.join(folder, name))
            except OSError:
                return True
            if (info.st_mtime_ns, info.st_size) != stood:
                return True
        return False

    def retry(self, folder: str, day: str, names: set[str]) -> None:
        """Keep how the files of `day` read mid-write stand now (their next change lists the day again)."""
        import os

        stood: dict[str, tuple[int, int]] = {}
        for name in names:
            try:
                info = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            stood[name] = (info.st_mtime_ns, info.st_size)
        if stood:
            self.retrying[day] = stood
        else:
            self.retrying.pop(day, None)

    def new_names(self, folder: str, day: str, listed: list[str], mtime_ns: int) -> list[str]:
        """The names of `listed` (one day's event files, sorted) not accounted for yet, in order."""
        import os

        known = self.known.get(day)
        if known is not None:
            return [name for name in listed if name not in known]
        mark = self.marks.get(day)
        if mark is None:  # listed for the first time: a day from the first one to show on, or one made since
            return [name for name in listed if self.after is None or name > self.after or day < self.first]
        # an older day that changed after the start: the files linked into it since (a sync, a merge), changed after
        # both the folder's time at the start and the start itself (an append links its file, then removes its temp
        # name, which changes the file after the folder: the folder's time alone showed that file again). By its
        # change time, not its write time: a sync that keeps times (`cp -p`, rsync, Syncthing) would be missed for
        # good, where a chmod or a restore of older files while following shows them once more.
        since = max(mark, self.since)
        fresh = []
        for name in listed:
            try:
                if os.stat(os.path.join(folder, name)).st_ctime_ns > since:
                    fresh.append(name)
            except OSError:
                continue
        return fresh


def follow(
    store: Store,
    on_event: Callable[[StoredEvent], None],
    *,
    after: str | None,
    on_warning: Callable[[str], None],
    refresh_projections: bool = False,
    stop: threading.Event | None = None,
    on_ready: Callable[[], None] | None = None,
    reader_gone: Callable[[], bool] | None = None,
) -> None:
    """Call `on_event` for each event after `after`, as they land, until `stop` is set, Ctrl-C, or `reader_gone`
    says whoever read the output has gone (checked at every turn, new events or not)."""
    import bisect
    import os
    import time

    from watchfiles import watch

    from continuity.core.store import now_us
    from continuity.readside.catchup import early_warning
    from events import names
    from events.durable import list_days, no_folder, readable_days, unreadable_error

    log = store.open_reader()
    seen = _Days(after)
    warned: set[str] = set()  # a file or day folder that stays unreadable is said once, not at every change

    def warn_once(key: str, message: str) -> None:
        if key not in warned:
            warned.add(key)
            on_warning(message)

    def drain() -> None:
        store.check_safe()  # the store swapped for a link while running: refused (exit 6), as every read
        if not os.path.isdir(store.events_dir):  # removed or renamed: the watcher may go on without a word
            warn_once("gone", GONE)
            return
        warned.discard("gone")
        links: list[str] = []
        try:
            days = list_days(store.events_dir, links, links)
        except OSError as error:  # events/ made unlistable while following: said once, nothing shown until it lists
            warn_once("events/", f"events/ cannot be listed ({error.strerror or error}): nothing new is shown until "
                      "it can")
            return
        warned.discard("events/")
        for day in links:
            warn_once(f"{day}/", no_folder(store.events_dir, day))
        limit = names.last_day(now_us())
        if days and days[-1] > limit:  # events stamped early wait, as in reads
            limit = log.now_limit(now_us(), days)
            early = [day for day in days if day > limit]
            if early:
                warn_once(early[0], early_warning(early))
        now_ns = time.time_ns()
        landed: list[tuple[str, list[str], list[str]]] = []  # (day, new names, the listing to account for)
        for day in days:
            if day > limit:
                break
            folder = os.path.join(store.events_dir, day)
            try:
                mtime_ns = os.stat(folder).st_mtime_ns
            except OSError:
                continue
            if day in seen.known and seen.marks.get(day) == mtime_ns and now_ns - mtime_ns > RECENT_NS and \
                    not seen.retried(folder, day):
                continue
            if day not in seen.known and day in seen.marks and seen.marks[day] == mtime_ns:
                continue  # an older day, as it was at the start
            try:
                listed = sorted(name for name in log.day_entries(folder)
                                if name.endswith(".json") and names.parse_name(name) is not None)
            except FileNotFoundError:
                continue
            except OSError as error:  # said once; its events, and every later day's, show once it can be listed
                warn_once(f"{day}/", f"skipped unreadable event {day}/: {error.strerror or error}")
                break
            landed.append((day, seen.new_names(folder, day, listed, mtime_ns), listed))
            seen.marks[day] = mtime_ns
        shown: list[StoredEvent] = []
        for day, fresh, names_listed in landed:
            retry: set[str] = set()
            for name, raw in log.read_files(day, fresh, unreadable_as_empty=True):
                at = bisect.bisect_left(names_listed, name)
                after = names_listed[at + 1] if at + 1 < len(names_listed) else None
                # a second file of an event (left out, as every read leaves it), or one landing before the file of
                # its event shown already (by name it comes first, but the event was shown: not twice)
                if names.twin(name, names_listed[at - 1] if at else None) or (
                        after is not None and names.twin(after, name) and after in seen.known.get(day, ())):
                    warn_once(name, f"skipped unreadable event {name}: {names.TWIN}")
                    continue
                try:
                    event = log.codec.decode(raw)
                except EventUndecodable as error:
                    warn_once(name, f"skipped unreadable event {name}: {unreadable_error(raw, error)}")
                    if not isinstance(error, UnknownEventType):
                        retry.add(name)  # a copy caught mid-write: read again at the next change
                    continue
                if not names.content_matches(name, event.event_id, event.created_at):  # left out, as every read
                    warn_once(name, f"skipped unreadable event {name}: {names.FORGED}")  # leaves it (a copy showed
                    continue  # one event twice, under its id)
                shown.append(StoredEvent(name, raw, event))
            seen.known[day] = (seen.known.get(day, set()) | set(names_listed)) - retry
            seen.retry(os.path.join(store.events_dir, day), day, retry)
        if shown and refresh_projections:  # projections first: once a line shows, they include it
            from continuity.readside.writers import refresh

            for warning in refresh(store).warnings:  # each said once: every refresh says what it still leaves out
                warn_once(warning, warning)
        for stored in sorted(shown, key=lambda stored: stored.name):
            on_event(stored)

    os.makedirs(store.events_dir, exist_ok=True)
    seen.start(store.events_dir, readable_days(store.events_dir))  # no baseline to follow from: exit 1, one line
    drain()
    if on_ready is not None:
        on_ready()
    while True:
        try:
            for _ in watch(store.events_dir, recursive=True, debounce=50, step=20, rust_timeout=POLL_MS,
                           yield_on_timeout=True, stop_event=stop, raise_interrupt=True):
                drain()
                if reader_gone is not None and reader_gone():  # `watch | head -1` when no event comes: ended
                    return
            return
        except KeyboardInterrupt:
            return
        except FileNotFoundError:  # events/ went from under the watcher: removed, renamed, or being swapped for a link
            pass
        if stop is not None and stop.is_set():
            return
        try:
            store.check_safe()  # a link in its place is refused (exit 6), as every read refuses it
            if not os.path.isdir(store.events_dir):
                warn_once("gone", GONE)
            time.sleep(POLL_MS / 1000)
            if os.path.isdir(store.events_dir):
                warned.discard("gone")
            drain()  # followed again once back
            if reader_gone is not None and reader_gone():
                return
        except KeyboardInterrupt:  # Ctrl-C while it is gone ends the follower as any Ctrl-C does
            return
