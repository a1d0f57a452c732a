"""Issue 13's figures: task and run writes, and task/memory listings, against `continuity log`, in one run.

    .venv/bin/python benchmarks/bench_tasks.py [--sizes 1000,100000] [--rounds N]

A store of N events holds N/10 tasks (created, a run started, six logged edits in the run,
90% completed, the run completed). Stores are generated once under
$TMPDIR/continuity-bench-tasks/<size> (sealed without fsync: fixtures, not the write path).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import env_for  # noqa: E402
from benchmarks.common import interleaved, time_command, write_fixture_events  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
BENCH_HOME = Path(tempfile.gettempdir(), "continuity-bench-tasks")
STEP_US = 3_000_000
START_US = 1_700_000_000_000_000


def generate(size: int) -> Path:
    """A store with `size` events and size/10 tasks (reused when already built)."""
    from continuity.core.initialize import init_store

    root = BENCH_HOME / str(size)
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    store, _ = init_store(root, project="bench", language="en")
    write_fixture_events(store, _task_drafts(size), start_us=START_US, step_us=STEP_US)
    (root / ".complete").touch()
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


def main() -> None:
    compile_project()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as home_dir, tempfile.TemporaryDirectory() as small:
        home = Path(home_dir)
        env = env_for(home)
        time_command([EXE, "init", "--project", "hook"], cwd=small, env=env)
        task = subprocess.run([EXE, "task", "create", "--title", "bench"], cwd=small, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()
        runs = [subprocess.run([EXE, "run", "start", "--task", task], cwd=small, env=env, capture_output=True,
                               text=True, check=True).stdout.strip() for _ in range(args.rounds)]
        cases = {
            "log": lambda: time_command([EXE, "log", "-m", "edited", "--agent", "a"], cwd=small, env=env),
            "task update": lambda: time_command([EXE, "task", "update", task, "--note", "progress"], cwd=small,
                                                env=env),
            "run complete": lambda: time_command([EXE, "run", "complete", runs.pop(), "--output-summary", "ok"],
                                                 cwd=small, env=env),
        }
        for size in sizes:
            root = generate(size)
            subprocess.run([EXE, "rebuild", "--root", str(root)], env=env, check=True, capture_output=True)
            cases[f"task list {size}"] = lambda r=root: time_command([EXE, "task", "list", "--root", str(r)], env=env)
            cases[f"memory list {size}"] = lambda r=root: time_command([EXE, "memory", "list", "--root", str(r)],
                                                                       env=env)
        medians = interleaved(cases, args.rounds)
    floor = medians["log"]
    print(f"continuity log (new process): {floor * 1000:.1f} ms")
    for name in ("task update", "run complete"):
        print(f"{name} (new process): {medians[name] * 1000:.1f} ms -> {medians[name] / floor:.2f}x log (goal <= 1.1x)")
    for size in sizes:
        for name in ("task list", "memory list"):
            value = medians[f"{name} {size}"]
            print(f"{name} at {size:>7,} events ({size // 10:,} tasks): {value * 1000:.1f} ms -> "
                  f"{value / floor:.2f}x log (goal <= 1.5x, flat)")


if __name__ == "__main__":
    main()
