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


GATED = textwrap.dedent(
    """
    import os, sys, time
    go = sys.argv[1]
    while not os.path.exists(go):
        time.sleep(0.0005)
    os.execv(sys.executable, [sys.executable, "-m", "continuity", *sys.argv[2:]])
    """
)


def test_writers_starting_together_on_a_new_host_share_one_node_id(tmp_path: Path) -> None:
    """The node file names another host (a store carried to a new machine or container): each writer that started
    at once made an id of its own and all but the last were lost, so one machine wrote under several nodes. They
    agree on one id now, on the plain path (`log`) and the typed one (`checkpoint`) alike."""
    import os

    from continuity.core.initialize import init_store

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    for round_ in range(6):
        root = tmp_path / f"p{round_}"
        root.mkdir()
        init_store(root, project="demo", language=None)
        local = root / ".agent" / "runtime-continuity" / "local"
        (local / "node").write_text("abcd1234 some-other-host\n")
        go = tmp_path / f"go{round_}"
        writers = [subprocess.Popen([sys.executable, "-c", GATED, str(go),
                                     *(["log", "-m", f"w{n}"] if n % 2 else ["checkpoint", "--next", f"w{n}"])],
                                    cwd=root, env=env, stdout=subprocess.DEVNULL)
                   for n in range(6)]
        go.touch()
        assert [writer.wait(timeout=120) for writer in writers] == [0] * 6
        node = (local / "node").read_text().split()[0]
        events = sorted((root / ".agent" / "runtime-continuity" / "events").rglob("*.json"))
        assert len(events) == 6 and node != "abcd1234"
        assert {path.name.split("-")[1] for path in events} == {node}, (round_, node, [p.name for p in events])
