"""Property: however events arrive (in order, days apart, merged into the past) and whenever the
index catches up (including a crash between batches), it holds exactly what a rebuild holds."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.core.initialize import init_store
from continuity.recall import index
from events.codec import default_codec
from events.names import shard_of
from events.sealing import seal, sha256_hex
from events.worklog import CheckpointRecorded, WorkLogged

DAY_US = 86_400_000_000
START_US = 1_780_000_000_000_000
WORDS = ("cache", "merge", "push", "race", "index", "wal", "retry", "docs")

#: One step: append events (how many, days later), merge one into a past day, or catch the index up.
Step = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 12), st.integers(0, 2)),
    st.tuples(st.just("merge"), st.integers(0, 30), st.just(0)),
    st.tuples(st.just("catch_up"), st.just(0), st.just(0)),
    st.tuples(st.just("crash"), st.integers(1, 5), st.just(0)),
)


class Fixture:
    """A store whose events are sealed straight into day folders, at controlled times."""

    def __init__(self, root: Path) -> None:
        self.store, _ = init_store(root, project="demo", language="en")
        self.codec = default_codec()
        self.now = START_US
        self.prev: str | None = None
        self.count = 0

    def write(self, at_us: int, node: str, chained: bool) -> None:
        text = " ".join(WORDS[(self.count * k) % len(WORDS)] for k in (1, 3, 5))
        kind: Any = CheckpointRecorded if self.count % 4 == 0 else WorkLogged
        stored = seal(kind(project="demo", message=f"{text} {self.count}"), at_us=at_us, node=node,
                      prev=self.prev if chained else None, codec=self.codec)
        if chained:
            self.prev = sha256_hex(stored.raw)
        folder = Path(self.store.events_dir, shard_of(stored.name))
        folder.mkdir(exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)
        self.count += 1


class Crash(Exception):
    """The process dies here (what a commit made durable stays; the open transaction is lost)."""


def rows_of(connection: Any) -> list[tuple[Any, ...]]:
    return list(index.rows(connection))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(Step, min_size=1, max_size=12))
def test_incremental_index_equals_a_rebuild(steps: list[tuple[str, int, int]]) -> None:
    """After any sequence of appends, merges into the past, catch-ups and crashes: the index equals a rebuild."""
    folder = tempfile.mkdtemp(prefix="recall-prop-")
    batch, index.BATCH = index.BATCH, 2
    crashed: list[str | None] = []
    try:
        fixture = Fixture(Path(folder))
        log = fixture.store.open_reader()
        connection = index.connect(str(Path(folder) / "index.sqlite3"))
        for action, amount, days in steps:
            if action == "append":
                fixture.now += days * DAY_US
                for _ in range(amount):
                    fixture.now += 1_000_000
                    fixture.write(fixture.now, "nodeaaaa", chained=True)
            elif action == "merge":  # another clone's event, in a day already folded
                fixture.write(START_US + amount * 3_600_000_000 + 7, "nodebbbb", chained=False)
            elif action == "crash":  # a catch-up that dies after `amount` committed batches of 2 events
                calls: list[int] = []

                def dies(done: int, total: int | None, calls: list[int] = calls, after: int = amount) -> None:
                    calls.append(done)
                    if len(calls) >= after:
                        raise Crash

                try:
                    index.catch_up(connection, log, progress=dies)
                except Crash:
                    crashed.append(index.position_of(connection))
            else:
                index.catch_up(connection, log)
        index.catch_up(connection, log)
        fresh = index.connect(":memory:")
        index.catch_up(fresh, log, rebuild=True)
        assert rows_of(connection) == rows_of(fresh)
        assert index.position_of(connection) == index.position_of(fresh)
        connection.close()
    finally:
        index.BATCH = batch
        shutil.rmtree(folder)


def test_a_batch_boundary_mid_day_is_a_consistent_prefix(tmp_path: Path, monkeypatch: Any) -> None:
    """With tiny batches, every commit leaves rows and position that a later catch-up continues exactly."""
    monkeypatch.setattr(index, "BATCH", 3)
    fixture = Fixture(tmp_path)
    for i in range(20):
        fixture.write(START_US + i * (DAY_US // 7), "nodeaaaa", chained=True)
    log = fixture.store.open_reader()
    path = str(tmp_path / "index.sqlite3")
    connection = index.connect(path)
    index.catch_up(connection, log)
    seen = index.position_of(connection)
    fixture.write(START_US + 21 * (DAY_US // 7), "nodeaaaa", chained=True)
    outcome = index.catch_up(connection, log)
    assert outcome.read == 1 and not outcome.rebuilt and index.position_of(connection) != seen
    fresh = index.connect(":memory:")
    index.catch_up(fresh, log, rebuild=True)
    assert rows_of(connection) == rows_of(fresh)


def test_a_catch_up_that_dies_between_batches_leaves_a_prefix(tmp_path: Path, monkeypatch: Any) -> None:
    """Dying after two committed batches of three: six events indexed, position at the sixth; then the rest."""
    monkeypatch.setattr(index, "BATCH", 3)
    fixture = Fixture(tmp_path)
    for i in range(10):
        fixture.write(START_US + i * 1_000_000, "nodeaaaa", chained=True)
    log = fixture.store.open_reader()
    connection = index.connect(str(tmp_path / "index.sqlite3"))

    def dies(done: int, total: int | None) -> None:
        if done >= 6:
            raise Crash

    with pytest.raises(Crash):
        index.catch_up(connection, log, progress=dies)
    names = [name for name, _ in log.read_raw()]
    assert index.position_of(connection) == names[5] and len(rows_of(connection)) == 6
    outcome = index.catch_up(connection, log)
    assert (outcome.read, outcome.rebuilt) == (4, False)
    fresh = index.connect(":memory:")
    index.catch_up(fresh, log, rebuild=True)
    assert rows_of(connection) == rows_of(fresh)
