"""Issue 15's timeline figures: `continuity timeline` against the floor of listing, reading and decoding every event.

    .venv/bin/python benchmarks/bench_timeline.py [--sizes 100000] [--rounds N]

Stores are made once under $TMPDIR/continuity-bench/timeline-<size> (events written without
fsync: fixtures, not the write path): one event every 30 s, four agents on three hosts, a
session every 200 events, a checkpoint every 20, a task transition every 500, a handoff every
1,000, a snapshot every 2,000, an archive and a host switch every 5,000. The floor is
bench_projections' rebuild floor (list each day folder, read and decode every event file, in
process); `timeline` runs as a new process writing its page to a scratch file. Medians of
interleaved runs, their ratio, and the page's size (goal: under 2 MB at 100,000 events).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import (  # noqa: E402
    BENCH_HOME,
    EXE,
    START_US,
    STEP_US,
    decode_floor,
    env_for,
)
from benchmarks.common import cached_store, interleaved, time_command  # noqa: E402

AGENTS = (("ann", "claude-code"), ("bob", "codex"), ("carl", "cursor"), ("dana", "claude-code"))


def generate(size: int) -> Path:
    """A store with `size` events of every marked kind (reused when already built)."""
    from events.archive import ArchiveCreated, ArchivedState, HostSwitched
    from events.base import Event, Refs, Summary
    from events.handoff import HandoffCreated
    from events.session import SessionStarted
    from events.task import TaskUpdated
    from events.team import SnapshotTaken
    from events.worklog import CheckpointRecorded, WorkLogged


    def draft_of(i: int) -> Event:
        session = i // 200
        agent, host = AGENTS[session % len(AGENTS)]
        envelope = {"project": "bench", "agent_id": agent, "host": host, "session_id": f"S{session}"}
        if i % 5000 == 4998:
            return ArchiveCreated(**envelope, gate="agent", reason=f"archive {i}",
                                  state=ArchivedState(next=(f"step {i}",), done=("a", "b")))
        if i % 5000 == 4999:
            return HostSwitched(**envelope, from_host=host, to_host="codex", reason="continue elsewhere")
        if i % 2000 == 1500:
            return SnapshotTaken(**envelope, team="core", agent=agent, task=f"task{i // 2000}",
                                 objective=f"objective {i}", next_actions=(f"next {i}",))
        if i % 1000 == 700:
            return HandoffCreated(**envelope, handoff_id=f"H{i}", to_agent="bob", message=f"take over {i}")
        if i % 500 == 300:
            return TaskUpdated(**envelope, task_id=f"T{i // 500}", status="in_progress", from_status="queued",
                               version=2)
        if i % 200 == 0:
            return SessionStarted(**envelope, source="startup")
        if i % 20 == 0:
            return CheckpointRecorded(**envelope, message=f"checkpoint {i}",
                                      summary=Summary(done=(f"item {i}",), next=(f"next {i}",)))
        return WorkLogged(**envelope, message=f"edited file {i % 97}", refs=Refs(files=(f"src/module_{i % 97}.py",)))

    def drafts() -> Iterator[Event]:
        for i in range(size):
            yield draft_of(i)

    return cached_store(BENCH_HOME / f"timeline-{size}", drafts, start_us=START_US, step_us=STEP_US)


def floor_of(root: Path) -> float:
    """List, read and decode every event file (bench_projections' rebuild floor), in seconds."""
    return decode_floor(root)


def in_process(root: Path, out: str) -> float:
    """The command's work without the process: read the page model, render it, write it; in seconds."""
    from continuity.core.store import Store
    from continuity.timeline.service import timeline

    start = time.perf_counter()
    timeline(Store(root), "bench", out=out)
    return time.perf_counter() - start


def split_of(root: Path) -> tuple[float, float, int, str | None]:
    """In process: seconds reading the page model, seconds rendering it, marks, summary level."""
    from continuity.core.store import Store
    from continuity.timeline.read import read_page
    from continuity.timeline.render import render

    start = time.perf_counter()
    page = read_page(Store(root), "bench")
    middle = time.perf_counter()
    render(page)
    return middle - start, time.perf_counter() - middle, len(page.marks), page.summarized


def bench(size: int, rounds: int, home: Path) -> list[str]:
    root = generate(size)
    env = env_for(home)
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "timeline.html")
        argv = [EXE, "timeline", "--root", str(root), "--out", out]
        medians = interleaved({"floor": lambda: floor_of(root), "timeline": lambda: time_command(argv, env=env),
                               "in process": lambda: in_process(root, out)}, rounds)
        page_bytes = os.path.getsize(out)
    reading, rendering, marks, level = split_of(root)
    ratio = medians["timeline"] / medians["floor"]
    return [
        f"timeline of {size:,} events (new process): {medians['timeline']:.2f} s vs floor (list+read+decode, "
        f"in process) {medians['floor']:.2f} s -> {ratio:.2f}x (goal <= 3x)",
        f"  in process (read, render, write; no interpreter start): {medians['in process']:.2f} s -> "
        f"{medians['in process'] / medians['floor']:.2f}x the floor",
        f"  page: {page_bytes:,} bytes ({page_bytes / 2**20:.2f} MiB; goal < 2 MB), {marks:,} marks, "
        f"{'one per ' + level if level else 'one per event'}",
        f"  in process: reading the page model {reading:.2f} s, rendering {rendering:.2f} s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    compile_project()
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    for size in (int(size) for size in args.sizes.split(",")):
        for line in bench(size, args.rounds, home):
            print(line, flush=True)


if __name__ == "__main__":
    main()
