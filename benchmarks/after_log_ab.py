"""The SessionStart hook and `resume-bundle` right after a `log`, for two installs: time and peak memory.

    .venv/bin/python benchmarks/after_log_ab.py <before>/.venv/bin/continuity <after>/.venv/bin/continuity \
        [--store STORE | --runs 2000 --files 200] [--rounds N]

A `log` (the plain path: it folds nothing) leaves the read models one event behind, so the
next brief's catch-up folds it and saves the models: what every session start pays after the
previous session's logs and tool hooks. STORE is copied once per install (two trees may save
their models in different formats, so they never share one), each copy is caught up once,
then round by round, alternating the installs: `log`, then the timed command, as new
processes. Prints the medians of wall time and of peak resident memory (the process's own,
from `wait4`), and their ratios. Make the "before" install from a checkout of the older commit
(`git worktree add`, then `. scripts/_venv.sh`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_projections import BENCH_HOME, env_for
from benchmarks.common import write_fixture_events


def generate_runs(tasks: int, files: int) -> Path:
    """A store keeping `tasks` completed tasks, each with a run that logged `files` files (reused when built):
    a big `tasks` model (its runs' files) that most events of a session pass over."""
    from continuity.core.initialize import init_store
    from events.base import Refs
    from events.task import RunCompleted, RunStarted, TaskCreated, TaskUpdated
    from events.worklog import WorkLogged

    root = BENCH_HOME / f"runs-{tasks}-{files}"
    if (root / ".agent").is_dir():
        return root

    def drafts() -> Any:
        for n in range(tasks):
            task, run, agent = f"task-{n:010x}", f"run-{n:010x}", f"agent{n % 300:03d}"
            yield TaskCreated(project="demo", agent_id=agent, task_id=task, title=f"task {n}")
            yield RunStarted(project="demo", agent_id=agent, task_id=task, run_id=run, session_id=f"s{n}")
            paths = tuple(f"src/package_{(n * files + j) % 997}/module_{n}_{j}.py" for j in range(files))
            yield WorkLogged(project="demo", agent_id=agent, task_id=task, run_id=run, session_id=f"s{n}",
                             message="edits", refs=Refs(files=paths))
            yield TaskUpdated(project="demo", agent_id=agent, task_id=task, run_id=run, status="completed",
                              from_status="queued", version=2)
            yield RunCompleted(project="demo", agent_id=agent, task_id=task, run_id=run, output_summary="done")

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    store, _ = init_store(root, project="demo", language="en")
    step = 10_000_000
    write_fixture_events(store, drafts(), start_us=int(time.time() * 1e6) - tasks * 5 * step, step_us=step)
    return root


def timed(argv: list[str], cwd: Path, env: dict[str, str], stdin: bytes = b"") -> tuple[float, int]:
    """Run `argv` as a new process; its wall time (s) and peak resident memory (KiB). Fails on a nonzero exit."""
    with tempfile.TemporaryFile() as feed, open(os.devnull, "wb") as sink:
        feed.write(stdin)
        feed.seek(0)
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=feed, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return elapsed, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--store", help="a project folder holding a store (copied, never written)")
    parser.add_argument("--runs", type=int, default=2000, help="without --store: a store keeping this many runs")
    parser.add_argument("--files", type=int, default=200, help="each run's files (with --runs)")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home)
    work = Path(tempfile.mkdtemp(prefix="after-log-", dir=BENCH_HOME))
    installs = {"before": args.before, "after": args.after}
    roots = {}
    try:
        for name, exe in installs.items():
            root = roots[name] = work / name
            shutil.copytree(args.store or generate_runs(args.runs, args.files), root, symlinks=True)
            timed([exe, "resume-bundle"], root, env)  # caught up (a format this install rebuilds, rebuilt here)
        payload = {"session_id": "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "hook_event_name": "SessionStart",
                   "source": "startup"}
        samples: dict[tuple[str, str], list[tuple[float, int]]] = {}
        for round_ in range(args.rounds):
            order = list(installs.items()) if round_ % 2 == 0 else list(reversed(installs.items()))
            for name, exe in order:
                root = roots[name]
                for command in ("SessionStart", "resume-bundle"):
                    timed([exe, "log", f"round {round_}", "--agent", "bench"], root, env)
                    if command == "SessionStart":
                        stdin = json.dumps({**payload, "cwd": str(root)}).encode()
                        sample = timed([exe, "hook", "claude-code"], root, env, stdin)
                    else:
                        sample = timed([exe, "resume-bundle"], root, env)
                    samples.setdefault((command, name), []).append(sample)
        for command in ("SessionStart", "resume-bundle"):
            (before_s, before_kb), (after_s, after_kb) = (
                (statistics.median(s for s, _ in samples[(command, name)]),
                 statistics.median(kb for _, kb in samples[(command, name)])) for name in installs)
            print(f"{command} after a log: {before_s * 1000:.1f} -> {after_s * 1000:.1f} ms "
                  f"({after_s / before_s:.2f}x), peak {before_kb / 1024:.1f} -> {after_kb / 1024:.1f} MiB "
                  f"({after_kb / before_kb:.2f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
