"""Reading a long history: what needs the newest events reads only those, and listings are never held whole."""

from __future__ import annotations

import io
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest

from continuity.cli import main
from continuity.core.store import Store, find_store
from events import filelog
from events.durable import FileOps
from events.filelog import FileEventLog
from events.memlog import MemoryEventLog
from events.sealing import seal, sha256_hex
from events.worklog import CheckpointRecorded, WorkLogged
from tests.conftest import FakeClock

DAYS, PER_DAY = 4, 300
DAY_US = 86_400_000_000


class NoSync(FileOps):
    """The real file operations without fsync: a long fixture history, written fast."""

    def fsync(self, fd: int) -> None:
        pass


def fill(project: Path, days: int) -> FileEventLog:
    """`days` day folders of PER_DAY events each (every tenth a checkpoint) in the project's store."""
    store = find_store(root=str(project))
    clock = FakeClock(1_700_000_000_000_000)
    log = FileEventLog(store.events_dir, store.local_dir, node=store.node(), clock_us=clock, fs=NoSync())
    for day in range(days):
        log.append_many([
            CheckpointRecorded(project="demo", message=f"checkpoint {day}.{i}") if i % 10 == 0
            else WorkLogged(project="demo", message=f"edited {day}.{i} \u202e")
            for i in range(PER_DAY)
        ])
        clock.advance(DAY_US)
    return log


@pytest.fixture
def long_store(project: Path) -> Path:
    """The project with DAYS day folders of PER_DAY events each."""
    fill(project, DAYS)
    return project


@contextmanager
def counting_reads() -> Iterator[list[str]]:
    """Every event file the file log reads, by path, while the block runs."""
    read, real = [], filelog.read_event_file

    def counted(path: str) -> bytes:
        read.append(path)
        return real(path)

    filelog.read_event_file = counted
    try:
        yield read
    finally:
        filelog.read_event_file = real


def run(argv: list[str], out: Path) -> int:
    """main(argv) in process, its stdout into a real file (a capture in memory would be counted as its memory)."""
    saved = sys.stdout
    with open(out, "w", encoding="utf-8") as sys.stdout:
        try:
            return main(argv)
        finally:
            sys.stdout = saved


def peak_of(body: Callable[[], int]) -> int:
    """The most memory Python held at once while `body` ran, in bytes."""
    tracemalloc.start()
    try:
        assert body() == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_last_and_tail_read_only_the_newest_events(long_store: Path, tmp_path: Path) -> None:
    """`events list --last 3`, `events tail -n 5` and the MCP `events` tool read a handful of files, not the log."""
    assert run(["events", "list", "--json"], tmp_path / "all.json") == 0
    every = orjson.loads((tmp_path / "all.json").read_bytes())["events"]
    assert len(every) == DAYS * PER_DAY

    with counting_reads() as read:
        assert run(["events", "list", "--last", "3", "--json"], tmp_path / "last.json") == 0
    assert orjson.loads((tmp_path / "last.json").read_bytes())["events"] == every[-3:]
    assert len(read) == 3 + 1  # and the one before them: a second file of the oldest kept is left out (names.TWIN)

    with counting_reads() as read:
        assert run(["events", "list", "--last", "2", "--kind", "checkpoint.recorded", "--json"],
                   tmp_path / "kind.json") == 0
    checkpoints = [event for event in every if event["kind"] == "checkpoint.recorded"]
    assert orjson.loads((tmp_path / "kind.json").read_bytes())["events"] == checkpoints[-2:]
    assert len(read) == 20 + 1  # back to the second-newest checkpoint (ten events apart), and the one before it

    with counting_reads() as read:
        assert run(["events", "tail", "-n", "5", "--json"], tmp_path / "tail.json") == 0
    tail = [orjson.loads(line) for line in (tmp_path / "tail.json").read_bytes().splitlines()]
    assert [event["event_id"] for event in tail] == [event["event_id"] for event in every[-5:]]
    assert len(read) <= 6 + 5  # where to start (six names back), then the five shown

    from continuity.adapters.mcp import tools  # noqa: F401  (registers the tools)
    from continuity.adapters.mcp.registry import call

    with counting_reads() as read:
        answer = call("events", {"limit": 4}, root=str(long_store))
    assert [event["event_id"] for event in answer["events"]] == [event["event_id"] for event in every[-4:]]
    assert len(read) == 4 + 1


