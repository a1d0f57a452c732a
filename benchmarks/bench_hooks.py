"""Issue 5's figures: the hook path end to end, as the harness runs it (a new process, JSON on stdin).

    .venv/bin/python benchmarks/bench_hooks.py [--rounds N]

PostToolUse in a small store, and SessionStart on a 100k-event store with a current
projection, each against `python -c "import msgspec, orjson"` measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import BENCH_HOME, current_projection, env_for, generate  # noqa: E402
from benchmarks.common import interleaved  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))


def run_with_stdin(argv: list[str], stdin: bytes, env: dict[str, str], cwd: str | None = None) -> float:
    start = time.perf_counter()
    result = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0 or b"continuity hook:" in result.stderr:
        raise SystemExit(f"hook failed: {result.stderr.decode()[-300:]}")
    return elapsed


def post_tool_use_payload(cwd: str) -> bytes:
    """A realistic Claude Code PostToolUse payload for a Bash call run in `cwd`."""
    return json.dumps({
        "session_id": "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "pytest -q tests/test_orders.py", "description": "Run the order tests"},
        "tool_response": {"stdout": "....\n4 passed in 0.12s", "stderr": "", "exit_code": 0},
        "tool_use_id": "toolu_01DEF",
    }).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    compile_project()
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home)
    big = generate(100_000)
    current_projection(big, home)
    with tempfile.TemporaryDirectory() as small:
        subprocess.run([EXE, "init", "--project", "hook"], cwd=small, env=env, check=True, capture_output=True)
        post_tool_use = post_tool_use_payload(small)
        session_start = json.dumps({
            "session_id": "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "transcript_path": "/tmp/t.jsonl", "cwd": str(big),
            "hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-4-5",
        }).encode()
        floor_argv = [sys.executable, "-c", "import msgspec, orjson"]
        medians = interleaved({
            "floor": lambda: run_with_stdin(floor_argv, b"", env),
            "post": lambda: run_with_stdin([EXE, "hook", "claude-code"], post_tool_use, env, cwd=small),
            "start": lambda: run_with_stdin([EXE, "hook", "claude-code"], session_start, env, cwd=str(big)),
        }, args.rounds)
    floor = medians["floor"]
    print(f"floor (python -c 'import msgspec, orjson'): {floor * 1000:.1f} ms")
    print(f"PostToolUse hook (new process, realistic payload): {medians['post'] * 1000:.1f} ms -> "
          f"{medians['post'] / floor:.2f}x floor (goal <= 1.5x)")
    print(f"SessionStart hook on a 100,000-event store: {medians['start'] * 1000:.1f} ms -> "
          f"{medians['start'] / floor:.2f}x floor (goal <= 2x)")
    _ = os


if __name__ == "__main__":
    main()
