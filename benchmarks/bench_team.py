"""Issue 12's figures: `snapshot`, `resume` and `briefing` against `continuity log`, in one run.

    .venv/bin/python benchmarks/bench_team.py [--sizes 1000,100000] [--rounds N]

A team store of N events holds 50 agents and 200 roles (created and claimed), then
snapshots, messages, heartbeats and work-log lines up to N events. Stores are generated
once under $TMPDIR/continuity-bench-team/<size> (sealed without fsync: fixtures, not the
write path). All commands are new processes, run round-robin; medians are reported.
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

from benchmarks.bench_projections import env_for  # noqa: E402
from benchmarks.common import TYPED, against_both, interleaved, time_command, write_fixture_events  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
BENCH_HOME = Path(tempfile.gettempdir(), "continuity-bench-team")
STEP_US = 1_000_000
START_US = 1_700_000_000_000_000
AGENTS, ROLES = 50, 200


def generate(size: int) -> Path:
    """A team store of `size` events (reused when already built)."""
    from continuity.core.initialize import init_store

    root = BENCH_HOME / str(size)
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    store, _ = init_store(root, project="bench", language="en")
    write_fixture_events(store, _team_drafts(size), start_us=START_US, step_us=STEP_US)
    (root / ".complete").touch()
    return root


def _team_drafts(size: int) -> Iterator[Any]:
    from events.team import MessageSent, PresenceRecorded, RoleClaimed, RoleCreated, SnapshotTaken
    from events.worklog import WorkLogged

    agents = [f"agent{number:02d}" for number in range(AGENTS)]
    for number in range(ROLES):
        yield RoleCreated(project="bench", team="core", role=f"role{number:03d}", description="a role")
        yield RoleClaimed(project="bench", team="core", role=f"role{number:03d}", agent=agents[number % AGENTS],
                          ttl_seconds=366 * 86_400)
    for number in range(size - 2 * ROLES):
        agent = agents[number % AGENTS]
        kind = number % 4
        if kind == 0:
            yield SnapshotTaken(project="bench", agent_id=agent, team="core", agent=agent, task=f"t{number % 7}",
                                objective="ship the thing", next_actions=("land the PR", "write the docs"))
        elif kind == 1:
            yield MessageSent(project="bench", agent_id=agent, team="core", to_agent=agents[(number + 1) % AGENTS],
                              message_id=f"MSG-{number:010d}", text="please look")
        elif kind == 2:
            yield PresenceRecorded(project="bench", agent_id=agent, team="core", agent=agent)
        else:
            yield WorkLogged(project="bench", agent_id=agent, message="edited a file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--snapshot-only", action="store_true", help="only log, snapshot and snapshot+channel")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as home_dir, tempfile.TemporaryDirectory() as small, \
            tempfile.TemporaryDirectory() as channel:
        env = env_for(Path(home_dir))
        time_command([EXE, "init", "--project", "hook"], cwd=small, env=env)
        time_command([EXE, "init", "--project", "hook"], cwd=channel, env=env)
        bus = Path(channel, ".agent", "runtime-continuity", "team", "core", "_coord", "bus-v3")
        bus.mkdir(parents=True)
        (bus / "checkpoints.json").write_text('{"schema": "coord.checkpoints-channel.v1", "data_type": "x"}')
        snapshot = [EXE, "snapshot", "core", "a", "t", "--objective", "ship it", "--next", "land it"]
        cases = {
            "log": lambda: time_command([EXE, "log", "-m", "edited", "--agent", "a"], cwd=small, env=env),
            "typed log": lambda: time_command([*TYPED, "log", "-m", "edited", "--agent", "a"], cwd=small, env=env),
            "snapshot": lambda: time_command(snapshot, cwd=small, env=env),
            "snapshot+channel": lambda: time_command(snapshot, cwd=channel, env=env),
        }
        for size in [] if args.snapshot_only else sizes:
            root = str(generate(size))
            subprocess.run([EXE, "rebuild", "--root", root], env=env, check=True, capture_output=True)
            cases[f"resume {size}"] = lambda r=root: time_command([EXE, "resume", "core", "agent07", "--root", r],
                                                                  env=env)
            cases[f"briefing {size}"] = lambda r=root: time_command(
                [EXE, "briefing", "core", "--agent", "agent07", "--root", r], env=env)
        medians = interleaved(cases, args.rounds)
    floor, typed = medians["log"], medians["typed log"]
    print(f"continuity log (new process): {floor * 1000:.1f} ms; typed log: {typed * 1000:.1f} ms")
    print(f"snapshot (new process): {medians['snapshot'] * 1000:.1f} ms -> {medians['snapshot'] / floor:.2f}x log "
          "(goal <= 1.1x)")
    print(f"snapshot with the checkpoint channel on (JSONL outbox): {medians['snapshot+channel'] * 1000:.1f} ms -> "
          f"{medians['snapshot+channel'] / floor:.2f}x log (no goal: the typed emitter and one more event)")
    for size in [] if args.snapshot_only else sizes:
        for name in ("resume", "briefing"):
            value = medians[f"{name} {size}"]
            print(f"{name} at {size:>7,} events ({AGENTS} agents, {ROLES} roles): {value * 1000:.1f} ms -> "
                  f"{against_both(value, floor, typed)} (goal <= 1.5x, flat)")


if __name__ == "__main__":
    main()