def test_last_reads_back_across_day_folders_and_warns_of_what_it_skipped(long_store: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`--last` past the newest day folder reads on into older ones, in order; an unreadable event is named."""
    store = find_store(root=str(long_store))
    newest_day = sorted(Path(store.events_dir).iterdir())[-1]
    broken = sorted(newest_day.iterdir())[-2]
    broken.write_bytes(b"{not json")
    assert run(["events", "list", "--last", str(PER_DAY + 5)], tmp_path / "last.txt") == 0
    lines = (tmp_path / "last.txt").read_text().splitlines()
    assert run(["events", "list"], tmp_path / "all.txt") == 0
    assert lines == (tmp_path / "all.txt").read_text().splitlines()[-(PER_DAY + 5):]
    assert broken.name in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["events", "list"], ["events", "list", "--json"]])
def test_a_whole_listing_is_printed_as_it_is_read(long_store: Path, tmp_path: Path, argv: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`events list` (text or --json) holds a few events at a time: its peak is a small part of what it prints."""
    from continuity.cli import output

    monkeypatch.setattr(output, "SPOOL_BYTES", 64 << 10, raising=False)  # the JSON spool goes to a file past 64 KiB
    out = tmp_path / "listing"
    # modules loaded, caches filled: the whole listing once (the secret guard compiles the rules the messages it
    # meets call for, once per process, and a listing's first lines need not call for them all)
    assert run([*argv, "--root", str(long_store)], out) == 0
    small = peak_of(lambda: run([*argv, "--limit", "10", "--root", str(long_store)], out))
    peak = peak_of(lambda: run([*argv, "--root", str(long_store)], out))
    printed = out.stat().st_size
    # held whole, the listing alone is several times the bound; what a listing holds whatever its length (the reader's
    # day listing, a batch of lines checked for secrets) is a few tens of kB
    assert peak < small + printed / 2, (small, peak, printed)


def test_a_streamed_json_listing_is_byte_for_byte_the_whole_document(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """emit_listing prints what emit prints for the same document: nesting, empty containers, escapes, no items."""
    from continuity.cli import output

    monkeypatch.setattr(output, "SPOOL_BYTES", 16)
    items = [{"a": 1, "b": [], "c": {}, "d": {"e": [1, {"f": "x\u202ey\u0085"}]}}, {"deep": [[[["z"]]]]}, {}]
    for given in (items, items[:1], []):
        head = {"ok": True, "count": len(given), "warnings": ["w\u2028"]}
        whole, streamed = io.BytesIO(), io.BytesIO()
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(whole))
        output.Output(as_json=True).emit({**head, "items": given})
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(streamed))
        output.Output(as_json=True).emit_listing(iter(given), "items",
                                                 lambda count, head=head: {**head, "count": count})
        assert streamed.getvalue() == whole.getvalue()


def test_verify_holds_a_window_of_the_log_not_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """verify's peak memory is the same for a log four times longer: it keeps the latest events, not every name."""
    from events import verify

    monkeypatch.setattr(verify, "WINDOW", 64, raising=False)
    peaks = []
    for days in (1, 4):
        project = tmp_path / f"days{days}"
        project.mkdir()
        assert main(["init", "--project", "demo", "--root", str(project)]) == 0
        log = fill(project, days)
        log.verify()  # modules loaded, the codec built

        def check(log: FileEventLog = log, days: int = days) -> int:
            report = log.verify()
            assert report.ok and report.events == days * PER_DAY
            return 0

        peaks.append(peak_of(check))
    assert peaks[1] < peaks[0] * 1.5, peaks  # holding every name, four times the events took 3.7x the memory


