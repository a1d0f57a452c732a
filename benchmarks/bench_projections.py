"""Issue 3's figures: resume-bundle across log sizes, catch-up, full rebuild, peak memory.

    .venv/bin/python benchmarks/bench_projections.py [--sizes 1000,100000,1000000] [--rounds N]

Stores are generated once under $TMPDIR/continuity-bench/<size> (events written without
fsync: this builds fixtures, it does not measure the write path) and reused by later runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.common import cached_store, interleaved, time_command  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
BENCH_HOME = Path(tempfile.gettempdir(), "continuity-bench")
STEP_US = 30_000_000  # one event every 30 s: a million events span about a year of days
START_US = 1_700_000_000_000_000


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(home)
    return env


def generate(size: int) -> Path:
    """A store with `size` events (reused when already built)."""
    from events.archive import ArchiveCreated, ArchivedState
    from events.base import Event, Refs, Summary
    from events.session import SessionStarted
    from events.worklog import CheckpointRecorded, WorkLogged


    def drafts() -> Iterator[Event]:
        for i in range(size):
            yield draft_of(i)

    def draft_of(i: int) -> Event:
        envelope = {"project": "bench", "host": "claude-code", "session_id": f"S{i // 200}", "run_id": f"R{i // 1000}"}
        if i % 5000 == 4999:
            return ArchiveCreated(**envelope, gate="agent", reason=f"archive {i}",
                                  state=ArchivedState(next=(f"step {i}",), done=("a", "b")))
        if i % 200 == 0:
            return SessionStarted(**envelope, source="startup")
        if i % 20 == 0:
            return CheckpointRecorded(**envelope, message=f"checkpoint {i}",
                                      summary=Summary(done=(f"item {i}",), next=(f"next {i}",)))
        return WorkLogged(**envelope, message=f"edited file {i % 97}", refs=Refs(files=(f"src/module_{i % 97}.py",)))

    return cached_store(BENCH_HOME / str(size), drafts, start_us=START_US, step_us=STEP_US)


def current_projection(root: Path, home: Path) -> None:
    """Bring the store's projection up to date (so resume-bundle answers from it)."""
    subprocess.run([EXE, "rebuild", "--root", str(root)], env=env_for(home), check=True, capture_output=True)


def bench_resume(sizes: list[int], rounds: int, home: Path) -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory() as small:
        env = env_for(home)
        time_command([EXE, "init", "--project", "hook"], cwd=small, env=env)
        cases = {"log": lambda: time_command([EXE, "log", "-m", "edited", "--agent", "a"], cwd=small, env=env)}
        for size in sizes:
            root = generate(size)
            current_projection(root, home)
            cases[f"resume-{size}"] = (
                lambda root=root: time_command([EXE, "resume-bundle", "--root", str(root)], env=env)
            )
        medians = interleaved(cases, rounds)
    floor = medians["log"]
    lines.append(f"hook path (continuity log, new process): {floor * 1000:.1f} ms")
    for size in sizes:
        value = medians[f"resume-{size}"]
        lines.append(f"resume-bundle at {size:>9,} events: {value * 1000:.1f} ms -> {value / floor:.2f}x hook path "
                     f"(goal <= 2x, flat)")
    return lines


def bench_catch_up(sizes: list[int], rounds: int) -> list[str]:
    from continuity.core.store import Store
    from continuity.readside.writers import refresh
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    results = {}
    for size in sizes:
        store = Store(generate(size))
        refresh(store, rebuild=True)  # the saved fold as this version writes it
        log = FileEventLog(store.events_dir, store.local_dir, node=store.node(),
                           clock_us=lambda: START_US + 10**13)
        samples = []
        for _ in range(rounds):
            log.append_many([WorkLogged(project="bench", message=f"new {i}") for i in range(10)])
            start = time.perf_counter()
            outcome = refresh(store)
            samples.append(time.perf_counter() - start)
            assert outcome.folded == 10 and not outcome.rebuilt, outcome.warnings
        results[size] = sorted(samples)[len(samples) // 2]
    smallest = min(sizes)
    return [
        f"catch-up after 10 new events at {size:>9,} events: {results[size] * 1000:.2f} ms -> "
        f"{results[size] / results[smallest]:.2f}x the {smallest:,}-event log (goal <= 1.2x for 100k vs 1k)"
        for size in sizes
    ]


def decode_floor(root: Path) -> float:
    """List, read and decode every event file of the store at `root`, in seconds (the rebuild's floor)."""
    from continuity.core.store import Store
    from events.codec import default_codec
    from events.filelog import list_days

    store, codec = Store(str(root)), default_codec()
    start = time.perf_counter()
    for day in list_days(store.events_dir):
        folder = os.path.join(store.events_dir, day)
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as handle:
                codec.decode(handle.read())
    return time.perf_counter() - start


def bench_rebuild(size: int) -> list[str]:
    from continuity.core.store import Store
    from continuity.readside.writers import refresh

    root = generate(size)
    store = Store(str(root))

    def floor() -> float:
        return decode_floor(root)

    def ours() -> float:
        start = time.perf_counter()
        refresh(store, rebuild=True)
        return time.perf_counter() - start

    medians = interleaved({"floor": floor, "ours": ours}, 3)
    return [f"full rebuild of {size:,} events: {medians['ours']:.2f} s vs floor (list+read+decode) "
            f"{medians['floor']:.2f} s -> {medians['ours'] / medians['floor']:.2f}x (goal <= 2x)"]


def peak_memory(size: int) -> int:
    """Peak resident memory (KiB) of a process that rebuilds the store of `size` events.

    Read from the child's own /proc/self/status (VmHWM): getrusage's ru_maxrss survives
    exec on Linux, so a child of this (large) benchmark process would report the parent's peak.
    """
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from continuity.readside.writers import refresh; "
            f"from continuity.core.store import Store; refresh(Store({str(generate(size))!r}), rebuild=True); "
            "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env=env_for(BENCH_HOME / "home"))
    return int(result.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    compile_project()
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    for size in sizes:
        generate(size)
    for line in bench_resume(sizes, args.rounds, home):
        print(line, flush=True)
    for line in bench_catch_up(sizes, args.rounds):
        print(line, flush=True)
    for line in bench_rebuild(100_000 if 100_000 in sizes else sizes[-1]):
        print(line, flush=True)
    memories = {size: peak_memory(size) for size in sizes if size >= 100_000}
    if len(memories) >= 2:
        small, large = min(memories), max(memories)
        print(f"peak memory of a full rebuild: {memories[small] / 1024:.0f} MiB at {small:,}, "
              f"{memories[large] / 1024:.0f} MiB at {large:,} -> {memories[large] / memories[small]:.2f}x "
              f"(goal: flat)")


if __name__ == "__main__":
    main()
