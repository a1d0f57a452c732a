"""Issue 16's figures: one real Claude Code turn with continuity's hooks installed vs the same turn without.

    .venv/bin/python benchmarks/bench_harness.py [--rounds N]

Claude Code (the pinned version of tests/e2e, from the npm cache) runs `claude -p` in a temp
project against the model stub of tests/e2e: one Bash call, then the end of the turn. One
project has `continuity install claude-code` done, the other only a store; the two runs
alternate, and the medians are compared (goal: hooks cost at most 1.3x). Then each hook the
turn fires is timed alone, as Claude Code runs it (the installed sh line, payload on stdin),
to show where the time goes. continuity is the one tests/e2e installs from this checkout
(a wheel install in its own environment), as a user has it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import harness_env  # noqa: E402
from tests.e2e.installs import CLAUDE_CODE, continuity_bin_dir, harness_program  # noqa: E402
from tests.e2e.model_stub import FINAL_TEXT, ModelStub, ToolCall  # noqa: E402

GOAL = 1.3
STEP = ToolCall("Bash", {"command": "echo bench > out.txt", "description": "write out.txt"})
SESSION = "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71"


def _installed(what: str) -> Path:
    """An install from tests/e2e/installs.py; its skip becomes a clear exit here."""
    import pytest

    try:
        return harness_program(CLAUDE_CODE) if what == "claude" else continuity_bin_dir()
    except pytest.skip.Exception as skipped:
        raise SystemExit(f"cannot benchmark: {skipped}") from None


def make_project(base: Path, name: str, env: dict[str, str], hooks: bool, turns: bool = False) -> Path:
    """A git project with a store (and, with `hooks`, `continuity install claude-code`, with `--turns` if asked)."""
    root = base / name
    root.mkdir()
    install = ["continuity", "install", "claude-code", *(["--turns"] if turns else [])]
    for argv in (["git", "init", "-q"], ["continuity", "init", "--project", name],
                 ["continuity", "checkpoint", "-m", "bench set up", "--next", "add the refund tests"],
                 *([install] if hooks else [])):
        subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True)
    return root


def noop_hooks(hooked: Path, base: Path, name: str, env: dict[str, str]) -> Path:
    """A project whose settings hold the same hook groups as `hooked`, each running `cat >/dev/null; exit 0`:
    what Claude Code's own hook machinery costs, apart from what continuity does."""
    root = make_project(base, name, env, False)
    settings = json.loads((hooked / ".claude" / "settings.json").read_text())
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = "cat >/dev/null; exit 0"
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    return root


#: --variants: continuity's hooks as `install --turns` writes them (the turn markers too), some events left
#: out, or run with Claude Code's `"async": true` (in the background, not waited for), to see what each
#: costs inside a turn. label -> (left out, async), applied to the `--turns` install.
RECORD_ONLY = ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "PostCompact")
VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "with the turn markers (install --turns)": ((), ()),
    "--turns without Stop": (("Stop",), ()),
    "SessionStart only": (("UserPromptSubmit", "Stop", "PostToolUse", "PostToolUseFailure", "SessionEnd"), ()),
    "--turns, record-only hooks async": ((), RECORD_ONLY),
}


def variant(hooked: Path, base: Path, name: str, env: dict[str, str], left_out: tuple[str, ...],
            in_background: tuple[str, ...]) -> Path:
    """A project with continuity's hooks but those of the `left_out` events, and `"async": true` on those of
    the `in_background` events."""
    root = make_project(base, name, env, False)
    settings = json.loads((hooked / ".claude" / "settings.json").read_text())
    settings["hooks"] = {event: groups for event, groups in settings["hooks"].items() if event not in left_out}
    for event in in_background:
        for group in settings["hooks"].get(event, []):
            for hook in group["hooks"]:
                hook["async"] = True
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    return root


def recorded_kinds(root: Path, env: dict[str, str]) -> Counter[str]:
    """How many events of each kind (work-log entries by type) the project's store holds."""
    listed = subprocess.run(["continuity", "events", "list", "--json"], cwd=root, env=env, capture_output=True,
                            text=True, check=True).stdout
    return Counter(e["type"] if e["kind"] == "work.logged" else e["kind"] for e in json.loads(listed)["events"])