def merged_log(gap: int) -> MemoryEventLog:
    """Two clones of one root, merged: node b wrote, `gap` events of node a later wrote again from its
    old head (a merge), a second child of the root from node a (a forgery) and an event whose parent is gone."""
    clock = FakeClock(1_700_000_000_000_000)
    a = MemoryEventLog(node="nodeaaaa", clock_us=clock)
    b = MemoryEventLog(node="nodebbbb", clock_us=clock)
    root = a.append(WorkLogged(project="demo", message="root"))
    b.put_raw(root.name, root.raw)
    clock.advance(1)
    first_b = b.append(WorkLogged(project="demo", message="b wrote"))
    a.append_many([WorkLogged(project="demo", message=f"a {i}") for i in range(gap)])
    clock.advance(10_000_000)
    later_b = b.append(WorkLogged(project="demo", message="b again"))
    for stored in (first_b, later_b):
        a.put_raw(stored.name, stored.raw)
    forged = seal(WorkLogged(project="demo", message="replayed"), at_us=clock() + 5, node="nodeaaaa",
                  prev=sha256_hex(root.raw), codec=a.codec)
    orphan = seal(WorkLogged(project="demo", message="orphan"), at_us=clock() + 9, node="nodecccc",
                  prev="0" * 64, codec=a.codec)
    for stored in (forged, orphan):
        a.put_raw(stored.name, stored.raw)
    a.put_raw("20231114_221320_000010-nodecccc-0123456789ab.json", b"{}")  # a stray under an event's name
    return a


@pytest.mark.parametrize("window", [1, 3, 50])
def test_verify_finds_parents_further_back_than_its_window(window: int) -> None:
    """A `prev` beyond verify's window is found by a second pass: forks, forgeries and problems as with no window."""
    from events.verify import verify_records

    log = merged_log(gap=40)
    whole = verify_records(lambda: log.read_raw(include_malformed=True), log.codec, window=10_000)
    assert len(whole.forks) == 1 and len(whole.forks[0].children) == 3
    assert [problem.reason.split(":")[0] for problem in whole.problems] == [
        "edited bytes", "forged or replayed", "missing predecessor"]
    windowed = verify_records(lambda: log.read_raw(include_malformed=True), log.codec, window=window)
    assert windowed == whole


def test_what_waits_to_be_pushed_is_counted_a_day_folder_at_a_time(long_store: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone that never synced has its whole history waiting: `work status` and `sync --status` count it, one
    day folder listed at a time, never holding every name."""
    from continuity.sync import health

    store = find_store(root=str(long_store))
    listed: list[str] = []
    real = health._listing

    def counted(store: Store, day: str) -> list[str]:
        listed.append(day)
        return real(store, day)

    monkeypatch.setattr(health, "_listing", counted)
    in_order = [path.name for path in sorted(Path(store.events_dir).rglob("*.json"))]
    pending = iter(health.waiting(store, store.node(), None))
    assert next(pending) == in_order[0]
    assert len(listed) == 1
    assert health.count_and_first(pending) == (len(in_order) - 1, in_order[1])
    assert len(listed) == DAYS

    assert run(["sync", "--status", "--json", "--root", str(long_store)], tmp_path / "sync.json") == 0
    report = orjson.loads((tmp_path / "sync.json").read_bytes())
    assert report["waiting"] == DAYS * PER_DAY
    assert report["oldest_waiting_at"] == "2023-11-14T22:13:20.000000Z"


def test_verify_takes_in_events_that_land_between_its_passes(project: Path) -> None:
    """An event synced in between verify's two passes whose `prev` is also beyond the window is found (a third pass
    keeps its parent too): the second pass called it a missing predecessor, exit 1 for an intact log."""
    from events.verify import verify_records

    store = find_store(root=str(project))
    clock = FakeClock(1_700_000_000_000_000)
    log = FileEventLog(store.events_dir, store.local_dir, node="nodeaaaa", clock_us=clock, fs=NoSync())
    chain = log.append_many([WorkLogged(project="demo", message=f"a {i}") for i in range(20)])
    clock.advance(1_000)
    late = [seal(WorkLogged(project="demo", message=f"from {node}"), at_us=clock() + step, node=node,
                 prev=sha256_hex(parent.raw), codec=log.codec)
            for step, node, parent in ((1, "nodebbbb", chain[0]), (2, "nodecccc", chain[1]))]
    day = Path(store.events_dir) / chain[0].name[:8]
    (day / late[0].name).write_bytes(late[0].raw)  # already there: its far parent makes verify pass twice
    passes = []

    def read() -> Iterator[tuple[str, bytes]]:
        passes.append(len(passes))
        if len(passes) == 2:  # a sync lands another clone's event, written long ago, between the passes
            (day / late[1].name).write_bytes(late[1].raw)
        return log.read_raw(include_malformed=True)

    report = verify_records(read, log.codec, window=3)
    assert report.problems == [] and report.events == 22 and len(report.forks) == 2
