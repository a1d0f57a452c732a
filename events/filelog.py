"""The durable file log: one immutable file per event, safe under concurrent writers.

The write protocol (lock, head, temp + fsync + link + folder fsync, hint) lives in
events/durable.py, shared with the plain append path; this module adds the typed side:
the codec, reading, finding and verifying events.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from events import names
from events.codec import Codec
from events.durable import (
    DurableFolder,
    FileOps,
    Unreadable,
    list_days,
    read_event_file,
    readable_days,
    real_folder,
    refuse_link,
)
from events.errors import EventUndecodable
from events.log import EventLog
from events.sealing import StoredEvent

__all__ = ["FileEventLog", "FileOps", "list_days", "real_folder", "refuse_link"]


class FileEventLog(DurableFolder, EventLog):
    """Events as files under ``events/<YYYYMMDD>/``; lock and temp files under ``local``."""

    def __init__(
        self,
        events_dir: str | os.PathLike[str],
        local_dir: str | os.PathLike[str],
        *,
        node: str,
        clock_us: Callable[[], int],
        codec: Codec | None = None,
        fs: FileOps | None = None,
    ) -> None:
        EventLog.__init__(self, node=node, clock_us=clock_us, codec=codec)
        DurableFolder.__init__(self, events_dir, local_dir, fs=fs)

    # -- reading ---------------------------------------------------------------------------
    def read_raw(
        self, after: str | None = None, *, include_malformed: bool = False
    ) -> Iterator[tuple[str, bytes]]:
        """(file name, bytes) of every event after the named one, in replay order.

        Files whose names are not event names are skipped unless `include_malformed`. A file (or
        a day folder, as `<day>/`) that cannot be read comes as `Unreadable` bytes, for the reader
        to name.
        """
        after_day = names.shard_of(after) if after else ""
        for day in readable_days(self.events_dir):
            if day < after_day:
                continue
            yield from self.read_day(day, after, include_malformed=include_malformed)

    def read_day(
        self, day: str, after: str | None = None, *, include_malformed: bool = False
    ) -> Iterator[tuple[str, bytes]]:
        """(file name, bytes) of one day's events after the named one, in order."""
        try:
            wanted = self._day_names(day, after, include_malformed=include_malformed)
        except OSError as error:  # a folder that cannot be listed: its events are unread, and the reader says so
            yield f"{day}/", Unreadable(error.strerror or str(error))
            return
        yield from self.read_files(day, wanted, unreadable_as_empty=True)

    def read_raw_newest_first(self, after: str | None = None, limit: str | None = None) -> Iterator[tuple[str, bytes]]:
        """(file name, bytes) of the events after the named one, newest first, day folder by day folder (those up to
        the day `limit`, when given: `durable.counts_as_now`).

        Only the folders it gets to are listed and only the files it gets to are read, so
        the newest few events of a year-long log cost one day's listing, not the year's.
        """
        after_day = names.shard_of(after) if after else ""
        for day in reversed(readable_days(self.events_dir)):
            if limit is not None and day > limit:
                continue
            if day < after_day:
                return
            try:
                wanted = self._day_names(day, after)[::-1]
            except OSError as error:
                yield f"{day}/", Unreadable(error.strerror or str(error))
                continue
            yield from self.read_files(day, wanted, unreadable_as_empty=True)

    def _day_names(self, day: str, after: str | None, *, include_malformed: bool = False) -> list[str]:
        """The event file names of one day after the named one, in order (none when the day is gone)."""
        try:
            entries = sorted(self.day_entries(os.path.join(self.events_dir, day)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [
            name for name in entries
            if (after is None or name > after) and name.endswith(".json") and not name.startswith(".")
            and (include_malformed or names.parse_name(name) is not None)
        ]

    def read_files(
        self, day: str, wanted: list[str], *, unreadable_as_empty: bool = False
    ) -> Iterator[tuple[str, bytes]]:
        """(name, bytes) of the named files of one day, in the order given; vanished files are skipped.

        A file that cannot be read (a folder, a symlink loop, no permission) is skipped, or
        given as `Unreadable` (empty) bytes when `unreadable_as_empty`, so the caller can name it.
        """
        day_path = os.path.join(self.events_dir, day)
        for name in wanted:
            try:
                raw = read_event_file(os.path.join(day_path, name))
            except FileNotFoundError:
                continue
            except OSError as error:
                if not unreadable_as_empty:
                    continue
                raw = Unreadable(error.strerror or str(error))
            yield name, raw

    def head_name(self, limit: str | None = None) -> str | None:
        """The newest event's file name (None when the log is empty), without reading it; with `limit`, the
        newest of a day folder up to it (`names.last_day`: the head new events follow)."""
        return self._newest(limit=limit)

    def head(self) -> StoredEvent | None:
        """The newest event, or None when the log is empty."""
        found = self._newest()
        if found is None:
            return None
        raw = read_event_file(self.path_of(found))
        return StoredEvent(found, raw, self.codec.decode(raw))

    def _candidates(self, stamp: str) -> Iterator[tuple[str, bytes]]:
        day_path = os.path.join(self.events_dir, names.shard_of(stamp))
        try:
            entries = sorted(n for n in self.day_entries(day_path) if n.startswith(stamp))
        except FileNotFoundError:
            return
        except OSError as error:
            raise EventUndecodable(f"events/{names.shard_of(stamp)}/ cannot be read "
                                   f"({error.strerror or error})") from None
        for name in entries:
            try:
                raw = read_event_file(os.path.join(day_path, name))
            except FileNotFoundError:
                continue
            except OSError as error:
                raise EventUndecodable(f"{name} cannot be read ({error.strerror or error})") from None
            yield name, raw


