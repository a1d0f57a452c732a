"""The worktree fingerprint of two source trees side by side (new processes, alternating): clean and with changes.

    .venv/bin/python benchmarks/fingerprint_ab.py <before source dir> <after source dir> [rounds] [files]

A git repository of `files` small text files (default 10,000) is made in a temporary folder; each round runs
`fingerprint()` in a fresh interpreter of each tree (one call to warm, one timed), first on the clean tree, then
with one file changed. Medians and their ratios are printed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CODE = ("import sys, time\n"
        "from continuity.workstreams.fingerprint import fingerprint\n"
        "fingerprint(sys.argv[1])\n"
        "started = time.perf_counter()\n"
        "fingerprint(sys.argv[1])\n"
        "print(time.perf_counter() - started)\n")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def timed(source: str, tree: Path) -> float:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env["PYTHONPATH"] = source
    done = subprocess.run([sys.executable, "-c", CODE, str(tree)], env=env, check=True, capture_output=True, text=True)
    return float(done.stdout)


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 10_000
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder)
        git(tree, "init", "-q")
        for index in range(count):
            path = tree / f"d{index // 100}" / f"f{index % 100}.txt"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"file {index} content line\n")
        git(tree, "add", "-A")
        git(tree, "-c", "user.email=bench@example.com", "-c", "user.name=bench", "commit", "-qm", "files")
        for label, change in (("clean", False), ("one file changed", True)):
            if change:
                with open(tree / "d1" / "f1.txt", "a") as out:
                    out.write("changed\n")
            times: dict[str, list[float]] = {before: [], after: []}
            for round_ in range(rounds):
                for source in (before, after) if round_ % 2 else (after, before):
                    times[source].append(timed(source, tree))
            old, new = statistics.median(times[before]), statistics.median(times[after])
            print(f"fingerprint, {count} files, {label}: before {old * 1000:.1f} ms, after {new * 1000:.1f} ms "
                  f"-> {new / old:.2f}x")


if __name__ == "__main__":
    main()
