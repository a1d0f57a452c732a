"""The event-log interface, shared by the file log and the in-memory log.

An append is: guard and check the drafts (no lock held), then under the log's lock
read the head, seal each draft after it (HLC time, `prev` chain) and write the batch.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from events import names
from events.base import Event
from events.codec import Codec, default_codec
from events.durable import Head, Precondition, Unreadable, append_sealed, unreadable_error
from events.errors import EventNotFound, EventUndecodable
from events.problems import quoted
from events.sealing import StoredEvent, prepare, seal

if TYPE_CHECKING:
    from events.verify import VerifyReport

#: Reports an event that could not be read: (file name, reason). Reads go on without it.
OnError = Callable[[str, EventUndecodable], None]


__all__ = ["EventLog", "Head", "OnError", "Precondition"]


class EventLog(abc.ABC):
    """An append-only, hash-chained, totally ordered log of events."""

    def __init__(self, *, node: str, clock_us: Callable[[], int], codec: Codec | None) -> None:
        if not names.NODE_PATTERN.match(node):
            raise ValueError(f"invalid node id {node!r}")
        self.node = node
        self.clock_us = clock_us
        self._codec = codec

    @property
    def codec(self) -> Codec:
        """The codec (the default one is built when first needed: a read whose models are current decodes nothing)."""
        if self._codec is None:
            self._codec = default_codec()
        return self._codec

    # -- writing ---------------------------------------------------------------------------
    def append(self, draft: Event, *, redact: bool = False) -> StoredEvent:
        """Append one event durably and return it as stored."""
        return self.append_many([draft], redact=redact)[0]

    def append_many(self, drafts: Iterable[Event], *, redact: bool = False,
                    precondition: Precondition | None = None) -> list[StoredEvent]:
        """Append events as one batch (one lock, one directory sync per shard).

        `precondition`, when given, is called under the lock with the head as it stands
        there; whatever it raises aborts the append before anything is written (optimistic
        concurrency: the caller checks that what it decided from is still true).
        """
        ready = [prepare(draft, self.codec, redact=redact) for draft in drafts]
        if not ready:
            return []

        def seal_one(draft: Event, at_us: int, prev: str | None, written_us: int | None) -> StoredEvent:
            return seal(draft, at_us=at_us, node=self.node, prev=prev, codec=self.codec, written_us=written_us)

        return append_sealed(self, ready, seal_one, self.clock_us, precondition, node=self.node)

    @abc.abstractmethod
    def _locked(self, now_us: int | None = None, node: str | None = None) -> AbstractContextManager[Head | None]:
        """Hold the log's write lock; yields the head as it stands under the lock (for a clock reading `now_us` and a
        writing `node`: the newest event that counts as now, `durable.counts_as_now`)."""

    @abc.abstractmethod
    def _write(self, batch: list[StoredEvent]) -> None:
        """Make a sealed batch durable and visible, all or nothing."""

    # -- reading ---------------------------------------------------------------------------
    @abc.abstractmethod
    def read_raw(
        self, after: str | None = None, *, include_malformed: bool = False
    ) -> Iterator[tuple[str, bytes]]:
        """(file name, bytes) of every event after the named one, in replay order.

        Files whose names are not event names are skipped unless `include_malformed`.
        """

    def read(self, after: str | None = None, on_error: OnError | None = None) -> Iterator[StoredEvent]:
        """Decoded events after the named one; bad ones go to `on_error` (or raise): undecodable, or renamed or
        forged (its content claims another id or time than its name spells: shown, it would stand for that one)."""
        decode = self.codec.decode
        prior = after
        for name, raw in self.read_raw(after):
            twin, prior = names.twin(name, prior), name
            try:
                if twin:  # the first file of its event is the event (names.TWIN)
                    raise EventUndecodable(names.TWIN)
                event = _matching(name, decode(raw))
            except EventUndecodable as error:
                if on_error is None:
                    raise EventUndecodable(f"{name}: {unreadable_error(raw, error)}") from None
                on_error(name, EventUndecodable(unreadable_error(raw, error)))
                continue
            yield StoredEvent(name, raw, event)

    def read_raw_newest_first(self, after: str | None = None) -> Iterator[tuple[str, bytes]]:
        """(file name, bytes) of the events after the named one, newest first.

        This default reads them all and turns them round; the file log reads its day folders
        from the newest, so a reader of the end of a long log reads only the end.
        """
        return reversed(list(self.read_raw(after)))

    def read_newest(self, count: int, after: str | None = None, *, keep: Callable[[Event], bool] | None = None,
                    on_error: OnError | None = None) -> list[StoredEvent]:
        """The newest `count` decoded events after the named one that `keep` accepts, in replay order.

        It reads from the end and stops when it has them: its cost is the events it reads (the
        newest, down to the oldest one it keeps), not the log's length. Bad ones among them go
        to `on_error` (or raise), oldest first.
        """
        found: list[StoredEvent] = []
        bad: list[tuple[str, EventUndecodable]] = []
        decode = self.codec.decode
        newer = None  # the file read just before, the next newer one: a second file of this one's event if named so

        def second(name: str) -> None:  # `name`, read already, is a second file of the event read after it
            nonlocal bad
            if on_error is None:
                raise EventUndecodable(f"{name}: {names.TWIN}")
            if found and found[-1].name == name:
                found.pop()
            bad = [(bad_name, error) for bad_name, error in bad if bad_name != name]
            bad.append((name, EventUndecodable(names.TWIN)))

        for name, raw in self.read_raw_newest_first(after) if count > 0 else ():
            if newer is not None and names.twin(newer, name):
                second(newer)
            elif len(found) == count:  # the one after the newest kept is no second file of it: done
                break
            newer = name
            try:
                event = _matching(name, decode(raw))
            except EventUndecodable as error:
                if on_error is None:
                    raise EventUndecodable(f"{name}: {unreadable_error(raw, error)}") from None
                bad.append((name, EventUndecodable(unreadable_error(raw, error))))
                continue
            if keep is None or keep(event):
                found.append(StoredEvent(name, raw, event))
        else:  # read to the start (or to `after`): the oldest file read may be a second one of `after`'s event
            if newer is not None and names.twin(newer, after):
                second(newer)
        if on_error is not None:
            for bad_name, bad_error in reversed(bad):
                on_error(bad_name, bad_error)
        found.reverse()
        return found

    @abc.abstractmethod
    def head(self) -> StoredEvent | None:
        """The newest event, or None when the log is empty."""

    def head_name(self) -> str | None:
        """The newest event's file name, or None when the log is empty."""
        head = self.head()
        return None if head is None else head.name

    def find(self, event_id: str) -> StoredEvent:
        """The event with this id; EventNotFound when there is none, EventUndecodable naming its file when it cannot
        be read."""
        name, raw = self.find_raw(event_id)
        try:
            return StoredEvent(name, raw, self.codec.decode(raw))
        except EventUndecodable as error:  # named, so that it can be looked at (`events show` prints its bytes)
            why = f"({raw.reason})" if isinstance(raw, Unreadable) else f"({error})"
            raise EventUndecodable(f"event {event_id} ({names.shard_of(name)}/{name}) cannot be read {why}") from None

    def find_raw(self, event_id: str) -> tuple[str, bytes]:
        """The file name and bytes of the event with this id (not decoded); EventNotFound when there is none."""
        parsed = names.parse_event_id(event_id)
        if parsed is not None:
            prefix = f"{parsed[0]}-{parsed[1]}-"
            for name, raw in self._candidates(parsed[0]):
                if name.startswith(prefix):
                    return name, raw
        raise EventNotFound(f"no event {quoted(event_id)}")

    def _candidates(self, stamp: str) -> Iterator[tuple[str, bytes]]:
        """Events that may carry this stamp; subclasses narrow it down to a shard."""
        return self.read_raw()

    def verify(self) -> VerifyReport:
        """Check every event: bytes against names, decoding, the `prev` chain, forks."""
        from events.verify import verify_records

        return verify_records(lambda: self.read_raw(include_malformed=True), self.codec)


def _matching(name: str, event: Event) -> Event:
    """`event`, read from the file `name`; EventUndecodable when its content is not what the name spells."""
    if not names.content_matches(name, event.event_id, event.created_at):
        raise EventUndecodable(names.FORGED)
    return event
