"""Issue 13's figures: task and run writes, and task/memory listings, against `continuity log`, in one run.

    .venv/bin/python benchmarks/bench_tasks.py [--sizes 1000,100000] [--rounds N]

A store of N events holds N/10 tasks (created, a run started, six logged edits in the run,
90% completed, the run completed). Stores are generated once under
$TMPDIR/continuity-bench-tasks/<size> (sealed without fsync: fixtures, not the write path;
the last event is appended through the log, as in a store in use). Listings show their
default 30 entries at every size, so flatness is measured at equal output size. Each figure
is the median wall time and the median CPU time (user + system) of the process: on a shared
machine the CPU ratio is the steadier one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import env_for  # noqa: E402
from benchmarks.common import TYPED, interleaved, time_command, time_command_cpu, write_fixture_events  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
BENCH_HOME = Path(tempfile.gettempdir(), "continuity-bench-tasks")
STEP_US = 3_000_000
START_US = 1_700_000_000_000_000


def generate(size: int, *, synced: bool = False) -> Path:
    """A store with `size` events and size/10 tasks (reused when already built).

    Its last event is appended through the log, as in any store in use, so the log's head
    hint exists. `synced`: the store as a sync or clone-store leaves it, every event brought
    from elsewhere: no head hint, and the newest day folder is the fixture's densest.
    """
    from continuity.core.initialize import init_store
    from continuity.core.store import Store
    from events.worklog import WorkLogged

    root = BENCH_HOME / (f"{size}-synced" if synced else str(size))
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        store, _ = init_store(root, project="bench", language="en")
        write_fixture_events(store, _task_drafts(size), start_us=START_US, step_us=STEP_US)
        (root / ".complete").touch()
    store = Store(str(root))
    if not synced and not os.path.exists(os.path.join(store.local_dir, "head")):
        store.open_log().append(WorkLogged(project="bench", message="the last event, appended by the log"))
    return root


def _task_drafts(size: int) -> Iterator[Any]:
    """size/10 tasks, each created, run, edited six times, updated and its run completed."""
    from events.base import Refs
    from events.task import RunCompleted, RunStarted, TaskCreated, TaskUpdated
    from events.worklog import WorkLogged

    for number in range(size // 10):
        task, run = f"task-{number:08d}", f"run-{number:08d}"
        drafts = [TaskCreated(project="bench", task_id=task, title=f"task {number}", description="goal " * 10),
                  RunStarted(project="bench", task_id=task, run_id=run, role="software_engineer")]
        drafts += [WorkLogged(project="bench", run_id=run, task_id=task, message="edit",
                              refs=Refs(files=(f"src/m{(number + k) % 97}.py",))) for k in range(6)]
        if number % 10:
            drafts.append(TaskUpdated(project="bench", task_id=task, run_id=run, status="completed"))
        else:
            drafts.append(TaskUpdated(project="bench", task_id=task, run_id=run, status="in_progress"))
        drafts.append(RunCompleted(project="bench", task_id=task, run_id=run, output_summary="done"))
        yield from drafts


def _timed(argv: list[str], cpu: dict[str, list[float]], name: str, **options: Any) -> float:
    wall, used = time_command_cpu(argv, **options)
    cpu.setdefault(name, []).append(used)
    return wall


def main() -> None:
    compile_project()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as home_dir, tempfile.TemporaryDirectory() as small:
        home = Path(home_dir)
        env = env_for(home)
        time_command([EXE, "init", "--project", "hook"], cwd=small, env=env)
        task = subprocess.run([EXE, "task", "create", "--title", "bench"], cwd=small, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()
        runs = [subprocess.run([EXE, "run", "start", "--task", task], cwd=small, env=env, capture_output=True,
                               text=True, check=True).stdout.strip() for _ in range(args.rounds)]
        cases: dict[str, Callable[[], float]] = {
            "log": lambda: _timed([EXE, "log", "-m", "edited", "--agent", "a"], cpu, "log", cwd=small, env=env),
            "typed log": lambda: _timed([*TYPED, "log", "-m", "edited", "--agent", "a"], cpu, "typed log", cwd=small,
                                        env=env),
            "task update": lambda: _timed([EXE, "task", "update", task, "--note", "progress"], cpu, "task update",
                                          cwd=small, env=env),
            "run complete": lambda: _timed([EXE, "run", "complete", runs.pop(), "--output-summary", "ok"], cpu,
                                           "run complete", cwd=small, env=env),
        }
        for size in sizes:
            root = generate(size)
            subprocess.run([EXE, "rebuild", "--root", str(root)], env=env, check=True, capture_output=True)
            for name, argv in (("task list", ["task", "list"]), ("memory list", ["memory", "list"])):
                key = f"{name} {size}"
                cases[key] = lambda a=argv, r=root, k=key: _timed([EXE, *a, "--root", str(r)], cpu, k, env=env)
        largest = generate(max(sizes))
        synced = generate(max(sizes), synced=True)
        subprocess.run([EXE, "rebuild", "--root", str(synced)], env=env, check=True, capture_output=True)
        no_hint = f"task list {max(sizes)} no hint"
        cases[no_hint] = lambda: _timed([EXE, "task", "list", "--root", str(synced)], cpu, no_hint, env=env)
        everything = f"task list --all {max(sizes)}"
        cases[everything] = lambda: _timed([EXE, "task", "list", "--all", "--root", str(largest)], cpu, everything,
                                           env=env)
        medians = interleaved(cases, args.rounds)
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    floor, cpu_floor = medians["log"], cpu_medians["log"]
    typed, cpu_typed = medians["typed log"], cpu_medians["typed log"]

    def line(name: str, label: str, goal: str) -> str:
        return (f"{label}: {medians[name] * 1000:.1f} ms -> {medians[name] / floor:.2f}x log, "
                f"{medians[name] / typed:.2f}x typed log; CPU {cpu_medians[name] * 1000:.1f} ms -> "
                f"{cpu_medians[name] / cpu_floor:.2f}x, {cpu_medians[name] / cpu_typed:.2f}x (goal {goal})")

    print(f"continuity log (new process): {floor * 1000:.1f} ms wall, {cpu_floor * 1000:.1f} ms CPU; "
          f"typed log: {typed * 1000:.1f} ms wall, {cpu_typed * 1000:.1f} ms CPU")
    for name in ("task update", "run complete"):
        print(line(name, f"{name} (new process)", "<= 1.1x"))
    for size in sizes:
        for name in ("task list", "memory list"):
            print(line(f"{name} {size}", f"{name} at {size:>7,} events ({size // 10:,} tasks, 30 shown)",
                       "<= 1.5x, flat"))
    for name in ("task list", "memory list"):
        low, high = medians[f"{name} {min(sizes)}"], medians[f"{name} {max(sizes)}"]
        print(f"{name}: {max(sizes):,} events vs {min(sizes):,}: {high / low:.2f}x wall, "
              f"{cpu_medians[f'{name} {max(sizes)}'] / cpu_medians[f'{name} {min(sizes)}']:.2f}x CPU (flat: 1.0x)")
    print(line(no_hint, f"task list at {max(sizes):,} events just after a sync (no head hint: the newest day, "
               "the fixture's densest, is listed)", "for reference"))
    print(line(everything, f"task list --all at {max(sizes):,} events (every kept task printed)", "for reference"))


if __name__ == "__main__":
    main()
