"""`continuity log` and the PostToolUse and SessionStart hooks of two installs, side by side (new processes).

    .venv/bin/python benchmarks/hook_ab.py <before>/.venv/bin/continuity <after>/.venv/bin/continuity [rounds]

Make the "before" install from a checkout of the older commit (`git worktree add`, then
`. scripts/_venv.sh`); both write into one temp store, alternating, and the medians and
their ratios are printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_hooks import post_tool_use_payload, run_with_stdin
from benchmarks.bench_projections import BENCH_HOME, env_for
from benchmarks.common import interleaved, time_command


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home)
    with tempfile.TemporaryDirectory() as store:
        subprocess.run([after, "init", "--project", "bench"], cwd=store, env=env, check=True, capture_output=True)
        subprocess.run([after, "checkpoint", "-m", "parser done", "--next", "wire the CLI"], cwd=store, env=env,
                       check=True, capture_output=True)
        payload = post_tool_use_payload(store)
        with_url = json.loads(payload)  # a command naming a URL: the secret guard's URL rule has a word to look at
        with_url["tool_input"]["command"] = "curl -s https://example.com/api/v1/items | jq ."
        url_payload = json.dumps(with_url).encode()
        start = json.dumps({"session_id": "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "cwd": store,
                            "hook_event_name": "SessionStart", "source": "startup"}).encode()
        medians = interleaved({
            f"{name} {side}": job
            for side, exe in (("before", before), ("after", after))
            for name, job in (
                ("log", lambda exe=exe: time_command([exe, "log", "-m", "edited", "--agent", "a1"], cwd=store,
                                                     env=env)),
                ("PostToolUse", lambda exe=exe: run_with_stdin([exe, "hook", "claude-code"], payload, env,
                                                               cwd=store)),
                ("SessionStart", lambda exe=exe: run_with_stdin([exe, "hook", "claude-code"], start, env,
                                                                cwd=store)),
                ("PostToolUse (a URL)", lambda exe=exe: run_with_stdin([exe, "hook", "claude-code"], url_payload,
                                                                       env, cwd=store)),
            )
        }, rounds)
    for name in ("log", "PostToolUse", "SessionStart", "PostToolUse (a URL)"):
        old, new = medians[f"{name} before"], medians[f"{name} after"]
        print(f"{name}: before {old * 1000:.1f} ms, after {new * 1000:.1f} ms -> {new / old:.2f}x")


if __name__ == "__main__":
    main()
