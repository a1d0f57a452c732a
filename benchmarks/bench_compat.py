"""Issue 10's figures: `runtime-continuity log` and `resume-bundle` against `continuity log`, as processes.

    .venv/bin/python benchmarks/bench_compat.py [--rounds N]

Alternating in one run, in one project with a running harness run file, a session file,
a handoff and an archive (so every listing the seed-004 modes make has something to
read): `continuity log`, `runtime-continuity log` (event, state.json and the locked
run-file mirror) and `runtime-continuity resume-bundle`. Goal: both within 1.1x of
`continuity log`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import BENCH_HOME, env_for  # noqa: E402
from benchmarks.common import TYPED, against_both, interleaved, time_command  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
COMPAT = str(Path(sys.executable).with_name("runtime-continuity"))


def setup(project: Path, env: dict[str, str]) -> None:
    """A store, a running run, a session, a handoff and an archive of project `bench`."""
    subprocess.run([EXE, "init", "--project", "bench"], cwd=project, env=env, check=True, capture_output=True)
    agent = project / ".agent"
    for folder in ("runs", "sessions", "handoffs"):
        (agent / folder).mkdir(parents=True, exist_ok=True)
    (agent / "runs" / "R-bench.json").write_text(json.dumps({"run_id": "R-bench", "status": "running", "events": []}))
    (agent / "sessions" / "S-bench-1.json").write_text(json.dumps({"session_id": "S-bench-1", "project": "bench",
                                                                   "status": "running"}))
    (agent / "handoffs" / "H-1.json").write_text("{}")
    subprocess.run([COMPAT, "archive", "--project", "bench", "--gate", "user", "--note-json", '{"next": ["go"]}'],
                   cwd=project, env=env, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    compile_project()
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home)
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        setup(project, env)
        medians = interleaved({
            "log": lambda: time_command([EXE, "log", "-m", "edited the parser", "--agent", "a1"], cwd=folder,
                                        env=env),
            "typed log": lambda: time_command([*TYPED, "log", "-m", "edited the parser", "--agent", "a1"],
                                              cwd=folder, env=env),
            "rc_log": lambda: time_command([COMPAT, "log", "--project", "bench", "--gate", "agent", "--message",
                                            "edited the parser", "--agent-id", "a1"], cwd=folder, env=env),
            "rc_bundle": lambda: time_command([COMPAT, "resume-bundle", "--project", "bench"], cwd=folder, env=env),
        }, args.rounds)
    base, typed = medians["log"], medians["typed log"]
    print(f"continuity log: {base * 1000:.1f} ms; typed log: {typed * 1000:.1f} ms")
    for name, title in (("rc_log", "runtime-continuity log"), ("rc_bundle", "runtime-continuity resume-bundle")):
        value = medians[name]
        print(f"{title}: {value * 1000:.1f} ms -> {against_both(value, base, typed)} (goal <= 1.1x)")


if __name__ == "__main__":
    main()
