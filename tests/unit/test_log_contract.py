"""One contract, two logs: the file log and the in-memory log behave the same."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

from events import names
from events.errors import EventInvalid, EventNotFound, SecretRefused
from events.filelog import FileEventLog
from events.log import EventLog
from events.memlog import MemoryEventLog
from events.session import SessionStarted
from events.worklog import CheckpointRecorded, WorkLogged
from tests.conftest import FakeClock


def draft(message: str = "did a thing", **extra: object) -> WorkLogged:
    return WorkLogged(project="demo", message=message, **extra)  # type: ignore[arg-type]


class LogContract:
    """Behaviour every EventLog must have."""

    @pytest.fixture
    def log(self, tmp_path: Path, fake_clock: FakeClock) -> EventLog:
        return self.make(tmp_path, fake_clock, "node0001")

    def make(self, tmp_path: Path, clock: FakeClock, node: str) -> EventLog:
        raise NotImplementedError

    def test_empty_log_has_no_head_and_reads_nothing(self, log: EventLog) -> None:
        """A new log is empty and verifies."""
        assert log.head() is None
        assert list(log.read()) == []
        assert log.verify().ok

    def test_append_assigns_id_time_and_chain(self, log: EventLog, fake_clock: FakeClock) -> None:
        """Appends get ids, HLC times, and `prev` = SHA-256 of the previous event's bytes."""
        first = log.append(draft("one"))
        fake_clock.advance(1000)
        second = log.append(draft("two"))
        assert first.event.prev is None
        assert second.event.prev == hashlib.sha256(first.raw).hexdigest()
        assert first.event_id.startswith("RCE-") and first.event_id.endswith("-node0001")
        assert names.id_of_name(second.name) == second.event_id
        assert first.event.created_at < second.event.created_at
        assert [s.event.message for s in log.read()] == ["one", "two"]
        head = log.head()
        assert head is not None and head.name == second.name

    def test_read_after_continues_from_an_event(self, log: EventLog) -> None:
        """read(after=name) yields only later events, in order."""
        stored = log.append_many([draft(str(i)) for i in range(5)])
        assert [s.event.message for s in log.read(after=stored[1].name)] == ["2", "3", "4"]
        assert list(log.read(after=stored[-1].name)) == []

    def test_read_newest_gives_the_end_of_the_log_in_order(self, log: EventLog) -> None:
        """read_newest(n) is the last n of read(), filtered, after a name; read_raw_newest_first is reversed."""
        stored = log.append_many([draft(str(i)) for i in range(8)])
        assert [s.event.message for s in log.read_newest(3)] == ["5", "6", "7"]
        assert [s.event.message for s in log.read_newest(2, keep=lambda e: int(e.message) % 2 == 0)] == ["4", "6"]
        assert [s.event.message for s in log.read_newest(20, after=stored[5].name)] == ["6", "7"]
        assert log.read_newest(0) == []
        assert list(log.read_raw_newest_first()) == list(log.read_raw())[::-1]

    def test_append_many_is_one_chained_batch(self, log: EventLog) -> None:
        """A batch is chained event to event and strictly ordered even at one clock reading."""
        stored = log.append_many([draft(str(i)) for i in range(50)])
        for before, after in itertools.pairwise(stored):
            assert after.event.prev == hashlib.sha256(before.raw).hexdigest()
            assert before.name < after.name
        assert log.verify().ok
        assert log.append_many([]) == []

    def test_hlc_keeps_order_when_the_clock_steps_back(self, log: EventLog, fake_clock: FakeClock) -> None:
        """A wall clock that jumps back an hour still yields later names and times."""
        first = log.append(draft("before"))
        fake_clock.advance(-3_600_000_000)
        second = log.append(draft("after the step back"))
        assert second.name > first.name
        assert second.event.created_at > first.event.created_at
        assert log.verify().ok

    def test_stored_bytes_decode_to_the_returned_event(self, log: EventLog) -> None:
        """What append returns is exactly what a reader gets back."""
        stored = log.append(CheckpointRecorded(project="demo", phase="testing"))
        again = next(iter(log.read()))
        assert again == stored

    def test_find_by_event_id(self, log: EventLog) -> None:
        """find() returns the event with that id, EventNotFound for an unknown id."""
        log.append(draft("a"))
        wanted = log.append(SessionStarted(project="demo", source="startup"))
        assert log.find(wanted.event_id) == wanted
        with pytest.raises(EventNotFound):
            log.find("RCE-20000101_000000_000000-zzzzzzzz")
        with pytest.raises(EventNotFound):
            log.find("not an id")

    def test_secret_is_refused_and_nothing_written(self, log: EventLog) -> None:
        """A secret-looking field refuses the append; the log stays as it was."""
        token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
        with pytest.raises(SecretRefused) as refused:
            log.append(draft("pushed", summary=_summary(done=(f"used {token}",))))
        assert refused.value.field == "summary.done[0]"
        assert token not in str(refused.value)
        assert list(log.read()) == []

    def test_redaction_replaces_and_records(self, log: EventLog) -> None:
        """With redact=True the match becomes [REDACTED:<rule>] and the event says so."""
        token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
        stored = log.append(draft(f"pushed with {token}"), redact=True)
        assert token not in stored.raw.decode()
        assert "[REDACTED:" in stored.event.message
        assert stored.event.redacted and stored.event.redacted[0].startswith("message:")

    def test_invalid_event_is_refused_before_anything_is_written(self, log: EventLog) -> None:
        """A draft that breaks its Struct's constraints never reaches the log."""
        with pytest.raises(EventInvalid):
            log.append(WorkLogged(project="../escape"))
        with pytest.raises(EventInvalid):
            log.append(draft("x" * 20000))
        with pytest.raises(EventInvalid):
            log.append_many([draft("fine"), WorkLogged(project="a/b")])
        assert list(log.read()) == []

    def test_oversized_event_is_refused(self, log: EventLog) -> None:
        """An event over the size limit is refused as a whole."""
        many = tuple("f" * 1000 for _ in range(300))
        with pytest.raises(EventInvalid, match="too large"):
            log.append(draft("big", refs=_refs(files=many)))
        assert log.head() is None


