"""Concurrent writers: real processes appending to one store at once."""

from __future__ import annotations

import hashlib
import itertools
import subprocess
import sys
import textwrap
from pathlib import Path

from events.filelog import FileEventLog
from tests.helpers import REPO

WRITER = textwrap.dedent(
    """
    import sys, time, os
    from pathlib import Path
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged
    base, who, count, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    log = FileEventLog(base / "events", base / "local", node="node0001",
                       clock_us=lambda: time.time_ns() // 1000)
    while not go.exists():
        time.sleep(0.001)
    for i in range(count):
        log.append(WorkLogged(project="demo", agent_id=who, message=f"{who} {i}"))
    """
)


def test_eight_processes_append_a_hundred_each(tmp_path: Path) -> None:
    """8 x 100 concurrent appends: 800 events, strict order, one linear chain, verify ok."""
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), f"w{n}", "100", str(go)], cwd=REPO
        )
        for n in range(8)
    ]
    go.touch()
    assert [w.wait(timeout=120) for w in writers] == [0] * 8

    log = FileEventLog(tmp_path / "events", tmp_path / "local", node="node0001", clock_us=lambda: 0)
    stored = list(log.read())
    assert len(stored) == 800
    names = [s.name for s in stored]
    assert names == sorted(names) and len(set(names)) == 800
    assert len({s.event_id for s in stored}) == 800
    assert stored[0].event.prev is None
    for before, after in itertools.pairwise(stored):
        assert after.event.prev == hashlib.sha256(before.raw).hexdigest()
        assert after.event.created_at > before.event.created_at
    for n in range(8):
        mine = [s.event.message for s in stored if s.event.agent_id == f"w{n}"]
        assert mine == [f"w{n} {i}" for i in range(100)]  # each writer's order is kept
    report = log.verify()
    assert report.ok and report.events == 800 and report.roots == 1 and not report.forks
