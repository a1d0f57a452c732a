"""Team views as the team grows: `briefing` and `health` of the whole team, and the timeline page's size.

    .venv/bin/python benchmarks/bench_team_scale.py [--agents 100,1000] [--events 20000] [--rounds 5]

For each team size A, a store of EVENTS events: A agents each holding one role, then snapshots,
messages to the next agent, a handoff every 40 events, heartbeats and work-log lines, round-robin
over the agents (sealed without fsync under $TMPDIR/continuity-bench-team-scale: fixtures, not the
write path). `briefing core` (every member) and `health core` run as new processes, interleaved with
`continuity status` on the same store as the floor; the figure to read is how the ratio moves from
the smallest team to the largest (the views are bounded by the team's caps, not by the log). Then the
timeline page of each store: its bytes and summary level (lanes are agents here).
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
from benchmarks.common import interleaved, time_command, write_fixture_events  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
BENCH_HOME = Path(tempfile.gettempdir(), "continuity-bench-team-scale")
STEP_US = 10_000_000


def generate(agents: int, events: int, start_us: int) -> Path:
    """The store for `agents` agents and `events` events (reused when already built)."""
    from continuity.core.initialize import init_store

    root = BENCH_HOME / f"{agents}-{events}"
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    store, _ = init_store(root, project="bench", language="en")
    write_fixture_events(store, _drafts(agents, events), start_us=start_us, step_us=STEP_US)
    (root / ".complete").touch()
    return root


def _drafts(count: int, events: int) -> Iterator[Any]:
    from events.handoff import HandoffCreated
    from events.team import MessageSent, PresenceRecorded, RoleClaimed, RoleCreated, SnapshotTaken
    from events.worklog import WorkLogged

    agents = [f"agent{number:04d}" for number in range(count)]
    for number, agent in enumerate(agents):
        yield RoleCreated(project="bench", team="core", role=f"role{number:04d}", description="a role")
        yield RoleClaimed(project="bench", team="core", role=f"role{number:04d}", agent=agent, agent_id=agent,
                          ttl_seconds=30 * 86_400)
    for number in range(events - 2 * count):
        agent, kind = agents[number % count], number % 8
        if kind == 0:
            yield SnapshotTaken(project="bench", agent_id=agent, team="core", agent=agent, task=f"t{number % 7}",
                                objective="ship the thing", next_actions=("land the PR",))
        elif kind == 1:
            yield MessageSent(project="bench", agent_id=agent, team="core", to_agent=agents[(number + 1) % count],
                              message_id=f"MSG-{number:010d}", text="please look")
        elif kind == 2 and number % 40 == 2:
            yield HandoffCreated(project="bench", agent_id=agent, handoff_id=f"HO-{number:010d}",
                                 to_agent=agents[(number + 3) % count], message=f"take over {number}")
        elif kind == 3:
            yield PresenceRecorded(project="bench", agent_id=agent, team="core", agent=agent)
        else:
            yield WorkLogged(project="bench", agent_id=agent, message="edited a file")


def main() -> None:
    import time

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", default="100,1000")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    teams = [int(value) for value in args.agents.split(",")]
    start_us = int(time.time() * 1_000_000) - args.events * STEP_US  # the leases still run now
    with tempfile.TemporaryDirectory() as home_dir:
        env = env_for(Path(home_dir))
        cases = {}
        roots = {}
        for agents in teams:
            root = roots[agents] = str(generate(agents, args.events, start_us))
            subprocess.run([EXE, "rebuild", "--root", root], env=env, check=True, capture_output=True)
            cases[f"status {agents}"] = lambda r=root: time_command([EXE, "status", "--root", r], env=env)
            cases[f"briefing {agents}"] = lambda r=root: time_command([EXE, "briefing", "core", "--root", r], env=env)
            cases[f"health {agents}"] = lambda r=root: time_command([EXE, "health", "core", "--root", r], env=env)
        medians = interleaved(cases, args.rounds)
        for agents in teams:
            page = Path(home_dir, f"timeline-{agents}.html")
            done = subprocess.run([EXE, "timeline", "--root", roots[agents], "--out", str(page)], env=env,
                                  check=True, capture_output=True, text=True)
            print(f"timeline, {agents} agents: {page.stat().st_size:,} bytes ({done.stdout.strip()})")
    ratios = {}
    for agents in teams:
        floor = medians[f"status {agents}"]
        line = [f"{agents} agents: status {floor * 1000:.1f} ms"]
        for view in ("briefing", "health"):
            value = medians[f"{view} {agents}"]
            ratios[(view, agents)] = value / floor
            line.append(f"{view} {value * 1000:.1f} ms ({value / floor:.2f}x status)")
        print("; ".join(line))
    small, large = teams[0], teams[-1]
    for view in ("briefing", "health"):
        print(f"{view}: {large} agents against {small}, each against its status: "
              f"{ratios[(view, large)] / ratios[(view, small)]:.2f}x")


if __name__ == "__main__":
    main()
