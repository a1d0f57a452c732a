"""Issue 9's figures: the hook path against a Node CLI of seed 004's shape, as whole processes.

    .venv/bin/python benchmarks/bench_node.py [--rounds N]

Alternating in one run: `node benchmarks/node_log.js` (reads its arguments, builds one JSON
event, writes it with `fs.writeFileSync`), `continuity log`, the PostToolUse hook, the
SessionStart hook on a small log, and `python -c "import msgspec, orjson"`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_hooks import post_tool_use_payload, run_with_stdin  # noqa: E402
from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import BENCH_HOME, env_for  # noqa: E402
from benchmarks.common import interleaved, time_command  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
NODE_SCRIPT = str(ROOT / "benchmarks" / "node_log.js")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is not installed: this benchmark compares against a Node CLI")
    compile_project()
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home)
    with tempfile.TemporaryDirectory() as small:
        subprocess.run([EXE, "init", "--project", "bench"], cwd=small, env=env, check=True, capture_output=True)
        subprocess.run([EXE, "checkpoint", "-m", "parser done", "--next", "wire the CLI"], cwd=small, env=env,
                       check=True, capture_output=True)
        post_tool_use = post_tool_use_payload(small)
        session_start = json.dumps({
            "session_id": "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "cwd": small, "hook_event_name": "SessionStart",
            "source": "startup", "model": "claude-sonnet-4-5",
        }).encode()
        message = ["--message", "edited the parser", "--project", "bench", "--agent", "a1"]
        medians = interleaved({
            "node": lambda: time_command([node, NODE_SCRIPT, "--root", small, *message], cwd=small, env=env),
            "floor": lambda: time_command([sys.executable, "-c", "import msgspec, orjson"], env=env),
            "log": lambda: time_command([EXE, "log", "-m", "edited the parser", "--agent", "a1"], cwd=small,
                                        env=env),
            "post": lambda: run_with_stdin([EXE, "hook", "claude-code"], post_tool_use, env, cwd=small),
            "start": lambda: run_with_stdin([EXE, "hook", "claude-code"], session_start, env, cwd=small),
        }, args.rounds)
    node_ms, floor = medians["node"], medians["floor"]
    print(f"node CLI log (seed 004's shape): {node_ms * 1000:.1f} ms; python -c 'import msgspec, orjson': "
          f"{floor * 1000:.1f} ms ({floor / node_ms:.2f}x node)")
    for name, title in (("log", "continuity log"), ("post", "PostToolUse hook"),
                        ("start", "SessionStart hook (small log)")):
        value = medians[name]
        print(f"{title}: {value * 1000:.1f} ms -> {value / node_ms:.2f}x node (goal <= 0.75x), "
              f"{value / floor:.2f}x the import floor")


if __name__ == "__main__":
    main()
