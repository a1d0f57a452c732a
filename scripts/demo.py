"""The main job of `scripts/run`: a demo session in a temporary project.

It drives the real `continuity` command as a hook or an agent would, then shows the
resume brief a new session would start from.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

EXE = str(Path(sys.executable).with_name("continuity"))


def step(title: str, *args: str, cwd: Path, env: dict[str, str], check: bool = True,
         echo: bool = True) -> str:
    """Run one command; echo it and its output unless told not to."""
    result = subprocess.run([EXE, *args], cwd=cwd, env=env, capture_output=True, text=True)
    output = (result.stdout + result.stderr).rstrip()
    if echo:
        from events.guard import redact_text

        shown = redact_text(" ".join(args))[0]  # never print a secret, even a fake one
        print(f"\n$ continuity {shown}    # {title}")
        if output:
            print(output)
    if check and result.returncode != 0:
        raise SystemExit(f"demo failed at: continuity {' '.join(args)} (exit {result.returncode})")
    return result.stdout


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="scripts/run", description=__doc__)
    parser.add_argument("--timeline", metavar="FILE",
                        help="also keep the demo's timeline page here (docs/timeline.png is a screenshot of it)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="continuity-demo-") as folder:
        project = Path(folder, "shop-api")
        project.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
        env.update(HOME=folder, CONTINUITY_HOST="claude-code", CONTINUITY_AGENT="claude-main",
                   CONTINUITY_SESSION_ID="S-demo-1")
        print(f"demo project: {project}")
        step("create the store", "init", "--project", "shop-api", cwd=project, env=env)
        task = step("a task to work on", "task", "create", "--title", "refund endpoint", cwd=project,
                    env=env).strip()
        step("the agent starts it", "task", "update", task, "--status", "in_progress", cwd=project, env=env)
        step("a hook records an edit", "log", "edited the order model", "--file", "app/orders.py",
             "--phase", "editing", cwd=project, env=env)
        step("the agent checkpoints", "checkpoint", "-m", "order totals fixed; tests green",
             "--phase", "testing", "--done", "fix rounding in order totals",
             "--in-progress", "refund endpoint", "--next", "add refund endpoint tests",
             "--next", "update API docs", "--command", "pytest -q", "--exit-code", "0",
             "--command-summary", "48 passed", "--task", "T-42", cwd=project, env=env)
        step("a secret is refused, nothing written", "log", "deployed with key "
             + "AKIA" + "Q7" * 8, cwd=project, env=env, check=False)
        step("the log so far", "events", "list", cwd=project, env=env)
        step("integrity check", "verify", cwd=project, env=env)
        handoff = step("hand the tests over", "handoff", "create", "--to", "codex-main", "--task", task, "--message",
             "add the refund endpoint tests; fixtures are in tests/refunds", cwd=project, env=env).split()[1]
        step("end of the session: archive", "archive", "--gate", "agent", "--reason", "end of session",
             cwd=project, env=env)
        step("work moves to another host", "host-switch", "--from-host", "claude-code", "--to-host", "codex",
             "--reason", "continue in Codex", "--gate", "user", cwd=project, env=env)
        env.update(CONTINUITY_HOST="codex", CONTINUITY_AGENT="codex-main", CONTINUITY_SESSION_ID="S-demo-2")
        step("the new session starts", "warm", "--auto", cwd=project, env=env)
        print("\n--- the new session's resume brief (recorded, so an audit can replay it) ---")
        print(step("resume brief", "resume-bundle", "--record", "--max-chars", "4000", cwd=project, env=env,
                   echo=False))
        step("what the log holds now", "status", cwd=project, env=env)
        step("the new session takes the handoff", "handoff", "accept", handoff, cwd=project, env=env)
        step("log a line in the new session", "log", "picked up the refund tests", "--file", "tests/test_refunds.py",
             cwd=project, env=env)
        timeline = ["timeline"] + (["--out", str(Path(options.timeline).resolve())] if options.timeline else [])
        step("the project's history as one HTML page", *timeline, cwd=project, env=env)
        if not options.timeline:
            print("(the demo's folder goes when it ends, that page with it: `scripts/run --timeline FILE` keeps it)")


if __name__ == "__main__":
    main()
