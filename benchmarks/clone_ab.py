"""`clone-store` of two checkouts side by side, with `git clone` of the same events as the floor.

    .venv/bin/python benchmarks/clone_ab.py OLD_CHECKOUT [--events 100000] [--rounds 2] [--remote BARE]

Builds a history of N events on a bare remote (bench_sync's way: generated, then one sync),
or takes `--remote`, a bare remote whose `continuity` branch holds one. Then, round after
round: clone-store with this checkout, clone-store with OLD_CHECKOUT (the same interpreter,
the older code first on PYTHONPATH; make it with `git worktree add`), and `git clone` of the
same events as one commit's tree (the index the first clone-store kept, pushed as a branch:
it writes the same files). Each in a fresh clone of the remote, after `sync`; medians, and
each clone-store's own peak memory. Every step writes a new folder and nothing is deleted
until the end (about 4.3 GB a copy at 1M events): each step prints the cost of making a
file just before it (benchmarks.common.creation_probe).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_sync import EXE, OWN_PEAK, bench_env, generate, git, make_remote  # noqa: E402
from benchmarks.common import creation_probe, time_command  # noqa: E402


def history(folder: Path, env: dict[str, str], events: int) -> Path:
    """A bare remote whose continuity branch holds `events` events."""
    bare, _ = make_remote(folder, env, "history.git")
    root = folder / "writer"
    git(folder, env, "clone", "-q", str(bare), str(root))
    time_command([EXE, "init", "--project", "bench", "--root", str(root)], env=env)
    generate(root, events, 0)
    time_command([EXE, "sync", "--root", str(root)], env=env)
    return bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old", help="a checkout of the older commit")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--remote", help="a bare remote with a continuity branch (instead of building one)")
    args = parser.parse_args()
    codes = {"new": str(ROOT), "old": os.path.abspath(args.old)}
    with tempfile.TemporaryDirectory(prefix="continuity-bench-clone-ab-") as name:
        folder = Path(name)
        (folder / "home").mkdir()
        env = bench_env(folder / "home")
        bare = Path(args.remote) if args.remote else history(folder, env, args.events)
        times: dict[str, list[float]] = {"new": [], "old": [], "git": []}
        peaks: dict[str, list[float]] = {"new": [], "old": []}
        whole = False
        for number in range(args.rounds):
            for label in ("new", "old", "git"):
                # Nothing is deleted until the end: files made right after a million were deleted cost many
                # times more (benchmarks.common.creation_probe), and would burden whichever step came next.
                target = folder / f"clone-{label}-{number}"
                probe = creation_probe(folder)
                if label == "git":
                    os.sync()
                    times[label].append(time_command(["git", "clone", "-q", "--branch", "continuity-whole",
                                                      "--single-branch", str(bare), str(target)], env=env))
                else:
                    git(folder, env, "clone", "-q", str(bare), str(target))
                    os.sync()
                    memory = folder / "rss"
                    times[label].append(time_command(
                        [sys.executable, "-c", OWN_PEAK, str(memory), "clone-store", "origin", "--root", str(target)],
                        env=dict(env, PYTHONPATH=codes[label])))
                    peaks[label].append(int(memory.read_text().split()[0]) / 1024)
                    if not whole:  # the floor's branch: every event as one commit's tree
                        git(target, env, "push", "-q", "-f", str(bare),
                            "refs/continuity-index/continuity:refs/heads/continuity-whole")
                        whole = True
                print(f"round {number + 1} {label}: {times[label][-1]:.1f} s (file creation before it: {probe:.0f} "
                      "us/file)", flush=True)
        median = {label: statistics.median(values) for label, values in times.items()}
        print(f"clone-store this checkout {median['new']:.1f} s (peak {max(peaks['new']):.0f} MB), "
              f"{args.old} {median['old']:.1f} s (peak {max(peaks['old']):.0f} MB), git clone {median['git']:.1f} s "
              f"-> this/git {median['new'] / median['git']:.2f}x, old/git {median['old'] / median['git']:.2f}x, "
              f"this/old {median['new'] / median['old']:.2f}x (medians of {args.rounds})")


if __name__ == "__main__":
    main()