def one_turn(stub: ModelStub, root: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (Claude Code and every process it started) of one `claude -p` turn with one
    Bash call; fails loudly if the turn does not finish."""
    stub.reset([STEP])
    argv = ["claude", "-p", "write out.txt", "--output-format", "json", "--allowedTools", "Bash"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or json.loads(done.stdout).get("result") != FINAL_TEXT:
        raise SystemExit(f"claude turn failed ({done.returncode}): {done.stderr[-500:] or done.stdout[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def hook_payloads(root: Path) -> dict[str, dict[str, object]]:
    """The payloads of the hooks one turn fires, in Claude Code's shape (tests/fixtures/hooks)."""
    base = {"session_id": SESSION, "transcript_path": str(root / "t.jsonl"), "cwd": str(root),
            "permission_mode": "default"}
    return {
        "SessionStart": {**base, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-opus-5-5"},
        "UserPromptSubmit": {**base, "hook_event_name": "UserPromptSubmit", "prompt": "write out.txt"},
        "PostToolUse": {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                        "tool_input": {"command": "echo bench > out.txt", "description": "write out.txt"},
                        "tool_response": {"stdout": "", "stderr": "", "interrupted": False}, "tool_use_id": "t1"},
        "Stop": {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                 "last_assistant_message": FINAL_TEXT},
        "SessionEnd": {**base, "hook_event_name": "SessionEnd", "reason": "other"},
    }


def time_hooks(root: Path, env: dict[str, str], rounds: int) -> dict[str, float]:
    """Median wall seconds of each hook, run as the installed sh line with its payload on stdin."""
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    hook_env = {**env, "CLAUDE_PROJECT_DIR": str(root)}
    samples: dict[str, list[float]] = {}
    payloads = hook_payloads(root)
    for _ in range(rounds):
        for name, payload in [("sh + exit 0 (floor)", None), *payloads.items()]:
            argv = ["sh", "-c", "exit 0"] if payload is None else ["sh", "-c", command]
            data = json.dumps(payload).encode() if payload is not None else b""
            start = time.perf_counter()
            done = subprocess.run(argv, input=data, cwd=root, env=hook_env, capture_output=True)
            samples.setdefault(name, []).append(time.perf_counter() - start)
            if done.returncode != 0 or b"continuity hook:" in done.stderr:
                raise SystemExit(f"{name} hook failed: {done.stderr.decode()[-300:]}")
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--variants", action="store_true", help="also time turns with some hooks left out")
    args = parser.parse_args()
    claude, continuity = _installed("claude"), _installed("continuity")
    stub = ModelStub().start()
    try:
        with tempfile.TemporaryDirectory(prefix="continuity-bench-harness-") as tmp:
            base = Path(tmp)
            home = base / "home"
            (home / "tmp").mkdir(parents=True)
            env = {**harness_env(home, [continuity, claude.parent]),
                   "ANTHROPIC_BASE_URL": stub.base_url, "ANTHROPIC_API_KEY": "sk-bench-dummy-key",
                   "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
            hooked, bare = make_project(base, "hooked", env, True), make_project(base, "bare", env, False)
            projects = {"hooks": hooked, "none": bare, "noop": noop_hooks(hooked, base, "noop", env)}
            if args.variants:
                turned = make_project(base, "turns", env, True, turns=True)
                for number, (label, (left_out, in_background)) in enumerate(VARIANTS.items()):
                    projects[label] = variant(turned, base, f"variant{number}", env, left_out, in_background)
            for root in projects.values():
                one_turn(stub, root, env)  # warm the caches of each
            walls: dict[str, list[float]] = {name: [] for name in projects}
            cpus: dict[str, list[float]] = {name: [] for name in projects}
            for _ in range(args.rounds):
                for name, root in projects.items():
                    wall, cpu = one_turn(stub, root, env)
                    walls[name].append(wall)
                    cpus[name].append(cpu)
            with_hooks, without, noop = (statistics.median(walls[k]) for k in ("hooks", "none", "noop"))
            cpu_hooks, cpu_none, cpu_noop = (statistics.median(cpus[k]) for k in ("hooks", "none", "noop"))
            variants = {label: statistics.median(walls[label]) for label in VARIANTS if label in walls}
            time.sleep(2)  # let background hooks finish before counting what they recorded
            counts = {name: recorded_kinds(root, env) for name, root in projects.items()}
            per_hook = time_hooks(hooked, env, args.rounds)
    finally:
        stub.stop()
    ratio = with_hooks / without
    print(f"Claude Code {CLAUDE_CODE.version}, one turn with one Bash call, {args.rounds} rounds alternating:")
    print(f"  with continuity's hooks: {with_hooks * 1000:.0f} ms")
    print(f"  without hooks:           {without * 1000:.0f} ms")
    print(f"  same hook groups, each `cat >/dev/null; exit 0`: {noop * 1000:.0f} ms "
          f"({noop / without:.2f}x: Claude Code's own cost of running hooks)")
    print(f"  -> ratio {ratio:.2f}x (goal <= {GOAL}x): {'met' if ratio <= GOAL else 'NOT met'}; "
          f"hooks add {(with_hooks - without) * 1000:.0f} ms per turn")
    print(f"CPU time of the turn (Claude Code and every process it started), medians: with hooks "
          f"{cpu_hooks * 1000:.0f} ms, without {cpu_none * 1000:.0f} ms ({cpu_hooks / cpu_none:.2f}x), "
          f"no-op hooks {cpu_noop * 1000:.0f} ms ({cpu_noop / cpu_none:.2f}x)")
    for label in VARIANTS if args.variants else ():
        print(f"  continuity's hooks {label}: {variants[label] * 1000:.0f} ms ({variants[label] / without:.2f}x)")
    turns = args.rounds + 1
    for name in ("hooks", *(VARIANTS if args.variants else ())):
        seen = counts[name]
        kinds = ("session.started", "turn_start", "command", "turn_end", "session.ended")
        print(f"  recorded by {name!r} over {turns} turns: " + ", ".join(f"{k} {seen[k]}" for k in kinds))
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print("each hook the turn fires, alone (the installed sh line, payload on stdin), medians:")
    total = 0.0
    for name, seconds in per_hook.items():
        print(f"  {name:22s} {seconds * 1000:6.1f} ms")
        total += 0 if name.startswith("sh") else seconds
    print(f"  {'sum of these hooks':22s} {total * 1000:6.1f} ms (the default install fires SessionStart, "
          "PostToolUse and SessionEnd in this turn; --turns adds UserPromptSubmit and Stop)")


if __name__ == "__main__":
    main()