def _summary(**fields: object) -> object:
    from events.base import Summary

    return Summary(**fields)  # type: ignore[arg-type]


def _refs(**fields: object) -> object:
    from events.base import Refs

    return Refs(**fields)  # type: ignore[arg-type]


class TestFileEventLog(LogContract):
    """The contract on real files."""

    def make(self, tmp_path: Path, clock: FakeClock, node: str) -> EventLog:
        return FileEventLog(tmp_path / "events", tmp_path / "local", node=node, clock_us=clock)

    def test_files_are_sharded_by_day(self, log: EventLog, tmp_path: Path) -> None:
        """Each event lives in events/<YYYYMMDD>/ and nothing else is left behind."""
        stored = log.append(draft())
        day = names.shard_of(stored.name)
        assert (tmp_path / "events" / day / stored.name).read_bytes() == stored.raw
        assert list((tmp_path / "local" / "tmp").iterdir()) == []

    def test_stale_temp_files_are_swept_and_never_read(self, log: EventLog, tmp_path: Path) -> None:
        """Temp files of a dead writer are ignored by readers and removed by the next writer."""
        log.append(draft("one"))
        junk = tmp_path / "local" / "tmp" / "20260101_000000_000000-dead0000-000000000000.json.1.tmp"
        junk.write_bytes(b'{"partial')
        assert len(list(log.read())) == 1
        next_writer = self.make(tmp_path, FakeClock(), "node0001")
        next_writer.append(draft("two"))
        assert not junk.exists()

    def test_reopened_log_continues_the_chain(self, tmp_path: Path, fake_clock: FakeClock) -> None:
        """A second process (a new log object) chains onto the head on disk."""
        first = self.make(tmp_path, fake_clock, "node0001").append(draft("a"))
        second = self.make(tmp_path, fake_clock, "node0002").append(draft("b"))
        assert second.event.prev == hashlib.sha256(first.raw).hexdigest()
        assert second.name > first.name


    def test_an_event_landing_from_outside_is_the_next_parent(self, tmp_path: Path,
                                                                fake_clock: FakeClock) -> None:
        """A file put in today's folder by git (no lock, no hint) is seen by the next append."""
        log = self.make(tmp_path, fake_clock, "node0001")
        log.append(draft("mine"))
        other = MemoryEventLog(node="node0002", clock_us=FakeClock(fake_clock.now + 5_000_000))
        foreign = other.append(draft("theirs"))
        assert isinstance(log, FileEventLog)
        Path(log.path_of(foreign.name)).write_bytes(foreign.raw)
        mine = log.append(draft("after the merge"))
        assert mine.event.prev == hashlib.sha256(foreign.raw).hexdigest()
        assert mine.name > foreign.name
        assert log.verify().ok

    def test_a_pending_hint_is_not_trusted(self, tmp_path: Path, fake_clock: FakeClock) -> None:
        """A hint marked pending (writer killed mid-append) makes the next writer list the day."""
        log = self.make(tmp_path, fake_clock, "node0001")
        first = log.append(draft("one"))
        assert isinstance(log, FileEventLog)
        log._write_hint(first.name, "-" * 64, 0)
        assert log._head_from_hint() is None
        second = log.append(draft("two"))
        assert second.event.prev == hashlib.sha256(first.raw).hexdigest()


class TestMemoryEventLog(LogContract):
    """The contract in memory."""

    def make(self, tmp_path: Path, clock: FakeClock, node: str) -> EventLog:
        return MemoryEventLog(node=node, clock_us=clock)


def test_a_secret_in_a_note_key_is_refused_and_redacted(tmp_path: Path, fake_clock: FakeClock) -> None:
    """A secret used as a --note-json key is caught; redaction removes it from the key and the path."""
    token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
    log = MemoryEventLog(clock_us=fake_clock)
    with pytest.raises(SecretRefused) as refused:
        log.append(draft("x", note={token: 1}))
    assert token not in str(refused.value) and "note." in refused.value.field
    stored = log.append(draft("x", note={token: 1, "ok": "fine"}), redact=True)
    assert token not in stored.raw.decode()
    assert stored.event.note == {"[REDACTED:github-token]": 1, "ok": "fine"}
    assert stored.event.redacted == ("note.[REDACTED:github-token] (a key):github-token",)
