"""The in-memory log: the same contract as the file log, for tests and dry runs."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from events import names
from events.codec import Codec
from events.durable import Head, head_of, now_limit
from events.errors import EventExists
from events.log import EventLog
from events.sealing import StoredEvent


class MemoryEventLog(EventLog):
    """Events kept as (name, bytes) in a sorted list."""

    def __init__(
        self, *, node: str = "memory00", clock_us: Callable[[], int], codec: Codec | None = None
    ) -> None:
        super().__init__(node=node, clock_us=clock_us, codec=codec)
        self._files: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()

    @contextmanager
    def _locked(self, now_us: int | None = None, node: str | None = None) -> Iterator[Head | None]:
        with self._lock:
            limit = None
            if now_us is not None:  # the file log's rule, over the names held here
                days = sorted({names.shard_of(name) for name, _ in self._files})
                limit = now_limit(now_us, node, days,
                                  lambda day: [name for name, _ in self._files if names.shard_of(name) == day])
            counted = [file for file in self._files if limit is None or names.shard_of(file[0]) <= limit]
            yield head_of(*counted[-1]) if counted else None

    def _write(self, batch: list[StoredEvent]) -> None:
        taken = {name for name, _ in self._files}
        for stored in batch:
            if stored.name in taken:
                raise EventExists(f"event not written: {stored.name} already exists")
        for stored in batch:
            bisect.insort(self._files, (stored.name, stored.raw))

    def read_raw(
        self, after: str | None = None, *, include_malformed: bool = False
    ) -> Iterator[tuple[str, bytes]]:
        """(file name, bytes) of every event after the named one, in replay order."""
        start = 0 if after is None else bisect.bisect_right(self._files, (after, b"\xff"))
        yield from list(self._files[start:])

    def head(self) -> StoredEvent | None:
        """The newest event, or None when the log is empty."""
        if not self._files:
            return None
        name, raw = self._files[-1]
        return StoredEvent(name, raw, self.codec.decode(raw))

    def put_raw(self, name: str, raw: bytes) -> None:
        """Place stored bytes under a name as they are (tests of tampering and merges)."""
        bisect.insort(self._files, (name, raw))
