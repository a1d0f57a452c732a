"""verify names each kind of damage: edited bytes, deleted events, forged files, junk."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec
import pytest

from events import clock, names
from events.codec import default_codec
from events.filelog import FileEventLog
from events.memlog import MemoryEventLog
from events.worklog import WorkLogged
from tests.conftest import FakeClock

CODEC = default_codec()


def make_log(tmp_path: Path, clock_: FakeClock, node: str = "node0001") -> FileEventLog:
    return FileEventLog(tmp_path / "events", tmp_path / "local", node=node, clock_us=clock_)


def path_of(log: FileEventLog, name: str) -> Path:
    return Path(log.path_of(name))


@pytest.fixture
def chain(tmp_path: Path, fake_clock: FakeClock) -> tuple[FileEventLog, list[str]]:
    log = make_log(tmp_path, fake_clock)
    stored = []
    for i in range(6):
        fake_clock.advance(1_000_000)
        stored.append(log.append(WorkLogged(project="demo", message=f"step {i}")).name)
    assert log.verify().ok
    return log, stored


def forge(after_raw: bytes, at_us: int, node: str, message: str) -> tuple[str, bytes]:
    """A well-formed event file chained onto `after_raw`, as a forger would write it."""
    stamp = clock.stamp(at_us)
    event = WorkLogged(
        project="demo", message=message, event_id=names.event_id(stamp, node),
        created_at=clock.iso(at_us), prev=hashlib.sha256(after_raw).hexdigest(),
    )
    raw = CODEC.encode(event)
    return names.file_name(stamp, node, hashlib.sha256(raw).hexdigest()), raw


def write_file(log: FileEventLog, name: str, raw: bytes) -> None:
    target = path_of(log, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(raw)


def test_an_edited_byte_is_named(chain: tuple[FileEventLog, list[str]]) -> None:
    """Flipping one byte of a middle event: verify names that event, edited bytes."""
    log, stored = chain
    target = path_of(log, stored[2])
    os.chmod(target, 0o644)
    raw = bytearray(target.read_bytes())
    index = raw.index(b"step 2") + 5
    raw[index] = ord("X")
    target.write_bytes(bytes(raw))
    report = log.verify()
    assert not report.ok
    assert report.first_problem is not None
    assert report.first_problem.name == stored[2]
    assert "edited bytes" in report.first_problem.reason
    assert len(report.problems) == 1  # its successor is not blamed


def test_an_edited_head_is_named(chain: tuple[FileEventLog, list[str]]) -> None:
    """Even the newest event, which nothing follows yet, is caught when edited."""
    log, stored = chain
    target = path_of(log, stored[-1])
    os.chmod(target, 0o644)
    target.write_bytes(target.read_bytes().replace(b"step 5", b"step 9"))
    report = log.verify()
    assert [p.name for p in report.problems] == [stored[-1]]


def test_a_deleted_middle_event_is_named(chain: tuple[FileEventLog, list[str]]) -> None:
    """Deleting an event: verify names its successor, whose predecessor is missing."""
    log, stored = chain
    path_of(log, stored[3]).unlink()
    report = log.verify()
    assert report.first_problem is not None
    assert report.first_problem.name == stored[4]
    assert "missing predecessor" in report.first_problem.reason


def test_a_forged_inserted_file_is_named(chain: tuple[FileEventLog, list[str]], fake_clock: FakeClock) -> None:
    """A forged, well-formed event slipped between two real ones is named as forged."""
    log, stored = chain
    parent_raw = path_of(log, stored[2]).read_bytes()
    parent_us = clock.parse_stamp(names.parse_name(stored[2]).stamp)  # type: ignore[union-attr]
    name, raw = forge(parent_raw, parent_us + 10, "node0001", "forged")
    write_file(log, name, raw)
    report = log.verify()
    assert [p.name for p in report.problems] == [name]
    assert "forged" in report.problems[0].reason


def test_a_forged_file_with_a_bad_prev_is_named(chain: tuple[FileEventLog, list[str]]) -> None:
    """A forged event pointing at no real event is named for its missing predecessor."""
    log, stored = chain
    parent_us = clock.parse_stamp(names.parse_name(stored[1]).stamp)  # type: ignore[union-attr]
    name, raw = forge(b"no such event", parent_us + 10, "node0001", "forged")
    write_file(log, name, raw)
    report = log.verify()
    assert [p.name for p in report.problems] == [name]
    assert "missing predecessor" in report.problems[0].reason


def test_undecodable_and_renamed_files_are_named(chain: tuple[FileEventLog, list[str]]) -> None:
    """Junk bytes under an event name, and a real event copied under another stamp."""
    log, stored = chain
    junk = b"{ this is not json"
    junk_name = names.file_name("20990101_000000_000000", "node0001", hashlib.sha256(junk).hexdigest())
    write_file(log, junk_name, junk)
    copied = path_of(log, stored[1]).read_bytes()
    moved = names.file_name("20990101_000000_000001", "node0009", hashlib.sha256(copied).hexdigest())
    write_file(log, moved, copied)
    reasons = {p.name: p.reason for p in log.verify().problems}
    assert reasons[junk_name].startswith("undecodable")
    assert reasons[moved].startswith("renamed or forged")


def test_unknown_type_and_malformed_names_are_reported(chain: tuple[FileEventLog, list[str]]) -> None:
    """A type from a newer writer and a stray file are each reported, not ignored."""
    log, stored = chain
    head_raw = path_of(log, stored[-1]).read_bytes()
    at_us = clock.parse_stamp(names.parse_name(stored[-1]).stamp) + 5  # type: ignore[union-attr]
    stamp = clock.stamp(at_us)
    future = msgspec.json.encode({
        "kind": "future.happened", "v": 1, "project": "demo", "created_at": clock.iso(at_us),
        "event_id": names.event_id(stamp, "node0002"), "prev": hashlib.sha256(head_raw).hexdigest(),
    })
    future_name = names.file_name(stamp, "node0002", hashlib.sha256(future).hexdigest())
    write_file(log, future_name, future)
    write_file(log, stored[0].replace(".json", "-copy.json"), b"{}")
    report = log.verify()
    reasons = [p.reason for p in report.problems]
    assert "unknown type: future.happened" in reasons
    assert "malformed file name" in reasons
    assert report.unknown_types == {"future.happened": 1}
    # readers skip both without failing
    assert len(list(log.read(on_error=lambda name, error: None))) == 6


@pytest.mark.parametrize("version", [2, 999, 2**63, 2**64])
def test_a_known_kind_of_a_newer_version_is_reported_and_read_past(
        chain: tuple[FileEventLog, list[str]], version: int) -> None:
    """`"v": 999` on a kind this release knows at v1 was decoded as v1: folded (its fields may mean something else
    to the writer), and verify said intact. Now it is what an unknown kind is: reported, and read past."""
    log, stored = chain
    head_raw = path_of(log, stored[-1]).read_bytes()
    at_us = clock.parse_stamp(names.parse_name(stored[-1]).stamp) + 5  # type: ignore[union-attr]
    _, raw = forge(head_raw, at_us, "node0002", "from a newer writer")
    assert raw.endswith(b',"v":1}')
    raw = raw[:-len(b'1}')] + b'%d}' % version
    name = names.file_name(clock.stamp(at_us), "node0002", hashlib.sha256(raw).hexdigest())
    write_file(log, name, raw)
    report = log.verify()
    assert f"unknown type: work.logged v{version}" in [p.reason for p in report.problems]
    assert report.unknown_types == {f"work.logged v{version}": 1}
    errors: list[str] = []
    assert len(list(log.read(on_error=lambda name, error: errors.append(str(error))))) == 6
    assert errors == [f"unknown version {version} of event type 'work.logged' (written by a newer version?)"]


def test_merged_histories_are_forks_not_errors(tmp_path: Path, fake_clock: FakeClock) -> None:
    """Two nodes that both continued one event: reported as a fork (a merge), verify ok."""
    left = MemoryEventLog(node="aaaaaaaa", clock_us=fake_clock)
    base = left.append(WorkLogged(project="demo", message="base"))
    right = MemoryEventLog(node="bbbbbbbb", clock_us=fake_clock)
    right.put_raw(base.name, base.raw)
    fake_clock.advance(10)
    a = left.append(WorkLogged(project="demo", message="left"))
    b = right.append(WorkLogged(project="demo", message="right"))
    left.put_raw(b.name, b.raw)
    fake_clock.advance(10)
    c = left.append(WorkLogged(project="demo", message="after merge"))
    assert c.event.prev == hashlib.sha256(max((a, b), key=lambda s: s.name).raw).hexdigest()
    report = left.verify()
    assert report.ok, report.problems
    assert report.nodes == ["aaaaaaaa", "bbbbbbbb"]
    assert len(report.forks) == 1
    assert report.forks[0].parent == base.event_id
    assert sorted(report.forks[0].children) == sorted([a.event_id, b.event_id])
