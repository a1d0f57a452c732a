"""Keeping projections current on disk: incremental catch-up, full rebuild, derived files.

The fold state and a checkpoint live in ``local/projection.msgpack``: the last event
folded, and each day folder's mtime and event count. Catch-up stats the day folders
(cheap: one per day, not per event): an older day whose mtime moved, or a count that
does not add up, means an event arrived "in the past" (a git merge), and the state is
rebuilt from the start. Otherwise only events after the checkpoint are read.

Derived files (``state.json``, ``archives/``, the user-level Markdown) are written
atomically and only when their bytes change. Reads fail open: a derived file that cannot
be written is a warning, never an error.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from continuity.core.store import Store, write_atomic
from events import names
from events.errors import EventUndecodable
from events.filelog import FileEventLog, list_days
from projections.archives import ArchiveRecord
from projections.state import FORMAT, State, apply

CACHE_NAME = "projection.msgpack"


class DayMark(msgspec.Struct, array_like=True):
    """A day folder as last folded: its mtime and how many event files it held."""

    mtime_ns: int
    count: int


class Checkpoint(msgspec.Struct, kw_only=True):
    """The saved fold: state plus what the log looked like when it was saved."""

    format: int = FORMAT
    #: The newest event file read, folded or skipped as unreadable (the state's last_name
    #: only counts folded ones; an unreadable newest file must not look like a merge).
    last_read: str | None = None
    days: dict[str, DayMark] = msgspec.field(default_factory=dict)
    state: State = msgspec.field(default_factory=State)


class Outcome(msgspec.Struct, kw_only=True):
    """What a catch-up did: the state, whether it rebuilt, how many events it read."""

    state: State
    rebuilt: bool = False
    folded: int = 0
    warnings: list[str] = msgspec.field(default_factory=list)


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Checkpoint)


def cache_path(store: Store) -> str:
    """Where the saved fold lives (machine-local)."""
    return os.path.join(store.local_dir, CACHE_NAME)


def load_checkpoint(store: Store) -> Checkpoint | None:
    """The saved fold, or None when missing, unreadable or from another format."""
    try:
        with open(cache_path(store), "rb") as handle:
            checkpoint = _DECODER.decode(handle.read())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return checkpoint if checkpoint.format == FORMAT else None


def _event_names(entries: list[str]) -> list[str]:
    """Entries shaped like event names, sorted (names are parsed only when read)."""
    return sorted(entry for entry in entries if len(entry) == names.NAME_LENGTH and entry.endswith(".json"))


class _Folder:
    """Folds events into a state, skipping unreadable ones with a warning."""

    def __init__(self, log: FileEventLog, state: State, on_archive: Callable[[ArchiveRecord], None]) -> None:
        self.log = log
        self.state = state
        self.on_archive = on_archive
        self.folded = 0
        self.last_read: str | None = None
        self.skipped: list[str] = []

    def fold(self, records: Iterator[tuple[str, bytes]]) -> None:
        decode = self.log.codec.decode
        for name, raw in records:
            self.last_read = name
            try:
                event = decode(raw)
            except EventUndecodable as error:
                self.skipped.append(f"{name}: {error}")
                continue
            apply(self.state, name, event)
            self.folded += 1
            if event.kind == "archive.created":
                project = self.state.projects[event.project]
                self.on_archive(project.archives[-1])

    def warnings(self) -> list[str]:
        if not self.skipped:
            return []
        return [f"skipped {len(self.skipped)} unreadable event(s); first: {self.skipped[0]}"]


def catch_up(
    store: Store,
    log: FileEventLog,
    *,
    on_archive: Callable[[ArchiveRecord], None] | None = None,
    force_rebuild: bool = False,
) -> tuple[Outcome, Checkpoint]:
    """Bring the saved fold up to date with the log (incrementally when it is safe)."""
    sink = on_archive or (lambda record: None)
    checkpoint = None if force_rebuild else load_checkpoint(store)
    days = list_days(log.events_dir)
    if checkpoint is not None:
        incremental = _incremental(log, checkpoint, days, sink)
        if incremental is not None:
            return incremental, checkpoint
    had_checkpoint = checkpoint is not None
    checkpoint = Checkpoint()
    folder = _Folder(log, checkpoint.state, sink)
    for day in days:
        checkpoint.days[day] = _fold_day(log, folder, day, None)
    checkpoint.last_read = folder.last_read
    warnings = folder.warnings()
    if folder.folded and not force_rebuild:
        why = ("events arrived in the past (a merge?)" if had_checkpoint
               else "the saved projection was missing, unreadable or from another version")
        warnings.insert(0, f"{why}: projections rebuilt from {folder.folded} events")
    outcome = Outcome(state=checkpoint.state, rebuilt=True, folded=folder.folded, warnings=warnings)
    return outcome, checkpoint


def _fold_day(log: FileEventLog, folder: _Folder, day: str, after: str | None) -> DayMark:
    """Fold one day's events after `after`; the day's mark, taken before listing it."""
    path = os.path.join(log.events_dir, day)
    mtime_ns = os.stat(path).st_mtime_ns
    listed = _event_names(os.listdir(path))
    folder.fold(_read(log, day, [name for name in listed if after is None or name > after]))
    return DayMark(mtime_ns, len(listed))


def _read(log: FileEventLog, day: str, wanted: list[str]) -> Iterator[tuple[str, bytes]]:
    """Well-named event files of a day; an unreadable one comes as empty bytes, to be skipped with a warning."""
    parsed = [name for name in wanted if names.parse_name(name) is not None]
    return log.read_files(day, parsed, unreadable_as_empty=True)


def _incremental(
    log: FileEventLog, checkpoint: Checkpoint, days: list[str], sink: Callable[[ArchiveRecord], None]
) -> Outcome | None:
    """Fold only the new events, or None when the log changed in the past (rebuild)."""
    state = checkpoint.state
    last_name = checkpoint.last_read or state.last_name
    last_day = names.shard_of(last_name) if last_name else ""
    if set(checkpoint.days) - set(days):
        return None  # a day folder vanished
    for day in days:
        if day >= last_day:
            continue
        mark = checkpoint.days.get(day)
        if mark is None or os.stat(os.path.join(log.events_dir, day)).st_mtime_ns != mark.mtime_ns:
            return None
    folder = _Folder(log, state, sink)
    for day in days:
        if day < last_day:
            continue
        path = os.path.join(log.events_dir, day)
        mark = checkpoint.days.get(day)
        mtime_ns = os.stat(path).st_mtime_ns
        if mark is not None and mark.mtime_ns == mtime_ns and day != last_day:
            continue  # nothing landed in this day since the checkpoint
        # The newest folded day is always listed: where mtimes tick coarsely (older
        # kernels, NFS), a file landing in the same tick as the last catch-up keeps the mtime.
        listed = _event_names(os.listdir(path))
        folded_before = bisect.bisect_right(listed, last_name) if last_name is not None else 0
        if day == last_day and mark is not None and folded_before != mark.count:
            return None  # an event landed before the checkpoint
        wanted = listed[folded_before:]
        folder.fold(_read(log, day, wanted))
        checkpoint.days[day] = DayMark(mtime_ns, len(listed))
    checkpoint.last_read = folder.last_read or checkpoint.last_read
    return Outcome(state=state, folded=folder.folded, warnings=folder.warnings())


def save_checkpoint(store: Store, checkpoint: Checkpoint) -> None:
    """Save the fold for the next catch-up (atomically)."""
    write_atomic(cache_path(store), _ENCODER.encode(checkpoint), durable=False)


def write_if_changed(path: str, data: bytes) -> bool:
    """Write a derived file atomically unless it already holds these bytes."""
    try:
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, data, durable=False)
    return True


def to_json(data: Any) -> bytes:
    """Pretty JSON for derived files: two-space indent, field order as declared."""
    return msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n"
