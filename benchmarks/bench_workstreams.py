"""Issue 14's figures: `work checkpoint` of a 500-item workstream and `work status` in a 10k-file worktree.

    .venv/bin/python benchmarks/bench_workstreams.py [--rounds N] [--files N]

1. A new process `continuity work checkpoint` of a 500-item workstream, against a new
   process `continuity log` in the same store, interleaved: (a) the first checkpoint (500
   items added, into a fresh copy of an empty store each round) and (b) a progress
   checkpoint (ten items and the cursor change; the store already holds the 500 items).
   The store sits in a git worktree of 200 committed files (a checkpoint observes it). And
   `least_checkpoint.py`: less than the command does in as little as a Python process can.
2. In a git worktree of N files (committed; the store git-ignored) holding a validation:
   `continuity work status` (fingerprint and freshness included) and the fingerprint
   alone (in-process: its two git calls and hashing), against `git status` on the same tree; and
   `least_status.py`, less than the command does in as little as a Python process can (the floor).
Fixtures live under $TMPDIR/continuity-bench-workstreams.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_projections import env_for  # noqa: E402
from benchmarks.common import TYPED, against_both, interleaved, report, time_command  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
HOME = Path(tempfile.gettempdir(), "continuity-bench-workstreams")
ITEMS = 500


def document(progress: int) -> dict[str, Any]:
    """A 500-item tracked document; `progress` toggles ten items between PENDING and IN_PROGRESS."""
    status = "IN_PROGRESS" if progress % 2 else "PENDING"
    items = [{"id": f"I{n:04d}", "title": f"work item {n}", "status": status if n < 10 else "PENDING",
              "priority": "MEDIUM", "scope": [f"src/module_{n % 37}.py"], "acceptanceCriteria": ["tests pass"],
              "dependsOn": [f"I{n - 1:04d}"] if n % 5 else [], "blockedBy": [],
              "validationRequirements": ["pytest -q"], "notes": []} for n in range(ITEMS)]
    return {"schemaVersion": 2, "repository": "bench", "scope": "all", "status": "IN_PROGRESS",
            "objective": "benchmark", "confirmedFindings": [], "decisions": [], "rejectedApproaches": [],
            "validation": [], "openQuestions": [], "nextAction": f"step {progress}",
            "continuity": {"mode": "tracked", "validationLedger": [], "workstream": {
                "id": "WS-bench", "title": "Benchmark", "status": "IN_PROGRESS", "objective": "benchmark",
                "repositories": [{"repository": "bench", "role": "primary"}],
                "cursor": {"currentItemId": "I0000", "lastCompletedItemId": None, "phase": None,
                           "lastCompletedAction": None, "nextAction": f"step {progress}"},
                "items": items}}}


def checkpoint_figures(rounds: int) -> list[str]:
    from continuity.core.initialize import init_store

    base = HOME / "checkpoint"
    shutil.rmtree(base, ignore_errors=True)
    empty = base / "empty"
    (empty / "src").mkdir(parents=True)
    for n in range(200):  # a small project's worktree, as a checkpoint observes it for the runtime files
        (empty / "src" / f"module_{n}.py").write_text(f"VALUE = {n}\n")
    init_store(empty, project="bench", language="en")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "s"]):
        subprocess.run(["git", "-C", str(empty), *args], check=True)
    busy = base / "busy"
    shutil.copytree(empty, busy)
    env = env_for(base / "home")
    (base / "home").mkdir()
    doc_path = busy / "doc.json"
    doc_path.write_text(json.dumps(document(0)))
    time_command([EXE, "work", "checkpoint", "--file", str(doc_path)], cwd=str(busy), env=env)
    first_doc = json.dumps(document(0))
    counter = {"progress": 0, "fresh": 0}

    def first() -> float:
        counter["fresh"] += 1
        fresh = base / f"fresh{counter['fresh']}"
        shutil.copytree(empty, fresh)
        (fresh / "doc.json").write_text(first_doc)
        elapsed = time_command([EXE, "work", "checkpoint", "--file", "doc.json"], cwd=str(fresh), env=env)
        shutil.rmtree(fresh)
        return elapsed

    def progress() -> float:
        counter["progress"] += 1
        doc_path.write_text(json.dumps(document(counter["progress"])))
        return time_command([EXE, "work", "checkpoint", "--file", str(doc_path)], cwd=str(busy), env=env)

    def least() -> float:  # the least a Python process does for it (least_checkpoint.py): the reachable floor
        counter["least"] = counter.get("least", 0) + 1
        store = base / f"least{counter['least']}"
        elapsed = time_command([sys.executable, str(Path(__file__).with_name("least_checkpoint.py")),
                                str(base / "least-doc.json"), str(store)], env=env)
        shutil.rmtree(store)
        return elapsed

    def log() -> float:
        return time_command([EXE, "log", "-m", "edited a file", "--file", "src/a.py"], cwd=str(busy), env=env)

    def typed_log() -> float:
        return time_command([*TYPED, "log", "-m", "edited a file", "--file", "src/a.py"], cwd=str(busy), env=env)

    (base / "least-doc.json").write_text(first_doc)
    medians = interleaved({"first": first, "progress": progress, "least": least, "log": log, "typed log": typed_log},
                          rounds)
    return [report("work checkpoint, 500 items added (new process)", medians["first"], medians["log"], "<= 2x")
            + f"; {against_both(medians['first'], medians['log'], medians['typed log'])}",
            report("work checkpoint, 10 items + cursor of 500 (new process)", medians["progress"], medians["log"],
                   "<= 2x") + f"; {against_both(medians['progress'], medians['log'], medians['typed log'])}",
            report("least Python process for it (benchmarks/least_checkpoint.py), 500 items", medians["least"],
                   medians["log"], "<= 2x would be needed of any Python `work checkpoint`")]


def worktree(files: int) -> Path:
    """A committed git worktree of `files` files with a continuity store and one validation (reused)."""
    from continuity.core.initialize import init_store

    root = HOME / f"tree{files}"
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for n in range(files):
        folder = root / f"pkg{n % 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{n:05d}.py").write_text(f"VALUE = {n}\n" * 20)
    init_store(root, project="bench", language="en")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    env = env_for(root.parent / "home")
    (root / ".ai-bridge").mkdir()
    (root / ".ai-bridge/context-checkpoint.json").write_text(json.dumps(document(0)))
    for argv in (["work", "checkpoint"], ["work", "validate", "--id", "V1", "--kind", "tests", "--result", "PASS",
                                          "--scope", "all", "--summary", "ok"]):
        subprocess.run([EXE, *argv], cwd=root, env=env, check=True, capture_output=True)
    (root / ".complete").touch()
    return root


def status_figures(rounds: int, files: int) -> list[str]:
    from continuity.workstreams.fingerprint import observe

    root = worktree(files)
    env = env_for(root.parent / "home")
    env["GIT_OPTIONAL_LOCKS"] = "0"

    def git_status() -> float:
        return time_command(["git", "-C", str(root), "status", "--porcelain"], env=env)

    def work_status() -> float:
        return time_command([EXE, "work", "status", "--json"], cwd=str(root), env=env)

    def least() -> float:  # the least a Python process does for it (least_status.py): the reachable floor
        return time_command([sys.executable, str(Path(__file__).with_name("least_status.py")), str(root)], env=env)

    def fingerprint_only() -> float:
        start = time.perf_counter()
        observe(str(root))
        return time.perf_counter() - start

    (root / "pkg000/mod00000.py").write_text("VALUE = 'edited'\n")  # one dirty file: status has work to do
    try:
        medians = interleaved({"git": git_status, "work": work_status, "least": least,
                                "fingerprint": fingerprint_only}, rounds)
    finally:
        subprocess.run(["git", "-C", str(root), "checkout", "-q", "--", "pkg000/mod00000.py"], check=True)
    return [report(f"work status, {files} files (new process)", medians["work"], medians["git"], "<= 2x"),
            report(f"least Python process for it (benchmarks/least_status.py), {files} files", medians["least"],
                   medians["git"], "<= 2x would be needed of any Python `work status`"),
            report(f"fingerprint alone, {files} files (in-process)", medians["fingerprint"], medians["git"],
                   "(part of the above)")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    for line in checkpoint_figures(args.rounds) + status_figures(args.rounds, args.files):
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
