"""The durable file log: one immutable file per event, safe under concurrent writers.

Append protocol (DESIGN section 3): under an ``flock`` on the store's lock file, write
each event to a temp file in the store's own ``tmp`` folder, fsync it, ``link()`` it to
its final name (never overwrites: EEXIST fails the append), fsync the shard folder,
unlink the temp. A reader never sees a partial event. Temp files left by a killed
writer are swept by the next writer: every temp file is made under the lock, so any
found by a lock holder is garbage.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from events import names
from events.codec import Codec
from events.errors import EventExists, WriteFailed
from events.log import EventLog, Head, head_of
from events.sealing import StoredEvent


class FileOps:
    """The system calls the file log makes. Tests subclass it to inject faults."""

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        """os.open."""
        return os.open(path, flags, mode)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """os.write (may write less than asked)."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """os.fsync."""
        os.fsync(fd)

    def link(self, source: str, target: str) -> None:
        """os.link: fails with EEXIST rather than replace a file."""
        os.link(source, target)

    def mkdir(self, path: str) -> None:
        """os.mkdir."""
        os.mkdir(path)


def _is_day(entry: str) -> bool:
    return len(entry) == 8 and entry.isdigit()


def _is_hour(entry: str) -> bool:
    return len(entry) == 2 and entry.isdigit()


def _sorted_dirs(path: str, accept: Callable[[str], bool]) -> list[str]:
    try:
        return sorted(entry for entry in os.listdir(path) if accept(entry))
    except FileNotFoundError:
        return []


class FileEventLog(EventLog):
    """Events as files under ``events/<YYYYMMDD>/<HH>/``; lock and temp files under ``local``."""

    def __init__(
        self,
        events_dir: Path,
        local_dir: Path,
        *,
        node: str,
        clock_us: Callable[[], int],
        codec: Codec | None = None,
        fs: FileOps | None = None,
    ) -> None:
        super().__init__(node=node, clock_us=clock_us, codec=codec)
        self.events_dir = str(events_dir)
        self.tmp_dir = os.path.join(str(local_dir), "tmp")
        self.lock_path = os.path.join(str(local_dir), "lock")
        self.fs = fs or FileOps()

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[Head | None]:
        try:
            os.makedirs(self.tmp_dir, exist_ok=True)
            os.makedirs(self.events_dir, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise _write_failed(error) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._sweep()
            yield self._head_locked()
        finally:
            os.close(fd)

    def _sweep(self) -> None:
        """Remove temp files left by writers that died; only called under the lock."""
        for entry in os.listdir(self.tmp_dir):
            with suppress(OSError):
                os.unlink(os.path.join(self.tmp_dir, entry))

    def _head_locked(self) -> Head | None:
        found = self._newest()
        if found is None:
            return None
        path, name = found
        with open(path, "rb") as handle:
            return head_of(name, handle.read())

    def _newest(self) -> tuple[str, str] | None:
        for day in reversed(_sorted_dirs(self.events_dir, _is_day)):
            day_path = os.path.join(self.events_dir, day)
            for hour in reversed(_sorted_dirs(day_path, _is_hour)):
                hour_path = os.path.join(day_path, hour)
                event_names = [n for n in os.listdir(hour_path) if names.parse_name(n)]
                if event_names:
                    name = max(event_names)
                    return os.path.join(hour_path, name), name
        return None

    def _write(self, batch: list[StoredEvent]) -> None:
        pid = os.getpid()
        temps: list[str] = []
        finals: list[str] = []
        shards: dict[str, None] = {}
        try:
            for stored in batch:
                temp = os.path.join(self.tmp_dir, f"{stored.name}.{pid}.tmp")
                temps.append(temp)
                self._write_file(temp, stored.raw)
            for stored in batch:
                shard = self._ensure_shard(stored.name)
                shards[shard] = None
            for temp, stored in zip(temps, batch, strict=True):
                final = os.path.join(self._shard_path(stored.name), stored.name)
                try:
                    self.fs.link(temp, final)
                except FileExistsError:
                    raise EventExists(f"event not written: {stored.name} already exists") from None
                finals.append(final)
            for shard in shards:
                self._fsync_dir(shard)
        except OSError as error:
            self._undo(finals)
            raise _write_failed(error) from None
        except WriteFailed:
            self._undo(finals)
            raise
        finally:
            for temp in temps:
                with suppress(OSError):
                    os.unlink(temp)

    def _write_file(self, path: str, data: bytes) -> None:
        fd = self.fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
        try:
            view = memoryview(data)
            while view:
                written = self.fs.write(fd, view)
                if written <= 0:
                    raise OSError(errno.EIO, "write made no progress")
                view = view[written:]
            self.fs.fsync(fd)
        finally:
            os.close(fd)

    def _shard_path(self, name: str) -> str:
        day, hour = names.shard_of(name)
        return os.path.join(self.events_dir, day, hour)

    def _ensure_shard(self, name: str) -> str:
        day, hour = names.shard_of(name)
        path = self.events_dir
        for part in (day, hour):
            parent, path = path, os.path.join(path, part)
            try:
                self.fs.mkdir(path)
            except FileExistsError:
                continue
            self._fsync_dir(parent)
        return path

    def _fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.fs.fsync(fd)
        finally:
            os.close(fd)

    def _undo(self, finals: list[str]) -> None:
        """Take back the links of a batch that failed, so no part of it stays visible."""
        for final in finals:
            with suppress(OSError):
                os.unlink(final)

    # -- reading ---------------------------------------------------------------------------
    def read_raw(
        self, after: str | None = None, *, include_malformed: bool = False
    ) -> Iterator[tuple[str, bytes]]:
        """(file name, bytes) of every event after the named one, in replay order.

        Files whose names are not event names are skipped unless `include_malformed`.
        """
        after_day, after_hour = names.shard_of(after) if after else ("", "")
        for day in _sorted_dirs(self.events_dir, _is_day):
            if day < after_day:
                continue
            day_path = os.path.join(self.events_dir, day)
            for hour in _sorted_dirs(day_path, _is_hour):
                if (day, hour) < (after_day, after_hour):
                    continue
                hour_path = os.path.join(day_path, hour)
                try:
                    entries = sorted(os.listdir(hour_path))
                except FileNotFoundError:
                    continue
                for name in entries:
                    if after is not None and name <= after:
                        continue
                    if not name.endswith(".json") or name.startswith("."):
                        continue
                    if not include_malformed and names.parse_name(name) is None:
                        continue
                    try:
                        with open(os.path.join(hour_path, name), "rb") as handle:
                            raw = handle.read()
                    except (FileNotFoundError, IsADirectoryError):
                        continue
                    yield name, raw

    def head(self) -> StoredEvent | None:
        """The newest event, or None when the log is empty."""
        found = self._newest()
        if found is None:
            return None
        path, name = found
        with open(path, "rb") as handle:
            raw = handle.read()
        return StoredEvent(name, raw, self.codec.decode(raw))

    def _candidates(self, stamp: str) -> Iterator[tuple[str, bytes]]:
        hour_path = os.path.join(self.events_dir, *names.shard_of(stamp))
        try:
            entries = sorted(n for n in os.listdir(hour_path) if n.startswith(stamp))
        except FileNotFoundError:
            return
        for name in entries:
            with open(os.path.join(hour_path, name), "rb") as handle:
                yield name, handle.read()


def _write_failed(error: OSError) -> WriteFailed:
    reason = error.strerror or str(error)
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        reason = f"store is not writable ({reason})"
    return WriteFailed(f"event not written: {reason}")
