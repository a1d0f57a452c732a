"""The SessionStart hook on one store, for two source trees, alternating: what a change costs the hook.

    .venv/bin/python benchmarks/session_start_ab.py <tree before> <tree after> [--root STORE] [--rounds N]

Each tree is a checkout (`git worktree add`, or `git archive <commit> | tar -x -C DIR`); the
hook runs as a new process with that tree first on PYTHONPATH, round-robin, on the same
store (default: the 100,000-event store of bench_projections.py), and the medians are
printed with their ratio. Issue 15 used it to price the brief's recall section (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_projections import BENCH_HOME, EXE, generate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--root", help="the store (default: the 100,000-event benchmark store)")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    store = args.root or str(generate(100_000))
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"session_id": "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "transcript_path": "/tmp/t.jsonl",
                          "cwd": store, "hook_event_name": "SessionStart", "source": "startup"}).encode()
    samples: dict[str, list[float]] = {"before": [], "after": []}
    briefs: dict[str, bytes] = {}
    for _ in range(args.rounds):
        for name, tree in (("before", args.before), ("after", args.after)):
            env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
            env.update(HOME=str(home), PYTHONPATH=os.path.abspath(tree))
            start = time.perf_counter()
            done = subprocess.run([EXE, "hook", "claude-code"], input=payload, cwd=store, env=env, capture_output=True)
            samples[name].append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"{name}: the hook failed: {done.stderr.decode()[-300:]}")
            briefs[name] = done.stdout
    before, after = (statistics.median(samples[name]) for name in ("before", "after"))
    print(f"SessionStart hook on {store}, medians of {args.rounds} alternating runs: before {before * 1000:.1f} ms, "
          f"after {after * 1000:.1f} ms -> {after / before:.3f}x")
    for name, brief in briefs.items():
        print(f"{name}: the brief has the recall section: {b'Earlier, on the same subject' in brief}")


if __name__ == "__main__":
    main()
